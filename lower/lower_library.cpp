// Library calls, the ops the extractor chose to run in a library (kind
// Library: blas.*, dnnl.*, cublas.*, cudnn.*): matrix products (OpenBLAS /
// oneDNN, cuBLAS), convolutions and pooling (oneDNN, cuDNN) through the
// target, with what the library takes fused in: transposed operands read in
// place through the library's flags, gemm's beta C as a pending add, a
// convolution's bias, and the residual add and ReLU its op names
// (dnnl.conv_add_relu) as post-ops. Plain products and convolutions are
// loop nests (lower_loop_products.cpp): whether a library runs one is the
// e-graph's choice, not made here.
// What the target's library cannot take (TargetTraits) is rewritten here
// (explicit padding, a cropped full result) or runs another way: a pooling
// kernel of the op's own meaning, or the reference kernel. f16 / bf16 ops
// run over exact f32 copies, rounded once.
#include <algorithm>
#include <set>

#include "lower/lowerer.hpp"

namespace saturn::lower {

using ir::DType;

namespace {

// Whether padding both sides by `begin` gives the result dims `out` (the
// last window ends inside the input and the left padding): cuDNN's
// symmetric padding then computes the op. On success `end` becomes `begin`.
bool symmetric_padding(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& out,
                       const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& strides,
                       const std::vector<std::int64_t>& dilations, const std::vector<std::int64_t>& begin,
                       std::vector<std::int64_t>& end) {
  for (std::size_t i = 0; i < begin.size(); ++i) {
    const std::int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    const std::int64_t padded = x[2 + i] + 2 * begin[i];
    if (padded < span || (padded - span) / strides[i] + 1 != out[2 + i] || end[i] > begin[i]) return false;
  }
  end = begin;
  return true;
}

// The end padding that gives exactly the result's size `out` (NC +
// spatial): the last window ends there. ONNX's may be larger (a last window
// short of it) or smaller (ceil_mode).
Dims exact_end_padding(const Dims& x, const Dims& out, const Dims& kernel, const Dims& strides, const Dims& dilations,
                       const Dims& begin) {
  Dims end;
  for (std::size_t i = 0; i < begin.size(); ++i) {
    const std::int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    end.push_back((out[2 + i] - 1) * strides[i] + span - x[2 + i] - begin[i]);
  }
  return end;
}

// The view walks its buffer with these strides (size-1 dimensions aside).
bool same_strides(const View& v, const std::vector<std::int64_t>& strides) {
  for (std::size_t i = 0; i < v.dims.size(); ++i)
    if (v.dims[i] != 1 && v.strides[i] != strides[i]) return false;
  return v.dense();
}

}  // namespace

bool Lowerer::lower_library(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in,
                            const std::vector<ir::ValueType>& out_types) {
  if (def.kind != ir::OpKind::Library) return false;
  const Dims out = ir::static_dims(out_types[0].shape);
  const std::string& op = def.semantics();
  const bool nd = !in.empty() && in[0] && in[0]->dims.size() >= 3 && in[0]->dims.size() <= 5;
  if (op == "matmul" && in.size() == 2 && in[0] && in[1]) return lower_matmul(n, *in[0], *in[1], out, true);
  if (op == "gemm" && in.size() >= 2) {
    Value* c = in.size() > 2 ? in[2] : nullptr;
    lower_gemm_like(n, *in[0], *in[1], n.attrs.i("transA", 0) != 0, n.attrs.i("transB", 0) != 0,
                    n.attrs.f("alpha", 1.0), c, n.attrs.f("beta", 1.0), out);
    return true;
  }
  if (op == "conv" && nd && in[1]) return lower_conv(n, def, in, out);
  if (op == "conv_transpose" && nd && in[1]) return lower_conv_transpose(n, in, out);
  if (op == "quantized_conv" && nd && in.size() >= 8) return lower_qconv(n, in, out);
  if (op == "quantized_matmul" && in.size() == 8 && in[0] && in[3]) return lower_qmatmul(n, in, out);
  if ((op == "max_pool" || op == "avg_pool") && nd && (n.outputs.size() < 2 || n.outputs[1].empty()))
    return lower_library_pool(n, *in[0], out);
  return false;
}

namespace {

// A convolution node's geometry as the libraries take it: the op's own
// window (explicit pads or auto_pad; also in `window` when asked), the end
// padding exact for `out`.
ConvSpec conv_spec(const ir::Node& n, const Dims& x, const Dims& w, const Dims& out,
                   ir::WindowGeometry* window = nullptr) {
  ConvSpec spec;
  spec.x_dims = x;
  spec.w_dims = w;
  spec.out_dims = out;
  const ir::WindowGeometry win =
      ir::window_geometry(n.attrs, Dims(x.begin() + 2, x.end()), Dims(w.begin() + 2, w.end()), false);
  spec.strides = win.strides;
  spec.dilations = win.dilations;
  spec.pads_begin = win.pads_begin;
  spec.group = n.attrs.i("group", 1);
  spec.pads_end = exact_end_padding(x, out, win.kernel, win.strides, win.dilations, win.pads_begin);
  if (window) *window = win;
  return spec;
}

}  // namespace

bool Lowerer::lower_conv(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in, const Dims& out) {
  ir::WindowGeometry win;
  ConvSpec spec = conv_spec(n, in[0]->dims, in[1]->dims, out, &win);
  spec.activation = def.activation;
  spec.winograd = def.winograd;
  spec.channels_last = def.channels_last;
  spec.clip_min = n.attrs.f("min", -HUGE_VAL);
  spec.clip_max = n.attrs.f("max", HUGE_VAL);
  // cuDNN takes symmetric padding only. The exact right padding computed
  // above may be smaller than the left one and still give the same result
  // (a last window that does not reach it): then the symmetric one does
  // too. Otherwise (TensorFlow's SAME with a stride, one-sided pads) the
  // input is padded explicitly with zeros (one row-copy kernel; a
  // negative end padding crops) and cuDNN convolves it unpadded.
  Value* bias = in.size() > 2 ? in[2] : nullptr;
  Value* skip = def.sum_epilogue && in.size() > 3 ? in[3] : nullptr;
  if (target_->traits().symmetric_padding_only &&
      !symmetric_padding(spec.x_dims, out, win.kernel, spec.strides, spec.dilations, spec.pads_begin, spec.pads_end)) {
    const std::size_t r = spec.x_dims.size();
    Dims pads(2 * r, 0);
    for (std::size_t i = 0; i + 2 < r; ++i) {
      pads[2 + i] = spec.pads_begin[i];
      pads[r + 2 + i] = spec.pads_end[i];
    }
    Value padded = stored(emit_pad(*in[0], pads, "constant", 0.0, n.outputs[0] + " padded input"));
    spec.x_dims = padded.dims;
    std::fill(spec.pads_begin.begin(), spec.pads_begin.end(), 0);
    std::fill(spec.pads_end.begin(), spec.pads_end.end(), 0);
    return lower_convolution(n, false, spec, padded, *in[1], bias, skip);
  }
  return lower_convolution(n, false, spec, *in[0], *in[1], bias, skip);
}

const ir::Tensor* Lowerer::constant_of(const Value* v) const {
  if (!v || v->pending || v->view.buffer < 0) return nullptr;
  const Buffer& b = buffer(v->view.buffer);
  if (b.kind != BufferKind::Weight || !b.weight || !v->view.whole()) return nullptr;
  return b.weight;
}

// quantized_conv's operands (x, x_scale, x_zero, w, w_scale, w_zero,
// y_scale, y_zero, bias?) as oneDNN's int8 convolution takes them
// (QConvSpec); false (the reference kernel) where the target has no such
// call. Only rulesets/dnnl.rules' forms reach here: constant parameters,
// one scale and zero point for x and y, weights without a zero point.
bool Lowerer::lower_qconv(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  const ir::Tensor *xs = constant_of(in[1]), *xz = constant_of(in[2]), *w = constant_of(in[3]),
                   *ws = constant_of(in[4]), *ys = constant_of(in[6]), *yz = constant_of(in[7]);
  const ir::Tensor* b = in.size() > 8 && in[8] ? constant_of(in[8]) : nullptr;
  if (!xs || !xz || !w || !ws || !ys || !yz || (in.size() > 8 && in[8] && !b) || xs->numel() != 1 || xz->numel() != 1 ||
      ys->numel() != 1 || yz->numel() != 1 || w->dtype() != DType::I8)
    return false;
  QConvSpec q;
  q.conv = conv_spec(n, in[0]->dims, in[3]->dims, out);
  q.x_type = in[0]->dtype;
  q.y_type = yz->dtype();
  q.x_zero = static_cast<std::int32_t>(xz->at_int(0));
  q.y_zero = static_cast<std::int32_t>(yz->at_int(0));
  const std::int64_t M = out[1];
  for (std::int64_t oc = 0; oc < M; ++oc) {
    const double acc_scale = xs->at(0) * ws->at(ws->numel() == 1 ? 0 : static_cast<std::size_t>(oc));
    if (ws->numel() > 1 || oc == 0) q.scales.push_back(static_cast<float>(acc_scale / ys->at(0)));
    if (b) q.bias.push_back(static_cast<float>(b->at(static_cast<std::size_t>(oc)) / acc_scale));
  }
  const View x = dense(*in[0]);
  const BufferId y = add_buffer(BufferKind::Temp, q.y_type, out, n.op);
  std::optional<LibraryStep> made = target_->qconv(q, x, *w, y);
  if (!made) {
    p_->buffers.pop_back();  // y, unused
    return false;
  }
  values_[n.outputs[0]] = library_result(std::move(*made), y);
  return true;
}

// quantized_matmul's operands as oneDNN's int8 matrix product takes them
// (QMatmulSpec); false (the reference kernel) otherwise. rulesets/dnnl.rules
// sends only constant parameters, one scale and zero point for a and y,
// a constant s8 b [K N] without a zero point.
bool Lowerer::lower_qmatmul(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  const ir::Tensor *as = constant_of(in[1]), *az = constant_of(in[2]), *b = constant_of(in[3]),
                   *bs = constant_of(in[4]), *ys = constant_of(in[6]), *yz = constant_of(in[7]);
  if (!as || !az || !b || !bs || !ys || !yz || as->numel() != 1 || az->numel() != 1 || ys->numel() != 1 ||
      yz->numel() != 1 || b->dtype() != DType::I8 || b->dims().size() != 2 || in[0]->dims.size() < 2)
    return false;
  const std::int64_t N = b->dims()[1];
  if (bs->numel() != 1 && bs->numel() != static_cast<std::size_t>(N)) return false;
  QMatmulSpec q;
  q.x_type = in[0]->dtype;
  q.y_type = yz->dtype();
  q.x_zero = static_cast<std::int32_t>(az->at_int(0));
  q.y_zero = static_cast<std::int32_t>(yz->at_int(0));
  for (std::size_t j = 0; j < bs->numel(); ++j)
    q.scales.push_back(static_cast<float>(as->at(0) * bs->at(j) / ys->at(0)));
  const View a = whole(*in[0]);
  const BufferId y = add_buffer(BufferKind::Temp, q.y_type, out, n.op);
  std::optional<Step> made = target_->qmatmul(q, a, *b, y);
  if (!made) {
    p_->buffers.pop_back();  // y, unused
    return false;
  }
  p_->steps.push_back(std::move(*made));
  ++p_->library_calls;
  values_[n.outputs[0]] = stored(y);
  return true;
}

bool Lowerer::lower_conv_transpose(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  const ir::ConvTransposeGeometry g = ir::conv_transpose_geometry(n.attrs, in[0]->dims, in[1]->dims);
  ConvSpec spec;
  spec.x_dims = in[0]->dims;
  spec.w_dims = in[1]->dims;
  spec.out_dims = out;
  spec.strides = g.strides;
  spec.dilations = g.dilations;
  spec.pads_begin = g.begin;
  spec.group = n.attrs.i("group", 1);
  for (std::size_t i = 0; i < g.begin.size(); ++i)  // what is left of the full result past `out`
    spec.pads_end.push_back((spec.x_dims[2 + i] - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dilations[i] + 1 -
                            g.begin[i] - out[2 + i]);
  if (lower_convolution(n, true, spec, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, nullptr)) return true;
  if (!target_->traits().symmetric_padding_only) return false;  // (a geometry the library lacks: the reference)
  // cuDNN crops both sides of the full result alike. Otherwise (one-sided
  // pads, SAME with an odd kernel - stride): the full result unpadded, with
  // output_padding's zero rows past it (fewer than a stride, which cuDNN
  // accepts), and the op's result a strided view into it.
  ConvSpec full = spec;
  Dims start(out.size(), 0);
  for (std::size_t i = 0; i < g.begin.size(); ++i) {
    full.out_dims[2 + i] = out[2 + i] + g.begin[i] + spec.pads_end[i] + std::max<std::int64_t>(0, -spec.pads_end[i]);
    full.pads_begin[i] = full.pads_end[i] = 0;
    start[2 + i] = g.begin[i];
  }
  if (!lower_convolution(n, true, full, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, nullptr)) return false;
  Value& v = values_.at(n.outputs[0]);
  v.view = v.view.sliced(start, Dims(out.size(), 1), out);
  v.dims = out;
  return true;
}

bool Lowerer::lower_library_pool(const ir::Node& n, Value& x, const Dims& out) {
  PoolSpec spec;
  spec.max = n.op.find("max") != std::string::npos;
  spec.count_include_pad = n.attrs.i("count_include_pad", 0) != 0;
  spec.x_dims = x.dims;
  spec.out_dims = out;
  const ir::WindowGeometry w = ir::window_geometry(n.attrs, Dims(spec.x_dims.begin() + 2, spec.x_dims.end()),
                                                   n.attrs.ints("kernel_shape"), n.attrs.i("ceil_mode", 0) != 0);
  spec.kernel = w.kernel;
  spec.strides = w.strides;
  spec.dilations = w.dilations;
  spec.pads_begin = w.pads_begin;
  spec.pads_end = exact_end_padding(spec.x_dims, out, w.kernel, w.strides, w.dilations, w.pads_begin);
  // Counting the padding, oneDNN divides every window by its full size,
  // and ONNX by the part of it inside the padded input: the same unless a
  // window reaches past the given end padding (ceil_mode's last window).
  // Padding no window reaches changes nothing (maxvit_t's 3x3 pooling by 2
  // of 112, padded 1 on each side: its last window ends at the input's
  // edge; it ran Saturn's reference loop, 8.2 ms instead of 0.2).
  if (!spec.max && spec.count_include_pad)
    for (std::size_t i = 0; i < spec.pads_end.size(); ++i)
      if (spec.pads_end[i] > w.pads_end[i]) return false;
  const TargetTraits& can = target_->traits();
  if (!can.dilated_pooling &&
      std::any_of(w.dilations.begin(), w.dilations.end(), [](std::int64_t d) { return d != 1; }))
    return false;
  if (can.symmetric_padding_only &&
      !symmetric_padding(spec.x_dims, out, w.kernel, spec.strides, w.dilations, spec.pads_begin, spec.pads_end))
    return false;
  View xv = dense(x);
  if (can.row_major_library_operands && spec.max && !xv.contiguous()) xv = whole(x);  // (cuDNN's correction)
  BufferId y = add_buffer(BufferKind::Temp, DType::F32, out, n.op);
  std::optional<LibraryStep> made = target_->pool(spec, w, xv, y);
  if (!made) {               // a geometry the library does not implement: the reference kernel
    p_->buffers.pop_back();  // y, unused
    return false;
  }
  values_[n.outputs[0]] = library_result(std::move(*made), y);
  return true;
}

bool Lowerer::lower_convolution(const ir::Node& n, bool transposed, ConvSpec spec, Value& x_value, Value& w_value,
                                Value* bias_value, Value* skip) {
  spec.sum = skip != nullptr;
  const View x = dense(x_value);
  std::optional<View> skip_view;
  if (skip) skip_view = target_->traits().row_major_library_operands ? whole(*skip) : dense(*skip);
  const LibraryOperand w = library_operand(w_value);
  const std::optional<LibraryOperand> bias =
      bias_value ? std::optional<LibraryOperand>(library_operand(*bias_value)) : std::nullopt;
  const View* skip_read = skip_view ? &*skip_view : nullptr;
  const BufferId y = add_buffer(BufferKind::Temp, DType::F32, spec.out_dims, n.op);
  std::optional<LibraryStep> ls =
      transposed ? target_->conv_transpose(spec, x, w, bias, y) : target_->conv(spec, x, w, bias, skip_read, y);
  if (!ls) {
    p_->buffers.pop_back();  // y, unused
    return false;
  }
  // The sum post-op reads each skip element once, where it writes: skip's
  // storage may become the result's when it is laid out alike (and is not
  // one of the conv's other operands, read all over).
  if (skip_view && skip_view->offset == 0 && skip_view->buffer != x.buffer && skip_view->buffer != w.view.buffer &&
      (!bias || skip_view->buffer != bias->view.buffer) && same_strides(*skip_view, ls->out_strides))
    ls->step.in_place_ok.push_back(skip_view->buffer);
  values_[n.outputs[0]] = library_result(std::move(*ls), y);
  return true;
}

Value Lowerer::library_result(LibraryStep made, BufferId y) {
  p_->steps.push_back(std::move(made.step));
  ++p_->library_calls;
  Value v = stored(y);
  v.view.strides = made.out_strides;  // (the library's layout: NHWC seen as NCHW)
  return v;
}

LibraryOperand Lowerer::library_operand(Value& v) {
  const Buffer& b = buffer(v.view.buffer);
  if (!v.pending && !v.is_scalar_constant && v.view.whole() && b.kind == BufferKind::Weight) return {v.view, b.weight};
  return {target_->traits().row_major_library_operands ? whole(v) : dense(v), nullptr};
}

bool Lowerer::lower_matmul(const ir::Node& n, Value& a_in, Value& b_in, const Dims& out, bool library) {
  const DType t = a_in.dtype;
  if (!ir::is_float(t) || b_in.dtype != t || a_in.dims.empty() || b_in.dims.empty() || n.outputs.size() != 1 ||
      n.outputs[0].empty())
    return false;
  // A 1-D operand as a matrix (a copy of its Value); the others as they are
  // (what the product stores of them is theirs).
  Value a_matrix, b_matrix;
  auto as_matrix = [&](Value& v, Value& m, bool left) -> Value& {
    if (v.dims.size() != 1) return v;
    m = v;
    if (m.pending || m.is_scalar_constant || !m.view.contiguous()) m.view = whole(m);
    m.dims = left ? Dims{1, v.dims[0]} : Dims{v.dims[0], 1};
    m.view = m.view.reshaped(m.dims);
    return m;
  };
  Value& a = as_matrix(a_in, a_matrix, true);
  Value& b = as_matrix(b_in, b_matrix, false);
  Dims out2 = out;  // the product's dims before the 1-D operands' axes go
  if (b_in.dims.size() == 1) out2.push_back(1);
  if (a_in.dims.size() == 1) out2.insert(out2.end() - 1, 1);
  const std::string& name = n.outputs[0];
  if (!library || t == DType::F64) {  // (no target's library multiplies doubles)
    values_[name] = reshaped_to(product_loops(n, a, b, false, false, 1.0, out2, t), out);
    return true;
  }
  const bool half = t != DType::F32;
  if (!half) {
    lower_gemm_like(n, a, b, false, false, 1.0, nullptr, 0.0, out2);
    values_[name] = reshaped_to(values_[name], out);
    return true;
  }
  if (target_->traits().half_products) {  // the halves as they are, f32 sums rounded to them
    lower_gemm_like(n, a, b, false, false, 1.0, nullptr, 0.0, out2, t);
    values_[name] = reshaped_to(values_[name], out);
    return true;
  }
  Value af = f32_copy(a, n.op + " operand as f32"), bf = f32_copy(b, n.op + " operand as f32");
  lower_gemm_like(n, af, bf, false, false, 1.0, nullptr, 0.0, out2);
  std::vector<Value*> none;
  set_pending(n, none, out, t, leaf(reshaped_to(values_[name], out).view), 1, 0, DType::F32);
  return true;
}

View Lowerer::gemm_operand(Value& v, bool transpose, std::int64_t rows, std::int64_t cols, const Dims& batch) {
  auto as_operand = [&](View view) -> std::optional<View> {
    const std::size_t r = view.dims.size();
    if (transpose) {
      std::swap(view.dims[r - 1], view.dims[r - 2]);
      std::swap(view.strides[r - 1], view.strides[r - 2]);
    }
    View lead{view.buffer, view.offset, Dims(view.dims.begin(), view.dims.end() - 2),
              Dims(view.strides.begin(), view.strides.end() - 2)};
    View out = lead.broadcast_to(batch);
    out.dims.push_back(rows);
    out.dims.push_back(cols);
    out.strides.push_back(view.strides[r - 2]);
    out.strides.push_back(view.strides[r - 1]);
    if (!matrix_layout(out)) return std::nullopt;
    for (std::int64_t st : out.strides)
      if (st < 0) return std::nullopt;  // a reversed slice: BLAS walks forwards
    return out;
  };
  store(v);
  if (!v.is_scalar_constant)
    if (auto op = as_operand(v.view)) return *op;
  return *as_operand(whole(v));
}

void Lowerer::lower_gemm_like(const ir::Node& n, Value& a_in, Value& b_in, bool ta, bool tb, double alpha, Value* c,
                              double beta, const Dims& out_dims, DType result) {
  const std::size_t r = out_dims.size();
  Dims batch(out_dims.begin(), out_dims.end() - 2);
  const std::int64_t M = out_dims[r - 2], N = out_dims[r - 1];
  const std::int64_t K = ta ? a_in.dims[a_in.dims.size() - 2] : a_in.dims.back();
  View a = gemm_operand(a_in, ta, M, K, batch);
  View b = gemm_operand(b_in, tb, K, N, batch);
  BufferId y = add_buffer(BufferKind::Temp, result, out_dims, n.op);
  const bool b_shared = n.inputs.size() > 1 && uses_[n.inputs[1]] > 1;
  std::optional<Step> step = target_->gemm(a, b, y, out_dims, alpha, b_shared);
  if (!step) {
    // Batch dims no single stride walks (an operand broadcast along some of
    // them but not others): both operands copied out in full, row-major.
    auto row_major = [&](const Value& in, const View& v) {
      Value c = in;
      c.view = v;
      c.dims = v.dims;
      c.pending = false;
      c.is_scalar_constant = false;
      return whole(c);
    };
    step = target_->gemm(row_major(a_in, a), row_major(b_in, b), y, out_dims, alpha, false);
  }
  if (!step)
    throw DiagnosticError{at_graph(where() + " lowering: " + ir::describe(n) + ": a product the library cannot take")};
  p_->steps.push_back(std::move(*step));
  ++p_->library_calls;
  add_product_bias(n, stored(y), c, beta, out_dims, result);
}

bool Lowerer::adds_product_bias(const Value* c, double beta) {
  return c && !(c->is_scalar_constant && c->constant == 0.0) && beta != 0.0;
}

void Lowerer::add_product_bias(const ir::Node& n, Value v, Value* c, double beta, const Dims& out_dims, DType result) {
  if (adds_product_bias(c, beta)) {
    // beta * C joins the result as a pending elementwise add (fused into its
    // consumer), summed in f32 (f64 for doubles) and rounded to `result`
    // once.
    ir::Sym s = sym(leaf(v.view)) + sym(expr_over(*c, out_dims)) * beta;
    v.compute = float_compute(v);
    v.dtype = result;
    v.pending = true;
    v.sym = s.id();
    v.ops = 1;
    v.label = n.op + " bias";
    if (!o_.fuse || uses_[n.outputs[0]] > 1) store(v);
  }
  values_[n.outputs[0]] = v;
}

void Lowerer::lower_pool_kernel(const ir::Node& n, Value& x, const std::vector<ir::ValueType>& out_types) {
  // (f16 / bf16 get here only when lower_through_f32 could not take them.)
  const bool half = x.dtype == DType::F16 || x.dtype == DType::BF16;
  if (x.dtype == DType::Bool || (half && !target_->traits().half_pooling_kernel)) {
    lower_reference(n, out_types);
    return;
  }
  const ir::PoolWindow p = ir::pool_window(n.attrs, x.dims, n.op.find("max") != std::string::npos);
  const bool indices = p.max && n.outputs.size() > 1 && !n.outputs[1].empty();
  const BufferId src = whole(x).buffer;
  const DType t = x.dtype;
  const BufferId y = add_buffer(BufferKind::Temp, t, p.out_dims(), n.outputs[0]);
  const std::optional<BufferId> idx =
      indices ? std::optional(add_buffer(BufferKind::Temp, DType::I64, p.out_dims(), n.outputs[1])) : std::nullopt;
  std::string label = ir::OpRegistry::get().find(n.op)->semantics() + " (window";
  for (auto k : p.w.kernel) label += " " + std::to_string(k);
  label += indices ? ", indices)" : ")";
  p_->steps.push_back(target_->pool_kernel(p, t, src, y, idx, label));
  values_[n.outputs[0]] = stored(y);
  if (idx) values_[n.outputs[1]] = stored(*idx);
}

bool Lowerer::lower_through_f32(const ir::Node& n, std::vector<Value*>& in,
                                const std::vector<ir::ValueType>& out_types) {
  // Library ops (plain products, convolutions and pools are loop nests of
  // any float type) and the normalizations lower_norm takes in f32.
  static const std::set<std::string> library = {"conv", "conv_transpose", "gemm", "max_pool", "avg_pool"};
  static const std::set<std::string> norms = {"batch_norm", "layer_norm",      "instance_norm",
                                              "lrn",        "global_avg_pool", "global_max_pool"};
  const ir::OpDef& def = *ir::OpRegistry::get().find(n.op);
  const bool takes =
      norms.count(def.semantics()) || (def.kind == ir::OpKind::Library && library.count(def.semantics()));
  if (!takes || in.empty() || !in[0] || out_types.empty()) return false;
  const DType t = in[0]->dtype;
  if (t != DType::F16 && t != DType::BF16) return false;
  for (const Value* v : in)
    if (v && v->dtype != t) return false;
  for (const ir::ValueType& o : out_types)
    if (o.dtype != t) return false;
  std::vector<Value> copies(in.size());
  std::vector<Value*> in32;
  for (std::size_t k = 0; k < in.size(); ++k) {
    // (A target with half products multiplies a gemm's A and B as they are.)
    if (!in[k] || (target_->traits().half_products && def.semantics() == "gemm" && k < 2)) {
      in32.push_back(in[k]);
      continue;
    }
    copies[k] = f32_copy(*in[k], n.op + " operand as f32");
    in32.push_back(&copies[k]);
  }
  std::vector<ir::ValueType> types32 = out_types;
  for (ir::ValueType& o : types32) o.dtype = DType::F32;
  if (!lower_norm(n, in32, types32) && !lower_library(n, def, in32, types32)) return false;
  std::vector<Value*> none;
  for (std::size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    Value& r = values_.at(n.outputs[k]);
    const Dims dims = r.dims;
    set_pending(n, none, dims, t, expr_over(r, dims), 1, k, DType::F32);
  }
  return true;
}

}  // namespace saturn::lower
