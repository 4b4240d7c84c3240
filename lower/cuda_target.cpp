// The CUDA target: loop kernels as CUDA C (lower/cuda_codegen) compiled by
// NVRTC, products through cuBLAS, convolution and pooling through cuDNN,
// copies as generated kernels (lower/cuda_steps); reference steps run on
// the host between copies of what they read and write. Built only where
// CMake found the CUDA toolkit (cuda_target_missing.cpp otherwise).
#include <cstring>

#include "lower/cuda_codegen.hpp"
#include "lower/cuda_steps.hpp"
#include "lower/target.hpp"

namespace saturn::lower {

namespace {

using ir::DType;

class CudaTarget final : public Target {
 public:
  CudaTarget(Program& p, const LoweringOptions& o) : p_(p) {
    traits_.name = "cuda";
    traits_.half_products = true;
    traits_.row_major_library_operands = true;
    traits_.symmetric_padding_only = true;
    traits_.dilated_pooling = false;
    traits_.half_pooling_kernel = true;
    const std::string arch = o.cuda_arch.empty() ? "compute_80" : o.cuda_arch;
    cuda_ = make_cuda_steps(arch, o.kernel_cache_dir);
    p_.target_cpu = "cuda " + arch;
  }
  const TargetTraits& traits() const override { return traits_; }

  Step block_copy(const BlockCopy& c, const std::string& label) override { return make_cuda_block_copy_step(c, label); }
  Step gather(const ir::GatherRows& g, bool i64, BufferId src, BufferId idx, BufferId out, const std::string& label,
              const std::string& node) override {
    return make_cuda_checked_gather_step(
        cuda_, cuda_gather_source(g, i64, 0), src, idx, index_flag(out), out, label,
        node + ": gather: an index out of range for axis of size " + std::to_string(g.rows));
  }
  Step gather_elements(const ir::GatherElements& g, std::size_t, bool i64, BufferId src, BufferId idx, BufferId out,
                       const std::string& label, const std::string& node) override {
    return make_cuda_checked_gather_step(
        cuda_, cuda_gather_elements_source(g, i64, 0), src, idx, index_flag(out), out, label,
        node + ": gather_elements: an index out of range for axis of size " + std::to_string(g.n));
  }
  Step resize_pass(const ir::ResizePass& pass, std::size_t esize, std::uint64_t fill, BufferId src, BufferId out,
                   const std::string& label) override {
    return make_cuda_own_kernel_step(cuda_, cuda_resize_source(pass, esize, fill, 0), {src}, {out},
                                     pass.taps.taps == 1 ? StepKind::Copy : StepKind::Kernel, label);
  }
  Step pad(const ir::PadRows& p, const std::vector<std::uint8_t>& fill, BufferId src, BufferId out,
           const std::string& label) override {
    std::uint64_t bits = 0;
    std::memcpy(&bits, fill.data(), fill.size());
    return make_cuda_own_kernel_step(cuda_, cuda_pad_source(p, bits, 0), {src}, {out}, StepKind::Copy, label);
  }
  Step trilu(const ir::TriluRows& t, BufferId src, BufferId out, const std::string& label) override {
    return make_cuda_own_kernel_step(cuda_, cuda_trilu_source(t, 0), {src}, {out}, StepKind::Copy, label);
  }
  Step arg_reduce(const ir::ArgReduce& g, DType t, BufferId src, BufferId out, const std::string& label) override {
    return make_cuda_own_kernel_step(cuda_, cuda_arg_reduce_source(g, t, 0), {src}, {out}, StepKind::ArgReduce, label);
  }
  Step pool_kernel(const ir::PoolWindow& p, DType t, BufferId src, BufferId out, std::optional<BufferId> indices,
                   const std::string& label) override {
    return make_cuda_own_kernel_step(cuda_, cuda_pool_source(p, t, indices.has_value(), 0), {src},
                                     indices ? std::vector<BufferId>{*indices, out} : std::vector<BufferId>{out},
                                     StepKind::Pool, label);
  }

  std::optional<Step> gemm(const View& a, const View& b, BufferId out, const std::vector<std::int64_t>& out_dims,
                           double alpha, bool /*b_shared*/) override {
    auto g = cublas_gemm(a, b, out_dims, alpha);
    if (!g) return std::nullopt;
    g->operands = p_.buffer(g->a).dtype;
    g->result = p_.buffer(out).dtype;
    std::string label =
        g->operands == DType::F32 ? "cublas sgemm " : "cublas gemm " + std::string(ir::dtype_name(g->operands)) + " ";
    label += std::to_string(g->n) + "x" + std::to_string(g->m) + "x" + std::to_string(g->k);
    if (g->batch > 1) label.append(" x").append(std::to_string(g->batch));
    return make_cublas_gemm_step(cuda_, *g, out, label);
  }
  // (cuDNN reads filters and biases at every run: row-major views.)
  std::optional<LibraryStep> conv(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                  const std::optional<LibraryOperand>& bias, const View* skip, BufferId out) override {
    auto ls = make_cudnn_conv_step(cuda_, spec, x, w.view.buffer, bias_buffer(bias), skip, out);
    if (!ls) throw DiagnosticError{Diagnostic{{}, "cuda lowering: a convolution cuDNN cannot take"}};
    return ls;
  }
  std::optional<LibraryStep> conv_transpose(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                            const std::optional<LibraryOperand>& bias, BufferId out) override {
    return make_cudnn_conv_transpose_step(cuda_, spec, x, w.view.buffer, bias_buffer(bias), out);
  }
  std::optional<LibraryStep> pool(const PoolSpec& spec, const ir::WindowGeometry& w, const View& x,
                                  BufferId out) override {
    std::optional<CudaKernelSource> correct;
    if (spec.max) {  // the windows cuDNN gives -FLT_MAX, again as the reference walks them
      ir::PoolWindow p;
      p.x_dims = spec.x_dims;
      p.w = w;
      correct = cuda_pool_source(p, DType::F32, false, 0, true);
    }
    auto ls = make_cudnn_pool_step(cuda_, spec, x, out, correct ? &*correct : nullptr);
    if (!ls) throw DiagnosticError{Diagnostic{{}, "cuda lowering: a pooling cuDNN cannot take"}};
    return ls;
  }

  void finish(std::vector<LoopKernel>& kernels, const std::vector<std::size_t>& kernel_steps) override {
    std::vector<Step*> steps;
    for (std::size_t k = 0; k < kernels.size(); ++k) steps.push_back(&p_.steps[kernel_steps[k]]);
    set_cuda_kernel_steps(cuda_, kernels, steps);
    for (Step& s : p_.steps)
      if (s.kind == StepKind::Reference) run_on_host(s, p_.buffers);
    p_.keep_alive.push_back(cuda_);
  }

 private:
  // The 4-byte flag a gather kernel sets for an index out of range.
  BufferId index_flag(BufferId out) {
    return p_.add_buffer(BufferKind::Temp, DType::I32, {1}, p_.buffer(out).name + " (index check)");
  }
  static std::optional<BufferId> bias_buffer(const std::optional<LibraryOperand>& bias) {
    return bias ? std::optional<BufferId>(bias->view.buffer) : std::nullopt;
  }

  Program& p_;
  TargetTraits traits_;
  std::shared_ptr<CudaSteps> cuda_;
};

}  // namespace

std::unique_ptr<Target> make_cuda_target(Program& p, const LoweringOptions& o) {
  return std::make_unique<CudaTarget>(p, o);
}

}  // namespace saturn::lower
