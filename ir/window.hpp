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

// Calls f(input spatial coordinates, kernel coordinates, in_bounds) for
// each tap of the window of output position `o` (the reference kernels'
// walk, and the CPU target's where it corrects a library).
template <class F>
void for_window(const WindowGeometry& w, const std::vector<std::int64_t>& o, const std::vector<std::int64_t>& spatial,
                F&& f) {
  std::int64_t total = 1;
  for (auto k : w.kernel) total *= k;
  std::vector<std::int64_t> pos(w.kernel.size());
  for (std::int64_t kk = 0; kk < total; ++kk) {
    auto kc = unflatten(kk, w.kernel);
    bool inside = true;
    for (std::size_t d = 0; d < kc.size(); ++d) {
      pos[d] = o[d] * w.strides[d] - w.pads_begin[d] + kc[d] * w.dilations[d];
      if (pos[d] < 0 || pos[d] >= spatial[d]) inside = false;
    }
    f(pos, kc, inside);
  }
}

// Transposed convolution over x [N C i...] and w [C M/G k...]: output
// position o takes input i at tap k where o = i stride - begin + k dilation;
// `out` from pads and output_padding, or output_shape / auto_pad.
struct ConvTransposeGeometry {
  std::vector<std::int64_t> kernel, strides, dilations, begin, out;
};
ConvTransposeGeometry conv_transpose_geometry(const Attrs& a, const std::vector<std::int64_t>& xd,
                                              const std::vector<std::int64_t>& wd);

}  // namespace saturn::ir
