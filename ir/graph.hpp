// ir::Graph: inputs, initializers, nodes in topological order, outputs.
//
// Values are named; a node refers to its operands and results by name, and
// an omitted optional operand is the empty name. Every op is an OpRegistry
// entry, so the graph is checked (infer_types) with the ops' own rules.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/op.hpp"

namespace saturn::ir {

struct Node {
  std::string name;  // for messages; may be empty
  std::string op;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  Attrs attrs;
  std::string source_op;  // what the user wrote (e.g. the ONNX op type), for messages
};

struct GraphValue {
  std::string name;
  ValueType type;
};

struct Graph {
  std::string name;
  std::string source;  // file it came from, for messages
  std::vector<GraphValue> inputs;
  std::map<std::string, Tensor> initializers;
  std::vector<Node> nodes;
  std::vector<std::string> outputs;
  std::vector<std::string> bound_inputs;     // inputs specialized to constants at import
  std::vector<std::string> declared_inputs;  // every input the model declares, bound or not, in order
};

// "node 'conv1' (Conv)": how messages name a node.
std::string describe(const Node& n);

// Which nodes the graph's outputs depend on (by index): the others are
// dead, and neither the interpreter nor the lowerings run them.
std::vector<bool> live_nodes(const Graph& g);

// The type of every value; fails naming the node, its op and the dims.
Expected<std::map<std::string, ValueType>> infer_types(const Graph& g);

// The nodes of `activation_steps(a)` from y to `outputs` (each step's
// intermediate named after outputs[0]), named and sourced as `from`;
// `attrs` are the activation's own (split_epilogue_attrs).
std::vector<Node> activation_nodes(Activation a, const Attrs& attrs, const std::string& y,
                                   const std::vector<std::string>& outputs, const Node& from);

}  // namespace saturn::ir
