// A node order that keeps few bytes alive: the training step's backward
// pass computes each weight's gradient as soon as it can, so the
// activations it reads die early, instead of in the order extraction
// listed the nodes (a walk from the outputs, which puts every weight's
// gradient at the end, next to its update).
//
// Invariant: the result is a topological order of the same live nodes
// (every node after the producers of its operands); only the order
// changes, so the graph computes the same values. Among the nodes ready to
// run it takes the one that adds the fewest bytes (its results, less the
// operands it is the last reader of), ties in the original order. Views
// are free (they share their operand's storage), and each then moves to
// just before its first reader. The lowering runs nodes in
// graph order and the memory planner (lower/memory_plan.hpp) gives values
// that no longer live the same bytes.
#pragma once

#include <cstddef>

#include "ir/graph.hpp"

namespace saturn::pipeline {

// Whether the order changed (false when the graph has no static types).
bool order_for_memory(ir::Graph& g);

// Whether n's result has no storage of its own: a view, or a transpose or
// expand, which the lowering reads through strides.
bool reads_through(const ir::Node& n);

}  // namespace saturn::pipeline
