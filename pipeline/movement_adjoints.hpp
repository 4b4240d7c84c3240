// The adjoints of movement that gradient rules call as built-ins
// (rulesets/grad/, docs/training.md): a slice undone (`unslice`), and an
// input cut into a window op's windows and its adjoint, each window summed
// back (`window-view`, `window-sum`), from the forward node's attributes.
//
// Invariant: each builds only registry ops through the GraphBuilder, and
// window_sum is the adjoint of window_view's windows (sum over windows of
// <window_view(x), t> = <x, window_sum(t)>), for any strides, dilations,
// pads and ceil_mode.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/graph_builder.hpp"

namespace saturn::pipeline {

// The slice (attributes `attrs`: starts, ends, axes, steps, ONNX
// semantics) of x undone: dy put back where it was read, zeros elsewhere.
TensorRef unslice(GraphBuilder& b, const ir::Attrs& attrs, TensorRef dy, const TensorRef& x);

// x padded with `pad_value` (and at the end for ceil_mode's last window)
// and cut into the windows of `attrs` (strides, dilations, pads, auto_pad,
// ceil_mode) over its trailing kernel.size() dims: [lead... out... kernel...].
TensorRef window_view(GraphBuilder& b, const ir::Attrs& attrs, const TensorRef& x, double pad_value,
                      const std::vector<std::int64_t>& kernel);
// Its adjoint: t [lead... out... kernel...] summed back onto x's elements.
TensorRef window_sum(GraphBuilder& b, const ir::Attrs& attrs, const TensorRef& t, const TensorRef& x,
                     const std::vector<std::int64_t>& kernel);

}  // namespace saturn::pipeline
