// ONNX models and tensors in and out (Debian's libonnx protobuf bindings).
//
// Import maps each ONNX node to registry ops, normalizing what changed
// across opsets 7-22 (attributes that became operands, default axes), and
// folds constant subgraphs while it goes - including Shape of a value whose
// shape is static - so shape-computing chains (Shape -> Gather -> Concat ->
// Reshape) become attributes. Anything it cannot represent is an error that
// names the node, the op and the opset; a malformed file is an error, never
// a crash.
#pragma once

#include <map>
#include <string>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::ir {

struct ImportOptions {
  // Graph inputs to treat as constants with these values (specialization):
  // how a model whose shape operands (Reshape's shape, Reduce's axes, ...)
  // arrive as inputs is compiled for given values. Bound inputs are removed
  // from Graph::inputs and listed in Graph::bound_inputs.
  std::map<std::string, Tensor> bind;
};

Expected<Graph> import_onnx_file(const std::string& path, const ImportOptions& options = {});
Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source,
                                  const ImportOptions& options = {});

// When import failed because a graph input feeds an operand that must be
// constant, the name of that input; else empty.
std::string input_needed_as_constant(const Diagnostic& d);

// Imports the model specialized to these input values (in declared order)
// where it needs them at compile time: an input feeding a shape operand is
// bound; a shape operand computed from inputs binds every integer input.
Expected<Graph> import_onnx_for_inputs(const std::string& path, const std::vector<Tensor>& inputs);

// The inputs a graph still takes at run time (drops the bound ones).
std::vector<Tensor> runtime_inputs(const Graph& g, const std::vector<Tensor>& declared);

// A TensorProto (.pb) file, as the ONNX test data stores inputs and outputs.
Expected<Tensor> read_tensor_pb(const std::string& path);
Expected<bool> write_tensor_pb(const Tensor& t, const std::string& path, const std::string& name = "");

// Exports a graph as an ONNX model (opset 20). Every registry op has an ONNX
// form; shape attributes become initializer operands (onnx_export.cpp).
Expected<std::string> export_onnx_bytes(const Graph& g);
Expected<bool> export_onnx_file(const Graph& g, const std::string& path);

}  // namespace saturn::ir
