// The reference interpreter: runs an ir::Graph node by node with each op's
// reference semantics from the registry. Plain and obviously correct; every
// faster path is checked against it.
#pragma once

#include <span>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::runtime {

// Runs the graph on `inputs` (in graph-input order). Inputs are checked
// against the declared types: dtype, rank, static dims, and symbolic dims
// bound consistently. Runs the nodes the outputs depend on (a dead node's
// error does not fail the run). Returns the graph outputs in order.
Expected<std::vector<ir::Tensor>> interpret(const ir::Graph& g, std::span<const ir::Tensor> inputs);

}  // namespace saturn::runtime
