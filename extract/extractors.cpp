#include "extract/extractors.hpp"

#include <chrono>
#include <deque>

namespace saturn::extract {

Extraction extract_tree_greedy(const ExtractionProblem& p) {
  const std::size_t nc = p.classes.size();
  std::vector<double> best(nc, kInfinity);
  Extraction x;
  x.choice.assign(nc, -1);
  // Parents (node indices) of each class, to re-examine when it gets cheaper.
  std::vector<std::vector<std::uint32_t>> parents(nc);
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    for (std::uint32_t k : p.nodes[n].children) parents[k].push_back(n);
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
    for (std::uint32_t k : node.children) c += best[k];
    const std::uint32_t cls = node.cls;
    // Only strictly cheaper: with costs >= 0, a strict improvement never
    // closes a cycle, while switching between equal costs could (a
    // zero-cost node whose child class is its own).
    if (c < best[cls]) {
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
  return x;
}

Extraction extract_dag_greedy(const ExtractionProblem& p, double time_budget_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Extraction x = extract_tree_greedy(p);
  // Finite tree cost of each node (for skipping nodes that cannot be used).
  std::vector<double> best(p.classes.size(), kInfinity);
  for (std::size_t c = 0; c < p.classes.size(); ++c)
    if (x.choice[c] >= 0) best[c] = 0;
  double current = x.dag_cost;
  if (current == kInfinity) return x;
  for (;;) {
    ++x.passes;
    bool improved = false;
    // The classes the current choice needs, children first.
    std::vector<std::uint32_t> needed;
    std::vector<bool> seen(p.classes.size(), false);
    std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
    while (!stack.empty()) {
      std::uint32_t c = stack.back();
      stack.pop_back();
      if (seen[c]) continue;
      seen[c] = true;
      needed.push_back(c);
      for (std::uint32_t k : p.nodes[static_cast<std::size_t>(x.choice[c])].children) stack.push_back(k);
    }
    for (std::uint32_t c : needed) {
      if (p.classes[c].size() < 2) continue;
      for (std::uint32_t n : p.classes[c]) {
        if (static_cast<std::int32_t>(n) == x.choice[c] || p.nodes[n].cost == kInfinity) continue;
        bool usable = true;
        for (std::uint32_t k : p.nodes[n].children) usable &= best[k] < kInfinity;
        if (!usable) continue;
        const std::int32_t old = x.choice[c];
        x.choice[c] = static_cast<std::int32_t>(n);
        double cost = dag_cost(p, x.choice);
        if (cost < current * (1 - 1e-12)) {
          current = cost;
          improved = true;
        } else {
          x.choice[c] = old;
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
  x.tree_cost = tree_cost(p, x.choice);
  x.dag_cost = current;
  return x;
}

std::optional<Extraction> extract_by_name(const std::string& name, const ExtractionProblem& p, double time_budget_s) {
  if (name == "tree-greedy") return extract_tree_greedy(p);
  if (name == "dag-greedy") return extract_dag_greedy(p, time_budget_s);
  return std::nullopt;
}

}  // namespace saturn::extract
