// The int8 product steps (dnnl.qconv, dnnl.qmatmul): oneDNN's u8/s8 x s8
// -> s32 convolution and matrix product with the scales and zero points of
// quantized_conv / quantized_matmul.
//
// Invariant: a step computes its op's definition in integers:
// round_half_even(scale[oc] * (sum (x - x_zero) w + bias[oc])) + y_zero,
// saturated to the result type, where scale[oc] = x_scale w_scale[oc] /
// y_scale and bias[oc] = b[oc] / (x_scale w_scale[oc]) (oneDNN 2.x adds
// the bias before the output scale). Equal to dequantizing, convolving in
// float and quantizing over the reals; rounding may differ by one step
// where the float result lies within an ulp of a half. (The matrix product
// likewise, with no bias and its scales per column.)
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "lower/dnnl_memory.hpp"
#include "lower/library_calls.hpp"

namespace saturn::lower {

namespace {

using dnnl::memory;
using dt = memory::data_type;

memory::dims as_dims(const std::vector<std::int64_t>& v) { return memory::dims(v.begin(), v.end()); }

dt int8_type(ir::DType t) { return t == ir::DType::U8 ? dt::u8 : dt::s8; }

// The s32 value of one zero point, bound at every run.
memory zero_point(const dnnl::engine& engine, std::int32_t v) {
  memory m(memory::desc({1}, dt::s32, {1}), engine);
  *static_cast<std::int32_t*>(m.get_data_handle()) = v;
  return m;
}

struct Int8State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive prim;
  memory user_src, src, weights, bias, dst, src_zero, dst_zero;
  std::optional<dnnl::reorder> to_src;
  std::vector<std::shared_ptr<std::uint8_t[]>> storage;  // of the memories the step owns
};

// The constant s8 weights laid out as `have`, reordered now into the
// primitive's layout `want`.
void pack_weights(Int8State& st, const memory::desc& want, const memory::desc& have, const std::uint8_t* data) {
  memory user(have, st.engine, const_cast<std::uint8_t*>(data));
  st.weights = owned_memory(want, st.engine, st.storage);
  dnnl::reorder(user, st.weights).execute(st.stream, user, st.weights);
}

// One run: this run's source and result bound (the source reordered first
// where the step needs it), the zero points and the bias with them.
void run_int8(Int8State& p, const RunContext& ctx, BufferId src, std::size_t src_offset, BufferId out) {
  p.user_src.set_data_handle(ctx.at<std::uint8_t>(src) + src_offset);
  p.dst.set_data_handle(ctx.at<std::uint8_t>(out));
  if (p.to_src) p.to_src->execute(p.stream, p.user_src, p.src);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.src},
                                       {DNNL_ARG_WEIGHTS, p.weights},
                                       {DNNL_ARG_DST, p.dst},
                                       {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, p.src_zero},
                                       {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, p.dst_zero}};
  if (p.bias) args.emplace(DNNL_ARG_BIAS, p.bias);
  p.prim.execute(p.stream, args);
  p.stream.wait();
}

}  // namespace

LibraryStep make_qconv_step(const QConvSpec& q, const View& x, const ir::Tensor& w, BufferId out,
                            std::vector<std::shared_ptr<void>>& keep) {
  const ConvSpec& spec = q.conv;
  auto st = std::make_shared<Int8State>();
  std::vector<std::int64_t> wd = spec.w_dims;
  if (spec.group > 1) {
    wd.insert(wd.begin(), spec.group);
    wd[1] /= spec.group;
  }
  const memory::desc user_x(as_dims(x.dims), int8_type(q.x_type), as_dims(x.strides));
  const memory::desc any_x(as_dims(spec.x_dims), int8_type(q.x_type), memory::format_tag::any);
  const memory::desc any_w(as_dims(wd), dt::s8, memory::format_tag::any);
  // Channels last: the layout oneDNN's int8 kernels read and write without reordering.
  const std::vector<std::int64_t> y_strides = ir::channels_last_strides(spec.out_dims);
  const memory::desc y_md(as_dims(spec.out_dims), int8_type(q.y_type), as_dims(y_strides));
  const memory::desc bias_md = q.bias.empty() ? memory::desc() : memory::desc({spec.out_dims[1]}, dt::f32, {1});
  memory::dims gaps;
  for (auto d : spec.dilations) gaps.push_back(d - 1);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_x,
                                       any_w, bias_md, y_md, as_dims(spec.strides), gaps, as_dims(spec.pads_begin),
                                       as_dims(spec.pads_end));
  dnnl::primitive_attr attr;
  attr.set_output_scales(q.scales.size() > 1 ? 1 << 1 : 0, q.scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::convolution_forward::primitive_desc pd(desc, attr, st->engine);
  st->prim = dnnl::convolution_forward(pd);
  // The constants, in the primitive's layouts, now.
  std::vector<std::int64_t> w_strides(wd.size(), 1);
  for (std::size_t i = wd.size() - 1; i-- > 0;) w_strides[i] = w_strides[i + 1] * wd[i + 1];
  pack_weights(*st, pd.weights_desc(), memory::desc(as_dims(wd), dt::s8, as_dims(w_strides)), w.bytes());
  if (!q.bias.empty()) {
    st->bias = owned_memory(bias_md, st->engine, st->storage);
    std::copy(q.bias.begin(), q.bias.end(), static_cast<float*>(st->bias.get_data_handle()));
  }
  st->src_zero = zero_point(st->engine, q.x_zero);
  st->dst_zero = zero_point(st->engine, q.y_zero);
  st->stream.wait();
  st->user_src = memory(user_x, st->engine, nullptr);
  if (pd.src_desc() == user_x) {
    st->src = st->user_src;
  } else {
    st->src = owned_memory(pd.src_desc(), st->engine, st->storage);
    st->to_src = dnnl::reorder(st->user_src, st->src);
  }
  st->dst = memory(y_md, st->engine, nullptr);
  keep.push_back(st);
  LibraryStep r;
  r.out_strides = y_strides;
  Step& s = r.step;
  s.kind = StepKind::Conv;
  s.label = std::string("oneDNN int8 conv ") + (q.x_type == ir::DType::U8 ? "u8" : "s8") + " * s8 " +
            dims_text(spec.w_dims) + (st->to_src ? " (src reordered)" : "");
  s.reads = {x.buffer};
  s.writes = {out};
  Int8State* p = st.get();
  const std::size_t x_offset = static_cast<std::size_t>(x.offset);
  s.run = [p, xb = x.buffer, x_offset, out](const RunContext& ctx) { run_int8(*p, ctx, xb, x_offset, out); };
  return r;
}

std::optional<Step> make_qmatmul_step(const QMatmulSpec& q, const View& a, const ir::Tensor& b, BufferId out,
                                      std::vector<std::shared_ptr<void>>& keep) {
  // Rows of a (its batch folded in) times b [K N], both row-major.
  if (!a.contiguous() || b.dims().size() != 2) return std::nullopt;
  const std::int64_t K = b.dims()[0], N = b.dims()[1], M = ir::numel(a.dims) / K;
  auto st = std::make_shared<Int8State>();
  const memory::desc a_md({M, K}, int8_type(q.x_type), {K, 1}), y_md({M, N}, int8_type(q.y_type), {N, 1});
  dnnl::matmul::desc desc(a_md, memory::desc({K, N}, dt::s8, memory::format_tag::any), y_md);
  dnnl::primitive_attr attr;
  attr.set_output_scales(q.scales.size() > 1 ? 1 << 1 : 0, q.scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::matmul::primitive_desc pd(desc, attr, st->engine);
  st->prim = dnnl::matmul(pd);
  pack_weights(*st, pd.weights_desc(), memory::desc({K, N}, dt::s8, {N, 1}), b.bytes());
  st->src_zero = zero_point(st->engine, q.x_zero);
  st->dst_zero = zero_point(st->engine, q.y_zero);
  st->stream.wait();
  st->user_src = st->src = memory(a_md, st->engine, nullptr);
  st->dst = memory(y_md, st->engine, nullptr);
  keep.push_back(st);
  Step s;
  s.kind = StepKind::Gemm;
  s.label = "oneDNN int8 matmul " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
            (q.x_type == ir::DType::U8 ? "u8" : "s8") + " * s8";
  s.reads = {a.buffer};
  s.writes = {out};
  Int8State* p = st.get();
  const std::size_t a_offset = static_cast<std::size_t>(a.offset);
  s.run = [p, ab = a.buffer, a_offset, out](const RunContext& ctx) { run_int8(*p, ctx, ab, a_offset, out); };
  return s;
}

}  // namespace saturn::lower
