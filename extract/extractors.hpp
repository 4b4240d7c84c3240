// Extractors over an ExtractionProblem.
//
// tree-greedy: egg's bottom-up fixpoint; a class costs its cheapest node plus
// its children's costs, so a shared subterm is paid once per use. Cycles are
// harmless: a node on a cycle only gets a finite cost through an acyclic way
// out, and only strict improvements replace a choice, so the choice is
// acyclic. Ties keep the node found first (deterministic).
//
// dag-greedy (the default): starts from tree-greedy's choice and improves
// its DAG cost (each chosen class paid once) by local search: for each class
// the current choice needs, try every other node of finite cost and keep the
// swap when the DAG cost of the whole choice drops. A swap that brings new
// classes into the program is followed up before it is judged: needed
// classes with a node over the new classes switch to it where that is
// cheaper, so two consumers can move to one shared producer together (the
// merged matmul of TASO's rewrite), which single swaps never find. A swap
// that would make a cycle has infinite DAG cost, so the result is always
// acyclic and never worse than tree-greedy's under DAG cost. It stops when a pass improves
// nothing, or at its time budget (reported).
#pragma once

#include <string>

#include "extract/problem.hpp"

namespace saturn::extract {

Extraction extract_tree_greedy(const ExtractionProblem& p);
Extraction extract_dag_greedy(const ExtractionProblem& p, double time_budget_s = 10.0);

// By name ("tree-greedy", "dag-greedy", "ilp": extract_ilp in ilp.hpp); nullopt
// for an unknown name.
std::optional<Extraction> extract_by_name(const std::string& name, const ExtractionProblem& p,
                                          double time_budget_s = 10.0);
inline constexpr const char* kExtractorNames = "tree-greedy, dag-greedy, ilp";

}  // namespace saturn::extract
