// Gather-elements geometry. Row-major: the result has the indices' dims,
// and its element c is data's element at c with c[axis] replaced by the
// index at c (negative indices count from the end). The result's rows (its
// last dimension) are independent, so the op's kernel and the lowering's
// copies (lower/host_steps.cpp) share this one definition and cannot
// disagree on a layout or on which indices are out of range.
//
// Invariant: gather_elements_copy writes only rows [begin, end) of the
// result; an index outside [-n, n) throws before its element is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/op.hpp"
#include "ir/shape.hpp"

namespace saturn::ir {

struct GatherElements {
  std::vector<std::int64_t> out_dims;      // the indices' dims (rank >= 1)
  std::vector<std::int64_t> data_strides;  // in elements
  std::size_t axis = 0;
  std::int64_t n = 0;  // data's size along the axis
  std::size_t element_bytes = 0;
  std::size_t row_length() const { return static_cast<std::size_t>(out_dims.back()); }
  std::size_t result_rows() const {
    std::size_t r = 1;
    for (std::size_t d = 0; d + 1 < out_dims.size(); ++d) r *= static_cast<std::size_t>(out_dims[d]);
    return r;
  }
};

inline GatherElements gather_elements_geometry(const std::vector<std::int64_t>& data_dims,
                                               const std::vector<std::int64_t>& index_dims, std::size_t axis,
                                               std::size_t element_bytes) {
  GatherElements g;
  g.out_dims = index_dims;
  g.axis = axis;
  g.n = data_dims.at(axis);
  g.element_bytes = element_bytes;
  g.data_strides = row_major_strides(data_dims);
  return g;
}

// The position along the axis an index selects.
inline std::int64_t gathered_element(std::int64_t index, std::int64_t n) {
  const std::int64_t r = index < 0 ? index + n : index;
  if (r < 0 || r >= n)
    shape_error("gather_elements: index " + std::to_string(index) + " out of range for axis of size " +
                std::to_string(n));
  return r;
}

// Copies rows [begin, end) of the result; `index(t)` reads index t.
template <class IndexAt>
void gather_elements_copy(const GatherElements& g, const std::uint8_t* data, const IndexAt& index, std::uint8_t* out,
                          std::size_t begin, std::size_t end) {
  const std::size_t rank = g.out_dims.size(), len = g.row_length(), eb = g.element_bytes;
  const std::int64_t last_stride = g.axis + 1 == rank ? 0 : g.data_strides[rank - 1];
  for (std::size_t r = begin; r < end; ++r) {
    // Row r's place in data, its coordinate along the axis left out.
    std::int64_t base = 0;
    std::size_t rest = r;
    for (std::size_t d = rank - 1; d-- > 0;) {
      const auto c = static_cast<std::int64_t>(rest % static_cast<std::size_t>(g.out_dims[d]));
      rest /= static_cast<std::size_t>(g.out_dims[d]);
      if (d != g.axis) base += c * g.data_strides[d];
    }
    for (std::size_t j = 0; j < len; ++j) {
      const std::size_t t = r * len + j;
      const std::int64_t at =
          base + static_cast<std::int64_t>(j) * last_stride + gathered_element(index(t), g.n) * g.data_strides[g.axis];
      const std::uint8_t* from = data + static_cast<std::size_t>(at) * eb;
      std::uint8_t* to = out + t * eb;
      switch (eb) {  // fixed sizes: a load and a store, not a memcpy call
        case 4:
          std::memcpy(to, from, 4);
          break;
        case 8:
          std::memcpy(to, from, 8);
          break;
        case 2:
          std::memcpy(to, from, 2);
          break;
        case 1:
          *to = *from;
          break;
        default:
          std::memcpy(to, from, eb);
      }
    }
  }
}

}  // namespace saturn::ir
