// Concatenation as block copies between buffers, laid out by the concat
// op's own geometry (ir/concat.hpp): each operand fills a run of `block`
// bytes at byte `at` of each of the result's `outer` blocks, reading its
// blocks `src_stride` bytes apart from byte `src_at` of its buffer (back to
// back when stored contiguously; a channel slice of an NHWC result is read
// in place, a pixel's channels a row apart). A concat of any element type is
// then one memcpy per operand and block on the CPU, and one 2-D copy per
// operand on a GPU (cuda_steps.hpp), with no host round trip.
//
// Invariant: the parts tile each result block, except operands with no
// elements, which have no part; an operand's blocks never overlap
// (src_stride >= block).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lower/program.hpp"

namespace saturn::lower {

struct BlockCopy {
  struct Part {
    BufferId src = -1;
    std::size_t block = 0, at = 0;           // bytes
    std::size_t src_at = 0, src_stride = 0;  // bytes
  };
  BufferId dst = -1;
  std::size_t outer = 0, dst_block = 0;  // dst_block in bytes
  std::vector<Part> parts;
};

// Where an operand's blocks are: from byte `at` of `buffer`, `stride`
// bytes apart (0: back to back, the operand stored contiguously).
struct BlockSource {
  BufferId buffer = -1;
  std::size_t at = 0, stride = 0;
};

// The plan for concatenating operands of `dims` (elements of
// `element_bytes`, read from `srcs`) along `axis` into `dst`.
BlockCopy concat_block_copy(const std::vector<BlockSource>& srcs, const std::vector<std::vector<std::int64_t>>& dims,
                            std::size_t axis, std::size_t element_bytes, BufferId dst);

// A StepKind::Copy step doing `c` with memcpy (host addresses).
Step make_host_block_copy_step(const BlockCopy& c, const std::string& label);

}  // namespace saturn::lower
