// One node of a graph rewritten in primitive ops by the decomposition rules
// (rulesets/decompose.rules and constfold.rules): its graph alone in an
// e-graph, saturated with them, and extracted with every composite priced
// at infinity. A composite op without a gradient of its own takes its
// gradient from this form (pipeline/autodiff.hpp).
//
// Invariant: the form computes the node's results from its operands (the
// decompositions are proved by `saturn verify` and checked against each op's
// reference in tests/test_decompose.cpp); its inputs are the node's operands
// under their names, its outputs the node's results under theirs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "rules/rule_file.hpp"

namespace saturn::pipeline {

class Decomposer {
 public:
  // Loads decompose.rules and constfold.rules from `rulesets_dir`.
  static Expected<Decomposer> load(const std::string& rulesets_dir);
  // The primitive form of g.nodes[node] (erf counts as primitive: it has
  // no closed form), or nullopt when the rules give none.
  Expected<std::optional<ir::Graph>> decompose(const ir::Graph& g, std::size_t node) const;

 private:
  std::vector<rules::Phase> phases_;
};

}  // namespace saturn::pipeline
