// Window geometry shared by convolution and pooling: ONNX's explicit pads
// or auto_pad, strides, dilations and ceil_mode (the last window must start
// inside the input or its left padding). One definition serves the ops'
// shape rules and reference kernels and the rule built-ins that decompose
// them (rules/decompose_builtins), so a decomposition cannot drift from the
// op it defines.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op.hpp"

namespace saturn::ir {

struct WindowGeometry {
  std::vector<std::int64_t> kernel, strides, dilations, pads_begin, pads_end, out;
};

// `spatial` are the input's trailing dims the window slides over; attribute
// `strides`, `dilations`, `pads` and `auto_pad` of `a` apply (defaults when
// absent). Throws ShapeError when the attributes do not fit.
WindowGeometry window_geometry(const Attrs& a, const std::vector<std::int64_t>& spatial,
                               std::vector<std::int64_t> kernel, bool ceil_mode);

// Transposed convolution over x [N C i...] and w [C M/G k...]: output
// position o takes input i at tap k where o = i stride - begin + k dilation;
// `out` from pads and output_padding, or output_shape / auto_pad.
struct ConvTransposeGeometry {
  std::vector<std::int64_t> kernel, strides, dilations, begin, out;
};
ConvTransposeGeometry conv_transpose_geometry(const Attrs& a, const std::vector<std::int64_t>& xd,
                                              const std::vector<std::int64_t>& wd);

}  // namespace saturn::ir
