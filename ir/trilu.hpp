// Trilu geometry. Row-major, the result is rows of the last axis, each row
// i of a matrix keeping a run of its columns and zeroing the rest: the upper
// triangle keeps columns j >= i + k, the lower one j <= i + k. One
// definition serves the trilu op's reference kernel and the lowering's row
// copies (lower/host_steps.cpp), so the two cannot disagree on a diagonal.
//
// Invariant: trilu_copy writes only rows [begin, end) of the result, and
// zero (all bytes 0: false, 0, +0.0) where it does not copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace saturn::ir {

struct TriluRows {
  std::size_t batch = 1;            // matrices
  std::int64_t rows = 0, cols = 0;  // of each matrix
  std::int64_t k = 0;               // the diagonal's offset
  bool upper = true;
  std::size_t element_bytes = 4;
  std::size_t result_rows() const { return batch * static_cast<std::size_t>(rows); }
  // Columns [first, last) row i keeps.
  std::int64_t first(std::int64_t i) const { return upper ? std::clamp<std::int64_t>(i + k, 0, cols) : 0; }
  std::int64_t last(std::int64_t i) const { return upper ? cols : std::clamp<std::int64_t>(i + k + 1, 0, cols); }
};

inline TriluRows trilu_rows(const std::vector<std::int64_t>& dims, std::int64_t k, bool upper,
                            std::size_t element_bytes) {
  TriluRows t;
  const std::size_t r = dims.size();
  for (std::size_t d = 0; d + 2 < r; ++d) t.batch *= static_cast<std::size_t>(dims[d]);
  t.rows = dims.at(r - 2);
  t.cols = dims.at(r - 1);
  t.k = k;
  t.upper = upper;
  t.element_bytes = element_bytes;
  return t;
}

// Writes rows [row_begin, row_end) of the result (of all matrices).
inline void trilu_copy(const TriluRows& t, const std::uint8_t* in, std::uint8_t* out, std::size_t row_begin,
                       std::size_t row_end) {
  const std::size_t row_bytes = static_cast<std::size_t>(t.cols) * t.element_bytes, eb = t.element_bytes;
  if (row_bytes == 0) return;  // (no elements: the buffers may be null)
  for (std::size_t r = row_begin; r < row_end; ++r) {
    const std::int64_t i = static_cast<std::int64_t>(r % static_cast<std::size_t>(t.rows));
    const auto first = static_cast<std::size_t>(t.first(i)), last = static_cast<std::size_t>(t.last(i));
    std::uint8_t* dst = out + r * row_bytes;
    std::memset(dst, 0, row_bytes);
    if (last > first) std::memcpy(dst + first * eb, in + r * row_bytes + first * eb, (last - first) * eb);
  }
}

}  // namespace saturn::ir
