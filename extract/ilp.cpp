#include "extract/ilp.hpp"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "extract/class_graph.hpp"
#include "extract/extractors.hpp"
#include "extract/ilp_prune.hpp"

namespace saturn::extract {
namespace {

using Clock = std::chrono::steady_clock;

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using CbcModel = std::unique_ptr<Cbc_Model, CbcDeleter>;

constexpr double kFree = 1e30;  // CBC's infinity

struct Row {
  std::vector<std::pair<int, double>> terms;
  double lo, hi;
};

// A 0-1 program in the form CBC loads: columns, then rows added row-wise.
struct Program {
  std::vector<double> lower, upper, objective;
  std::vector<Row> rows;

  int column(double obj) {
    lower.push_back(0);
    upper.push_back(1);
    objective.push_back(obj);
    return static_cast<int>(lower.size() - 1);
  }
};

// What one CBC run established about a program.
struct Outcome {
  std::vector<double> x;  // empty: no solution
  double objective = kInfinity, bound = -kInfinity;
  bool proved = false, out_of_time = false, improved = false;
};

Outcome run_cbc(const Program& prog, double seconds, const std::vector<int>& start_cols) {
  const int ncols = static_cast<int>(prog.lower.size());
  std::vector<std::vector<std::pair<int, double>>> by_column(prog.lower.size());
  std::vector<double> row_lo, row_hi;
  for (std::size_t i = 0; i < prog.rows.size(); ++i) {
    for (const auto& [col, coef] : prog.rows[i].terms)
      by_column[static_cast<std::size_t>(col)].emplace_back(static_cast<int>(i), coef);
    row_lo.push_back(prog.rows[i].lo);
    row_hi.push_back(prog.rows[i].hi);
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
  CbcModel model(Cbc_newModel());
  Cbc_loadProblem(model.get(), ncols, static_cast<int>(prog.rows.size()), starts.data(), index.data(), value.data(),
                  prog.lower.data(), prog.upper.data(), prog.objective.data(), row_lo.data(), row_hi.data());
  for (int j = 0; j < ncols; ++j) Cbc_setInteger(model.get(), j);
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), std::max(0.01, seconds));
  // CBC 2.10 crashes (CglPreProcess::postProcess) when its time runs out
  // inside its preprocessing, which also overruns the limit on large
  // programs (tensat's bert: 5.7 s for 2): the pruning does that job.
  Cbc_setParameter(model.get(), "preprocess", "off");
  // The limit is wall-clock time, as users read it (CBC's default is CPU
  // time, which a busy machine stretches).
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  // Both cores of a small machine (a proof on diospyros' 2x2 convolution:
  // 12.0 s on one thread, 8.8 s on two). CBC's deterministic parallel mode
  // is slower than one thread, so the program chosen among several of equal
  // cost may differ between runs; the cost does not.
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 2u);
  Cbc_setParameter(model.get(), "threads", std::to_string(threads).c_str());
  // With the DAG-greedy incumbent given, CBC's primal heuristics mostly
  // re-find it; the search spends that time on the bound (9.0 s against
  // 12.0 s on the same proof, single-threaded).
  if (!start_cols.empty()) Cbc_setParameter(model.get(), "heuristicsOnOff", "off");
  if (!start_cols.empty()) {
    std::vector<double> ones(start_cols.size(), 1.0);
    Cbc_setMIPStartI(model.get(), static_cast<int>(start_cols.size()), start_cols.data(), ones.data());
  }
  Cbc_solve(model.get());
  Outcome out;
  out.bound = Cbc_getBestPossibleObjValue(model.get());
  out.proved = Cbc_isProvenOptimal(model.get()) != 0;
  out.out_of_time = Cbc_isSecondsLimitReached(model.get()) != 0;
  if (const double* x = Cbc_bestSolution(model.get())) {
    out.x.assign(x, x + ncols);
    out.objective = Cbc_getObjValue(model.get());
    if (out.proved) out.bound = std::min(out.bound, out.objective);
  }
  return out;
}

// The program over the kept nodes, without acyclicity (added lazily, as cuts
// on the cycles solutions close).
struct Formulation {
  Program prog;
  std::vector<int> active, chosen;               // per class / node; -1: pruned
  std::vector<std::vector<std::uint32_t>> live;  // kept nodes per class

  Formulation(const ExtractionProblem& p, const Pruned& kept) {
    const std::size_t nc = p.classes.size();
    active.assign(nc, -1);
    chosen.assign(p.nodes.size(), -1);
    live.resize(nc);
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (!kept.cls[c]) continue;
      for (std::uint32_t n : p.classes[c])
        if (kept.node[n]) live[c].push_back(n);
      const bool alone = live[c].size() == 1;
      active[c] = prog.column(alone ? p.nodes[live[c][0]].cost : 0);
      if (kept.required[c]) prog.lower[static_cast<std::size_t>(active[c])] = 1;
      for (std::uint32_t n : live[c]) chosen[n] = alone ? active[c] : prog.column(p.nodes[n].cost);
    }
    // A class needs child d through the sum of its chosen nodes that have d:
    // with one node chosen per class that sum is at most 1, and it is tighter
    // than one row per node (a child every node has follows the class itself).
    std::vector<std::vector<std::uint32_t>> users(nc);  // kept nodes needing a class
    for (std::uint32_t c = 0; c < nc; ++c) {
      if (!kept.cls[c]) continue;
      if (live[c].size() > 1) {
        Row one{{{active[c], -1.0}}, 0, 0};
        for (std::uint32_t n : live[c]) one.terms.emplace_back(chosen[n], 1.0);
        prog.rows.push_back(std::move(one));
      }
      std::map<std::uint32_t, std::vector<int>> through;  // child class -> columns of nodes needing it
      for (std::uint32_t n : live[c])
        for (std::uint32_t k : distinct_children(p, n)) {
          users[k].push_back(n);
          through[k].push_back(chosen[n]);
        }
      for (const auto& [k, cols] : through) {
        Row needs{{{active[k], -1.0}}, -kFree, 0};
        if (cols.size() == live[c].size())
          needs.terms.emplace_back(active[c], 1.0);
        else
          for (int col : cols) needs.terms.emplace_back(col, 1.0);
        prog.rows.push_back(std::move(needs));
      }
    }
    if (kept.negative) {
      std::vector<char> is_root(nc, 0);
      for (std::uint32_t r : p.roots) is_root[r] = 1;
      for (std::uint32_t c = 0; c < nc; ++c) {
        if (!kept.cls[c] || is_root[c]) continue;
        Row needed{{{active[c], 1.0}}, -kFree, 0};
        for (std::uint32_t n : users[c]) needed.terms.emplace_back(chosen[n], -1.0);
        prog.rows.push_back(std::move(needed));
      }
    }
  }

  // Forbids cycles inside class set S. The chosen graph restricted to the
  // active classes of S is acyclic, so it has a class choosing a node with no
  // child in S: whenever s in S chooses a node with a child in S (is active
  // and points into S), some other class of S chooses one that does not,
  //   x(s -> S) <= sum over c in S - {s} of x(c -/-> S),
  // one row per s (generalized subtour elimination; tighter than the
  // cardinality form x(S -> S) <= |S| - 1, which large sets get instead).
  void forbid_cycle(const ExtractionProblem& p, const std::vector<std::uint32_t>& classes) {
    std::vector<std::vector<int>> into(classes.size()), out_of(classes.size());  // columns per class of S
    for (std::size_t i = 0; i < classes.size(); ++i)
      for (std::uint32_t n : live[classes[i]]) {
        const auto& kids = p.nodes[n].children;
        const bool in_s = std::any_of(kids.begin(), kids.end(), [&](std::uint32_t k) {
          return std::binary_search(classes.begin(), classes.end(), k);
        });
        (in_s ? into : out_of)[i].push_back(chosen[n]);
      }
    constexpr std::size_t kPerClassRows = 16;
    if (classes.size() > kPerClassRows) {
      Row cut{{}, -kFree, static_cast<double>(classes.size()) - 1};
      for (const auto& cols : into)
        for (int col : cols) cut.terms.emplace_back(col, 1.0);
      prog.rows.push_back(std::move(cut));
      return;
    }
    for (std::size_t s = 0; s < classes.size(); ++s) {
      Row cut{{}, -kFree, 0};
      for (int col : into[s]) cut.terms.emplace_back(col, 1.0);
      for (std::size_t i = 0; i < classes.size(); ++i)
        if (i != s)
          for (int col : out_of[i]) cut.terms.emplace_back(col, -1.0);
      prog.rows.push_back(std::move(cut));
    }
  }

  // The choice a solution makes (-1 for inactive classes).
  std::vector<std::int32_t> choice(const std::vector<double>& x) const {
    std::vector<std::int32_t> found(active.size(), -1);
    for (std::size_t c = 0; c < active.size(); ++c) {
      if (active[c] < 0 || x[static_cast<std::size_t>(active[c])] < 0.5) continue;
      for (std::uint32_t n : live[c])
        if (x[static_cast<std::size_t>(chosen[n])] > 0.5) found[c] = static_cast<std::int32_t>(n);
    }
    return found;
  }

  // A choice as the columns set to one, when every class it needs is kept
  // (a dominated node moves to its dominator, which costs no more and needs
  // a subset of its children); empty when it cannot be stated.
  std::vector<int> columns_of(const ExtractionProblem& p, const Pruned& kept, std::vector<std::int32_t> choice) const {
    for (auto& n : choice)
      while (n >= 0 && !kept.node[static_cast<std::size_t>(n)] && kept.dominator[static_cast<std::size_t>(n)] >= 0)
        n = kept.dominator[static_cast<std::size_t>(n)];
    std::vector<int> cols;
    const auto needed = children_first(p, choice);
    if (!needed) return cols;
    for (std::uint32_t c : *needed) {
      const auto n = static_cast<std::size_t>(choice[c]);
      if (!kept.node[n]) return {};
      if (chosen[n] != active[c]) cols.push_back(chosen[n]);
      cols.push_back(active[c]);
    }
    return cols;
  }
};

}  // namespace

Extraction extract_ilp(const ExtractionProblem& p, double time_limit_s) {
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  Extraction best = extract_dag_greedy(p, time_limit_s / 4);
  ExactSolve solve;
  solve.incumbent = best.dag_cost;
  // Pruning bounds the objective, which under fusion is the unfused sum (a
  // fused DAG cost is lower: bounding by it would drop every program).
  const Pruned kept = prune(p, p.fusion ? unfused_dag_cost(p, best.choice) : best.dag_cost);
  for (std::uint32_t r : p.roots)
    if (!kept.cls[r]) {  // no finite program: nothing to solve
      solve.status = "infeasible";
      best.exact = solve;
      return best;
    }
  const std::size_t nn = p.nodes.size(), nc = p.classes.size();
  for (std::uint32_t n = 0; n < nn; ++n) solve.pruned_nodes += !kept.node[n];
  for (std::uint32_t c = 0; c < nc; ++c) solve.pruned_classes += !kept.cls[c];
  const Components scc = strong_components(p, [&](std::uint32_t n) { return kept.node[n] != 0; });
  for (std::uint32_t c = 0; c < nc; ++c) solve.cyclic_classes += kept.cls[c] && scc.size[scc.of[c]] > 1;

  Formulation f(p, kept);
  // Short cycles (up to four classes) are forbidden from the start: each
  // would otherwise cost a solve that closes it (tensat's bert has 630).
  std::vector<std::uint32_t> cyclic;
  for (std::uint32_t c = 0; c < nc; ++c)
    if (kept.cls[c] && scc.size[scc.of[c]] > 1) cyclic.push_back(c);
  constexpr std::size_t short_length = 4;
  for (const auto& cycle : shortest_cycles(
           p, [&](std::uint32_t n) { return kept.node[n] != 0; }, cyclic, short_length)) {
    f.forbid_cycle(p, cycle);
    ++solve.cycle_cuts;
  }
  std::vector<int> start_cols;
  if (std::isfinite(best.dag_cost)) start_cols = f.columns_of(p, kept, best.choice);

  // Solve without the cycles not yet forbidden; a solution that closes one
  // forbids it and solves again (every earlier cut stays: each removes only
  // cyclic choices, so the incumbent stays feasible and the bound valid).
  const double tolerance = 1e-9 * std::max(1.0, std::abs(best.dag_cost));
  bool proved = false, out_of_time = false, improved = false;
  for (;;) {
    const double left = time_limit_s - elapsed();
    if (left <= 0) {
      out_of_time = true;
      break;
    }
    solve.columns = f.prog.lower.size();
    solve.rows = f.prog.rows.size();
    const Outcome out = run_cbc(f.prog, left, start_cols);
    ++solve.solves;
    solve.bound = std::max(solve.bound, out.bound);
    out_of_time = out.out_of_time;
    if (out.x.empty()) break;
    std::vector<std::int32_t> found = f.choice(out.x);
    const auto cycles = choice_cycles(p, found);
    if (cycles.empty()) {
      solve.objective = out.objective;
      const double cost = dag_cost(p, found);
      if (cost < best.dag_cost - tolerance || (out.proved && !std::isfinite(best.dag_cost))) {
        best.choice = std::move(found);
        best.dag_cost = cost;
        best.tree_cost = tree_cost(p, best.choice);
        improved = true;
      }
      proved = out.proved;
      break;
    }
    for (const auto& classes : cycles) f.forbid_cycle(p, classes);
    solve.cycle_cuts += cycles.size();
    if (!out.proved) break;  // out of time with a cyclic solution
  }
  solve.kept_incumbent = !improved;
  if (proved) solve.bound = std::min(solve.bound, solve.objective);
  if (proved)
    solve.status = "optimal";
  else if (!solve.kept_incumbent)
    solve.status = "feasible";
  else
    solve.status = std::isfinite(best.dag_cost) ? "timeout" : "infeasible";
  best.budget_hit = !proved && out_of_time;
  best.exact = solve;
  return best;
}

}  // namespace saturn::extract
