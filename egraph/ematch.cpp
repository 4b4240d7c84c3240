#include "egraph/ematch.hpp"

namespace saturn::egraph {

namespace {
// Copies the subpattern rooted at `node` into a pattern of its own.
std::uint32_t copy_sub(const Pattern& from, std::uint32_t node, Pattern& to) {
  const PatternNode& n = from.nodes[node];
  std::vector<std::uint32_t> kids;
  for (auto c : n.children) kids.push_back(copy_sub(from, c, to));
  return to.push(n.op, std::move(kids));
}

std::optional<EClassId> lookup_ground(const EGraph& g, const Pattern& p, std::uint32_t node, std::uint32_t& newest) {
  const PatternNode& n = p.nodes[node];
  std::vector<EClassId> kids;
  for (auto c : n.children) {
    auto k = lookup_ground(g, p, c, newest);
    if (!k) return std::nullopt;
    kids.push_back(*k);
  }
  auto found = g.lookup_node(n.op, kids);
  if (!found) return std::nullopt;
  // If the term's class was absorbed since, its id changed and so may the
  // outcome of a check against it: absorbing stamps every member as moved.
  EClassId cls = g.find(EClassId(found->v));
  newest = std::max(newest, g.stamp(*found));
  for (const ClassNode& cn : g.nodes(cls))
    if (cn.id == *found) newest = std::max(newest, cn.moved);
  return cls;
}
}  // namespace

Matcher::Matcher(const Pattern& p, const std::vector<bool>& bound) {
  // Per variable: kPrebound, kUnbound, or the register it was first bound in.
  std::vector<std::int64_t> var_reg(bound.size(), kUnbound);
  for (std::size_t v = 0; v < bound.size(); ++v)
    if (bound[v]) var_reg[v] = kPrebound;
  const std::uint32_t root = p.root();
  const PatternNode& r = p.nodes[root];
  if (r.is_var()) {
    root_kind_ = RootKind::Variable;
    root_var_ = r.var;
    if (bound[r.var])
      prog_.push_back(Instr{Kind::CheckVar, 0, Op{}, 0, r.var});
    else
      out_vars_.emplace_back(r.var, 0);
    return;
  }
  if (p.is_ground(root)) {
    root_kind_ = RootKind::Ground;
    root_op_ = r.op;
    prog_.push_back(Instr{Kind::CheckGround, 0, Op{}, 0, add_ground(p, root)});
    return;
  }
  root_op_ = r.op;
  for (auto c : r.children) {
    const PatternNode& k = p.nodes[c];
    if (k.is_var() && bound[k.var]) {
      anchor_var_ = k.var;
      break;
    }
  }
  compile(p, root, 0, var_reg);
}

std::uint32_t Matcher::add_ground(const Pattern& p, std::uint32_t node) {
  Pattern g;
  copy_sub(p, node, g);
  ground_.push_back(std::move(g));
  return static_cast<std::uint32_t>(ground_.size() - 1);
}

void Matcher::compile(const Pattern& p, std::uint32_t node, std::uint32_t reg, std::vector<std::int64_t>& var_reg) {
  const PatternNode& n = p.nodes[node];
  const auto arity = static_cast<std::uint32_t>(n.children.size());
  const std::uint32_t out = num_regs_;
  num_regs_ += arity;
  prog_.push_back(Instr{Kind::Bind, reg, n.op, arity, out});
  std::vector<std::pair<std::uint32_t, std::uint32_t>> deferred;  // (pattern node, register)
  for (std::uint32_t i = 0; i < arity; ++i) {
    const std::uint32_t c = n.children[i];
    const PatternNode& k = p.nodes[c];
    if (k.is_var()) {
      std::int64_t& where = var_reg[k.var];
      if (where == kUnbound) {
        where = out + i;
        out_vars_.emplace_back(k.var, out + i);
      } else if (where == kPrebound) {
        prog_.push_back(Instr{Kind::CheckVar, out + i, Op{}, 0, k.var});
      } else {
        prog_.push_back(Instr{Kind::Compare, out + i, Op{}, 0, static_cast<std::uint32_t>(where)});
      }
    } else if (p.is_ground(c)) {
      prog_.push_back(Instr{Kind::CheckGround, out + i, Op{}, 0, add_ground(p, c)});
    } else {
      deferred.emplace_back(c, out + i);
    }
  }
  for (auto [c, r] : deferred) compile(p, c, r, var_reg);
}

std::optional<Matcher::Ground> Matcher::resolve_ground(const EGraph& g) const {
  Ground out;
  out.classes.reserve(ground_.size());
  for (const Pattern& gp : ground_) {
    auto id = lookup_ground(g, gp, gp.root(), out.newest);
    if (!id) return std::nullopt;
    out.classes.push_back(*id);
  }
  return out;
}

}  // namespace saturn::egraph
