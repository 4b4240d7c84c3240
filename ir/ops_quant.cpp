// Quantized composites: the products a QDQ graph spells with
// dequantize_linear, a float product and quantize_linear, as one op
// (quantized_conv, quantized_matmul).
//
// Invariant: each op here computes exactly the composition it names (its
// kernel, its symbolic form and its shape rule are those of the registry's
// own ops applied in turn), so the rule that forms it from that composition
// (rulesets/quant.rules) is an identity, and a library call with its
// semantics (dnnl.qconv, dnnl.qmatmul) may compute it in integers.
#include "ir/op.hpp"

namespace saturn::ir {

namespace {

using Inputs = std::span<const TypedInput>;

// The registry's ops a quantized product composes.
struct Parts {
  const OpDef* dq;
  const OpDef* product;
  const OpDef* q;
};

// quantize_linear(product(dequantize_linear(x, xs, xz), dequantize_linear(w,
// ws, wz), bias?), ys, yz) over Tensors or SymTensors.
template <class T>
std::vector<T> compose(const Parts& p, const Attrs& a, std::span<const T> in, std::span<const bool> given) {
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
  T x = apply(*p.dq, {in[0], in[1], in[2]}, {true, true, true});
  T w = apply(*p.dq, {in[3], in[4], in[5]}, {true, true, true});
  const bool bias = in.size() > 8 && given[8];
  std::vector<T> operands{std::move(x), std::move(w)};
  std::vector<bool> present{true, true};
  if (bias) {
    operands.push_back(in[8]);
    present.push_back(true);
  }
  T y = apply(*p.product, std::move(operands), std::move(present));
  return {apply(*p.q, {std::move(y), in[6], in[7]}, {true, true, true})};
}

void quantized(OpRegistry& r, const std::string& product, bool bias, const std::string& doc) {
  const Parts parts{r.find("dequantize_linear"), r.find(product), r.find("quantize_linear")};
  OpDef d;
  d.name = "quantized_" + product;
  d.kind = OpKind::Composite;
  d.contraction = true;
  d.moves_values = true;  // (its operands and result are quantized types)
  d.min_inputs = 8;
  d.max_inputs = bias ? 9 : 8;
  d.doc = doc;
  d.infer = [parts](const Attrs& a, Inputs in, std::size_t) {
    const ValueType x = parts.dq->infer(a, in.subspan(0, 3), 1).at(0);
    const ValueType w = parts.dq->infer(a, in.subspan(3, 3), 1).at(0);
    std::vector<TypedInput> product_in{{x, nullptr, true}, {w, nullptr, true}};
    if (in.size() > 8) product_in.push_back(in[8]);
    const ValueType y = parts.product->infer(a, product_in, 1).at(0);
    const std::vector<TypedInput> q_in{{y, nullptr, true}, in[6], in[7]};
    return parts.q->infer(a, q_in, 1);
  };
  d.eval = [parts](const Attrs& a, std::span<const Tensor> in, std::span<const bool> given, std::size_t) {
    return compose<Tensor>(parts, a, in, given);
  };
  d.symbolic = [parts](const Attrs& a, std::span<const SymTensor> in, std::span<const bool> given, std::size_t) {
    return compose<SymTensor>(parts, a, in, given);
  };
  // The product's multiply-adds (the dequantizing and quantizing fuse into
  // them).
  auto work = parts.product->flops;
  d.flops = [work](const Attrs& a, std::span<const ValueType> in, std::span<const ValueType> out) {
    const std::vector<ValueType> product_in{in[0], in[3]};
    return work(a, product_in, out);
  };
  r.add(std::move(d));
  r.declare_attrs("quantized_" + product, parts.product->attrs);
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  quantized(r, "conv", true,
            "quantized_conv(x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias?) = "
            "quantize_linear(conv(dequantize_linear(x, x_scale, x_zero), dequantize_linear(w, w_scale, w_zero), "
            "bias), y_scale, y_zero), with conv's attributes (a QDQ convolution as one op: rulesets/quant.rules)");
  quantized(r, "matmul", false,
            "quantized_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero) = "
            "quantize_linear(matmul(dequantize_linear(a, a_scale, a_zero), dequantize_linear(b, b_scale, b_zero)), "
            "y_scale, y_zero) (a QDQ matrix product as one op: rulesets/quant.rules)");
}

}  // namespace saturn::ir
