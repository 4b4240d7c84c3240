// Library calls (DESIGN.md): ops reached only by substitution rules, each
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
      {"dnnl.max_pool", "max_pool", "oneDNN max pooling (CPU)"},
      {"dnnl.avg_pool", "avg_pool", "oneDNN average pooling (CPU)"},
      {"cublas.gemm", "gemm", "cuBLAS(Lt) gemm (CUDA)"},
      {"cublas.matmul", "matmul", "cuBLAS strided-batched gemm for matmul (CUDA)"},
      {"cudnn.conv", "conv", "cuDNN convolution forward (CUDA)"},
      {"cudnn.max_pool", "max_pool", "cuDNN max pooling (CUDA)"},
      {"cudnn.avg_pool", "avg_pool", "cuDNN average pooling (CUDA)"},
  };
  for (const Call& c : calls) {
    const OpDef* base = r.find(c.like);
    if (!base) continue;
    OpDef d = *base;
    d.name = c.name;
    d.kind = OpKind::Library;
    d.doc = std::string(c.doc) + "; semantics of `" + c.like + "`";
    r.add(std::move(d));
  }
}

}  // namespace saturn::ir
