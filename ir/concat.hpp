// Concat geometry. Row-major, the result of concatenating along `axis` is
// `outer` blocks, one per index of the dims before the axis, and operand k
// fills `block[k]` bytes at byte `at[k]` of every block. One definition
// serves the concat op's kernel and the lowering's block copies
// (lower/block_copy.hpp), so the two cannot lay operands out differently.
//
// Invariant: the runs tile a block: `at` are the running sums of `block`,
// and their total is `out_block`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace saturn::ir {

struct ConcatBlocks {
  std::size_t outer = 1, out_block = 0;  // out_block in bytes
  std::vector<std::size_t> block, at;    // per operand, bytes
};

// Operands of `dims` (the same except along `axis`) with elements of
// `element_bytes`.
ConcatBlocks concat_blocks(const std::vector<std::vector<std::int64_t>>& dims, std::size_t axis,
                           std::size_t element_bytes);

}  // namespace saturn::ir
