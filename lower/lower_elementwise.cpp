// Elementwise fusion: an elementwise op (OpDef::elementwise) becomes a
// pending expression over its operands' (their semantics are the registry's
// own kernels applied to ir::Sym scalars), computed by one loop kernel where
// the value must be stored. Across element types, each value is rounded as
// its own type rounds: an operand computed in another arithmetic is stored
// first.
#include <algorithm>
#include <memory>

#include "lower/lowerer.hpp"

namespace saturn::lower {

using ir::DType;
using ir::SymId;

namespace {
bool integral(DType t) { return ir::is_integer(t) || t == DType::Bool; }
// Integer arithmetic: integer and bool operands, an integer or bool result,
// and an integer among them (bools alone keep the f32 logic they fuse into).
bool integer_node(const std::vector<Value*>& in, DType out) {
  const bool all = std::all_of(in.begin(), in.end(), [](const Value* v) { return v && integral(v->dtype); });
  const bool some = ir::is_integer(out) ||
                    std::any_of(in.begin(), in.end(), [](const Value* v) { return v && ir::is_integer(v->dtype); });
  return all && some && integral(out);
}

// Whether a pending integer operand `k` of `n` may be used before it is
// stored as its type: one computed in float is converted then; one
// computed in i64 is wrapped to its type's width then: i64 arithmetic
// computes its low bits, and
// only ops whose result's low bits depend on nothing else (add, sub, mul,
// neg, where's values, into a type no wider) may read the rest. A
// comparison, division, max, cast to a wider type... of an i8 sum that
// overflowed needs the wrapped value, which storing it gives.
bool wraps_later(const ir::Node& n, std::size_t k, const Value& v, DType out) {
  if (!ir::is_integer(v.dtype)) return true;
  if (v.compute != DType::I64) return false;  // converted from float when stored (saturated)
  if (v.dtype == DType::I64) return true;
  const bool low_bits = n.op == "add" || n.op == "sub" || n.op == "mul" || n.op == "neg" || (n.op == "where" && k > 0);
  return low_bits && ir::is_integer(out) && ir::dtype_size(out) <= ir::dtype_size(v.dtype);
}
}  // namespace

bool Lowerer::fuses_across_types(const ir::Node& n, const std::vector<Value*>& in,
                                 const std::vector<ir::ValueType>& out_types) const {
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const DType out = out_types[0].dtype;
  if (integer_node(in, out)) return true;  // i64 arithmetic (elementwise_compute)
  // (An integer result of float arithmetic is converted when stored.)
  if (!kernel_dtype(out) && !ir::is_integer(out)) return false;
  // Integers among floats are read as values, exactly in the f64
  // arithmetic they get (an i64 through double, as the reference reads it).
  return std::all_of(in.begin(), in.end(), [&](const Value* v) { return v && leaf_dtype(v->dtype); });
}

DType Lowerer::elementwise_compute(const ir::Node& n, const std::vector<Value*>& in, DType out) {
  if (integer_node(in, out)) return DType::I64;
  auto wide = [&](DType t) { return t == DType::F64 || ir::is_integer(t); };
  // A cast is a rounding to its result's type, which f32 arithmetic gives
  // (from f64 too, and from an i64 read through double) except the test
  // `!= 0` of a bool result and the truncation to an integer.
  if (n.op == "cast")
    return out == DType::F64 || ((out == DType::Bool || ir::is_integer(out)) && in[0] && wide(in[0]->dtype))
               ? DType::F64
               : DType::F32;
  // Quantizing divides in x's type and dequantizing multiplies in f32, as
  // ONNX's reference does (its integers are exact there): f32 for f32 x and
  // results, whatever integer type the other side has.
  if ((n.op == "quantize_linear" && in[0] && in[0]->dtype == DType::F32) ||
      (n.op == "dequantize_linear" && out == DType::F32))
    return DType::F32;
  // Floor modulo is x - y floor(x / y): in f32 a quotient rounded up to an
  // integer would give about -y for about y; in f64, as the reference
  // computes it, the f32 operands' result is the reference's.
  if (wide(out) || n.op == "mod") return DType::F64;
  return std::any_of(in.begin(), in.end(), [&](const Value* v) { return v && wide(v->dtype); }) ? DType::F64
                                                                                                : DType::F32;
}

bool Lowerer::lower_elementwise(const ir::Node& n, std::vector<Value*>& in,
                                const std::vector<ir::ValueType>& out_types) {
  const Dims out = ir::static_dims(out_types[0].shape);
  const DType compute = elementwise_compute(n, in, out_types[0].dtype);
  std::vector<ir::SymTensor> args;
  auto given = std::make_unique<bool[]>(in.size() + 1);
  int ops = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    given[k] = in[k] != nullptr;
    if (!in[k]) {
      args.emplace_back();
      continue;
    }
    // An operand computed in another type is stored first, so each value
    // is rounded as its own type rounds (an f16 one always: f32 arithmetic
    // does not round to it).
    if (in[k]->pending && (in[k]->compute != compute || in[k]->dtype == DType::F16 || in[k]->dtype == DType::BF16 ||
                           !wraps_later(n, k, *in[k], out_types[0].dtype)))
      store(*in[k]);
    if (in[k]->pending && in[k]->dims == out) ops += in[k]->ops;
    ir::SymTensor t(*ctx_, in[k]->dtype, {});
    t.set(0, ir::Sym(ctx_.get(), expr_over(*in[k], out)));
    args.push_back(std::move(t));
  }
  try {  // the op's own kernel applied to scalar expressions (leaves are read as values, loop_kernel.hpp)
    auto res =
        ir::OpRegistry::get().find(n.op)->symbolic(n.attrs, args, std::span<const bool>(given.get(), in.size()), 1);
    const SymId root = res.at(0).id(0);
    if (compute == DType::I64) {
      if (!int_kernel_expression(*ctx_, root)) return false;
      for (SymId id : ctx_->reachable(std::span<const SymId>(&root, 1)))
        if (ir::sym_op_divides(ctx_->node(id).op))
          divisions_.try_emplace(id,
                                 DivisionSite{static_cast<std::size_t>(&n - graph_->nodes.data()), ir::describe(n)});
    }
    set_pending(n, in, out, out_types[0].dtype, root, ops, 0, compute);
  } catch (const ir::SymbolicUnsupported&) {
    return false;
  }
  return true;
}

Value Lowerer::f32_copy(Value& v, const std::string& label) {
  if (v.pending) store(v);
  const Buffer* weight = v.is_scalar_constant || v.view.buffer < 0 ? nullptr : &buffer(v.view.buffer);
  if (weight && weight->kind == BufferKind::Weight && weight->weight) {
    ir::Tensor t(DType::F32, weight->weight->dims());
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, weight->weight->at(i));
    const std::string name = weight->name + " as f32";  // (add_weight moves the buffers)
    folded_->push_back(std::move(t));
    Value c = v;
    c.dtype = DType::F32;
    c.view.buffer = add_weight(&folded_->back(), name);
    return c;
  }
  Value c;
  c.dims = v.dims;
  c.pending = true;
  c.sym = expr_over(v, v.dims);
  c.label = label;
  return c;
}

DType Lowerer::float_compute(Value& x) {
  const DType compute = x.dtype == DType::F64 ? DType::F64 : DType::F32;
  if (x.pending && (x.compute != compute || x.dtype == DType::F16 || x.dtype == DType::BF16)) store(x);
  return compute;
}
}  // namespace saturn::lower
