// Slice geometry (ONNX semantics: negative and out-of-range starts/ends
// clamp, negative steps walk backwards), and a transpose's permutation.
// One definition serves each op's shape rule and kernel, the lowering,
// which reads a slice or a transpose in place as a strided view
// (lower/view.hpp), and the cost model's layout prices, so they cannot
// disagree on which elements an op takes.
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

// The transpose op's permutation of a rank-`rank` input: its `perm`
// attribute (default: the axes reversed), negative entries counted from
// the end. Throws ShapeError when it is not a permutation of the axes.
std::vector<std::int64_t> transpose_perm(const Attrs& a, std::size_t rank);

}  // namespace saturn::ir
