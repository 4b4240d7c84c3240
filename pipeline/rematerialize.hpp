// Rematerialization: a cheap value needed again much later is computed
// again there instead of being kept, so it dies after its early uses.
//
// Invariant: the graph computes the same values (a clone of a node computes
// what the node computes, from the same operands), and no operand lives
// more than `min_distance` nodes longer than before: a chain of nodes is
// cloned only from values still needed at that point (or read at most
// min_distance nodes before it). Only elementwise nodes (OpDef::elementwise),
// views, transposes and expands are cloned, at most 8 in a chain and
// `max_unit_work` operations per element in all, so recomputing streams what
// keeping would have stored.
//
// It runs on the graph the extractor chose, after optimization (the
// e-graph would merge a clone with its original again), in node order, which
// is the order the lowering runs them in.
#pragma once

#include <cstddef>

#include "ir/graph.hpp"

namespace saturn::pipeline {

struct RematOptions {
  double max_unit_work = 4;         // adds, muls, compares: not exp or erf (8, 10)
  std::size_t min_distance = 16;    // nodes between the last early use and a late one
  std::size_t min_bytes = 1 << 16;  // smaller values are not worth a kernel
};

struct RematReport {
  std::size_t values = 0;  // values computed again
  std::size_t bytes = 0;   // their sizes (what no longer lives across the gap)
};

RematReport rematerialize(ir::Graph& g, const RematOptions& o = {});

}  // namespace saturn::pipeline
