// Gather geometry. Row-major, gathering `count` indices along `axis` of data
// [D0 .. Dn] gives `outer` blocks (one per index of the dims before the
// axis) of `count` rows each: row j of block o is row indices[j] of data's
// block o, which has `rows` (D[axis]) rows of `row_bytes` (the elements of
// the dims after the axis). One definition serves the gather op's kernel and
// the lowering's row copies (lower/host_steps.cpp), so the two cannot
// disagree on a layout or on which indices are out of range.
//
// Invariant: gather_copy reads only whole rows of data and writes only rows
// [begin, end) of the result; an index outside [-rows, rows) throws before
// anything of its row is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/op.hpp"

namespace saturn::ir {

struct GatherRows {
  std::size_t outer = 1, rows = 0, count = 0, row_bytes = 0;
  std::size_t result_rows() const { return outer * count; }
};

// gather's result dims (or shape): data's with the axis replaced by the
// indices' dims.
template <class Dims>
Dims gather_result_dims(const Dims& data, std::size_t axis, const Dims& indices) {
  Dims out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
  return out;
}

inline GatherRows gather_rows(const std::vector<std::int64_t>& data_dims, std::size_t axis, std::size_t count,
                              std::size_t element_bytes) {
  GatherRows g;
  g.count = count;
  g.rows = static_cast<std::size_t>(data_dims.at(axis));
  g.row_bytes = element_bytes;
  for (std::size_t d = 0; d < data_dims.size(); ++d) {
    if (d < axis) g.outer *= static_cast<std::size_t>(data_dims[d]);
    if (d > axis) g.row_bytes *= static_cast<std::size_t>(data_dims[d]);
  }
  return g;
}

// The row an index selects (negative indices count from the end).
inline std::size_t gathered_row(std::int64_t index, std::size_t rows) {
  const auto n = static_cast<std::int64_t>(rows);
  const std::int64_t r = index < 0 ? index + n : index;
  if (r < 0 || r >= n)
    shape_error("gather: index " + std::to_string(index) + " out of range for axis of size " + std::to_string(n));
  return static_cast<std::size_t>(r);
}

// Copies rows [begin, end) of the result; `index(j)` reads index j.
template <class IndexAt>
void gather_copy(const GatherRows& g, const std::uint8_t* data, const IndexAt& index, std::uint8_t* out,
                 std::size_t begin, std::size_t end) {
  if (g.row_bytes == 0) return;  // no elements: nothing is read (as the per-element kernel did)
  for (std::size_t t = begin; t < end; ++t) {
    const std::size_t o = t / g.count, row = gathered_row(index(t % g.count), g.rows);
    std::memcpy(out + t * g.row_bytes, data + (o * g.rows + row) * g.row_bytes, g.row_bytes);
  }
}

}  // namespace saturn::ir
