// Writing an ONNX model without a second copy of its weights.
//
// Protobuf serializes what a message holds, so handing it the initializers
// would copy every weight into a TensorProto first (vit_b_32: 350 MB, about
// half of `saturn opt`'s export time and its peak memory). Here protobuf
// serializes everything but the initializers' data, and each initializer's
// raw bytes are written from the tensor's own storage. The invariant: the
// bytes written are exactly those protobuf writes for the same model with
// the initializers in its graph (fields in field-number order), so no
// reader can tell the difference.
#pragma once

#include <onnx/onnx_pb.h>

#include <ostream>
#include <string>
#include <vector>

#include "ir/tensor.hpp"

namespace saturn::ir {

struct NamedTensor {
  std::string name;
  Tensor tensor;  // shares the graph's storage
};

// t as a TensorProto, its bytes in raw_data (sub-byte types packed, the
// first element in the low bits).
onnx::TensorProto tensor_proto(const Tensor& t, const std::string& name);

// Writes `model`, whose graph holds no initializers, as if `initializers`
// were its graph's initializers, in this order. False when the stream
// fails.
bool write_onnx_model(std::ostream& out, const onnx::ModelProto& model, const std::vector<NamedTensor>& initializers);

}  // namespace saturn::ir
