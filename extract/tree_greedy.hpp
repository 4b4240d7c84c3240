// Tree-cost greedy extraction of terms (egg's Extractor) for symbolic
// e-graphs priced per operator: extract_tree_greedy (extractors.hpp) on the
// e-graph's ExtractionProblem, with the chosen nodes read back as a Term.
// Shared subterms are paid once per use (tree cost).
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/term.hpp"
#include "extract/problem.hpp"

namespace saturn::extract {

using egraph::EClassId;
using egraph::NodeId;
using egraph::Op;

// Cost of one node, not counting its children. Infinity: never pick it.
using OpCost = std::function<double(Op op)>;

// AST size: every node costs 1.
double ast_size(Op);

// Per-operator costs with a default for the others.
class OpCostTable {
 public:
  explicit OpCostTable(double fallback = 1.0) : fallback_(fallback) {}
  void set(Op op, double cost) { costs_[op] = cost; }
  double operator()(Op op) const {
    auto it = costs_.find(op);
    return it == costs_.end() ? fallback_ : it->second;
  }

 private:
  double fallback_;
  std::unordered_map<Op, double> costs_;
};

class TreeGreedyExtractor {
 public:
  // Computes the best node of every class of a rebuilt e-graph.
  TreeGreedyExtractor(const egraph::EGraph& g, OpCost cost = ast_size);

  // Best tree cost of a class; infinity when no finite term exists.
  double cost(EClassId id) const;
  NodeId best_node(EClassId id) const;
  // The cheapest term for the class; nullopt when its cost is infinite.
  std::optional<egraph::Term> extract(EClassId id) const;

 private:
  const egraph::EGraph& g_;
  ExtractionProblem problem_;
  Extraction choice_;
};

}  // namespace saturn::extract
