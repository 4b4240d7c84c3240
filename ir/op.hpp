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
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/shape.hpp"
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

// An operand as a shape rule sees it: its type, and its value when known.
struct TypedInput {
  ValueType type;
  const Tensor* value = nullptr;
  bool present = true;  // false for an omitted optional operand
};

enum class OpKind { Primitive, Composite, Library };

struct OpDef {
  std::string name;
  OpKind kind = OpKind::Composite;
  std::string doc;
  int min_inputs = 1;
  int max_inputs = 1;   // -1: any number
  int num_outputs = 1;  // -1: as many as the node names (split)
  std::function<std::vector<ValueType>(const Attrs&, std::span<const TypedInput>, std::size_t num_outputs)> infer;
  // Operands omitted by the node are empty tensors with `present` false in
  // `given`; results must have the types infer() gives for these operands.
  std::function<std::vector<Tensor>(const Attrs&, std::span<const Tensor>, std::span<const bool> given,
                                    std::size_t num_outputs)>
      eval;
};

class OpRegistry {
 public:
  static const OpRegistry& get();
  const OpDef* find(const std::string& name) const;
  std::vector<const OpDef*> all() const;
  void add(OpDef def);

 private:
  std::unordered_map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Family files (one per concern) add their rows here.
void register_elementwise_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_movement_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_library_ops(OpRegistry& r);  // after the ops they mirror

// Helpers shared by the families.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* what = "axis");
std::vector<std::int64_t> static_shape(const TypedInput& in, const char* what);
// Row-major coordinates of flat index i in dims.
std::vector<std::int64_t> unflatten(std::int64_t i, const std::vector<std::int64_t>& dims);

}  // namespace saturn::ir
