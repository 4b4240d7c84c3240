// Pad geometry. Result index o along an axis reads input index o - begin
// when that lies inside the axis; outside it, mode says what is read:
// constant mode the fill value, edge the nearest end, reflect the mirror
// image (without repeating the end), wrap the index modulo the axis. An axis
// with no elements reads the fill value in every mode.
//
// Row-major, the result is rows of its last axis. A row whose outer indices
// all read input rows is the input row's interior copied in one piece plus
// per-element borders; any other row is the fill value. One definition
// serves the pad op's reference kernel and the lowering's row copies
// (lower/host_steps.cpp), so the two cannot disagree on a mode.
//
// Invariant: pad_copy reads only elements of the input and writes only
// rows [begin, end) of the result.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/op.hpp"

namespace saturn::ir {

enum class PadMode { Constant, Edge, Reflect, Wrap };

inline PadMode pad_mode(const std::string& m) {
  if (m == "constant") return PadMode::Constant;
  if (m == "edge") return PadMode::Edge;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "wrap") return PadMode::Wrap;
  shape_error("pad: unknown mode '" + m + "' (constant, edge, reflect or wrap)");
}

// The input index result index `o` reads along an axis of `n` elements
// padded by `begin` before it; -1 for the fill value.
inline std::int64_t padded_source(std::int64_t o, std::int64_t begin, std::int64_t n, PadMode m) {
  std::int64_t v = o - begin;
  if (v >= 0 && v < n) return v;
  if (m == PadMode::Constant || n == 0) return -1;
  if (m == PadMode::Edge) return v < 0 ? 0 : n - 1;
  if (m == PadMode::Wrap) return ((v % n) + n) % n;
  const std::int64_t period = 2 * (n - 1);  // reflect
  if (period == 0) return 0;
  v = ((v % period) + period) % period;
  return v >= n ? period - v : v;
}

struct PadRows {
  std::vector<std::int64_t> in_dims, out_dims, begin;  // rank >= 1 (a scalar is [1])
  PadMode mode = PadMode::Constant;
  std::size_t element_bytes = 4;
  std::size_t rows() const {
    std::size_t r = 1;
    for (std::size_t d = 0; d + 1 < out_dims.size(); ++d) r *= static_cast<std::size_t>(out_dims[d]);
    return r;
  }
};

// `pads` as the op's attribute (all begins, then all ends).
inline PadRows pad_rows(std::vector<std::int64_t> in_dims, const std::vector<std::int64_t>& pads, PadMode mode,
                        std::size_t element_bytes) {
  PadRows p;
  const std::size_t rank = in_dims.size();
  p.mode = mode;
  p.element_bytes = element_bytes;
  p.out_dims = in_dims;
  for (std::size_t d = 0; d < rank; ++d) {
    p.out_dims[d] += pads.at(d) + pads.at(d + rank);
    p.begin.push_back(pads[d]);
  }
  p.in_dims = std::move(in_dims);
  if (rank == 0) p = PadRows{{1}, {1}, {0}, mode, element_bytes};
  return p;
}

// Writes rows [row_begin, row_end) of the result; `fill` is one element.
inline void pad_copy(const PadRows& p, const std::uint8_t* in, const std::uint8_t* fill, std::uint8_t* out,
                     std::size_t row_begin, std::size_t row_end) {
  const std::size_t rank = p.out_dims.size(), eb = p.element_bytes;
  const std::int64_t width = p.out_dims[rank - 1], n = p.in_dims[rank - 1], b = p.begin[rank - 1];
  const std::size_t row_bytes = static_cast<std::size_t>(width) * eb;
  // The interior [lo, hi) of a row: result elements reading input o - b.
  const std::int64_t lo = std::clamp<std::int64_t>(b, 0, width), hi = std::clamp<std::int64_t>(b + n, lo, width);
  for (std::size_t r = row_begin; r < row_end; ++r) {
    std::uint8_t* dst = out + r * row_bytes;
    std::int64_t src_row = 0, rest = static_cast<std::int64_t>(r);
    std::int64_t inner = 1;  // input rows per step of the axis being decoded
    bool filled = false;
    for (std::size_t d = rank - 1; d-- > 0;) {
      const std::int64_t o = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      const std::int64_t s = padded_source(o, p.begin[d], p.in_dims[d], p.mode);
      if (s < 0) filled = true;
      src_row += s * inner;
      inner *= p.in_dims[d];
    }
    if (filled) {
      for (std::int64_t j = 0; j < width; ++j) std::memcpy(dst + static_cast<std::size_t>(j) * eb, fill, eb);
      continue;
    }
    const std::uint8_t* src = in + static_cast<std::size_t>(src_row * n) * eb;
    auto element = [&](std::int64_t j) {
      const std::int64_t s = padded_source(j, b, n, p.mode);
      std::memcpy(dst + static_cast<std::size_t>(j) * eb, s < 0 ? fill : src + static_cast<std::size_t>(s) * eb, eb);
    };
    for (std::int64_t j = 0; j < lo; ++j) element(j);
    if (hi > lo)
      std::memcpy(dst + static_cast<std::size_t>(lo) * eb, src + static_cast<std::size_t>(lo - b) * eb,
                  static_cast<std::size_t>(hi - lo) * eb);
    for (std::int64_t j = hi; j < width; ++j) element(j);
  }
}

}  // namespace saturn::ir
