#include "egraph/rewrite.hpp"

#include <algorithm>

namespace saturn::egraph {

std::string Rewrite::make(Rewrite& out, std::string name, std::vector<Pattern> lhs, std::vector<Pattern> rhs,
                          std::vector<std::string> var_names, VarId num_lhs_vars, Prepare prepare) {
  if (lhs.empty()) return "a rule needs at least one left-hand side";
  if (lhs.size() != rhs.size()) return "left and right sides differ in count";
  const VarId nvars = static_cast<VarId>(var_names.size());
  std::vector<bool> bound(nvars, false);
  std::vector<Matcher> matchers;
  for (const Pattern& p : lhs) {
    if (p.nodes.empty()) return "empty pattern";
    for (VarId v : p.vars())
      if (v >= num_lhs_vars) return "left-hand side uses a computed variable " + var_names[v];
    matchers.emplace_back(p, bound);
    for (VarId v : p.vars()) bound[v] = true;
  }
  for (VarId v = 0; v < num_lhs_vars; ++v)
    if (!bound[v]) return "variable " + var_names[v] + " is not bound by the left-hand side";
  for (const Pattern& p : rhs) {
    if (p.nodes.empty()) return "empty pattern";
    for (VarId v : p.vars())
      if (v >= nvars) return "right-hand side uses an unknown variable";
  }
  if (num_lhs_vars < nvars && !prepare) return "computed variables need a prepare hook";
  out.name_ = std::move(name);
  out.lhs_ = std::move(lhs);
  out.rhs_ = std::move(rhs);
  out.var_names_ = std::move(var_names);
  out.num_lhs_vars_ = num_lhs_vars;
  out.prepare_ = std::move(prepare);
  out.matchers_ = std::move(matchers);
  out.incremental_ = !out.prepare_;
  {
    std::vector<bool> seen(nvars, false);
    for (std::size_t i = 0; i < out.lhs_.size(); ++i) {
      const Matcher& m = out.matchers_[i];
      if (m.root_kind() == Matcher::RootKind::Variable && !seen[m.root_var()]) out.incremental_ = false;
      for (VarId v : out.lhs_[i].vars()) seen[v] = true;
    }
  }
  out.prefetch_.clear();
  for (const Pattern& p : out.rhs_) {
    PrefetchPlan plan;
    auto only_vars = [&](const PatternNode& pn) {
      if (pn.is_var() || pn.children.empty() || pn.children.size() > 4) return false;
      for (auto c : pn.children)
        if (!p.nodes[c].is_var()) return false;
      return true;
    };
    for (std::uint32_t k = 0; k < p.nodes.size(); ++k) {
      const PatternNode& pn = p.nodes[k];
      if (plan.near == kNoVar && only_vars(pn)) plan.near = k;
    }
    out.prefetch_.push_back(plan);
  }
  return {};
}

std::string Rewrite::to_string() const {
  std::string s;
  auto side = [&](const std::vector<Pattern>& ps) {
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (i) s += ' ';
      s += ps[i].to_string(var_names_);
    }
  };
  side(lhs_);
  s += " => ";
  side(rhs_);
  return s;
}

void Rewrite::search(const EGraph& g, Matches& out, std::size_t limit, std::uint32_t since) const {
  search_impl(g, out, limit, since, {});
}

void Rewrite::search_at(const EGraph& g, std::span<const EClassId> roots, Matches& out) const {
  if (roots.size() != matchers_.size()) return;
  search_impl(g, out, static_cast<std::size_t>(-1), 0, roots);
}

void Rewrite::search_impl(const EGraph& g, Matches& out, std::size_t limit, std::uint32_t since,
                          std::span<const EClassId> at) const {
  if (!incremental_) since = 0;
  const std::size_t n = matchers_.size();
  out.roots_per_match = n;
  out.stride = n + num_lhs_vars_;
  std::vector<std::vector<EClassId>> ground(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto gr = matchers_[i].resolve_ground(g);
    if (!gr) return;  // a ground subterm is absent: nothing can match
    ground[i] = std::move(gr->classes);
    if (gr->newest > since) since = 0;  // a ground class changed: every match may be new
  }
  std::vector<EClassId> subst(num_lhs_vars_);
  std::vector<EClassId> roots(n);
  std::vector<std::vector<EClassId>> regs(n);
  std::vector<EClassId> scratch;
  std::size_t found = 0;

  // Returns false once the limit is exceeded.
  auto level = [&](auto& self, std::size_t i, std::uint32_t newest_in) -> bool {
    const Matcher& m = matchers_[i];
    std::span<const EClassId> candidates;
    std::vector<EClassId> own;
    bool prebound = false;
    if (m.root_kind() == Matcher::RootKind::Variable)
      for (std::size_t j = 0; j < i && !prebound; ++j)
        for (VarId v : lhs_[j].vars())
          if (v == m.root_var()) prebound = true;
    if (!at.empty()) {
      // The root is the class asked for. The matcher checks an operator
      // root itself; no class list is built (it costs a scan of the graph
      // per call once the graph has changed).
      const EClassId want = g.find(at[i]);
      if (m.root_kind() == Matcher::RootKind::Ground && want != ground[i].back()) return true;
      if (prebound && want != subst[m.root_var()]) return true;
      own.assign(1, want);
      candidates = own;
    } else {
      switch (m.root_kind()) {
        case Matcher::RootKind::Variable:
          if (prebound) {
            own.push_back(subst[m.root_var()]);
            candidates = own;
          } else {
            candidates = g.class_ids();
          }
          break;
        case Matcher::RootKind::Ground:
          own.push_back(ground[i].back());
          candidates = own;
          break;
        case Matcher::RootKind::Operator:
          if (m.anchor_var() != kNoVar) {
            for (NodeId p : g.parents(subst[m.anchor_var()]))
              if (g.is_live(p) && g.op(p) == m.root_op()) own.push_back(g.find(EClassId(p.v)));
            std::sort(own.begin(), own.end());
            own.erase(std::unique(own.begin(), own.end()), own.end());
            candidates = own;
          } else {
            candidates = g.classes_with_op(m.root_op());
          }
          break;
      }
    }
    for (EClassId c : candidates) {
      roots[i] = c;
      bool go_on = m.run(g, c, subst, ground[i], regs[i], newest_in, [&](std::uint32_t newest) -> bool {
        if (i + 1 < n) return self(self, i + 1, newest);
        if (since != 0 && newest <= since) return true;  // applied before, when all of it was there
        out.data.insert(out.data.end(), roots.begin(), roots.end());
        out.data.insert(out.data.end(), subst.begin(), subst.end());
        return ++found <= limit;
      });
      if (!go_on) return false;
    }
    return true;
  };
  level(level, 0, 0);
}

namespace {
EClassId instantiate_with(EGraph& g, const Pattern& p, std::span<const EClassId> bindings, std::vector<EClassId>& ids,
                          std::vector<EClassId>& kids) {
  ids.resize(p.nodes.size());
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    const PatternNode& pn = p.nodes[k];
    if (pn.is_var()) {
      ids[k] = bindings[pn.var];
      continue;
    }
    kids.clear();
    for (auto c : pn.children) kids.push_back(ids[c]);
    ids[k] = g.add(pn.op, kids);
  }
  return ids.back();
}
}  // namespace

std::optional<std::vector<EClassId>> Rewrite::instantiate(EGraph& g, std::span<const EClassId> lhs_bindings) const {
  std::vector<EClassId> bindings(var_names_.size());
  std::copy(lhs_bindings.begin(), lhs_bindings.end(), bindings.begin());
  if (prepare_ && !prepare_(g, bindings)) return std::nullopt;
  std::vector<EClassId> ids, kids, out;
  for (const Pattern& p : rhs_) out.push_back(instantiate_with(g, p, bindings, ids, kids));
  return out;
}

void Rewrite::prefetch_near(const EGraph& g, std::span<const EClassId> b) const {
  EClassId args[4];
  for (std::size_t i = 0; i < rhs_.size(); ++i) {
    if (prefetch_[i].near == kNoVar) continue;
    const PatternNode& pn = rhs_[i].nodes[prefetch_[i].near];
    bool computed = false;
    for (std::size_t c = 0; c < pn.children.size(); ++c) {
      VarId v = rhs_[i].nodes[pn.children[c]].var;
      if (v >= b.size())
        computed = true;  // a :let variable, not known yet
      else
        args[c] = b[v];
    }
    if (!computed) g.prefetch(pn.op, {args, pn.children.size()});
  }
}

ApplyStats Rewrite::apply(EGraph& g, const Matches& matches, std::size_t node_budget) const {
  ApplyStats stats;
  std::vector<EClassId> bindings(var_names_.size());
  std::vector<EClassId> ids, kids;
  // Hash-cons lookups miss the cache; prefetching the slot of a later
  // match's first RHS node overlaps those misses. Measured on the sum-of-10
  // AC case: apply 450 -> 310 ms. A second stage (look that node up 4 ahead,
  // prefetch its parent) measured slower: its extra lookup costs more than
  // the miss it hides.
  constexpr std::size_t kNear = 8;
  for (std::size_t m = 0; m < matches.size(); ++m) {
    if (g.num_nodes() > node_budget) {
      stats.over_budget = true;
      break;
    }
    if (m + kNear < matches.size()) prefetch_near(g, matches.bindings(m + kNear));
    auto b = matches.bindings(m);
    std::copy(b.begin(), b.end(), bindings.begin());
    if (prepare_ && !prepare_(g, bindings)) {
      ++stats.rejected;
      continue;
    }
    ++stats.applied;
    auto roots = matches.roots(m);
    bool changed = false;
    for (std::size_t i = 0; i < rhs_.size(); ++i) {
      const EClassId made = instantiate_with(g, rhs_[i], bindings, ids, kids);
      changed |= g.explaining()
                     ? g.merge(roots[i], made, Justification::of_rule(this, static_cast<std::uint32_t>(i), bindings))
                     : g.merge(roots[i], made);
    }
    stats.changed += changed;
  }
  return stats;
}

}  // namespace saturn::egraph
