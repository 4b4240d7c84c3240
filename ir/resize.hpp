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
// Invariant: every index in a ResizeAxis lies in [0, in).
#pragma once

#include <cstdint>
#include <string>
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

// Resizes row-major `x` of dims `in` to s.sizes along each axis that changes,
// last axis first. T is double for interpolation, or any element type for
// nearest resizing (single taps of weight 1: copies).
template <class T>
std::vector<T> resize_apply(const ResizeSpec& s, std::vector<std::int64_t> dims, std::vector<T> x) {
  for (std::size_t axis = dims.size(); axis-- > 0;) {
    const ResizeAxis r = resize_axis(s, axis, dims[axis]);
    if (r.identity()) continue;
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= dims[d];
    for (std::size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
    std::vector<T> y(static_cast<std::size_t>(outer * r.out * inner));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < r.out; ++j) {
        T* dst = y.data() + (o * r.out + j) * inner;
        if (r.outside[static_cast<std::size_t>(j)]) {
          for (std::int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(s.extrapolation);
          continue;
        }
        const std::size_t first = static_cast<std::size_t>(j) * static_cast<std::size_t>(r.taps);
        if (r.taps == 1) {
          const T* src = x.data() + (o * r.in + r.index[first]) * inner;
          for (std::int64_t i = 0; i < inner; ++i) dst[i] = src[i];
          continue;
        }
        for (std::int64_t i = 0; i < inner; ++i) {
          double acc = 0;
          for (int t = 0; t < r.taps; ++t)
            acc += r.weight[first + static_cast<std::size_t>(t)] *
                   static_cast<double>(x[static_cast<std::size_t>((o * r.in + r.index[first + static_cast<std::size_t>(t)]) * inner + i)]);
          dst[i] = static_cast<T>(acc);
        }
      }
    x = std::move(y);
    dims[axis] = r.out;
  }
  return x;
}

}  // namespace saturn::ir
