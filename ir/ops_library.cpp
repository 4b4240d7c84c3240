// Library calls (docs/design.md): ops reached only by substitution rules, each
// lowerable on its own target. Their reference semantics are those of the
// composite they replace, so the interpreter, `saturn verify` and the cost
// models read them from here like any other op.
#include "ir/op.hpp"

namespace saturn::ir {

void register_library_ops(OpRegistry& r) {
  struct Call {
    const char* name;
    const char* like;
    const char* doc;
  };
  static const Call calls[] = {
      {"blas.gemm", "gemm", "OpenBLAS sgemm/dgemm: alpha op(A) op(B) + beta C (CPU)"},
      {"blas.matmul", "matmul", "OpenBLAS (batched) sgemm for matmul (CPU)"},
      {"dnnl.conv", "conv", "oneDNN convolution, NCHW semantics (CPU)"},
      {"dnnl.conv_transpose", "conv_transpose", "oneDNN deconvolution (CPU)"},
      {"dnnl.max_pool", "max_pool", "oneDNN max pooling (CPU)"},
      {"dnnl.avg_pool", "avg_pool", "oneDNN average pooling (CPU)"},
      {"cublas.gemm", "gemm", "cuBLAS(Lt) gemm (CUDA)"},
      {"cublas.matmul", "matmul", "cuBLAS strided-batched gemm for matmul (CUDA)"},
      {"cudnn.conv", "conv", "cuDNN convolution forward (CUDA)"},
      {"cudnn.conv_transpose", "conv_transpose", "cuDNN convolution backward-data plus the bias (CUDA)"},
      {"cudnn.max_pool", "max_pool", "cuDNN max pooling (CUDA)"},
      {"cudnn.avg_pool", "avg_pool", "cuDNN average pooling (CUDA)"},
  };
  for (const Call& c : calls) {
    const OpDef* base = r.find(c.like);
    if (!base) continue;
    OpDef d = *base;
    d.name = c.name;
    d.kind = OpKind::Library;
    d.library_of = c.like;
    d.doc = std::string(c.doc) + "; semantics of `" + c.like + "`";
    r.add(std::move(d));
  }
  // Convolutions with a fused ReLU epilogue (oneDNN post-op, cuDNN's fused
  // conv-bias-activation): relu(conv(x, w, b)).
  for (const char* name : {"dnnl.conv_relu", "cudnn.conv_relu"}) {
    const OpDef* base = r.find("conv");
    if (!base) continue;
    OpDef d = *base;
    d.name = name;
    d.kind = OpKind::Library;
    d.library_of = "conv";
    d.relu_epilogue = true;
    d.doc = std::string(name[0] == 'd' ? "oneDNN convolution with a ReLU post-op (CPU)"
                                       : "cuDNN convolution with fused bias and ReLU (CUDA)") +
            "; semantics of `relu(conv(...))`";
    auto relu_after = [](auto out) {
      for (auto& t : out)
        for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, scalar::max(t.at(i), 0.0));  // relu's: NaN stays
      return out;
    };
    auto conv = base->eval;
    auto conv_symbolic = base->symbolic;
    d.eval = [conv, relu_after](const Attrs& a, std::span<const Tensor> x, std::span<const bool> given, std::size_t n) {
      return relu_after(conv(a, x, given, n));
    };
    d.symbolic = [conv_symbolic, relu_after](const Attrs& a, std::span<const SymTensor> x, std::span<const bool> given,
                                             std::size_t n) { return relu_after(conv_symbolic(a, x, given, n)); };
    r.add(std::move(d));
  }
}

}  // namespace saturn::ir
