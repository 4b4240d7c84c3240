// An e-graph (as an extraction problem) as Graphviz text, with a program
// extracted from it marked (`saturn dot EGRAPH.json`).
//
// One cluster per e-class (its index; "root" on the roots'), one box per
// e-node (its op and cost) inside it, and an edge from each node to the
// cluster of each child class. The extracted program's nodes are filled
// and their edges drawn bold, so the chosen program reads as a path
// through the clusters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "extract/problem.hpp"

namespace saturn::extract {

// `choice`: a node per class, -1 where none is chosen (empty: none marked).
std::string problem_to_dot(const ExtractionProblem& p, const std::vector<std::int32_t>& choice);

}  // namespace saturn::extract
