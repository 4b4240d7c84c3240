#include "extract/ilp.hpp"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "extract/class_graph.hpp"
#include "extract/extractors.hpp"

namespace saturn::extract {
namespace {

using Clock = std::chrono::steady_clock;

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using CbcModel = std::unique_ptr<Cbc_Model, CbcDeleter>;

// Which nodes and classes the program keeps, and what replaces a node pruned
// as dominated (so the incumbent can be stated over kept nodes).
struct Pruned {
  std::vector<char> node, cls;
  std::vector<std::int32_t> dominator;  // per node; -1: none
  std::vector<char> required;           // per class: every program needs it
  bool negative = false;
};

std::vector<std::uint32_t> distinct(std::vector<std::uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

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
    const auto kids = distinct(p.nodes[n].children);
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
    for (std::size_t i = 0; i < live.size(); ++i) kids[i] = distinct(p.nodes[live[i]].children);
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
        for (std::uint32_t k : distinct(p.nodes[n].children)) ++had[k];
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

}  // namespace

Extraction extract_ilp(const ExtractionProblem& p, double time_limit_s) {
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  Extraction best = extract_dag_greedy(p, time_limit_s / 4);
  ExactSolve solve;
  solve.incumbent = best.dag_cost;
  const Pruned kept = prune(p, best.dag_cost);
  for (std::uint32_t r : p.roots)
    if (!kept.cls[r]) {  // no finite program: nothing to solve
      solve.status = "infeasible";
      best.exact = solve;
      return best;
    }
  const std::size_t nn = p.nodes.size(), nc = p.classes.size();
  for (std::uint32_t n = 0; n < nn; ++n) solve.pruned_nodes += !kept.node[n];
  for (std::uint32_t c = 0; c < nc; ++c) solve.pruned_classes += !kept.cls[c];

  // Columns: a class's active variable, then node variables.
  std::vector<int> active(nc, -1), chosen(nn, -1), order(nc, -1);
  std::vector<double> lower, upper, objective;
  std::vector<char> integer;
  auto column = [&](double lo, double hi, double obj, bool is_int) {
    lower.push_back(lo);
    upper.push_back(hi);
    objective.push_back(obj);
    integer.push_back(is_int);
    return static_cast<int>(lower.size() - 1);
  };
  std::vector<std::vector<std::uint32_t>> live(nc);
  for (std::uint32_t c = 0; c < nc; ++c) {
    if (!kept.cls[c]) continue;
    for (std::uint32_t n : p.classes[c])
      if (kept.node[n]) live[c].push_back(n);
    const bool alone = live[c].size() == 1;
    active[c] = column(0, 1, alone ? p.nodes[live[c][0]].cost : 0, true);
    for (std::uint32_t n : live[c]) chosen[n] = alone ? active[c] : column(0, 1, p.nodes[n].cost, true);
  }
  for (std::uint32_t c = 0; c < nc; ++c)
    if (kept.required[c]) lower[static_cast<std::size_t>(active[c])] = 1;
  const Components scc = strong_components(p, [&](std::uint32_t n) { return kept.node[n] != 0; });
  for (std::uint32_t c = 0; c < nc; ++c)
    if (kept.cls[c] && scc.size[scc.of[c]] > 1) {
      order[c] = column(0, static_cast<double>(scc.size[scc.of[c]] - 1), 0, false);
      ++solve.cyclic_classes;
    }

  // Rows, row-wise; loaded at once as a column-major matrix below.
  struct Row {
    std::vector<std::pair<int, double>> terms;
    double lo, hi;
  };
  std::vector<Row> rows;
  constexpr double kFree = 1e30;  // CBC's infinity
  // A class needs child d through the sum of its chosen nodes that have d:
  // with one node chosen per class that sum is at most 1, and it is tighter
  // than one row per node (a child every node has follows the class itself).
  std::vector<std::vector<std::uint32_t>> users(nc);  // kept nodes needing a class
  for (std::uint32_t c = 0; c < nc; ++c) {
    if (!kept.cls[c]) continue;
    if (live[c].size() > 1) {
      Row one{{{active[c], -1.0}}, 0, 0};
      for (std::uint32_t n : live[c]) one.terms.emplace_back(chosen[n], 1.0);
      rows.push_back(std::move(one));
    }
    std::map<std::uint32_t, std::vector<int>> through;  // child class -> columns of nodes needing it
    for (std::uint32_t n : live[c])
      for (std::uint32_t k : distinct(p.nodes[n].children)) {
        users[k].push_back(n);
        through[k].push_back(chosen[n]);
      }
    for (const auto& [k, cols] : through) {
      const bool all = cols.size() == live[c].size();
      Row needs{{{active[k], -1.0}}, -kFree, 0};
      if (all)
        needs.terms.emplace_back(active[c], 1.0);
      else
        for (int col : cols) needs.terms.emplace_back(col, 1.0);
      rows.push_back(std::move(needs));
      if (order[c] >= 0 && scc.of[k] == scc.of[c]) {
        const double big = static_cast<double>(scc.size[scc.of[c]]);
        Row before{{{order[c], 1.0}, {order[k], -1.0}}, 1 - big, kFree};
        if (all)
          before.terms.emplace_back(active[c], -big);
        else
          for (int col : cols) before.terms.emplace_back(col, -big);
        rows.push_back(std::move(before));
      }
    }
  }
  if (kept.negative) {
    std::vector<char> is_root(nc, 0);
    for (std::uint32_t r : p.roots) is_root[r] = 1;
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (!kept.cls[c] || is_root[c]) continue;
      Row needed{{{active[c], 1.0}}, -kFree, 0};
      for (std::uint32_t n : users[c]) needed.terms.emplace_back(chosen[n], -1.0);
      rows.push_back(std::move(needed));
    }
  }
  const int ncols = static_cast<int>(lower.size());
  std::vector<std::vector<std::pair<int, double>>> by_column(lower.size());
  std::vector<double> row_lo, row_hi;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [col, coef] : rows[i].terms) by_column[static_cast<std::size_t>(col)].emplace_back(i, coef);
    row_lo.push_back(rows[i].lo);
    row_hi.push_back(rows[i].hi);
  }
  std::vector<CoinBigIndex> starts{0};
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& col : by_column) {
    for (const auto& [row, coef] : col) {
      index.push_back(row);
      value.push_back(coef);
    }
    starts.push_back(static_cast<CoinBigIndex>(index.size()));
  }
  solve.columns = lower.size();
  solve.rows = rows.size();

  CbcModel model(Cbc_newModel());
  Cbc_loadProblem(model.get(), ncols, static_cast<int>(rows.size()), starts.data(), index.data(), value.data(),
                  lower.data(), upper.data(), objective.data(), row_lo.data(), row_hi.data());
  for (int j = 0; j < ncols; ++j)
    if (integer[static_cast<std::size_t>(j)]) Cbc_setInteger(model.get(), j);
  Cbc_setLogLevel(model.get(), 0);
  const double left = std::max(0.01, time_limit_s - elapsed());
  Cbc_setMaximumSeconds(model.get(), left);
  // CBC 2.10 crashes (CglPreProcess::postProcess) when its time runs out
  // inside its preprocessing, which also overruns the limit on large
  // programs (tensat's bert: 5.7 s for 2): the pruning above does that job.
  Cbc_setParameter(model.get(), "preprocess", "off");
  // The limit is wall-clock time, as users read it (CBC's default is CPU
  // time, which a busy machine stretches).
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  // The incumbent, stated over kept nodes (a dominated choice moves to its
  // dominator, which costs no more and needs a subset of its children).
  std::vector<int> start_cols;
  if (std::isfinite(best.dag_cost)) {
    std::vector<std::int32_t> incumbent = best.choice;
    for (auto& n : incumbent)
      while (n >= 0 && !kept.node[static_cast<std::size_t>(n)] && kept.dominator[static_cast<std::size_t>(n)] >= 0)
        n = kept.dominator[static_cast<std::size_t>(n)];
    if (auto needed = children_first(p, incumbent)) {
      for (std::uint32_t c : *needed) {
        const auto n = static_cast<std::size_t>(incumbent[c]);
        if (!kept.node[n]) {
          start_cols.clear();
          break;
        }
        if (chosen[n] != active[c]) start_cols.push_back(chosen[n]);
        start_cols.push_back(active[c]);
      }
    }
  }
  if (!start_cols.empty()) {
    std::vector<double> ones(start_cols.size(), 1.0);
    Cbc_setMIPStartI(model.get(), static_cast<int>(start_cols.size()), start_cols.data(), ones.data());
  }
  Cbc_solve(model.get());

  solve.bound = Cbc_getBestPossibleObjValue(model.get());
  const double* x = Cbc_bestSolution(model.get());
  std::vector<std::int32_t> found(nc, -1);
  double found_cost = kInfinity;
  if (x != nullptr) {
    solve.objective = Cbc_getObjValue(model.get());
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (!kept.cls[c] || x[active[c]] < 0.5) continue;
      for (std::uint32_t n : live[c])
        if (x[chosen[n]] > 0.5) found[c] = static_cast<std::int32_t>(n);
    }
    found_cost = dag_cost(p, found);
  }
  const bool proved = Cbc_isProvenOptimal(model.get()) != 0;
  if (proved) solve.bound = std::min(solve.bound, solve.objective);
  const double tolerance = 1e-9 * std::max(1.0, std::abs(best.dag_cost));
  if (found_cost < best.dag_cost - tolerance || (proved && !std::isfinite(best.dag_cost))) {
    best.choice = std::move(found);
    best.dag_cost = found_cost;
    best.tree_cost = tree_cost(p, best.choice);
  } else {
    solve.kept_incumbent = true;
  }
  if (proved)
    solve.status = "optimal";
  else if (!solve.kept_incumbent)
    solve.status = "feasible";
  else
    solve.status = std::isfinite(best.dag_cost) ? "timeout" : "infeasible";
  best.budget_hit = !proved && Cbc_isSecondsLimitReached(model.get()) != 0;
  best.exact = solve;
  return best;
}

}  // namespace saturn::extract
