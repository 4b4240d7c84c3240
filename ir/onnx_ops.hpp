// The ONNX ops that map one-to-one onto registry ops: same operands, same
// results, attributes copied under the same names. Import and export both
// read this table, so such a pair is written once. Ops whose mapping needs
// more (opset-dependent operands, decompositions) have code of their own in
// onnx_import.cpp / onnx_export.cpp; for those `import_directly` is false and
// the row still gives the export its ONNX name and attributes.
#pragma once

#include <vector>

namespace saturn::ir {

struct OnnxOpName {
  const char* onnx;
  const char* op;
  std::vector<const char*> attrs;
  bool import_directly = true;
};

inline const std::vector<OnnxOpName>& onnx_op_names() {
  static const std::vector<OnnxOpName> table = {
      {"Abs", "abs", {}},
      {"Ceil", "ceil", {}},
      {"Cos", "cos", {}},
      {"Erf", "erf", {}},
      {"Exp", "exp", {}},
      {"Floor", "floor", {}},
      {"Round", "round", {}},
      {"Log", "log", {}},
      {"Neg", "neg", {}},
      {"Reciprocal", "recip", {}},
      {"Relu", "relu", {}},
      {"Sigmoid", "sigmoid", {}},
      {"Sign", "sign", {}},
      {"Sin", "sin", {}},
      {"Sqrt", "sqrt", {}},
      {"Tanh", "tanh", {}},
      {"Not", "not", {}},
      {"Identity", "identity", {}},
      {"Identity", "materialize", {}, /*import_directly=*/false},
      {"Softplus", "softplus", {}},
      {"HardSwish", "hard_swish", {}},
      {"Elu", "elu", {"alpha"}},
      {"LeakyRelu", "leaky_relu", {"alpha"}},
      {"Selu", "selu", {"alpha", "gamma"}},
      {"HardSigmoid", "hard_sigmoid", {"alpha", "beta"}},
      {"Celu", "celu", {"alpha"}},
      {"Softsign", "softsign", {}},
      {"ThresholdedRelu", "thresholded_relu", {"alpha"}},
      {"Shrink", "shrink", {"bias", "lambd"}},
      {"Tan", "tan", {}},
      {"Sinh", "sinh", {}},
      {"Cosh", "cosh", {}},
      {"Asinh", "asinh", {}},
      {"Acosh", "acosh", {}},
      {"Atanh", "atanh", {}},
      {"Mish", "mish", {}},
      {"IsNaN", "is_nan", {}},
      {"IsInf", "is_inf", {"detect_negative", "detect_positive"}},
      {"DepthToSpace", "depth_to_space", {"blocksize", "mode"}},
      {"SpaceToDepth", "space_to_depth", {"blocksize"}},
      {"Gelu", "gelu", {"approximate"}},
      {"Add", "add", {}},
      {"Sub", "sub", {}},
      {"Mul", "mul", {}},
      {"Div", "div", {}},
      {"Pow", "pow", {}},
      {"Mod", "mod", {"fmod"}},
      {"And", "and", {}},
      {"Or", "or", {}},
      {"Xor", "xor", {}},
      {"Equal", "equal", {}},
      {"Greater", "greater", {}},
      {"GreaterOrEqual", "greater_equal", {}},
      {"Less", "less", {}},
      {"LessOrEqual", "less_equal", {}},
      {"PRelu", "prelu", {}},
      {"Where", "where", {}},
      {"MatMul", "matmul", {}},
      {"ArgMax", "argmax", {"axis", "keepdims", "select_last_index"}},
      {"ArgMin", "argmin", {"axis", "keepdims", "select_last_index"}},
      {"Transpose", "transpose", {"perm"}},
      {"Flatten", "flatten", {"axis"}},
      {"Concat", "concat", {"axis"}},
      {"Gather", "gather", {"axis"}},
      {"GatherElements", "gather_elements", {"axis"}},
      {"ScatterND", "scatter_nd", {"reduction"}},
      {"Shape", "shape", {"start", "end"}},
      {"Size", "size", {}},
      {"Einsum", "einsum", {"equation"}},
      {"InstanceNormalization", "instance_norm", {"epsilon"}},
      {"LRN", "lrn", {"size", "alpha", "beta", "bias"}},
      {"Conv", "conv", {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}},
      {"ConvTranspose",
       "conv_transpose",
       {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}},
      {"MaxPool",
       "max_pool",
       {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides", "storage_order"}},
      {"AveragePool",
       "avg_pool",
       {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"}},
      {"GlobalAveragePool", "global_avg_pool", {}},
      {"GlobalMaxPool", "global_max_pool", {}},
      // Imported by code of their own; exported by name.
      {"Max", "max", {}, false},
      {"Min", "min", {}, false},
      {"Range", "range", {}, false},
      {"Softmax", "softmax", {"axis"}, false},
      {"LogSoftmax", "log_softmax", {"axis"}, false},
      {"Gemm", "gemm", {"alpha", "beta", "transA", "transB"}, false},
      {"BatchNormalization", "batch_norm", {"epsilon"}, false},
      {"LayerNormalization", "layer_norm", {"axis", "epsilon"}, false},
  };
  return table;
}

}  // namespace saturn::ir
