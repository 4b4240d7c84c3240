// Resize (ONNX Resize 10-19, Upsample): the interpolation of one axis as
// taps, and the whole op as one axis at a time.
//
// Every mode ONNX defines is a sum over input elements along each resized
// axis with weights that depend only on the result's index along it, so the
// op is separable: resizing the last axis, then the one before, ... computes
// what ONNX's nested definition computes (in double, up to the order of the
// additions). A ResizeAxis holds those weights for one axis: result index o
// reads `taps` input indices, edge-clamped, each with a weight; under
// tf_crop_and_resize a result index whose source coordinate falls outside
// the input is the extrapolation value instead (for every axis alike, as
// ONNX's nesting gives: a combination of extrapolation values whose weights
// sum to one).
//
// The source coordinate and the weights follow the ONNX definition (its
// reference implementation): the coordinate transformation modes
// half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
// asymmetric and tf_crop_and_resize; nearest (four rounding modes), linear
// and cubic (coefficient a, exclude_outside) weights, and antialiasing
// linear and cubic filters when downsampling. Nearest weights are a single
// tap of weight 1, so nearest resizing copies elements exactly, of any type.
//
// An axis whose every result index reads one input element with weight 1
// and the others with 0 (an axis interpolated at its own sample points,
// left as it is) is a copy: single taps. (ONNX's sum would turn an infinite
// neighbour with weight 0 into NaN; the copy does not.)
//
// Invariant: every index in a ResizeAxis lies in [0, in).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/op.hpp"

namespace saturn::ir {

struct ResizeSpec {
  std::vector<std::int64_t> sizes;  // the result's dims
  std::vector<double> scales;       // per axis: what the coordinate transform divides by
  std::vector<double> roi;          // tf_crop_and_resize: per-axis starts, then ends (fractions of the input)
  std::string mode = "nearest";     // nearest, linear, cubic
  std::string transform = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
};

// ONNX's result dims and coordinate scales for an operand of dims `in`,
// from `scales` or `sizes` given for `axes` (normalized): scales give sizes
// floor(in * scale); sizes give scales size / in, or under a
// keep_aspect_ratio_policy ("not_larger", "not_smaller"; "stretch" is
// neither) one scale for all the axes, the smallest or largest ratio, and
// sizes round(in * scale). Throws ShapeError naming what is wrong.
struct ResizeTarget {
  std::vector<std::int64_t> sizes;
  std::vector<double> scales;
  friend bool operator==(const ResizeTarget&, const ResizeTarget&) = default;
};
ResizeTarget resize_target(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& axes,
                           const std::vector<double>& scales, const std::vector<std::int64_t>& sizes,
                           const std::string& policy);

// The op's attributes (docs/ops.md) for an operand of dims `in`; throws
// ShapeError naming what is wrong.
ResizeSpec resize_spec(const Attrs& a, const std::vector<std::int64_t>& in);

struct ResizeAxis {
  std::int64_t in = 0, out = 0;
  int taps = 0;
  std::vector<std::int64_t> index;  // out * taps input indices
  std::vector<double> weight;       // out * taps weights
  std::vector<char> outside;        // out flags: the extrapolation value
  // Whether the axis is left as it is (result index o reads input o alone).
  bool identity() const;
};

ResizeAxis resize_axis(const ResizeSpec& s, std::size_t axis, std::int64_t in);

// One axis's resize over a row-major tensor viewed as [outer, in, inner]:
// result row (o, j) of `inner` elements is the taps' weighted sum of input
// rows (o, index), or the extrapolation value.
struct ResizePass {
  std::size_t axis = 0;
  ResizeAxis taps;
  std::int64_t outer = 1, inner = 1;
  std::vector<std::int64_t> out_dims;  // the tensor's dims after this pass
  std::size_t rows() const { return static_cast<std::size_t>(outer * taps.out); }
};

// The passes resizing `in` to s.sizes: each axis that changes, last first.
std::vector<ResizePass> resize_passes(const ResizeSpec& s, std::vector<std::int64_t> in);

// Result rows [begin, end) of pass `p` from x into y. T is the element type
// (any, when every tap count is 1: nearest copies), Acc the type the
// weighted sums accumulate in; `fill` is the extrapolation value as a T.
template <class T, class Acc = double>
void resize_pass_rows(const ResizePass& p, const T* x, T* y, T fill, std::size_t begin, std::size_t end) {
  const ResizeAxis& r = p.taps;
  const auto inner = static_cast<std::size_t>(p.inner);
  const auto taps = static_cast<std::size_t>(r.taps);
  const auto out = static_cast<std::size_t>(r.out);
  if (inner == 1) {  // the last axis: runs of one source row, element by element
    for (std::size_t row = begin; row < end;) {
      const std::size_t o = row / out, j0 = row % out, j1 = std::min(out, j0 + (end - row));
      const T* src = x + o * static_cast<std::size_t>(r.in);
      T* dst = y + o * out;
      if (taps == 1) {
        for (std::size_t j = j0; j < j1; ++j) dst[j] = r.outside[j] ? fill : src[r.index[j]];
      } else {
        for (std::size_t j = j0; j < j1; ++j) {
          Acc acc = 0;
          for (std::size_t t = 0; t < taps; ++t)
            acc += static_cast<Acc>(r.weight[j * taps + t]) * static_cast<Acc>(src[r.index[j * taps + t]]);
          dst[j] = r.outside[j] ? fill : static_cast<T>(acc);
        }
      }
      row += j1 - j0;
    }
    return;
  }
  std::size_t o = out ? begin / out : 0, j = out ? begin % out : 0;
  for (std::size_t row = begin; row < end; ++row, ++j) {
    if (j == out) {
      j = 0;
      ++o;
    }
    T* dst = y + row * inner;
    const T* base = x + o * static_cast<std::size_t>(r.in) * inner;
    const std::int64_t* index = r.index.data() + j * taps;
    if (r.outside[j]) {
      for (std::size_t i = 0; i < inner; ++i) dst[i] = fill;
    } else if (taps == 1) {
      const T* src = base + static_cast<std::size_t>(index[0]) * inner;
      for (std::size_t i = 0; i < inner; ++i) dst[i] = src[i];
    } else if (!std::is_same_v<T, Acc>) {
      const double* weight = r.weight.data() + j * taps;
      for (std::size_t i = 0; i < inner; ++i) {
        Acc acc = 0;
        for (std::size_t t = 0; t < taps; ++t)
          acc += static_cast<Acc>(weight[t]) * static_cast<Acc>(base[static_cast<std::size_t>(index[t]) * inner + i]);
        dst[i] = static_cast<T>(acc);
      }
    } else {  // whole rows: dst = sum of weighted source rows, in tap order (the same sums)
      const double* weight = r.weight.data() + j * taps;
      for (std::size_t t = 0; t < taps; ++t) {
        const T* src = base + static_cast<std::size_t>(index[t]) * inner;
        const auto w = static_cast<T>(weight[t]);
        if (t == 0)
          for (std::size_t i = 0; i < inner; ++i) dst[i] = T(0) + w * src[i];
        else
          for (std::size_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
  }
}

// The whole resize of row-major `x` of dims `in`, pass by pass (T double
// for interpolation, any element type for nearest).
template <class T>
std::vector<T> resize_apply(const ResizeSpec& s, const std::vector<std::int64_t>& in, std::vector<T> x) {
  for (const ResizePass& p : resize_passes(s, in)) {
    std::vector<T> y(p.rows() * static_cast<std::size_t>(p.inner));
    resize_pass_rows(p, x.data(), y.data(), static_cast<T>(s.extrapolation), 0, p.rows());
    x = std::move(y);
  }
  return x;
}

}  // namespace saturn::ir
