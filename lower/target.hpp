// What the lowering asks of a target (docs/design.md, "lower/: a translator").
//
// The lowering (lower/lowerer.hpp) decides what a graph becomes, the same
// for every target: which values are fused into loop kernels, which are
// views, which ops are library calls or copies of a given geometry. A
// Target only makes the steps: a CPU target over LLVM (lower/llvm_jit),
// OpenBLAS and oneDNN (lower/library_calls) and host loops
// (lower/host_steps); a CUDA target over CUDA C (lower/cuda_codegen), cuBLAS
// and cuDNN (lower/cuda_steps). What a target's libraries cannot take is
// said by its TargetTraits, which the lowering reads, so that no lowering
// code asks which target it is.
//
// Invariant: a step a Target makes reads and writes only the buffers it is
// given (its reads / writes list them), so the memory plan stays exact.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/arg_reduce.hpp"
#include "ir/gather.hpp"
#include "ir/gather_elements.hpp"
#include "ir/pad.hpp"
#include "ir/pool.hpp"
#include "ir/resize.hpp"
#include "ir/trilu.hpp"
#include "ir/window.hpp"
#include "lower/block_copy.hpp"
#include "lower/library_calls.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

// What a target's libraries take, where targets differ.
struct TargetTraits {
  std::string name;  // "cpu", "cuda": in messages
  // Products multiply f16 / bf16 operands as they are, summing in f32 and
  // rounding once (cuBLAS on tensor cores); otherwise over f32 copies.
  bool half_products = false;
  // Library calls read filters, biases, residuals and max pooling's input
  // row-major (cuDNN); otherwise in any dense dimension order (oneDNN).
  bool row_major_library_operands = false;
  // Library convolution and pooling pad both sides alike (cuDNN): other
  // padding is made explicit (a pad step, or a cropped full result).
  bool symmetric_padding_only = false;
  // Library pooling takes dilations (oneDNN; cuDNN has none).
  bool dilated_pooling = true;
  // The pooling kernel of lower/host_steps or cuda_codegen takes f16 /
  // bf16 values; otherwise they run the reference kernel.
  bool half_pooling_kernel = false;
  // A library convolution takes every fused activation as its epilogue
  // (oneDNN's eltwise post-ops: clip, swish, hard swish); otherwise ReLU
  // only (cuDNN's fused call), and the activation of dnnl.conv_clip,
  // dnnl.conv_silu or dnnl.conv_hard_swish is a kernel after it.
  bool conv_activation_epilogues = false;
  // A plain max_pool is a loop kernel reducing a strided view of its
  // windows (Lowerer::lower_max_pool: the CPU's loops, vectorized over an
  // NHWC value's channels); otherwise the target's pooling kernel
  // (cuda_codegen's, one thread per output).
  bool max_pool_as_reduction = false;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual const TargetTraits& traits() const = 0;

  // Copies between buffers (any element type), of the geometry the op's
  // own kernel has (ir/gather.hpp, ir/pad.hpp ...). `node` (ir::describe)
  // names the op in run-time errors (an index out of range).
  virtual Step block_copy(const BlockCopy& c, const std::string& label) = 0;
  virtual Step gather(const ir::GatherRows& g, bool i64_indices, BufferId src, BufferId indices, BufferId out,
                      const std::string& label, const std::string& node) = 0;
  virtual Step gather_elements(const ir::GatherElements& g, std::size_t count, bool i64_indices, BufferId src,
                               BufferId indices, BufferId out, const std::string& label, const std::string& node) = 0;
  // `fill`: the extrapolation value's bits, as the element type stores it.
  virtual Step resize_pass(const ir::ResizePass& pass, std::size_t element_bytes, std::uint64_t fill, BufferId src,
                           BufferId out, const std::string& label) = 0;
  virtual Step pad(const ir::PadRows& p, const std::vector<std::uint8_t>& fill, BufferId src, BufferId out,
                   const std::string& label) = 0;
  virtual Step trilu(const ir::TriluRows& t, BufferId src, BufferId out, const std::string& label) = 0;
  // argmax / argmin of f32, i64 or i32 values.
  virtual Step arg_reduce(const ir::ArgReduce& g, ir::DType t, BufferId src, BufferId out,
                          const std::string& label) = 0;
  // Pooling by the op's own meaning (ir/pool.hpp), for what the library
  // does not take; `indices` is MaxPool's second result.
  virtual Step pool_kernel(const ir::PoolWindow& p, ir::DType t, BufferId src, BufferId out,
                           std::optional<BufferId> indices, const std::string& label) = 0;

  // Library calls. gemm: nullopt when the operands' strides do not fit
  // the library; the lowering copies them row-major and asks again.
  // `b_shared`: b is read by other nodes of the program as well (a
  // recurrent weight, read once per step), so it stays in the cache
  // between the reads.
  // conv, conv_transpose, pool: nullopt for a geometry the library does
  // not implement; the lowering then runs the op another way.
  virtual std::optional<Step> gemm(const View& a, const View& b, BufferId out,
                                   const std::vector<std::int64_t>& out_dims, double alpha, bool b_shared) = 0;
  virtual std::optional<LibraryStep> conv(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                          const std::optional<LibraryOperand>& bias, const View* skip,
                                          BufferId out) = 0;
  virtual std::optional<LibraryStep> conv_transpose(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                                    const std::optional<LibraryOperand>& bias, BufferId out) = 0;
  virtual std::optional<LibraryStep> pool(const PoolSpec& spec, const ir::WindowGeometry& w, const View& x,
                                          BufferId out) = 0;
  // Int8 products (QConvSpec, QMatmulSpec); nullopt where the target has none.
  virtual std::optional<LibraryStep> qconv(const QConvSpec&, const View&, const ir::Tensor&, BufferId) {
    return std::nullopt;
  }
  virtual std::optional<Step> qmatmul(const QMatmulSpec&, const View&, const ir::Tensor&, BufferId) {
    return std::nullopt;
  }

  // The end of the lowering: compiles `kernels` (the loop kernels of the
  // Kernel steps at p.steps[kernel_steps[i]]) and sets those steps' runs,
  // and makes the other steps runnable on the target. Throws
  // DiagnosticError when a kernel does not compile.
  virtual void finish(std::vector<LoopKernel>& kernels, const std::vector<std::size_t>& kernel_steps) = 0;
};

// Targets write into `p` (buffers of their own, what their steps keep
// alive). make_cuda_target throws DiagnosticError where the CUDA toolkit
// was not found at configure time.
std::unique_ptr<Target> make_cpu_target(Program& p, const LoweringOptions& o);
std::unique_ptr<Target> make_cuda_target(Program& p, const LoweringOptions& o);

}  // namespace saturn::lower
