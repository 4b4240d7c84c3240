// An extraction problem: e-classes, their nodes with costs, and roots.
//
// Extractors work on this flat form, not on the EGraph, so the same code
// extracts from Saturn's own e-graphs (priced by a target's cost model) and
// from egraph-serialize JSON files written by other tools (priced by their
// "cost" fields), which is how extractors are compared on public data sets.
// Classes and nodes are dense indices; a node belongs to exactly one class.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "ir/diagnostic.hpp"

namespace saturn::extract {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// a + b, where finite costs stay finite: a tree cost pays a shared subterm
// once per use, so a chain of 1,100 ops each using its operand twice costs
// 2^1100 units, past double's range. Saturated to the largest double, it
// still outranks every program that fits and is never taken for infinity
// (a program the target cannot run).
inline double cost_sum(double a, double b) {
  const double s = a + b;
  return s == kInfinity && a != kInfinity && b != kInfinity ? std::numeric_limits<double>::max() : s;
}

// How the lowering fuses a node with its consumer (docs/cost-model.md): an
// elementwise result used once, by an elementwise op of the same size or by
// a reduction, is never stored; the consumer's kernel computes it. A fused
// chain is one kernel, priced as one: the work of all its nodes, the bytes
// it reads from outside and writes at its end, one kernel overhead.
enum class FuseRole : std::uint8_t { None, Elementwise, Reduction };

// A node's cost split the way a fused kernel adds it up; for a node alone,
// cost = max(compute, sum(read) + write) + overhead.
struct FusedPrice {
  FuseRole role = FuseRole::None;
  double compute_us = 0;
  double write_us = 0;
  double overhead_us = 0;  // of all its kernels
  double out_elems = 0;
  std::vector<double> read_us;  // per child slot (0 for attribute children), as many times as it is read
  // The kernels that read child 0 (softmax: max, sum and result): a chain
  // joined there is computed, and its inputs read, in each of them.
  int operand_passes = 1;
  // Written to memory where it is made (materialize): never joins its
  // consumer; a boundary over a value no chain joins costs nothing (the
  // value is in memory already).
  bool boundary = false;
};

// A price that depends on the node chosen for a node's first child: how
// the lowering lays that value out (CostModel::price_after). When child 0's
// chosen node is one of `after`, the node costs `cost` instead of its own.
template <typename NodeRef>
struct LayoutPrice {
  std::vector<NodeRef> after;
  double cost = 0;
};

struct ExtractionProblem {
  struct Node {
    std::uint32_t cls = 0;
    double cost = 1;
    std::vector<std::uint32_t> children;  // class indices
    std::string op;                       // for messages and reports
    FusedPrice fused;                     // role None: priced alone, at `cost`
    LayoutPrice<std::uint32_t> layout;    // node indices
  };
  std::vector<Node> nodes;
  std::vector<std::vector<std::uint32_t>> classes;  // node indices per class
  std::vector<std::uint32_t> roots;                 // class indices
  // Back to the e-graph (when built from one): node index -> NodeId,
  // class index -> canonical EClassId.
  std::vector<egraph::NodeId> node_ids;
  std::vector<egraph::EClassId> class_ids;
  bool fusion = false;  // some node has a FuseRole: DAG costs price fused chains once
  std::uint32_t class_index(egraph::EClassId c) const;
};

// What an exact (ILP) extraction established.
struct ExactSolve {
  std::string status;            // "optimal", "feasible" (stopped with a gap), "timeout" (the incumbent kept)
  double bound = -kInfinity;     // no program costs less (the objective's; the unfused sum under fusion)
  double objective = kInfinity;  // the solver's best objective
  double incumbent = kInfinity;  // DAG cost of the DAG-greedy start
  bool kept_incumbent = false;   // the solver found nothing cheaper
  std::size_t columns = 0, rows = 0;
  std::size_t pruned_nodes = 0, pruned_classes = 0;
  std::size_t cyclic_classes = 0;  // kept classes in strongly connected components of the class graph
  std::size_t cycle_cuts = 0;      // cycles forbidden (two-class ones first, then those solutions closed)
  std::size_t solves = 0;          // CBC runs (one more per solution that closed a cycle)
};

// A choice of one node per needed class (-1: not chosen).
struct Extraction {
  std::vector<std::int32_t> choice;     // per class
  double tree_cost = kInfinity;         // shared subterms paid once per use
  double dag_cost = kInfinity;          // each chosen class paid once
  std::vector<double> class_tree_cost;  // per class, under this choice (tree-greedy only; else empty)
  std::size_t passes = 0;               // improvement passes (DAG extractor)
  std::size_t programs_priced = 0;      // whole choices priced by its local search (DAG extractor)
  bool budget_hit = false;              // the DAG extractor stopped at its time budget
  std::optional<ExactSolve> exact;      // what the ILP extractor proved
};

// Cost of one live e-node (not counting its children); infinity: never pick.
using NodeCost = std::function<double(const egraph::EGraph&, egraph::NodeId)>;
// The same with how it fuses (read_us per child slot).
struct NodePrice {
  NodePrice() = default;
  NodePrice(double c, FusedPrice f) : cost(c), fused(std::move(f)) {}
  double cost = 0;
  FusedPrice fused;
  LayoutPrice<egraph::NodeId> layout;
};
using NodePricing = std::function<NodePrice(const egraph::EGraph&, egraph::NodeId)>;

// The rebuilt e-graph's classes and live nodes.
ExtractionProblem problem_from_egraph(const egraph::EGraph& g, std::span<const egraph::EClassId> roots,
                                      const NodeCost& cost);
ExtractionProblem problem_from_egraph(const egraph::EGraph& g, std::span<const egraph::EClassId> roots,
                                      const NodePricing& price);
// egraph-serialize JSON ("nodes", "root_eclasses"); errors name the entry.
Expected<ExtractionProblem> read_serialized_json(const std::string& text, const std::string& path);

// Costs of a choice from the problem's roots; infinity when a needed class
// has no choice or the choice has a cycle. The DAG cost prices fused chains
// once when the problem has fusion roles; the tree cost never fuses. Each
// is one call of a DagPricer (dag_pricer.hpp): keep one to price many
// choices of a problem.
double tree_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);
double dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);
// The DAG cost with every node priced alone, fused or not: what a linear
// objective (the ILP's) adds up.
double unfused_dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);

}  // namespace saturn::extract
