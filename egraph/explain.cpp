#include "egraph/explain.hpp"

#include "egraph/egraph.hpp"
#include "egraph/rewrite.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>

namespace saturn::egraph {

void ProofForest::add_id() {
  const auto id = static_cast<std::uint32_t>(parent_.size());
  parent_.push_back({id, 0});
}

void ProofForest::reroot(std::uint32_t x) {
  // Reverse the parent pointers from x to its root: each edge keeps its reason.
  std::uint32_t prev = x, reason = parent_[x].reason;
  std::uint32_t cur = parent_[x].parent;
  parent_[x].parent = x;
  while (cur != prev) {
    const Edge next = parent_[cur];
    parent_[cur] = {prev, reason};
    if (next.parent == cur) break;  // cur was the root
    prev = cur;
    reason = next.reason;
    cur = next.parent;
  }
}

void ProofForest::link(EClassId a, EClassId b, Justification why) {
  reroot(a.v);
  reasons_.push_back({a, b, std::move(why)});
  parent_[a.v] = {b.v, static_cast<std::uint32_t>(reasons_.size() - 1)};
}

std::vector<ProofStep> ProofForest::path(EClassId x, EClassId y) const {
  if (x == y) return {};
  // Depths, then climb to the common ancestor from both sides.
  auto depth = [&](std::uint32_t v) {
    std::size_t d = 0;
    while (parent_[v].parent != v) v = parent_[v].parent, ++d;
    return d;
  };
  std::uint32_t u = x.v, v = y.v;
  std::size_t du = depth(u), dv = depth(v);
  std::vector<ProofStep> up, down;  // x -> ancestor, and y -> ancestor (reversed later)
  auto step = [&](std::uint32_t from, std::vector<ProofStep>& out, bool toward) {
    const Edge e = parent_[from];
    const Reason& r = reasons_[e.reason];
    ProofStep s;
    s.from = toward ? EClassId(from) : EClassId(e.parent);
    s.to = toward ? EClassId(e.parent) : EClassId(from);
    s.why = &r.why;
    s.forward = r.a == s.from;
    out.push_back(s);
    return e.parent;
  };
  while (du > dv) u = step(u, up, true), --du;
  while (dv > du) v = step(v, down, false), --dv;
  while (u != v) {
    if (parent_[u].parent == u || parent_[v].parent == v)
      throw std::logic_error("ProofForest::path: the ids are in different classes");
    u = step(u, up, true);
    v = step(v, down, false);
  }
  std::reverse(down.begin(), down.end());
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

namespace {

// The class of a pattern instance in the e-graph, or nothing when one of
// its nodes is not there.
std::optional<EClassId> instance_class(const EGraph& g, const Pattern& p, std::span<const EClassId> bindings) {
  std::vector<EClassId> at(p.nodes.size());
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const PatternNode& n = p.nodes[i];
    if (n.is_var()) {
      if (n.var >= bindings.size()) return std::nullopt;
      at[i] = g.find(bindings[n.var]);
      continue;
    }
    std::vector<EClassId> kids;
    for (std::uint32_t c : n.children) kids.push_back(at[c]);
    auto found = g.lookup(n.op, kids);
    if (!found) return std::nullopt;
    at[i] = *found;
  }
  return at.back();
}

}  // namespace

std::string replay(const EGraph& g, const std::vector<ProofStep>& chain, EClassId x, EClassId y, int depth) {
  if (chain.empty()) return x == y ? "" : "an empty chain between two different ids";
  if (chain.front().from != x) return "the chain does not start at id " + std::to_string(x.v);
  if (chain.back().to != y) return "the chain does not end at id " + std::to_string(y.v);
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const ProofStep& s = chain[i];
    const std::string at = "step " + std::to_string(i + 1) + ": ";
    if (i + 1 < chain.size() && chain[i + 1].from != s.to) return at + "the next step starts elsewhere";
    if (g.find(s.from) != g.find(s.to)) return at + "its ends are in different classes";
    const Justification& j = *s.why;
    const EClassId left = s.forward ? s.from : s.to, right = s.forward ? s.to : s.from;
    switch (j.kind) {
      case Justification::Kind::Rule: {
        if (!j.rule || j.rhs >= j.rule->lhs().size()) return at + "no rule recorded";
        auto l = instance_class(g, j.rule->lhs()[j.rhs], j.bindings);
        auto r = instance_class(g, j.rule->rhs()[j.rhs], j.bindings);
        if (!l || *l != g.find(left)) return at + j.rule->name() + ": its left-hand side is not at the step's start";
        if (!r || *r != g.find(right)) return at + j.rule->name() + ": its right-hand side is not at the step's end";
        break;
      }
      case Justification::Kind::Congruence: {
        if (g.op(j.left) != g.op(j.right)) return at + "congruence of two different operators";
        auto a = g.children(j.left), b = g.children(j.right);
        if (a.size() != b.size()) return at + "congruence of nodes with different arities";
        if (depth <= 0) break;
        for (std::size_t k = 0; k < a.size(); ++k) {
          if (g.find(a[k]) != g.find(b[k])) return at + "congruence: child " + std::to_string(k) + " differs";
          if (a[k] == b[k]) continue;
          auto why = replay(g, g.proofs()->path(a[k], b[k]), a[k], b[k], depth - 1);
          if (!why.empty()) return at + "congruence: child " + std::to_string(k) + ": " + why;
        }
        break;
      }
      case Justification::Kind::Analysis:
      case Justification::Kind::Given:
        break;
    }
  }
  return "";
}

}  // namespace saturn::egraph
