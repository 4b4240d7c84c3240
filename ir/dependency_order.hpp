// A children-first order of a dependency graph (vertex i needs the vertices
// listed in needs[i]), by Boost.Graph's depth-first search: every vertex
// comes after all it needs. Vertices are started in index order and their
// needs followed in list order, so a graph already in order keeps it, and
// a recursive post-order walk from vertex 0, then the next unvisited one,
// gives the same sequence. A cycle is reported with a vertex on it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace saturn::ir {

struct DependencyOrder {
  std::vector<std::uint32_t> order;       // children first; partial when cyclic
  std::optional<std::uint32_t> cycle_at;  // a vertex on a cycle, if any
};

// Only vertices reachable from `starts` (all vertices when empty).
DependencyOrder dependency_order(const std::vector<std::vector<std::uint32_t>>& needs,
                                 const std::vector<std::uint32_t>& starts = {});

}  // namespace saturn::ir
