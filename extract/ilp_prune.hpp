// Pruning an extraction problem before its exact (ILP) solve: what no
// optimal program needs, removed so the solver sees fewer columns.
//
// Invariant: some optimal program (of DAG cost at most `incumbent`) uses only
// kept nodes, or a kept dominator in place of a dropped node; every kept node
// belongs to a kept class, every kept class has a kept node and is reachable
// from the roots through kept nodes.
//
// Removed: nodes of infinite cost or with their own class as a child, nodes
// needing a class with no finite program, classes the roots cannot reach,
// and, when no cost is negative, nodes dominated by a sibling that costs no
// more and needs a subset of their children (choosing the sibling instead is
// never worse and closes no new cycle) and nodes that cannot be in a program
// cheaper than the incumbent.
#pragma once

#include <cstdint>
#include <vector>

#include "extract/problem.hpp"

namespace saturn::extract {

// Which nodes and classes the program keeps, and what replaces a node pruned
// as dominated (so the incumbent can be stated over kept nodes).
struct Pruned {
  std::vector<char> node, cls;
  std::vector<std::int32_t> dominator;  // per node; -1: none
  std::vector<char> required;           // per class: every program needs it
  bool negative = false;                // some cost is negative
};

// `incumbent`: the DAG cost of a known program (infinity when none).
Pruned prune(const ExtractionProblem& p, double incumbent);

}  // namespace saturn::extract
