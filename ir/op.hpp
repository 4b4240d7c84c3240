// The op registry: every tensor op declared once ("one op, one place").
//
// An OpDef is a table row: the op's name and kind (primitive, composite as
// importers and users write it, or library call), its operand and result
// counts, its attributes, its shape/dtype rule and its reference semantics.
// The ONNX importer, the reference interpreter, and later the Z3 semantics,
// the cost model and code generation all read from here, so adding an op
// means adding one row in one family file (ops_*.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/shape.hpp"
#include "ir/symbolic.hpp"
#include "ir/tensor.hpp"

namespace saturn::ir {

using AttrValue =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<double>, Tensor>;

class Attrs {
 public:
  void set(const std::string& name, AttrValue v) { m_[name] = std::move(v); }
  bool has(const std::string& name) const { return m_.count(name) != 0; }
  std::int64_t i(const std::string& name, std::int64_t fallback) const;
  double f(const std::string& name, double fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> ints(const std::string& name, std::vector<std::int64_t> fallback = {}) const;
  std::vector<double> floats(const std::string& name, std::vector<double> fallback = {}) const;
  const Tensor* tensor(const std::string& name) const;
  const std::map<std::string, AttrValue>& all() const { return m_; }

 private:
  std::map<std::string, AttrValue> m_;
};

struct ValueType {
  DType dtype = DType::F32;
  Shape shape;
};

// Thrown by shape rules and evaluation; the graph turns it into a Diagnostic
// naming the node and the op.
struct ShapeError {
  std::string message;
};
[[noreturn]] void shape_error(std::string message);
// The broadcast of two static shapes; a ShapeError naming `op` when they do
// not broadcast (kernels run on graphs nobody checked, through interpret()).
std::vector<std::int64_t> broadcast_dims(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
                                         const std::string& op);

// An operand as a shape rule sees it: its type, and its value when known.
struct TypedInput {
  ValueType type;
  const Tensor* value = nullptr;
  bool present = true;  // false for an omitted optional operand
};

enum class OpKind { Primitive, Composite, Library };

// An attribute as the e-graph sees it: attributes are an op's trailing
// children, in the order of OpDef::attrs, so patterns can bind and test them.
// A scalar attribute that is absent takes `fallback`; without one, absence is
// the symbol `none`. A list attribute that is absent is the empty list (every
// op reads an absent list and an empty one alike).
enum class AttrType { Int, Real, Ints, Reals, String, Tensor };
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::Int;
  std::optional<AttrValue> fallback;
  std::vector<std::string> choices;  // a String attribute's allowed values (empty: any)
};
inline AttrSpec attr_int(std::string n, std::optional<std::int64_t> fb = std::nullopt) {
  return {std::move(n), AttrType::Int, fb ? std::optional<AttrValue>(*fb) : std::nullopt, {}};
}
inline AttrSpec attr_real(std::string n, std::optional<double> fb = std::nullopt) {
  return {std::move(n), AttrType::Real, fb ? std::optional<AttrValue>(*fb) : std::nullopt, {}};
}
inline AttrSpec attr_string(std::string n, std::optional<std::string> fb = std::nullopt) {
  return {std::move(n), AttrType::String, fb ? std::optional<AttrValue>(*fb) : std::nullopt, {}};
}
// A string attribute that takes one of `choices` (checked by every shape
// rule: an unknown auto_pad must not read as NOTSET).
inline AttrSpec attr_choice(std::string n, std::string fallback, std::vector<std::string> choices) {
  return {std::move(n), AttrType::String, AttrValue(std::move(fallback)), std::move(choices)};
}
inline AttrSpec attr_ints(std::string n) { return {std::move(n), AttrType::Ints, std::nullopt, {}}; }
inline AttrSpec attr_reals(std::string n) { return {std::move(n), AttrType::Reals, std::nullopt, {}}; }
inline AttrSpec attr_tensor(std::string n) { return {std::move(n), AttrType::Tensor, std::nullopt, {}}; }

// The activation a fused library call applies to its result.
// Silu is x sigmoid(x) (ONNX's Mul of a value and its Sigmoid), HardSwish
// ONNX's HardSwish.
enum class Activation : std::uint8_t { None, Relu, Clip, Silu, HardSwish };

// A fused call's attributes (dnnl.conv_clip's): the convolution's, and its
// activation's (clip's min and max, those given).
struct EpilogueAttrs {
  Attrs conv, activation;
};
EpilogueAttrs split_epilogue_attrs(Activation activation, const Attrs& attrs);

// An activation as the primitive ops it stands for, applied in order to a
// value y: each step takes the previous step's result (y for the first),
// after y itself where `takes_y` (SiLU's mul(y, sigmoid(y))). Every
// definition of an activation (a fused call's reference semantics, its
// export, a target's split, its price) is read from here.
struct ActivationStep {
  const char* op;
  bool takes_y = false;
};
std::span<const ActivationStep> activation_steps(Activation activation);
// The arithmetic operations per element of an activation, for the cost
// models (the unit work of its steps; 0 for None).
double activation_unit_work(Activation activation);

struct OpDef {
  std::string name;
  OpKind kind = OpKind::Composite;
  std::string doc;
  int min_inputs = 1;
  int max_inputs = 1;   // -1: any number
  int num_outputs = 1;  // -1: as many as the node names (split)
  std::function<std::vector<ValueType>(const Attrs&, std::span<const TypedInput>, std::size_t num_outputs)> infer;
  // A necessary condition of infer() on the operands' types, checked
  // without throwing: false means infer() rejects these operands with these
  // attributes (true promises nothing). Optional. `saturn verify`
  // type-checks millions of candidate nodes, most of them ill-typed, and a
  // thrown ShapeError costs microseconds where this costs nanoseconds
  // (tests/test_op_facts.cpp checks that it never rejects what infer()
  // takes).
  std::function<bool(const Attrs&, std::span<const TypedInput>)> admits;
  // Operands omitted by the node are empty tensors with `present` false in
  // `given`; results must have the types infer() gives for these operands.
  std::function<std::vector<Tensor>(const Attrs&, std::span<const Tensor>, std::span<const bool> given,
                                    std::size_t num_outputs)>
      eval;
  // Symbolic semantics for `saturn verify` (ir/symbolic.hpp): set together
  // with eval by set_kernel from one template. Ops that only copy elements
  // (movement) set `traceable` instead and are traced through eval.
  std::function<std::vector<SymTensor>(const Attrs&, std::span<const SymTensor>, std::span<const bool> given,
                                       std::size_t num_outputs)>
      symbolic;
  bool traceable = false;
  // Attributes in e-graph order (see AttrSpec).
  std::vector<AttrSpec> attrs;
  // Arithmetic work of one application, for cost models; when unset, one
  // operation per result element (elementwise ops, movement, reductions read
  // their input once: see work_of).
  std::function<double(const Attrs&, std::span<const ValueType> in, std::span<const ValueType> out)> flops;

  // What the lowering and the cost models know of the op, declared here so
  // that a new op is one registry row (docs/design.md, "One op, one place").
  //
  // Result element i is a function of the operands' elements at i (after
  // broadcasting): compiled targets fuse it into a loop kernel through
  // `symbolic`, never running its reference kernel.
  bool elementwise = false;
  // Only changes the shape: the result's elements are the operand's, in the
  // same row-major order (reshape, flatten, squeeze, unsqueeze, identity). A
  // view of a stored value costs nothing.
  bool view = false;
  // Its results are its operands' elements, moved (the movement ops,
  // where), or computed from them without rounding to their type
  // (comparisons, casts): it takes the types that only store values
  // (ir::stores_only), which every other op refuses (checked by the
  // registry, with the operand counts).
  bool moves_values = false;
  // Sums products along an axis (matmul, gemm, einsum, convolutions):
  // generated loop nests reach a smaller share of the peak than for
  // streaming ops.
  bool contraction = false;
  // Arithmetic operations per result element for the cost models, where
  // one is dearer than one add (exp 8, gelu 20, ...).
  double unit_work = 1;
  // A library call (kind Library): the composite op whose semantics it has
  // ("matmul" for blas.matmul and cublas.matmul), and the epilogue it
  // fuses: a fourth operand added to the result (dnnl.conv_add), then an
  // activation (dnnl.conv_relu, dnnl.conv_add_relu, dnnl.conv_clip with
  // clip's min and max attributes, dnnl.conv_silu, dnnl.conv_hard_swish).
  std::string library_of;
  bool sum_epilogue = false;
  Activation activation = Activation::None;
  // A convolution the library computes with Winograd's minimal filtering
  // (dnnl.wino_conv...): fewer multiplications than the direct algorithm,
  // for 3x3 kernels at stride 1; the same result up to rounding.
  bool winograd = false;
  // A convolution the library computes on the channels-last layout its
  // operand and result have in the program (dnnl.cl_conv...), instead of
  // the layout the library prefers (for grouped convolutions, oneDNN's
  // blocked one, which costs a reorder of the source and of the result at
  // every call). Which is faster depends on the shape; the cost model
  // chooses.
  bool channels_last = false;
  // The op this one computes: itself, or the composite a library call
  // stands for. The lowering dispatches on it.
  const std::string& semantics() const { return library_of.empty() ? name : library_of; }
};

class OpRegistry {
 public:
  static const OpRegistry& get();
  const OpDef* find(const std::string& name) const;
  std::vector<const OpDef*> all() const;
  void add(OpDef def);
  // Declares the attributes of an op added before (see AttrSpec).
  void declare_attrs(const std::string& op, std::vector<AttrSpec> attrs);
  // Declares the arithmetic work of an op added before (OpDef::flops).
  void declare_work(const std::string& op, decltype(OpDef::flops) work);
  // Declares the operations per result element of an op added before
  // (OpDef::unit_work).
  void declare_unit_work(const std::string& op, double ops_per_element);
  // Declares an op added before a view (OpDef::view).
  void declare_view(const std::string& op);

 private:
  std::unordered_map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Family files (one per concern) add their rows here.
void register_elementwise_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_movement_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_quant_ops(OpRegistry& r);    // after the ops they compose
void register_library_ops(OpRegistry& r);  // after the ops they mirror

// Arithmetic operations of one application of `def` (OpDef::flops, or one
// per element of the largest operand or result); 0 for unknown sizes.
double work_of(const OpDef& def, const Attrs& a, std::span<const ValueType> in, std::span<const ValueType> out);

// Sets eval and symbolic from one kernel written over the tensor type
// (`auto x` is a span of Tensor or of SymTensor; see ir/symbolic.hpp).
template <class Kernel>
void set_kernel(OpDef& d, Kernel k) {
  d.eval = [k](const Attrs& a, std::span<const Tensor> x, std::span<const bool> g, std::size_t n) {
    return k(a, x, g, n);
  };
  d.symbolic = [k](const Attrs& a, std::span<const SymTensor> x, std::span<const bool> g, std::size_t n) {
    return k(a, x, g, n);
  };
}

// Applies `d` to symbolic operands: its kernel, or for traceable ops, eval on
// tagged values to see which operand element each result element copies.
// Throws SymbolicUnsupported for ops with neither.
std::vector<SymTensor> apply_symbolic(const OpDef& d, const Attrs& a, std::span<const SymTensor> x,
                                      std::span<const bool> given, std::size_t num_outputs);

// Helpers shared by the families.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* what = "axis");
std::vector<std::int64_t> static_shape(const TypedInput& in, const char* what);
// Row-major coordinates of flat index i in dims.
std::vector<std::int64_t> unflatten(std::int64_t i, const std::vector<std::int64_t>& dims);

}  // namespace saturn::ir
