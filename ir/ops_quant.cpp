// Quantized composites: the products a QDQ graph spells with
// dequantize_linear, a float product and quantize_linear, as one op.
//
// Invariant: each op here computes exactly the composition it names (its
// kernel, its symbolic form and its shape rule are those of the registry's
// own ops applied in turn), so the rule that forms it from that composition
// (rulesets/quant.rules) is an identity, and a library call with its
// semantics (dnnl.qconv) may compute it in integers.
#include "ir/op.hpp"

namespace saturn::ir {

namespace {

using Inputs = std::span<const TypedInput>;

// quantize_linear(conv(dequantize_linear(x, xs, xz), dequantize_linear(w,
// ws, wz), b), ys, yz) over Tensors or SymTensors.
template <class T>
std::vector<T> quantized_conv(const OpDef& dq, const OpDef& conv, const OpDef& q, const Attrs& a,
                              std::span<const T> in, std::span<const bool> given) {
  auto apply = [&](const OpDef& d, std::vector<T> operands, std::vector<bool> present) {
    auto flags = std::make_unique<bool[]>(present.size() + 1);
    for (std::size_t k = 0; k < present.size(); ++k) flags[k] = present[k];
    const std::span<const T> args(operands);
    const std::span<const bool> g(flags.get(), present.size());
    if constexpr (std::is_same_v<T, Tensor>)
      return std::move(d.eval(a, args, g, 1).at(0));
    else
      return std::move(apply_symbolic(d, a, args, g, 1).at(0));
  };
  T x = apply(dq, {in[0], in[1], in[2]}, {true, true, true});
  T w = apply(dq, {in[3], in[4], in[5]}, {true, true, true});
  const bool bias = in.size() > 8 && given[8];
  T y = apply(conv, {std::move(x), std::move(w), bias ? in[8] : T()}, {true, true, bias});
  return {apply(q, {std::move(y), in[6], in[7]}, {true, true, true})};
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  const OpDef* dq = r.find("dequantize_linear");
  const OpDef* conv = r.find("conv");
  const OpDef* q = r.find("quantize_linear");
  OpDef d;
  d.name = "quantized_conv";
  d.kind = OpKind::Composite;
  d.contraction = true;
  d.moves_values = true;  // (its operands and result are quantized types)
  d.min_inputs = 8;
  d.max_inputs = 9;
  d.doc = "quantized_conv(x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias?) = "
          "quantize_linear(conv(dequantize_linear(x, x_scale, x_zero), dequantize_linear(w, w_scale, w_zero), bias), "
          "y_scale, y_zero), with conv's attributes (a QDQ convolution as one op: rulesets/quant.rules)";
  d.infer = [dq, conv, q](const Attrs& a, Inputs in, std::size_t) {
    const ValueType x = dq->infer(a, in.subspan(0, 3), 1).at(0);
    const ValueType w = dq->infer(a, in.subspan(3, 3), 1).at(0);
    const TypedInput bias = in.size() > 8 ? in[8] : TypedInput{{}, nullptr, false};
    const std::vector<TypedInput> conv_in{{x, nullptr, true}, {w, nullptr, true}, bias};
    const ValueType y = conv->infer(a, conv_in, 1).at(0);
    const std::vector<TypedInput> q_in{{y, nullptr, true}, in[6], in[7]};
    return q->infer(a, q_in, 1);
  };
  d.eval = [dq, conv, q](const Attrs& a, std::span<const Tensor> in, std::span<const bool> given, std::size_t) {
    return quantized_conv<Tensor>(*dq, *conv, *q, a, in, given);
  };
  d.symbolic = [dq, conv, q](const Attrs& a, std::span<const SymTensor> in, std::span<const bool> given,
                             std::size_t) { return quantized_conv<SymTensor>(*dq, *conv, *q, a, in, given); };
  // The convolution's multiply-adds (the dequantizing and quantizing fuse
  // into them).
  auto conv_work = conv->flops;
  d.flops = [conv_work](const Attrs& a, std::span<const ValueType> in, std::span<const ValueType> out) {
    const std::vector<ValueType> conv_in{in[0], in[3]};
    return conv_work(a, conv_in, out);
  };
  r.add(std::move(d));
  r.declare_attrs("quantized_conv", conv->attrs);
}

}  // namespace saturn::ir
