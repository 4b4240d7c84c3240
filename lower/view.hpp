// Strided views of buffers: how reshape, transpose, expand, slice, sliding
// windows and broadcasting cost nothing. A View reads element (i0, ..., in-1) of its dims at
// `offset + sum(ik * strides[k])` of its buffer (strides in elements; 0
// repeats an element along a broadcast dimension).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/shape.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

struct View {
  BufferId buffer = -1;
  std::int64_t offset = 0;
  std::vector<std::int64_t> dims, strides;

  // The whole buffer, row-major.
  static View of(BufferId b, const std::vector<std::int64_t>& dims);
  // Row-major over its dims from `offset` (size-1 dims may have any stride).
  bool contiguous() const;
  // Exactly the buffer `of(buffer, dims)` (offset 0, row-major).
  bool whole() const { return offset == 0 && contiguous(); }
  // Dimensions from the outermost in memory to the innermost (by decreasing
  // stride; size-1 dimensions and ties keep their place).
  std::vector<std::int64_t> order() const;
  // Every element of [offset, offset + numel) read exactly once, in the
  // dimension order `order()`: a permuted layout (NHWC seen as NCHW) or a
  // row-major one.
  bool dense() const;
  View transposed(const std::vector<std::int64_t>& perm) const;
  // Numpy broadcasting to `to` (right-aligned; size-1 dims repeat).
  View broadcast_to(const std::vector<std::int64_t>& to) const;
  // Precondition: contiguous().
  View reshaped(const std::vector<std::int64_t>& to) const;
  // The row-major reshape to `to` without a copy, when every run of dims
  // that the reshape merges or splits is row-major within itself (numpy's
  // no-copy reshape: a channel split of an NHWC view); nullopt otherwise.
  std::optional<View> reshaped_in_place(const std::vector<std::int64_t>& to) const;
  // A dimension order to copy this view in so that the copy reshapes to
  // `to` in place: each run of dims that merges or splits kept together
  // and row-major, the runs in this view's own order (outermost first).
  std::vector<std::int64_t> reshape_copy_order(const std::vector<std::int64_t>& to) const;
  // Per dimension: `count` elements from `start`, `step` apart (negative:
  // backwards), as ir::slice_spec gives them.
  View sliced(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& step,
              const std::vector<std::int64_t>& count) const;
  // The sliding windows over the dims from `lead` on: [lead..., out...,
  // kernel...], window o's tap k of an axis at o stride + k dilation of it
  // (the taps of neighbouring windows share elements).
  View windowed(std::size_t lead, const std::vector<std::int64_t>& out, const std::vector<std::int64_t>& kernel,
                const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& dilation) const;
};

using ir::row_major_strides;  // (ir/shape.hpp)

// The dimension order of a row-major layout: 0, 1, ..., rank - 1.
std::vector<std::int64_t> identity_order(std::size_t rank);

}  // namespace saturn::lower
