#include "extract/extractors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>

#include "extract/dag_pricer.hpp"
#include "extract/ilp.hpp"

namespace saturn::extract {
namespace {

// How often a bottom-up fixpoint may lower one class. With negative costs a
// cycle could lower it forever: once per class then (Bellman-Ford's bound).
std::size_t update_limit(const ExtractionProblem& p) {
  for (const auto& node : p.nodes)
    if (node.cost < 0) return p.classes.size() + 1;
  return std::numeric_limits<std::size_t>::max();
}

}  // namespace

Extraction extract_tree_greedy(const ExtractionProblem& p) {
  const std::size_t nc = p.classes.size();
  std::vector<double> best(nc, kInfinity);
  Extraction x;
  x.choice.assign(nc, -1);
  // Parents (node indices) of each class, to re-examine when it gets cheaper.
  std::vector<std::vector<std::uint32_t>> parents(nc);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    for (std::uint32_t k : p.nodes[n].children) parents[k].push_back(n);
  const std::size_t max_updates = update_limit(p);
  std::vector<std::size_t> updates(nc, 0);
  std::deque<std::uint32_t> work;
  std::vector<bool> queued(p.nodes.size(), false);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    if (p.nodes[n].children.empty()) {
      work.push_back(n);
      queued[n] = true;
    }
  while (!work.empty()) {
    std::uint32_t n = work.front();
    work.pop_front();
    queued[n] = false;
    const auto& node = p.nodes[n];
    double c = node.cost;
    for (std::uint32_t k : node.children) c = cost_sum(c, best[k]);
    const std::uint32_t cls = node.cls;
    // Only strictly cheaper: with costs >= 0, a strict improvement never
    // closes a cycle, while switching between equal costs could (a
    // zero-cost node whose child class is its own).
    if (c < best[cls] && updates[cls]++ < max_updates) {
      best[cls] = c;
      x.choice[cls] = static_cast<std::int32_t>(n);
      for (std::uint32_t parent : parents[cls])
        if (!queued[parent]) {
          queued[parent] = true;
          work.push_back(parent);
        }
    }
  }
  x.tree_cost = tree_cost(p, x.choice);
  x.dag_cost = dag_cost(p, x.choice);
  x.class_tree_cost = std::move(best);
  return x;
}

namespace {

// A bottom-up choice priced by DAG cost (extraction-gym's faster-greedy-dag
// idea): each class keeps the classes its program contains with what they
// cost, and a node costs the union of its children's, each class once. The
// sets are snapshots (a class that improves later leaves stale copies), so
// this is a heuristic start, not a bound. Nodes whose children's programs
// contain their own class are skipped, so the choice is acyclic.
std::vector<std::int32_t> shared_cost_greedy(const ExtractionProblem& p) {
  using Contents = std::vector<std::pair<std::uint32_t, double>>;  // sorted by class
  const std::size_t nc = p.classes.size();
  const std::size_t max_updates = update_limit(p);
  std::vector<std::size_t> updates(nc, 0);
  std::vector<Contents> contents(nc);
  std::vector<double> best(nc, kInfinity);
  std::vector<std::int32_t> choice(nc, -1);
  std::vector<std::vector<std::uint32_t>> parents(nc);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    for (std::uint32_t k : p.nodes[n].children) parents[k].push_back(n);
  std::deque<std::uint32_t> work;
  std::vector<char> queued(p.nodes.size(), 0);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    if (p.nodes[n].children.empty()) {
      work.push_back(n);
      queued[n] = 1;
    }
  Contents merged, scratch;
  while (!work.empty()) {
    const std::uint32_t n = work.front();
    work.pop_front();
    queued[n] = 0;
    const auto& node = p.nodes[n];
    if (!(node.cost < kInfinity)) continue;
    bool ready = true;
    for (std::uint32_t k : node.children) ready &= best[k] < kInfinity;
    if (!ready) continue;
    merged.assign(1, {node.cls, node.cost});
    for (std::uint32_t k : node.children) {
      scratch.clear();
      std::set_union(merged.begin(), merged.end(), contents[k].begin(), contents[k].end(), std::back_inserter(scratch),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
      merged.swap(scratch);
    }
    // The node's own class among its children's programs: a cycle.
    const auto own = std::equal_range(merged.begin(), merged.end(), std::make_pair(node.cls, 0.0),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
    if (own.second - own.first != 1 || own.first->second != node.cost) continue;
    double cost = 0;
    for (const auto& [c, v] : merged) cost += v;
    if (!(cost < best[node.cls] - 1e-12 * std::max(1.0, std::abs(cost))) || updates[node.cls]++ >= max_updates)
      continue;
    best[node.cls] = cost;
    choice[node.cls] = static_cast<std::int32_t>(n);
    contents[node.cls] = merged;
    for (std::uint32_t q : parents[node.cls])
      if (!queued[q]) {
        queued[q] = 1;
        work.push_back(q);
      }
  }
  return choice;
}

// Re-chooses the classes outside the current program (`in`) for what they
// would add to it: tree-greedy where the program's classes cost nothing. A
// swap that brings such a class in then brings it with the program that
// reuses most of what is already there (a node over classes the program
// has), not with the program it would cost alone. The program's own DAG
// cost is unchanged (its classes keep their choice), and the new choices
// are acyclic among themselves (strict improvements only).
void rechoose_outside(const ExtractionProblem& p, const std::vector<char>& in,
                      const std::vector<std::vector<std::uint32_t>>& parents, std::vector<std::int32_t>& choice) {
  const std::size_t nc = p.classes.size();
  const std::size_t max_updates = update_limit(p);
  std::vector<std::size_t> updates(nc, 0);
  std::vector<double> adds(nc, kInfinity);
  std::deque<std::uint32_t> work;
  std::vector<char> queued(p.nodes.size(), 0);
  for (std::uint32_t c = 0; c < nc; ++c) {
    if (in[c]) {
      adds[c] = 0;
      continue;
    }
    for (std::uint32_t n : p.classes[c]) {
      work.push_back(n);
      queued[n] = 1;
    }
  }
  while (!work.empty()) {
    const std::uint32_t n = work.front();
    work.pop_front();
    queued[n] = 0;
    const auto& node = p.nodes[n];
    double cost = node.cost;
    for (std::uint32_t k : node.children) cost += adds[k];
    if (!(cost < adds[node.cls]) || updates[node.cls]++ >= max_updates) continue;
    adds[node.cls] = cost;
    choice[node.cls] = static_cast<std::int32_t>(n);
    for (std::uint32_t q : parents[node.cls])
      if (!in[p.nodes[q].cls] && !queued[q]) {
        queued[q] = 1;
        work.push_back(q);
      }
  }
}

}  // namespace

Extraction extract_dag_greedy(const ExtractionProblem& p, double time_budget_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Extraction x = extract_tree_greedy(p);
  x.class_tree_cost.clear();  // stale once the choice changes
  DagPricer price(p);
  // Start from the cheaper of the tree-greedy choice and the shared-cost one.
  // (Classes outside the chosen program keep tree-greedy's choice when the
  // shared-cost one has none.)
  if (auto shared = shared_cost_greedy(p); price.dag_cost(shared) < x.dag_cost) {
    for (std::size_t c = 0; c < shared.size(); ++c)
      if (shared[c] < 0) shared[c] = x.choice[c];
    x.choice = std::move(shared);
    x.dag_cost = price.dag_cost(x.choice);
  }
  double current = x.dag_cost;
  if (current == kInfinity) return x;
  std::vector<double> best(p.classes.size(), kInfinity);  // finite: the class has a program
  for (std::size_t c = 0; c < p.classes.size(); ++c)
    if (x.choice[c] >= 0) best[c] = 0;
  std::vector<std::vector<std::uint32_t>> parents(p.classes.size());
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    for (std::uint32_t k : p.nodes[n].children) parents[k].push_back(n);
  auto usable = [&](std::uint32_t n) {
    if (p.nodes[n].cost == kInfinity) return false;
    for (std::uint32_t k : p.nodes[n].children)
      if (best[k] == kInfinity) return false;
    return true;
  };
  std::vector<char> in, in_after;
  std::vector<std::uint32_t> brought_in;
  std::vector<char> free_in(p.classes.size(), 0);  // per brought-in class, written before it is read
  // A node that adds nothing to any program it is in, fused or not.
  const auto costs_nothing = [](const ExtractionProblem::Node& node) {
    return node.cost == 0 && node.fused.role == FuseRole::None && node.layout.after.empty();
  };
  const auto free_literal = [&](std::uint32_t k) {
    if (x.choice[k] < 0) return false;
    const auto& node = p.nodes[static_cast<std::size_t>(x.choice[k])];
    return node.children.empty() && costs_nothing(node);
  };
  // Improvements smaller than this are rounding (costs may be negative).
  const auto tolerance_of = [](double v) { return 1e-12 * std::max(1.0, std::abs(v)); };
  for (;;) {
    ++x.passes;
    bool improved = false;
    price.dag_cost(x.choice, &in);
    rechoose_outside(p, in, parents, x.choice);
    std::vector<std::uint32_t> needed;
    for (std::uint32_t c = 0; c < p.classes.size(); ++c)
      if (in[c]) needed.push_back(c);
    for (std::uint32_t c : needed) {
      if (p.classes[c].size() < 2) continue;
      for (std::uint32_t n : p.classes[c]) {
        if (static_cast<std::int32_t>(n) == x.choice[c] || !usable(n)) continue;
        std::vector<std::pair<std::uint32_t, std::int32_t>> undo = {{c, x.choice[c]}};
        x.choice[c] = static_cast<std::int32_t>(n);
        double cost = price.dag_cost(x.choice, &in_after);
        ++x.programs_priced;
        if (cost != kInfinity && !(cost < current - tolerance_of(current))) {
          // A swap that brings in new classes may pay off once other needed
          // classes reuse them (two projections sharing one merged product):
          // follow up greedily through the new classes' parents, in class
          // order. Not through a class that came in free (a constant and
          // what it reads, at no cost and outside fusion): reusing it saves
          // nothing, and a literal has a hundred users (densenet121's
          // epsilon: nine in ten follow-ups, none of them a gain).
          brought_in.clear();
          for (std::uint32_t k : price.order()) {  // children first
            if (in[k]) continue;
            const auto& node = p.nodes[static_cast<std::size_t>(x.choice[k])];
            bool is_free = costs_nothing(node);
            for (std::uint32_t kk : node.children) is_free &= in[kk] || free_in[kk];
            free_in[k] = is_free;
            if (!is_free) brought_in.push_back(k);
          }
          std::sort(brought_in.begin(), brought_in.end());
          for (std::uint32_t k : brought_in) {
            for (std::uint32_t q : parents[k]) {
              const std::uint32_t qc = p.nodes[q].cls;
              if (!in_after[qc] || qc == c || static_cast<std::int32_t>(q) == x.choice[qc] || !usable(q)) continue;
              // Its children in the program, or free literals (a slice's
              // bounds: the second slice of a merged product reads ends
              // that no node of the program reads yet).
              bool ready = true;
              for (std::uint32_t kk : p.nodes[q].children) ready &= in_after[kk] || free_literal(kk);
              if (!ready) continue;
              const std::int32_t before = x.choice[qc];
              x.choice[qc] = static_cast<std::int32_t>(q);
              double c2 = price.dag_cost(x.choice);
              ++x.programs_priced;
              if (c2 < cost) {
                cost = c2;
                undo.emplace_back(qc, before);
              } else {
                x.choice[qc] = before;
              }
            }
          }
        }
        if (cost < current - tolerance_of(current)) {
          current = cost;
          improved = true;
          price.dag_cost(x.choice, &in);
        } else {
          for (auto it = undo.rbegin(); it != undo.rend(); ++it) x.choice[it->first] = it->second;
        }
      }
      if (std::chrono::duration<double>(Clock::now() - start).count() > time_budget_s) {
        x.budget_hit = true;
        improved = false;
        break;
      }
    }
    if (!improved) break;
  }
  x.tree_cost = price.tree_cost(x.choice);
  x.dag_cost = current;
  return x;
}

std::optional<Extraction> extract_by_name(const std::string& name, const ExtractionProblem& p, double time_budget_s) {
  if (name == "tree-greedy") return extract_tree_greedy(p);
  if (name == "dag-greedy") return extract_dag_greedy(p, time_budget_s);
  if (name == "ilp") return extract_ilp(p, time_budget_s);
  return std::nullopt;
}

}  // namespace saturn::extract
