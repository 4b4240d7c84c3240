#include "extract/ilp_prune.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "extract/class_graph.hpp"

namespace saturn::extract {
namespace {

// Drops nodes that need a class without a finite program (a fixpoint from
// the leaves).
void drop_unfinishable(const ExtractionProblem& p, Pruned& r) {
  const std::size_t nn = p.nodes.size(), nc = p.classes.size();
  std::vector<std::vector<std::uint32_t>> parents(nc);
  std::vector<std::uint32_t> missing(nn, 0);
  std::vector<char> ok(nc, 0);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t n = 0; n < nn; ++n) {
    if (!r.node[n]) continue;
    const auto kids = distinct_children(p, n);
    missing[n] = static_cast<std::uint32_t>(kids.size());
    for (std::uint32_t k : kids) parents[k].push_back(n);
    if (kids.empty()) ready.push_back(n);
  }
  while (!ready.empty()) {
    const std::uint32_t n = ready.back();
    ready.pop_back();
    const std::uint32_t c = p.nodes[n].cls;
    if (ok[c]) continue;
    ok[c] = 1;
    for (std::uint32_t q : parents[c])
      if (--missing[q] == 0) ready.push_back(q);
  }
  for (std::uint32_t n = 0; n < nn; ++n)
    if (r.node[n] && missing[n] != 0) r.node[n] = 0;
}

// Drops nodes dominated by a sibling that costs no more and needs a subset
// of their children (only without negative costs: a dropped child could be
// a reward). Large classes are left alone (the pairwise test is quadratic).
void drop_dominated(const ExtractionProblem& p, Pruned& r) {
  for (const auto& members : p.classes) {
    if (members.size() < 2 || members.size() > 256) continue;
    std::vector<std::uint32_t> live;
    for (std::uint32_t n : members)
      if (r.node[n]) live.push_back(n);
    std::vector<std::vector<std::uint32_t>> kids(live.size());
    for (std::size_t i = 0; i < live.size(); ++i) kids[i] = distinct_children(p, live[i]);
    std::vector<std::size_t> by_price(live.size());
    for (std::size_t i = 0; i < live.size(); ++i) by_price[i] = i;
    std::stable_sort(by_price.begin(), by_price.end(), [&](std::size_t a, std::size_t b) {
      const double ca = p.nodes[live[a]].cost, cb = p.nodes[live[b]].cost;
      return ca != cb ? ca < cb : kids[a].size() < kids[b].size();
    });
    std::vector<std::size_t> kept;
    for (std::size_t i : by_price) {
      std::int32_t by = -1;
      for (std::size_t j : kept)
        if (p.nodes[live[j]].cost <= p.nodes[live[i]].cost &&
            std::includes(kids[i].begin(), kids[i].end(), kids[j].begin(), kids[j].end())) {
          by = static_cast<std::int32_t>(live[j]);
          break;
        }
      if (by >= 0) {
        r.node[live[i]] = 0;
        r.dominator[live[i]] = by;
      } else {
        kept.push_back(i);
      }
    }
  }
}

// Keeps the classes the roots reach through kept nodes, and marks those every
// program needs: the roots, and a child that every kept node of a needed
// class has.
void keep_reachable(const ExtractionProblem& p, Pruned& r) {
  const std::size_t nc = p.classes.size();
  r.cls = reachable_from_roots(p, [&](std::uint32_t n) { return r.node[n] != 0; });
  std::vector<std::uint32_t> live_count(nc, 0);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n) {
    if (!r.cls[p.nodes[n].cls]) r.node[n] = 0;
    live_count[p.nodes[n].cls] += r.node[n] != 0;
  }
  for (std::uint32_t c = 0; c < nc; ++c)
    if (live_count[c] == 0) r.cls[c] = 0;
  r.required.assign(nc, 0);
  std::vector<std::uint32_t> todo;
  for (std::uint32_t root : p.roots)
    if (r.cls[root] && !r.required[root]) {
      r.required[root] = 1;
      todo.push_back(root);
    }
  while (!todo.empty()) {
    const std::uint32_t c = todo.back();
    todo.pop_back();
    std::map<std::uint32_t, std::uint32_t> had;  // child class -> kept nodes of c that have it
    for (std::uint32_t n : p.classes[c])
      if (r.node[n])
        for (std::uint32_t k : distinct_children(p, n)) ++had[k];
    for (const auto& [k, count] : had)
      if (count == live_count[c] && !r.required[k]) {
        r.required[k] = 1;
        todo.push_back(k);
      }
  }
}

// Drops nodes that cannot be in a program cheaper than the incumbent (only
// without negative costs). A program with node n of class c holds three
// disjoint parts: n; below n, a DAG for each child, so at least the dearest
// child's least DAG cost (`below`: cost(n) + max over children, a fixpoint
// from the leaves); above c, a path from a root (`above`: the cheapest one,
// Dijkstra's distances with a node's cost on its edges to its children). And
// every class every program needs that is neither: its cheapest node.
bool drop_too_costly(const ExtractionProblem& p, Pruned& r, double incumbent) {
  if (!std::isfinite(incumbent)) return false;
  const std::size_t nc = p.classes.size();
  std::vector<double> below(nc, kInfinity);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::uint32_t n = 0; n < p.nodes.size(); ++n) {
      if (!r.node[n]) continue;
      double worst = 0;
      for (std::uint32_t k : p.nodes[n].children) worst = std::max(worst, below[k]);
      const double v = p.nodes[n].cost + worst;
      if (v < below[p.nodes[n].cls]) {
        below[p.nodes[n].cls] = v;
        changed = true;
      }
    }
  }
  std::vector<double> above(nc, kInfinity);
  std::vector<std::pair<double, std::uint32_t>> heap;
  const auto later = std::greater<std::pair<double, std::uint32_t>>();
  for (std::uint32_t root : p.roots) {
    above[root] = 0;
    heap.emplace_back(0.0, root);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [d, c] = heap.back();
    heap.pop_back();
    if (d > above[c]) continue;
    for (std::uint32_t n : p.classes[c]) {
      if (!r.node[n]) continue;
      for (std::uint32_t k : p.nodes[n].children)
        if (d + p.nodes[n].cost < above[k]) {
          above[k] = d + p.nodes[n].cost;
          heap.emplace_back(above[k], k);
          std::push_heap(heap.begin(), heap.end(), later);
        }
    }
  }
  std::vector<double> cheapest(nc, kInfinity);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    if (r.node[n]) cheapest[p.nodes[n].cls] = std::min(cheapest[p.nodes[n].cls], p.nodes[n].cost);
  double floor = 0;
  for (std::uint32_t c = 0; c < nc; ++c)
    if (r.required[c]) floor += cheapest[c];
  const double slack = 1e-9 * std::max(1.0, std::abs(incumbent));
  bool dropped = false;
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n) {
    if (!r.node[n]) continue;
    const std::uint32_t c = p.nodes[n].cls;
    double worst = 0;
    for (std::uint32_t k : p.nodes[n].children) worst = std::max(worst, below[k]);
    const double alone = floor - (r.required[c] ? cheapest[c] : 0) + p.nodes[n].cost;
    const double chain = above[c] + p.nodes[n].cost + worst;
    if (std::max(alone, chain) > incumbent + slack) {
      r.node[n] = 0;
      dropped = true;
    }
  }
  return dropped;
}

}  // namespace

Pruned prune(const ExtractionProblem& p, double incumbent) {
  Pruned r;
  r.node.assign(p.nodes.size(), 1);
  r.dominator.assign(p.nodes.size(), -1);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n) {
    const auto& node = p.nodes[n];
    r.negative |= node.cost < 0;
    if (!std::isfinite(node.cost) ||
        std::find(node.children.begin(), node.children.end(), node.cls) != node.children.end())
      r.node[n] = 0;
  }
  for (int round = 0; round < 3; ++round) {
    drop_unfinishable(p, r);
    if (!r.negative) drop_dominated(p, r);
    keep_reachable(p, r);
    if (r.negative || !drop_too_costly(p, r, incumbent)) break;
  }
  drop_unfinishable(p, r);
  keep_reachable(p, r);
  return r;
}

}  // namespace saturn::extract
