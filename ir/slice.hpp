// Slice geometry (ONNX semantics: negative and out-of-range starts/ends
// clamp, negative steps walk backwards). One definition serves the slice
// op's shape rule and kernel and the lowering, which reads a slice in place
// as a strided view (lower/view.hpp), so the two cannot disagree on which
// elements a slice takes.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/op.hpp"

namespace saturn::ir {

// Per input axis: the first element taken, the step between taken
// elements, and how many are taken. An axis that takes none has start 0.
struct SliceSpec {
  std::vector<std::int64_t> start, step, count;
};

// The slice op's attributes (starts, ends, axes, steps) over an input of
// `dims`. Throws ShapeError when they do not fit.
SliceSpec slice_spec(const Attrs& a, const std::vector<std::int64_t>& dims);

}  // namespace saturn::ir
