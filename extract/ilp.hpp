// Exact DAG extraction: a 0-1 integer program solved by CBC (TENSAT's and
// extraction-gym's formulation, with pruning first).
//
// Invariant: the returned choice is acyclic, needs every root, and its DAG
// cost is never above that of the DAG-greedy choice it starts from (the
// incumbent); the status says whether it is proved optimal.
//
// The program: one binary per kept class (active) and per kept node of a
// class with several (chosen; a class with one node uses its active
// variable), minimizing the sum of chosen nodes' costs.
//   - an active class chooses exactly one node; roots are active;
//   - a chosen node's child classes are active;
//   - with negative costs, a class is active only when a chosen node needs
//     it (else the solver would add unneeded classes for their reward);
//   - acyclicity, as cuts: for a class set S on a cycle, whenever a class
//     s of S chooses a node with a child in S, another class of S chooses
//     one without (generalized subtour elimination, one row per s). The
//     short cycles of the class graph's strongly connected components
//     (Boost.Graph) are cut from the start; a solution that still closes a
//     cycle has its cycles cut and the program is solved again, until a
//     solution is acyclic or the time runs out (extraction-gym's lazy cycle
//     blocking, with the stronger rows).
// Pruning first (extract/ilp_prune.hpp).
//
// Saturn's tensor e-graphs price fused chains once (problem.fusion); that
// DAG cost is not linear in the nodes, so there the program minimizes the
// unfused sum and the result is kept only when its fused DAG cost is below
// the incumbent's ("optimal" then refers to the unfused objective).
#pragma once

#include <string>

#include "extract/problem.hpp"

namespace saturn::extract {

// `time_limit_s` covers the incumbent and the solve together.
Extraction extract_ilp(const ExtractionProblem& p, double time_limit_s = 10.0);

}  // namespace saturn::extract
