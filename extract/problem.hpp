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
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "ir/diagnostic.hpp"

namespace saturn::extract {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct ExtractionProblem {
  struct Node {
    std::uint32_t cls = 0;
    double cost = 1;
    std::vector<std::uint32_t> children;  // class indices
    std::string op;                       // for messages and reports
  };
  std::vector<Node> nodes;
  std::vector<std::vector<std::uint32_t>> classes;  // node indices per class
  std::vector<std::uint32_t> roots;                 // class indices
  // Back to the e-graph (when built from one): node index -> NodeId,
  // class index -> canonical EClassId.
  std::vector<egraph::NodeId> node_ids;
  std::vector<egraph::EClassId> class_ids;
  std::uint32_t class_index(egraph::EClassId c) const;
};

// A choice of one node per needed class (-1: not chosen).
struct Extraction {
  std::vector<std::int32_t> choice;     // per class
  double tree_cost = kInfinity;         // shared subterms paid once per use
  double dag_cost = kInfinity;          // each chosen class paid once
  std::vector<double> class_tree_cost;  // per class, under this choice (tree-greedy only; else empty)
  std::size_t passes = 0;               // improvement passes (DAG extractor)
  bool budget_hit = false;              // the DAG extractor stopped at its time budget
};

// Cost of one live e-node (not counting its children); infinity: never pick.
using NodeCost = std::function<double(const egraph::EGraph&, egraph::NodeId)>;

// The rebuilt e-graph's classes and live nodes.
ExtractionProblem problem_from_egraph(const egraph::EGraph& g, std::span<const egraph::EClassId> roots,
                                      const NodeCost& cost);
// egraph-serialize JSON ("nodes", "root_eclasses"); errors name the entry.
Expected<ExtractionProblem> read_serialized_json(const std::string& text, const std::string& path);

// Costs of a choice from the problem's roots; infinity when a needed class
// has no choice or the choice has a cycle.
double tree_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);
double dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);

}  // namespace saturn::extract
