// Concatenation as block copies. Row-major, a concat's result is `outer`
// blocks, one per index of the dims before the axis; each operand, stored
// contiguously, fills a run of `block` bytes at byte `at` of every result
// block. So a concat of any element type is one memcpy per operand and
// block on the CPU, and one 2-D copy per operand on a GPU
// (cuda_steps.hpp), instead of the reference kernel's element-by-element
// walk with host round trips.
//
// Invariant: the parts' runs tile each result block exactly:
// sum(block) == dst_block and the `at` are their running sums.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lower/program.hpp"

namespace saturn::lower {

struct BlockCopy {
  struct Part {
    BufferId src = -1;
    std::size_t block = 0, at = 0;  // bytes
  };
  BufferId dst = -1;
  std::size_t outer = 0, dst_block = 0;  // dst_block in bytes
  std::vector<Part> parts;
};

// The plan for concatenating operands of `dims` (each stored contiguously
// in `srcs`, elements of `element_bytes`) along `axis` into `dst`.
BlockCopy concat_block_copy(const std::vector<BufferId>& srcs, const std::vector<std::vector<std::int64_t>>& dims,
                            std::size_t axis, std::size_t element_bytes, BufferId dst);

// A StepKind::Copy step doing `c` with memcpy (host addresses).
Step make_host_block_copy_step(const BlockCopy& c, const std::string& label);

}  // namespace saturn::lower
