// The ONNX importer's state while it reads one model, and what the
// per-op importers (ir/onnx_import.cpp, ir/onnx_recurrent.cpp) call:
// operands, attributes (each read is recorded; an attribute no importer
// read is an error), types, and `emit`, which adds a node or folds it
// when its operands are constants. Internal to ir/: users include
// ir/onnx_import.hpp.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/memory_limit.hpp"
#include "ir/onnx_import.hpp"
#include "ir/op.hpp"

namespace saturn::ir::onnx_detail {

constexpr const char* kRuntimeShapeHint = "values computed at run time are not supported; bind the input to a value";

[[noreturn]] void fail(const std::string& where, const std::string& msg);

// `raw_owner`: p's raw_data, which the tensor may take instead of copying
// (an initializer of a model the import owns): the weights of a 350 MB
// model are then copied once, by the parse, not twice.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& where, const std::string& what,
                         std::string* raw_owner = nullptr);

class Importer {
 public:
  Importer(std::string source, const ImportOptions& options) : source_(std::move(source)), options_(options) {}

  // m's initializers give their raw bytes to the graph's constants.
  Graph run(onnx::ModelProto& m) {
    bool declared = false;
    for (const auto& o : m.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") {
        // Read as int64: a huge version must not wrap into the known range.
        if (o.version() <= 0 || o.version() > 27)
          fail(source_,
               "opset " + std::to_string(o.version()) +
                   (o.version() <= 0 ? " is not an opset version" : " is newer than this importer knows (27)"));
        opset_ = static_cast<int>(o.version());
        declared = true;
      } else if (o.domain() != "ai.onnx.ml") {
        domains_.insert(o.domain());
      }
    }
    // IR versions before 3 had no opset_import and meant opset 1.
    if (!declared) {
      if (m.ir_version() >= 3) fail(source_, "the model imports no opset of the default domain (opset_import)");
      opset_ = 1;
    }
    // 7-22 is the documented range. Older models are accepted for the ops
    // whose definition is unchanged (legacy forms - consumed_inputs, broadcast
    // with axis, Reshape's shape attribute - are handled or rejected per
    // node); 23-27 only widen the types of the ops imported here (checked by
    // the conformance suite).
    if (opset_ > 27) fail(source_, "opset " + std::to_string(opset_) + " is newer than this importer knows (27)");
    const onnx::GraphProto& gp = m.graph();
    g_.name = gp.name();
    g_.source = source_;
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& init = gp.initializer(i);
      if (consts_.count(init.name())) fail(source_, "initializer '" + init.name() + "' is defined twice");
      Tensor t = tensor_from_proto(init, source_, "initializer '" + init.name() + "'",
                                   m.mutable_graph()->mutable_initializer(i)->mutable_raw_data());
      types_[init.name()] = ValueType{t.dtype(), shape_of(t.dims())};
      consts_[init.name()] = std::move(t);
    }
    if (gp.sparse_initializer_size() > 0) fail(source_, "sparse initializers are not supported");
    int unknown = 0;
    for (const auto& in : gp.input()) {
      if (consts_.count(in.name())) continue;  // IR < 4 lists initializers as inputs
      g_.declared_inputs.push_back(in.name());
      if (auto b = options_.bind.find(in.name()); b != options_.bind.end()) {
        types_[in.name()] = ValueType{b->second.dtype(), shape_of(b->second.dims())};
        consts_[in.name()] = b->second;
        g_.bound_inputs.push_back(in.name());
        continue;
      }
      if (!in.type().has_tensor_type())
        fail(source_,
             "graph input '" + in.name() + "' is not a tensor (sequences, maps and optionals are not supported)");
      const auto& tt = in.type().tensor_type();
      auto dt = dtype_from_onnx(tt.elem_type());
      if (!dt)
        fail(source_,
             "graph input '" + in.name() + "': element type " + onnx_type_name(tt.elem_type()) + " is not supported");
      Shape s;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value())
          s.push_back(Dim::of(d.dim_value()));
        else if (d.has_dim_param() && !d.dim_param().empty())
          s.push_back(Dim::symbol(d.dim_param()));
        else
          s.push_back(Dim::symbol("_d" + std::to_string(unknown++)));
      }
      g_.inputs.push_back(GraphValue{in.name(), ValueType{*dt, s}});
      types_[in.name()] = ValueType{*dt, s};
    }
    for (int i : node_order(gp)) import_node(gp.node(i));
    for (const auto& out : gp.output()) g_.outputs.push_back(out.name());
    if (g_.outputs.empty()) fail(source_, "the graph has no outputs: nothing to compute");
    // Keep the constants that remaining nodes or the outputs use.
    std::set<std::string> used(g_.outputs.begin(), g_.outputs.end());
    for (const Node& n : g_.nodes) used.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& name : used) {
      auto it = consts_.find(name);
      if (it != consts_.end()) g_.initializers[name] = it->second;
    }
    for (const std::string& o : g_.outputs)
      if (!types_.count(o)) fail(source_, "graph output '" + o + "' is not produced by any node");
    // A declared output type must agree with the computed one where both
    // are known: the element type, and static dimensions of the same rank.
    for (const auto& out : gp.output()) {
      if (!out.type().has_tensor_type()) continue;
      const auto& tt = out.type().tensor_type();
      const ValueType& got = types_.at(out.name());
      const auto declared = dtype_from_onnx(tt.elem_type());
      if (tt.elem_type() != 0 && declared != got.dtype)
        fail(source_, "graph output '" + out.name() + "' is declared " + onnx_type_name(tt.elem_type()) +
                          ", the graph computes " + dtype_name(got.dtype));
      if (!tt.has_shape() || tt.shape().dim_size() != static_cast<int>(got.shape.size())) continue;
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        const Dim& have = got.shape[static_cast<std::size_t>(d)];
        if (dim.has_dim_value() && have.is_static() && dim.dim_value() != have.value())
          fail(source_, "graph output '" + out.name() + "' is declared with shape dimension " + std::to_string(d) +
                            " = " + std::to_string(dim.dim_value()) + ", the graph computes " + to_string(got.shape));
      }
    }
    return std::move(g_);
  }

  // --- what op importers use ---
  int opset() const { return opset_; }
  const onnx::NodeProto& node() const { return *node_; }
  std::string where() const {
    return "node '" + node_->name() + "' (" + node_->op_type() + ", opset " + std::to_string(opset_) + ")";
  }
  [[noreturn]] void unsupported(const std::string& what) const { fail(source_, where() + ": " + what); }

  std::string in(int i) const { return i < node_->input_size() ? node_->input(i) : std::string(); }
  bool has_in(int i) const { return !in(i).empty(); }
  std::string out(int i) const { return i < node_->output_size() ? node_->output(i) : std::string(); }
  int num_out() const {
    int n = node_->output_size();
    while (n > 0 && node_->output(n - 1).empty()) --n;
    return n;
  }

  // Every attribute an importer looks at is recorded: an attribute that no
  // importer read is unsupported, an error rather than a silent skip.
  const onnx::AttributeProto* attr(const std::string& name) const {
    read_attrs_.insert(name);
    for (const auto& a : node_->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  // Attributes that do not change what inference computes.
  void ignore(std::initializer_list<const char*> names) const {
    for (const char* n : names) read_attrs_.insert(n);
  }
  // An attribute read as a given kind; another kind is an error (a FLOAT
  // axis read as an INT would be 0).
  const onnx::AttributeProto* typed_attr(const std::string& name, onnx::AttributeProto::AttributeType kind) const {
    auto* a = attr(name);
    if (a && a->type() != kind)
      unsupported("attribute '" + name + "' is " + onnx::AttributeProto::AttributeType_Name(a->type()) + ", expected " +
                  onnx::AttributeProto::AttributeType_Name(kind));
    return a;
  }
  std::int64_t ai(const std::string& name, std::int64_t fallback) const {
    auto* a = typed_attr(name, onnx::AttributeProto::INT);
    return a ? a->i() : fallback;
  }
  double af(const std::string& name, double fallback) const {
    auto* a = typed_attr(name, onnx::AttributeProto::FLOAT);
    return a ? a->f() : fallback;
  }
  std::string as(const std::string& name, const std::string& fallback) const {
    auto* a = typed_attr(name, onnx::AttributeProto::STRING);
    return a ? a->s() : fallback;
  }
  std::vector<std::int64_t> aints(const std::string& name) const {
    auto* a = typed_attr(name, onnx::AttributeProto::INTS);
    return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
  }
  bool has_attr(const std::string& name) const { return attr(name) != nullptr; }

  // Copies the named ONNX attributes (those present) as they are.
  Attrs copy(const std::vector<const char*>& names) const {
    Attrs at;
    for (const char* n : names) {
      auto* a = attr(n);
      if (!a) continue;
      switch (a->type()) {
        case onnx::AttributeProto::INT:
          at.set(n, a->i());
          break;
        case onnx::AttributeProto::FLOAT:
          at.set(n, static_cast<double>(a->f()));
          break;
        case onnx::AttributeProto::STRING:
          at.set(n, a->s());
          break;
        case onnx::AttributeProto::INTS:
          at.set(n, std::vector<std::int64_t>(a->ints().begin(), a->ints().end()));
          break;
        case onnx::AttributeProto::FLOATS:
          at.set(n, std::vector<double>(a->floats().begin(), a->floats().end()));
          break;
        case onnx::AttributeProto::TENSOR:
          at.set(n, tensor_from_proto(a->t(), source_, where()));
          break;
        default:
          unsupported(std::string("attribute '") + n + "' has an unsupported kind");
      }
    }
    return at;
  }

  const Tensor* const_value(const std::string& name) const {
    auto it = consts_.find(name);
    return it == consts_.end() ? nullptr : &it->second;
  }
  const ValueType& type_of(const std::string& name) {
    auto it = types_.find(name);
    if (it == types_.end()) unsupported("operand '" + name + "' is not defined before it is used");
    return it->second;
  }
  // Operand i must be a constant (folded at import); its values as integers.
  std::vector<std::int64_t> const_ints(int i, const char* what) { return const_tensor(i, what).to_ints(); }
  const Tensor& const_tensor(int i, const char* what) {
    const Tensor* t = const_value(in(i));
    if (!t) unsupported(std::string(what) + " (operand '" + in(i) + "') must be a constant: " + kRuntimeShapeHint);
    return *t;
  }

  std::string fresh(const std::string& base) { return base + "__" + std::to_string(counter_++); }

  // Adds a node (or folds it when every operand is constant).
  void emit(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
            Attrs attrs = {}) {
    const OpDef* def = OpRegistry::get().find(op);
    if (!def) unsupported("internal: no op '" + op + "'");
    Node n{node_->name(), op, std::move(inputs), std::move(outputs), std::move(attrs), node_->op_type()};
    std::vector<TypedInput> ins;
    bool all_const = true;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        ins.push_back(TypedInput{{}, nullptr, false});
        continue;
      }
      const Tensor* c = const_value(name);
      all_const &= c != nullptr;
      ins.push_back(TypedInput{type_of(name), c, true});
    }
    // Single assignment: a second producer of a name would silently win.
    for (const std::string& name : n.outputs)
      if (!name.empty() && types_.count(name))
        unsupported("value '" + name + "' is already defined (by a graph input, an initializer or another node)");
    std::vector<ValueType> outs;
    try {
      outs = def->infer(n.attrs, ins, n.outputs.size());
    } catch (const ShapeError& e) {
      fail(source_, where() + ": " + e.message);
    }
    for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (!n.outputs[k].empty()) types_[n.outputs[k]] = outs[k];
    // Shape of a statically shaped value is a constant, whatever the value.
    if (op == "shape" && is_static(ins[0].type.shape)) {
      auto dims = static_dims(ins[0].type.shape);
      auto rank = static_cast<std::int64_t>(dims.size());
      std::int64_t b = n.attrs.i("start", 0), e = n.attrs.i("end", rank);
      if (b < 0) b += rank;
      if (e < 0) e += rank;
      b = std::clamp<std::int64_t>(b, 0, rank);
      e = std::clamp<std::int64_t>(e, b, rank);
      consts_[n.outputs[0]] =
          Tensor::of_ints(DType::I64, {e - b}, std::vector<std::int64_t>(dims.begin() + b, dims.begin() + e));
      return;
    }
    if (op == "size" && is_static(ins[0].type.shape)) {  // so is its element count
      consts_[n.outputs[0]] = Tensor::of_ints(DType::I64, {}, {numel(static_dims(ins[0].type.shape))});
      return;
    }
    // A dequantized weight stays quantized: its integer form is what an
    // int8 library call reads (rulesets/quant.rules).
    if (all_const && op != "dequantize_linear") {
      // (Refused before evaluating: see ir/memory_limit.hpp.)
      for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
        if (auto refusal = exceeds_memory(n.outputs[k], outs[k])) unsupported(*refusal);
      std::vector<Tensor> args;
      auto given = std::make_unique<bool[]>(n.inputs.size() + 1);
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        given[k] = !n.inputs[k].empty();
        args.push_back(given[k] ? *const_value(n.inputs[k]) : Tensor());
      }
      try {
        auto res = def->eval(n.attrs, args, std::span<const bool>(given.get(), n.inputs.size()), n.outputs.size());
        for (std::size_t k = 0; k < n.outputs.size() && k < res.size(); ++k)
          if (!n.outputs[k].empty()) consts_[n.outputs[k]] = std::move(res[k]);
        return;
      } catch (const ShapeError& e) {
        fail(source_, where() + ": " + e.message);
      }
    }
    g_.nodes.push_back(std::move(n));
  }
  void emit1(const std::string& op, std::vector<std::string> inputs, Attrs attrs = {}) {
    emit(op, std::move(inputs), {out(0)}, std::move(attrs));
  }
  void add_const(const std::string& name, Tensor t) {
    types_[name] = ValueType{t.dtype(), shape_of(t.dims())};
    consts_[name] = std::move(t);
  }
  // For an op imported as several (its function body): `op` into a fresh
  // value named after `base` and the op, and a constant likewise.
  std::string emit_fresh(const std::string& base, const std::string& op, std::vector<std::string> inputs,
                         Attrs attrs = {}) {
    std::string o = fresh(base + "_" + op);
    emit(op, std::move(inputs), {o}, std::move(attrs));
    return o;
  }
  std::string add_fresh_const(const std::string& base, const std::string& what, Tensor t) {
    std::string c = fresh(base + "_" + what);
    add_const(c, std::move(t));
    return c;
  }

 private:
  void import_node(const onnx::NodeProto& n);
  std::vector<int> node_order(const onnx::GraphProto& gp);

  std::string source_;
  const ImportOptions& options_;
  int opset_ = 0;
  std::set<std::string> domains_;
  Graph g_;
  std::map<std::string, ValueType> types_;
  std::map<std::string, Tensor> consts_;
  const onnx::NodeProto* node_ = nullptr;
  int counter_ = 0;
  mutable std::set<std::string> read_attrs_;
};

// One attribute, for the ops an importer emits as a body of several
// (distinct names: a braced {1} would pick an integer overload over a list).
inline Attrs list_attr(const char* name, std::vector<std::int64_t> v) {
  Attrs a;
  a.set(name, std::move(v));
  return a;
}
inline Attrs int_attr(const char* name, std::int64_t v) {
  Attrs a;
  a.set(name, v);
  return a;
}
inline Attrs text_attr(const char* name, const char* v) {
  Attrs a;
  a.set(name, std::string(v));
  return a;
}

using ImportFn = std::function<void(Importer&)>;
using ImportTable = std::unordered_map<std::string, ImportFn>;

// LSTM, GRU and RNN, unrolled over their sequence (ir/onnx_recurrent.cpp).
void import_recurrent(ImportTable& t);
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as their function
// bodies (ir/onnx_losses.cpp).
void import_losses(ImportTable& t);
// Ops that are their definitions in registry ops (ir/onnx_bodies.cpp).
void import_bodies(ImportTable& t);

}  // namespace saturn::ir::onnx_detail
