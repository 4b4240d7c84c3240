// The CUDA target's steps (lower/cuda_target.cpp makes them for the shared
// lowering, lower/lowerer.hpp) where the CPU target makes JIT kernels,
// OpenBLAS and oneDNN calls.
//
// - Loop kernels: CUDA C (lower/cuda_codegen), compiled to PTX by NVRTC when
//   the program is compiled, loaded into the device by the first run.
// - Products: one cuBLAS (strided-batched) sgemm per matmul/gemm, operands
//   read in place through cuBLAS's transpose flags (row-major Y = A B is the
//   column-major Y^T = B^T A^T).
// - 2-D convolution and pooling: cuDNN, with bias, ReLU and a residual add
//   fused (cudnnConvolutionBiasActivationForward) where the graph has them.
// - Anything else runs its reference kernel on the host: the step copies
//   what it reads from the device and what it writes back.
//
// Steps get device addresses in RunContext::addr and the stream in
// RunContext::stream. Device resources (modules, cuBLAS and cuDNN handles,
// descriptors, workspaces) are made on the first run, on the device current
// then, and kept by the program; compiling needs no GPU, so tests without
// one check what a program is made of.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/gather.hpp"
#include "lower/block_copy.hpp"
#include "lower/cuda_codegen.hpp"
#include "lower/library_calls.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/program.hpp"
#include "lower/view.hpp"

namespace saturn::lower {

// A cuBLAS call for row-major Y [batch..., M, N] = alpha A [batch..., M, K]
// B [batch..., K, N], Y fresh and row-major. In cuBLAS's column-major terms
// it computes Y^T = B^T A^T: its first operand is our B, its second our A.
struct CublasGemm {
  bool trans_a = false, trans_b = false;  // cuBLAS's op on its first and second operand
  std::int64_t m = 0, n = 0, k = 0;       // m = N, n = M (times a folded batch), k = K
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch entries
  std::int64_t batch = 1;
  BufferId a = -1, b = -1;                  // cuBLAS's operands: our B, our A
  std::int64_t offset_a = 0, offset_b = 0;  // elements
  float alpha = 1;
  // The operands' element type: f32 (cublasSgemm), or f16 / bf16
  // (cublasGemmEx on tensor cores, summing in f32), and the result's: f32,
  // or the operands' half type (the f32 sums rounded to nearest).
  ir::DType operands = ir::DType::F32, result = ir::DType::F32;
};

// a and b as gemm_operand gives them ([batch..., rows, cols], one of the
// matrix strides 1, batch dims broadcast to the result's). nullopt when
// an operand's batch dims do not collapse into one stride (copy it dense).
// A batch that B broadcasts and A holds in consecutive rows is folded into
// the rows: one product instead of a batch of them.
std::optional<CublasGemm> cublas_gemm(const View& a, const View& b, const std::vector<std::int64_t>& out_dims,
                                      double alpha);

struct CudaSteps;  // what a CUDA program's steps share (cuda_steps.cpp)

// Made by the lowering for each CUDA program; `arch` is NVRTC's virtual
// architecture for the kernels ("compute_90"): the device's when there is
// one, else compute_80 (PTX runs on later GPUs through the driver's JIT).
// A non-empty `kernel_cache_dir` keeps the compiled kernels there for the
// next run (device/cuda_compiler.hpp).
std::shared_ptr<CudaSteps> make_cuda_steps(const std::string& arch, const std::string& kernel_cache_dir = "");

// Compiles every kernel to PTX now and sets the run of steps[i] (the Kernel
// step of kernels[i]) to launch it. Throws DiagnosticError naming the kernel
// when NVRTC rejects it.
void set_cuda_kernel_steps(const std::shared_ptr<CudaSteps>& cs, const std::vector<LoopKernel>& kernels,
                           const std::vector<Step*>& steps);

Step make_cublas_gemm_step(const std::shared_ptr<CudaSteps>& cs, const CublasGemm& g, BufferId out,
                           const std::string& label);

// cuDNN takes symmetric padding only: nullopt otherwise (and for what else
// it cannot do), and the caller lowers the op another way. x and skip are
// dense Views; the result is row-major NCHW.
std::optional<LibraryStep> make_cudnn_conv_step(const std::shared_ptr<CudaSteps>& cs, const ConvSpec& spec,
                                                const View& x, BufferId w, std::optional<BufferId> bias,
                                                const View* skip, BufferId out);
// A transposed convolution (make_conv_transpose_step's spec) as cuDNN's
// backward-data convolution plus cudnnAddTensor for the bias. cuDNN pads
// both sides by pads_begin and derives the result's size from the input's:
// nullopt when that does not give `spec.out_dims`.
std::optional<LibraryStep> make_cudnn_conv_transpose_step(const std::shared_ptr<CudaSteps>& cs, const ConvSpec& spec,
                                                          const View& x, BufferId w, std::optional<BufferId> bias,
                                                          BufferId out);
// cuDNN pooling; `correct` (max pooling: cuda_pool_source's after_library
// kernel over the same x, row-major) runs after it, for the windows cuDNN
// gives -FLT_MAX.
std::optional<LibraryStep> make_cudnn_pool_step(const std::shared_ptr<CudaSteps>& cs, const PoolSpec& spec,
                                                const View& x, BufferId out, const CudaKernelSource* correct = nullptr);

// `c` as one 2-D device copy per operand (cuMemcpy2DAsync: its runs are the
// rows, the result block the destination pitch).
Step make_cuda_block_copy_step(const BlockCopy& c, const std::string& label);

// A gather on the device (cuda_gather_source, cuda_gather_elements_source).
// `flag` is a 4-byte buffer the kernel sets when an index is out of range;
// the step clears it, launches, and reads it back (a synchronization, as on
// the CPU the indices are checked before the run goes on), failing the run
// with `error`.
Step make_cuda_checked_gather_step(const std::shared_ptr<CudaSteps>& cs, const CudaKernelSource& src, BufferId data,
                                   BufferId indices, BufferId flag, BufferId out, const std::string& label,
                                   const std::string& error);

// One generated kernel (cuda_pad_source, cuda_pool_source,
// cuda_arg_reduce_source ...) launched on `reads`' addresses then
// `writes`'.
Step make_cuda_own_kernel_step(const std::shared_ptr<CudaSteps>& cs, const CudaKernelSource& src,
                               const std::vector<BufferId>& reads, const std::vector<BufferId>& writes, StepKind kind,
                               const std::string& label);

// Makes a host step (its run reads and writes host memory) run in a CUDA
// program: its reads are copied from the device first, its writes back.
void run_on_host(Step& s, const std::vector<Buffer>& buffers);

}  // namespace saturn::lower
