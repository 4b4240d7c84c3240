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
  x.class_tree_cost = std::move(best);
  return x;
}

namespace {

// DAG cost of a choice, marking the classes it needs in `in` (resized).
double selection(const ExtractionProblem& p, const std::vector<std::int32_t>& choice, std::vector<char>& in) {
  in.assign(p.classes.size(), 0);
  double total = dag_cost(p, choice);
  if (total == kInfinity) return total;
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  while (!stack.empty()) {
    std::uint32_t c = stack.back();
    stack.pop_back();
    if (in[c]) continue;
    in[c] = 1;
    for (std::uint32_t k : p.nodes[static_cast<std::size_t>(choice[c])].children) stack.push_back(k);
  }
  return total;
}

}  // namespace

Extraction extract_dag_greedy(const ExtractionProblem& p, double time_budget_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Extraction x = extract_tree_greedy(p);
  x.class_tree_cost.clear();  // stale once the choice changes
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
  for (;;) {
    ++x.passes;
    bool improved = false;
    selection(p, x.choice, in);
    std::vector<std::uint32_t> needed;
    for (std::uint32_t c = 0; c < p.classes.size(); ++c)
      if (in[c]) needed.push_back(c);
    for (std::uint32_t c : needed) {
      if (p.classes[c].size() < 2) continue;
      for (std::uint32_t n : p.classes[c]) {
        if (static_cast<std::int32_t>(n) == x.choice[c] || !usable(n)) continue;
        std::vector<std::pair<std::uint32_t, std::int32_t>> undo = {{c, x.choice[c]}};
        x.choice[c] = static_cast<std::int32_t>(n);
        double cost = selection(p, x.choice, in_after);
        if (cost != kInfinity && !(cost < current * (1 - 1e-12))) {
          // A swap that brings in new classes may pay off once other needed
          // classes reuse them (two projections sharing one merged product):
          // follow up greedily through the new classes' parents.
          for (std::uint32_t k = 0; k < p.classes.size(); ++k) {
            if (!in_after[k] || in[k]) continue;
            for (std::uint32_t q : parents[k]) {
              const std::uint32_t qc = p.nodes[q].cls;
              if (!in_after[qc] || qc == c || static_cast<std::int32_t>(q) == x.choice[qc] || !usable(q)) continue;
              bool ready = true;
              for (std::uint32_t kk : p.nodes[q].children) ready &= in_after[kk] != 0;
              if (!ready) continue;
              const std::int32_t before = x.choice[qc];
              x.choice[qc] = static_cast<std::int32_t>(q);
              double c2 = dag_cost(p, x.choice);
              if (c2 < cost) {
                cost = c2;
                undo.emplace_back(qc, before);
              } else {
                x.choice[qc] = before;
              }
            }
          }
        }
        if (cost < current * (1 - 1e-12)) {
          current = cost;
          improved = true;
          selection(p, x.choice, in);
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
