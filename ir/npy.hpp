// NumPy .npy files (format 1.0-3.0, little-endian, C order), and a reader
// that picks .npy or ONNX TensorProto (.pb) by extension.
#pragma once

#include <string>

#include "ir/diagnostic.hpp"
#include "ir/tensor.hpp"

namespace saturn::ir {

Expected<Tensor> read_npy(const std::string& path);
// .npy, else an ONNX TensorProto.
Expected<Tensor> read_tensor_file(const std::string& path);

}  // namespace saturn::ir
