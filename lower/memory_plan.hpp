// Static memory planning: every temporary buffer gets an offset in one arena.
//
// Liveness comes from the step order: a buffer lives from the step that
// writes it to the last step that reads it (graph outputs to the end). Two
// buffers whose lifetimes overlap never overlap in the arena; an elementwise
// result may take its operand's storage when the operand dies at that step
// and is read there once, at the element being written (Step::in_place_ok).
// Offsets are assigned greedily, largest buffer first, at the lowest
// 64-byte-aligned offset that fits beside the buffers already placed whose
// lifetimes overlap (the "greedy by size" heuristic of TFLite's planner).
#pragma once

#include "lower/program.hpp"

namespace saturn::lower {

// Fills offsets, arena_bytes, naive_bytes, lower_bound_bytes and in_place.
void plan_memory(Program& p);

// Throws std::logic_error when two temporaries live at the same step share
// arena bytes (a test and debug check of the planner's invariant).
void check_memory_plan(const Program& p);

}  // namespace saturn::lower
