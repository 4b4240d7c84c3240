// The class graph of an extraction problem, for Boost.Graph's algorithms.
//
// Vertex c is class c; there is an edge c -> d for every child class d of a
// node of c that `keep` admits (the chosen graph of a choice keeps its chosen
// nodes) (parallel edges collapse: the algorithms used
// here only ask which classes reach which). Extractors ask it for what a
// hand-written walk would re-derive: strongly connected components (the
// classes a choice could close a cycle through), reachability from the roots,
// and a children-first order of a chosen DAG.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "extract/problem.hpp"

namespace saturn::extract {

// Keeps node n (by index) in the graph.
using NodeFilter = std::function<bool(std::uint32_t)>;

// Component index per class; classes on a common cycle share one. A class
// whose nodes never reach it again has a component of its own.
struct Components {
  std::vector<std::uint32_t> of;    // per class
  std::vector<std::uint32_t> size;  // per component
};
Components strong_components(const ExtractionProblem& p, const NodeFilter& keep);

// Classes reachable from the roots through kept nodes (roots included).
std::vector<char> reachable_from_roots(const ExtractionProblem& p, const NodeFilter& keep);

// The child classes of node n, each once, in increasing order.
std::vector<std::uint32_t> distinct_children(const ExtractionProblem& p, std::uint32_t n);

// For each class s of `through`, each edge u -> s that closes a cycle of at
// most `max_length` classes: the classes of a shortest path s -> u (sorted,
// each set once).
std::vector<std::vector<std::uint32_t>> shortest_cycles(const ExtractionProblem& p, const NodeFilter& keep,
                                                        const std::vector<std::uint32_t>& through,
                                                        std::size_t max_length);

// The class sets on which a choice closes cycles, among the classes the roots
// reach through chosen nodes: each strongly connected component of more than
// one class, and for each of its classes the classes of a shortest cycle
// through it (each set once, sorted). Empty when the choice is acyclic.
std::vector<std::vector<std::uint32_t>> choice_cycles(const ExtractionProblem& p,
                                                      const std::vector<std::int32_t>& choice);

// The classes a choice needs, children before parents; nullopt when the
// choice misses a needed class or has a cycle.
std::optional<std::vector<std::uint32_t>> children_first(const ExtractionProblem& p,
                                                         const std::vector<std::int32_t>& choice);

}  // namespace saturn::extract
