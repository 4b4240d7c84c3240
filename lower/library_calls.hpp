// Steps that call the CPU libraries: OpenBLAS sgemm for matrix products and
// oneDNN for convolution and pooling. The library objects (oneDNN
// primitives, weights reordered into the layout the primitive prefers) are
// built here, once, when the program is compiled; a step only binds the
// run's buffer addresses and calls the library.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ir/op.hpp"
#include "lower/program.hpp"
#include "lower/value_bounds.hpp"
#include "lower/view.hpp"

namespace saturn::lower {

// "1x32x112x112": a step label's dimensions.
std::string dims_text(const std::vector<std::int64_t>& d);

// How sgemm reads a [rows, cols] matrix from a view's last two dimensions:
// row-major with leading dimension `ld`, or transposed (column-major).
// nullopt when the view has neither layout (it must be copied first).
struct MatrixLayout {
  bool transposed = false;
  std::int64_t ld = 1;
};
std::optional<MatrixLayout> matrix_layout(const View& v);

// out[batch..., M, N] = alpha * a[batch..., M, K] @ b[batch..., K, N], where
// a and b are already broadcast to the result's batch dimensions and both
// have a matrix_layout. One sgemm when the batch folds into M (b shared, a
// row-major and evenly strided), else one sgemm per batch element; the
// executor's pool runs the products (or blocks of rows) side by side.
Step make_gemm_step(const View& a, const View& b, BufferId out, const std::vector<std::int64_t>& out_dims,
                    double alpha);

// out[batch..., M, N] = alpha * a[batch..., M, K] @ w[K, N] for a constant
// w (a weight, broadcast over the batch): a oneDNN matmul whose weights are
// packed once, now, into the layout its kernel reads fastest (measured
// 1.2-2x OpenBLAS sgemm on BERT's and the MLP's shapes here, see
// docs/cpu-backend.md). nullopt when a's batch does not fold into M.
std::optional<Step> make_packed_gemm_step(const View& a, const View& w, const Buffer& w_buffer, BufferId out,
                                          const std::vector<std::int64_t>& out_dims, double alpha,
                                          std::vector<std::shared_ptr<void>>& keep);

// A library step and the layout it writes its result in: strides (elements)
// over the result's NCHW dims. oneDNN picks the layout its fastest kernel
// wants (NHWC for f32 on AVX-512); when that layout is plain (a permutation
// of the dimensions, no blocking or padding) the result stays in it and its
// consumers read it through a strided View, so a chain of convolutions never
// converts layouts. A blocked choice is converted back to NCHW in the step.
struct LibraryStep {
  Step step;
  std::vector<std::int64_t> out_strides;
};

// 1-, 2- or 3-D convolution (NCW, NCHW or NCDHW dims, OI + spatial weights,
// groups) with its epilogue as
// oneDNN post-ops: result = relu?(conv(x) + bias + (sum ? skip : 0)). x and
// skip are dense Views (View::dense: any dimension order). Constant weights
// and bias are read now and kept in the primitive's layout, others
// reordered into it at every run. The sum
// post-op accumulates into the result: skip is copied there first, unless
// the memory planner gave skip's storage to the result (in_place_ok), which
// the step sees as equal addresses.
struct ConvSpec {
  std::vector<std::int64_t> x_dims, w_dims, out_dims;
  std::vector<std::int64_t> strides, dilations, pads_begin, pads_end;
  std::int64_t group = 1;
  bool sum = false;
  // The activation after the sum; a clip's bounds (infinite when absent).
  ir::Activation activation = ir::Activation::None;
  double clip_min = -HUGE_VAL, clip_max = HUGE_VAL;
  // Winograd's algorithm (dnnl.wino_conv...) instead of the direct one.
  bool winograd = false;
  // Source and result in channels-last layout (dnnl.cl_conv...), not the
  // layout oneDNN prefers.
  bool channels_last = false;
};
// A weight or bias operand of a library step: `view` (dense) into a
// constant (the Weight buffer's tensor), read once when the step is made and
// kept in the library's layout, or (constant null) into any buffer, read at
// every run.
struct LibraryOperand {
  View view;
  const ir::Tensor* constant = nullptr;
};
// With `bounds`, the step proves its source (and residual) finite from the
// bounds their writers published where it can, and publishes its result's
// (lower/value_bounds.hpp).
LibraryStep make_conv_step(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                           const std::optional<LibraryOperand>& bias, const View* skip, BufferId out,
                           std::vector<std::shared_ptr<void>>& keep, ValueBounds* bounds = nullptr);

// An int8 convolution (dnnl.qconv, lower/dnnl_int8.cpp): u8 or s8 x with
// one zero point, constant s8 weights [O, I/G, k...] without one, per-channel
// output scales (x_scale w_scale / y_scale) and a bias in accumulator units
// (b / (x_scale w_scale)), the result u8 or s8 with its zero point, written
// channels last (out_strides).
struct QConvSpec {
  ConvSpec conv;
  ir::DType x_type = ir::DType::U8, y_type = ir::DType::U8;
  std::int32_t x_zero = 0, y_zero = 0;
  std::vector<float> scales, bias;
};
LibraryStep make_qconv_step(const QConvSpec& q, const View& x, const ir::Tensor& w, BufferId out,
                            std::vector<std::shared_ptr<void>>& keep);
// An int8 matrix product (dnnl.qmatmul, lower/dnnl_int8.cpp): a [..., M, K] u8 or s8 (row-major,
// its batch folded into M) with one zero point, a constant s8 b [K, N]
// without one, output scales per column or one, the result row-major;
// nullopt for other layouts.
struct QMatmulSpec {
  ir::DType x_type = ir::DType::U8, y_type = ir::DType::U8;
  std::int32_t x_zero = 0, y_zero = 0;
  std::vector<float> scales;
};
std::optional<Step> make_qmatmul_step(const QMatmulSpec& q, const View& a, const ir::Tensor& b, BufferId out,
                                      std::vector<std::shared_ptr<void>>& keep);

// Transposed convolution (1-, 2- or 3-D, groups) with an optional bias:
// `spec` as for make_conv_step but w_dims are ONNX's [C, M/G, k...] and the
// pads are the transposed op's (the result's position o takes input i at tap
// k where o = i stride - pads_begin + k dilation; pads_end may be negative,
// from output_padding). The activation and sum are not used (lower_convolution plans
// no epilogue for it: oneDNN 2.6 runs it several times slower with one).
LibraryStep make_conv_transpose_step(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                     const std::optional<LibraryOperand>& bias, BufferId out,
                                     std::vector<std::shared_ptr<void>>& keep);

struct PoolSpec {
  std::vector<std::int64_t> x_dims, out_dims, kernel, strides, dilations, pads_begin, pads_end;
  bool max = true;
  bool count_include_pad = false;
};
// x: a dense View; the result keeps x's layout when oneDNN does.
// With `bounds`, as make_conv_step's.
LibraryStep make_pool_step(const PoolSpec& spec, const View& x, BufferId out, std::vector<std::shared_ptr<void>>& keep,
                           ValueBounds* bounds = nullptr);

// A copy of f32 elements read with `src_strides` (elements, all positive)
// from `offset` of `src` into `out`, row-major over `dims`: a oneDNN
// reorder, whose blocked kernels transpose several times faster than a loop
// kernel's strided reads (a [1599 512] transpose: 0.19 ms against 1.13 ms).
// nullopt when oneDNN has no reorder for it.
std::optional<Step> make_reorder_step(BufferId src, std::int64_t offset, const std::vector<std::int64_t>& dims,
                                      const std::vector<std::int64_t>& src_strides, BufferId out,
                                      const std::string& label, std::vector<std::shared_ptr<void>>& keep);

// Library threads: oneDNN's (OpenMP) count; OpenBLAS runs single-threaded
// inside the executor's pool.
void set_library_threads(int n);

}  // namespace saturn::lower
