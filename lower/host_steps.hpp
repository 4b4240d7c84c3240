// Host steps for ops that copy or select elements (any element type), by
// the geometry their op kernel has in ir/ (gather.hpp, pad.hpp, trilu.hpp,
// resize.hpp, arg_reduce.hpp, pool.hpp): the CPU target's steps for them.
// Sharing the op kernel's own geometry, a step and the reference cannot
// disagree.
//
// Each step splits its rows over the executor's pool from 256 KiB of work
// (split_rows), and runs on the calling thread below, where waking the
// pool costs more than it saves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/arg_reduce.hpp"
#include "ir/gather.hpp"
#include "ir/gather_elements.hpp"
#include "ir/pad.hpp"
#include "ir/pool.hpp"
#include "ir/resize.hpp"
#include "ir/trilu.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

// gather and gather_elements check every index first, on the calling
// thread: one out of range fails the run naming `node`, before anything is
// copied.
Step host_gather_step(const ir::GatherRows& g, bool i64_indices, BufferId src, BufferId indices, BufferId out,
                      const std::string& label, const std::string& node);
Step host_gather_elements_step(const ir::GatherElements& g, std::size_t count, bool i64_indices, BufferId src,
                               BufferId indices, BufferId out, const std::string& label, const std::string& node);
// One resize pass: f32 interpolation accumulating in f32, or (one tap)
// element copies of any type. `fill` is the extrapolation value's bits.
Step host_resize_pass_step(const ir::ResizePass& pass, std::size_t element_bytes, std::uint64_t fill, BufferId src,
                           BufferId out, const std::string& label);
Step host_pad_step(const ir::PadRows& p, const std::vector<std::uint8_t>& fill, BufferId src, BufferId out,
                   const std::string& label);
Step host_trilu_step(const ir::TriluRows& t, BufferId src, BufferId out, const std::string& label);
// f32, i64 or i32 values.
Step host_arg_reduce_step(const ir::ArgReduce& g, ir::DType t, BufferId src, BufferId out, const std::string& label);
// f32, f64 and integer values (not halves: no arithmetic type here rounds
// as they do).
Step host_pool_step(const ir::PoolWindow& p, ir::DType t, BufferId src, BufferId out, std::optional<BufferId> indices,
                    const std::string& label);

}  // namespace saturn::lower
