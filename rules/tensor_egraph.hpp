// The tensor e-graph: the generic e-graph with the tensor language plugged in.
//
// Encoding (docs/tensor-egraph.md): an op of the registry is an e-node whose
// children are its operands, then its attributes in the order its OpDef
// declares them (literal e-nodes: integers, reals, [lists], symbols), then,
// for ops with several results, the result's index and the number of
// results. An omitted optional operand is the leaf `none`; a graph input is
// (input NAME); a constant is (const #cN), a handle into the constant pool.
// So (transpose ?x ?perm) and (reshape ?x ?shape 0) are ordinary patterns.
//
// TensorAnalysis keeps, per e-class, the tensor type (dtype and shape) that
// the op registry's own shape rules give, whether the class is computable
// from constants alone (it is then computed once, at load time), and the
// value of small constants. Two different types in one class can only come
// from an unsound rule: the first such merge is recorded with the rule that
// caused it, and the optimizer stops and reports it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "egraph/analysis.hpp"
#include "egraph/egraph.hpp"
#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::rules {

using egraph::EClassId;
using egraph::NodeId;
using egraph::Op;

// Constant tensors by handle. Small tensors are interned by content, so two
// equal constants are one e-class; large ones (weights) by name.
class ConstantPool {
 public:
  Op intern(ir::Tensor t, const std::string& name = {});
  const ir::Tensor* find(Op handle) const;
  // The name a constant came with (an initializer's), or empty.
  std::string name_of(Op handle) const;
  static constexpr std::size_t kSmall = 64;  // elements

 private:
  struct Entry {
    std::shared_ptr<const ir::Tensor> value;
    std::string name;
  };
  std::unordered_map<Op, Entry> entries_;
  std::unordered_map<std::string, Op> by_content_;
  std::unordered_map<std::string, Op> by_name_;
};

struct TensorInfo {
  enum class Kind : std::uint8_t { Attr, Tensor, Invalid };
  Kind kind = Kind::Attr;
  bool constant = false;  // computable from constants alone
  ir::ValueType type;
  std::shared_ptr<const ir::Tensor> value;  // for small constants
  // For a larger constant of the model whose elements are all equal (a
  // per-channel zero point of zeros): that value, which is-zero, is-one and
  // splat read.
  std::optional<double> uniform;
  std::string error;  // for Invalid: why the node does not type-check
};

// An e-node read back as an ir op application.
struct TensorNode {
  const ir::OpDef* def = nullptr;
  std::vector<std::optional<EClassId>> operands;  // nullopt: omitted optional operand
  ir::Attrs attrs;
  std::size_t result = 0, num_results = 1;
};

class TensorAnalysis : public egraph::TypedAnalysis<TensorInfo, TensorAnalysis> {
 public:
  TensorInfo make_data(const egraph::EGraph& g, NodeId n) const;
  egraph::DidMerge merge_data(TensorInfo& into, const TensorInfo& from);

  ConstantPool& constants() { return constants_; }
  const ConstantPool& constants() const { return constants_; }
  void declare_input(const std::string& name, ir::ValueType t) { inputs_[name] = std::move(t); }
  const ir::ValueType* input_type(const std::string& name) const;

  // Who is changing the e-graph now (a rule's name), for conflict messages.
  void set_context(std::string who) { context_ = std::move(who); }
  // The first unsound merge seen, with the rule that caused it.
  const std::optional<std::string>& conflict() const { return conflict_; }
  // Decodes an e-node of the tensor language; nullopt for leaves (input,
  // const, literals) and for nodes that are not well formed (with `why`).
  std::optional<TensorNode> decode(const egraph::EGraph& g, NodeId n, std::string* why = nullptr) const;
  std::optional<TensorNode> decode(const egraph::EGraph& g, Op op, std::span<const EClassId> kids,
                                   std::string* why = nullptr) const;
  // Whether a node of `op` over `kids` may type-check: false only when its
  // op's OpDef::admits rejects the operands' types with the attributes,
  // known without adding the node or throwing. `saturn verify`'s instance
  // enumeration tries millions of nodes, most of them ill-typed.
  bool admits(const egraph::EGraph& g, Op op, std::span<const EClassId> kids) const;
  // The attributes of `def` held by `classes` (its attribute children, in
  // OpDef::attrs order), as the op reads them: absent ones left out.
  std::optional<ir::Attrs> attrs_of(const egraph::EGraph& g, const ir::OpDef& def, std::span<const EClassId> classes,
                                    std::string* why = nullptr) const;

 private:
  const ir::OpDef* def_of(Op op) const;  // cached registry lookup

  mutable std::unordered_map<std::uint32_t, const ir::OpDef*> defs_;
  ConstantPool constants_;
  std::map<std::string, ir::ValueType> inputs_;
  std::string context_ = "import";
  std::optional<std::string> conflict_;
};

// Well-known operators of the language besides the registry's ops.
struct TensorOps {
  Op input, constant, none;
  static const TensorOps& get();
};

// The symbol leaf of a class (a string attribute, a constant handle, none).
std::optional<Op> leaf_symbol(const egraph::EGraph& g, EClassId c);

// A node of the source graph as the e-graph holds it: the names the user
// gave it and the value it computes, which the rebuilt graph keeps when it
// chooses this node.
struct ImportedNode {
  std::string name, source_op, value;
};

// An ir::Graph in an e-graph: one class per output.
struct TensorEGraph {
  egraph::EGraph graph;
  TensorAnalysis* analysis = nullptr;
  std::vector<EClassId> outputs;
  ir::Graph source;                                          // inputs, outputs and names to rebuild a graph with
  std::unordered_map<std::uint32_t, ImportedNode> imported;  // by e-node id (NodeId::v)

  TensorEGraph() = default;
  TensorEGraph(TensorEGraph&&) = default;
  TensorEGraph& operator=(TensorEGraph&&) = default;
};

// Loads a type-checked graph; fails naming the node whose op or attributes
// the tensor language cannot express. `explain`: the e-graph keeps a proof
// forest (egraph/explain.hpp).
Expected<TensorEGraph> to_egraph(const ir::Graph& g, bool explain = false);

// Rebuilds an ir::Graph choosing node `choice(c)` for each needed class c.
// Classes computable from constants alone are evaluated into initializers.
using Choice = std::function<NodeId(EClassId)>;
Expected<ir::Graph> from_egraph(const TensorEGraph& t, const Choice& choice);

// The op checker for rule files: registry ops with the arity of their
// encoding, plus input/const/none.
std::optional<std::string> check_tensor_op(const std::string& op, std::size_t arity);

// Evaluates every node whose operands are all initializers into an
// initializer (what a runtime does once, at load time).
Expected<ir::Graph> fold_constant_nodes(ir::Graph g);

}  // namespace saturn::rules
