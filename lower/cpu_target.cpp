// The CPU target: loop kernels compiled by LLVM (lower/llvm_jit: kernels
// alike once, modules in parallel), products through OpenBLAS or oneDNN's
// packed matmul, convolution and pooling through oneDNN
// (lower/library_calls), copies as host loops (lower/host_steps). A kernel
// that only transposes f32 elements becomes a oneDNN reorder, several times
// faster.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>

#include "lower/host_steps.hpp"
#include "lower/llvm_jit.hpp"
#include "lower/target.hpp"

namespace saturn::lower {

namespace {

using ir::DType;

class CpuTarget final : public Target {
 public:
  CpuTarget(Program& p, const LoweringOptions& o)
      : p_(p), keep_ir_(o.keep_ir), cache_dir_(o.kernel_cache_dir), progress_(o.progress) {
    traits_.name = "cpu";
    traits_.conv_activation_epilogues = true;
    traits_.max_pool_as_reduction = true;
  }
  const TargetTraits& traits() const override { return traits_; }

  Step block_copy(const BlockCopy& c, const std::string& label) override {
    Step s = make_host_block_copy_step(c, label);
    for (const BlockCopy::Part& part : c.parts) s.bounded_by.push_back(part.src);
    return s;
  }
  Step gather(const ir::GatherRows& g, bool i64, BufferId src, BufferId idx, BufferId out, const std::string& label,
              const std::string& node) override {
    return host_gather_step(g, i64, src, idx, out, label, node);
  }
  Step gather_elements(const ir::GatherElements& g, std::size_t count, bool i64, BufferId src, BufferId idx,
                       BufferId out, const std::string& label, const std::string& node) override {
    return host_gather_elements_step(g, count, i64, src, idx, out, label, node);
  }
  Step resize_pass(const ir::ResizePass& pass, std::size_t esize, std::uint64_t fill, BufferId src, BufferId out,
                   const std::string& label) override {
    return host_resize_pass_step(pass, esize, fill, src, out, label);
  }
  Step pad(const ir::PadRows& p, const std::vector<std::uint8_t>& fill, BufferId src, BufferId out,
           const std::string& label) override {
    return host_pad_step(p, fill, src, out, label);
  }
  Step trilu(const ir::TriluRows& t, BufferId src, BufferId out, const std::string& label) override {
    return host_trilu_step(t, src, out, label);
  }
  Step arg_reduce(const ir::ArgReduce& g, DType t, BufferId src, BufferId out, const std::string& label) override {
    return host_arg_reduce_step(g, t, src, out, label);
  }
  Step pool_kernel(const ir::PoolWindow& p, DType t, BufferId src, BufferId out, std::optional<BufferId> indices,
                   const std::string& label) override {
    return host_pool_step(p, t, src, out, indices, label);
  }

  // A constant right operand: oneDNN's matmul with the weight packed once,
  // except for a product of one row whose weight other nodes read too (a
  // recurrent weight, read at every step): sgemv reads it from the cache
  // in half the time oneDNN's packed call takes (1x1024x256: 6 against 12
  // us, 2 threads), where a weight read once per run comes from memory,
  // and there the packed call is as fast or faster (docs/cpu-backend.md,
  // "Products of one row").
  std::optional<Step> gemm(const View& a, const View& b, BufferId out, const std::vector<std::int64_t>& out_dims,
                           double alpha, bool b_shared) override {
    const bool one_row = ir::numel(out_dims) == out_dims.back();
    if (p_.buffer(b.buffer).kind == BufferKind::Weight && !(one_row && b_shared))
      if (auto packed = make_packed_gemm_step(a, b, p_.buffer(b.buffer), out, out_dims, alpha, p_.keep_alive))
        return packed;
    return make_gemm_step(a, b, out, out_dims, alpha);
  }
  // (dnnl::error: a geometry oneDNN does not implement. A Winograd or
  // channels-last convolution this oneDNN cannot make runs as the plain
  // direct one: the same result, and what the step's label then says.)
  std::optional<LibraryStep> conv(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                  const std::optional<LibraryOperand>& bias, const View* skip, BufferId out) override {
    try {
      return make_conv_step(spec, x, w, bias, skip, out, p_.keep_alive, &bounds_);
    } catch (const dnnl::error&) {
      if (!spec.winograd && !spec.channels_last) return std::nullopt;
    }
    ConvSpec direct = spec;
    direct.winograd = false;
    direct.channels_last = false;
    return conv(direct, x, w, bias, skip, out);
  }
  std::optional<LibraryStep> qconv(const QConvSpec& q, const View& x, const ir::Tensor& w, BufferId out) override {
    try {
      return make_qconv_step(q, x, w, out, p_.keep_alive);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }
  std::optional<Step> qmatmul(const QMatmulSpec& q, const View& a, const ir::Tensor& b, BufferId out) override {
    try {
      return make_qmatmul_step(q, a, b, out, p_.keep_alive);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }
  std::optional<LibraryStep> conv_transpose(const ConvSpec& spec, const View& x, const LibraryOperand& w,
                                            const std::optional<LibraryOperand>& bias, BufferId out) override {
    try {
      return make_conv_transpose_step(spec, x, w, bias, out, p_.keep_alive);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }
  std::optional<LibraryStep> pool(const PoolSpec& spec, const ir::WindowGeometry&, const View& x,
                                  BufferId out) override {
    try {
      return make_pool_step(spec, x, out, p_.keep_alive, &bounds_);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }

  void finish(std::vector<LoopKernel>& kernels, const std::vector<std::size_t>& kernel_steps) override;

 private:
  // A loop kernel that only copies f32 elements read across its rows (a
  // transpose: the last dimension's stride is not 1, or its rows are too
  // short to vectorize) as a oneDNN reorder, or nullopt. Broadcasts
  // (stride 0) and reversed reads stay kernels.
  std::optional<Step> transposing_copy(const LoopKernel& k, const std::string& label) {
    if (k.reduce != ReduceKind::None || k.leaves.size() != 1 || k.body != k.leaf_vars[0] || k.out_dtype != DType::F32 ||
        k.leaves[0].dtype != DType::F32 || k.dims.empty() || k.dims.size() > 12)
      return std::nullopt;
    const Leaf& l = k.leaves[0];
    const bool short_rows = k.dims.back() < 16 && ir::numel(k.dims) >= 4096;
    if ((l.strides.back() == 1 && !short_rows) ||
        std::any_of(l.strides.begin(), l.strides.end(), [](std::int64_t s) { return s <= 0; }))
      return std::nullopt;
    return make_reorder_step(l.buffer, l.offset, k.dims, l.strides, k.out, label, p_.keep_alive);
  }

  Program& p_;
  ValueBounds bounds_;  // published between the library steps (lower/value_bounds.hpp)
  bool keep_ir_ = false;
  std::string cache_dir_;
  CompileProgress progress_;
  TargetTraits traits_;
};

void CpuTarget::finish(std::vector<LoopKernel>& kernels, const std::vector<std::size_t>& kernel_steps) {
  for (LoopKernel& k : kernels) reduce_by_columns(k);
  // Every loop kernel in one compile.
  auto jit = KernelJit::create();
  if (!jit) throw DiagnosticError{jit.error()};
  (*jit)->keep_ir = keep_ir_;
  (*jit)->cache_dir = cache_dir_;
  (*jit)->progress = progress_;
  auto fns = (*jit)->compile(kernels);
  if (!fns) throw DiagnosticError{fns.error()};
  p_.kernel_modules_cached = static_cast<int>((*jit)->cached_modules());
  p_.keep_alive.push_back(*jit);
  p_.ir_text = (*jit)->last_ir();
  p_.target_cpu = (*jit)->target_description();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    Step& s = p_.steps[kernel_steps[k]];
    if (auto r = transposing_copy(kernels[k], s.label)) {
      r->bounded_by = std::move(s.bounded_by);
      s = std::move(*r);
      --p_.fused_kernels;
      continue;
    }
    KernelFn fn = (*fns)[k];
    const LoopKernel& kernel = kernels[k];
    std::vector<BufferId> args;
    for (const Leaf& l : kernel.leaves) args.push_back(l.buffer);
    args.push_back(kernel.out);
    if (kernel.fault >= 0) args.push_back(kernel.fault);
    const std::int64_t rows = kernel_rows(kernel);
    const std::int64_t work = ir::numel(kernel.dims) * std::max<std::int64_t>(1, ir::numel(kernel.red_dims));
    // ptrs: the argument array, filled per run (steps run one at a time).
    s.run = [fn, args, rows, work, fault = kernel.fault, errors = kernel.fault_errors,
             ptrs = std::vector<void*>(args.size())](const RunContext& ctx) mutable {
      for (std::size_t i = 0; i < args.size(); ++i) ptrs[i] = ctx.addr[static_cast<std::size_t>(args[i])];
      std::uint32_t* flag = fault >= 0 ? ctx.at<std::uint32_t>(fault) : nullptr;
      if (flag) *flag = 0;
      // Small kernels run on the calling thread: waking the pool costs more.
      if (work < 32768 || rows < 2 || !ctx.pool || ctx.pool->size() < 2)
        fn(ptrs.data(), 0, rows);
      else
        ctx.pool->parallel_for(rows, [&](std::int64_t b, std::int64_t e) { fn(ptrs.data(), b, e); });
      if (flag && *flag) throw std::runtime_error(fault_message(errors, *flag));
    };
  }
  // Steps that pass bounds on (a copy, a concat, a pooling loop: from the
  // buffers they are bounded by; a loop kernel: its expression over its
  // leaves' bounds and its constants' magnitudes), where a step reads
  // their result's bound: from the last step up, so that a bound read
  // through several of them is published by each. Where several write
  // parts of one buffer (a concat chain's), each publishes the largest
  // bound so far this run, the first resetting it.
  std::map<BufferId, std::vector<std::size_t>> writers;
  for (std::size_t i = 0; i < p_.steps.size(); ++i)
    for (BufferId b : p_.steps[i].writes) writers[b].push_back(i);
  std::map<std::size_t, std::size_t> kernel_at;
  for (std::size_t k = 0; k < kernel_steps.size(); ++k) kernel_at[kernel_steps[k]] = k;
  auto passes_bounds = [&](const Step& s) { return !s.bounded_by.empty() && s.writes.size() == 1; };
  std::map<BufferId, double> constant_magnitude;
  for (std::size_t i = p_.steps.size(); i-- > 0;) {
    Step& s = p_.steps[i];
    if (s.writes.size() != 1 || !bounds_.find(s.writes[0])) continue;
    const BufferId out = s.writes[0];
    if (passes_bounds(s)) {
      const std::vector<std::size_t>& all = writers[out];
      const bool shared = all.size() > 1;
      if (shared && !std::all_of(all.begin(), all.end(), [&](std::size_t j) { return passes_bounds(p_.steps[j]); }))
        continue;
      std::vector<std::shared_ptr<ValueBound>> from;
      for (BufferId b : s.bounded_by) from.push_back(bounds_.read(b));
      s.run = [run = std::move(s.run), from = std::move(from), reset = all.front() == i,
               to = shared ? bounds_.accumulated(out) : bounds_.written(out)](const RunContext& ctx) {
        run(ctx);
        float m = reset ? 0.0f : to->magnitude;
        for (const auto& f : from) m = std::max(m, f->known());
        to->magnitude = m;
      };
      continue;
    }
    auto k = kernel_at.find(i);
    if (k == kernel_at.end()) continue;
    const LoopKernel& kernel = kernels[k->second];
    std::optional<KernelBound> bound = KernelBound::of(kernel);
    if (!bound || kernel.out != out) continue;
    std::vector<double> fixed;
    std::vector<std::shared_ptr<ValueBound>> cells;
    bool known = true;
    for (const Leaf& l : kernel.leaves) {
      const Buffer& b = p_.buffer(l.buffer);
      double m = std::numeric_limits<double>::infinity();
      if (b.kind == BufferKind::Weight && b.weight && b.weight->numel() <= (1u << 20)) {
        auto [it, fresh] = constant_magnitude.try_emplace(l.buffer, 0.0);
        if (fresh)
          for (std::size_t e = 0; e < b.weight->numel(); ++e)
            it->second = std::max(it->second, std::abs(b.weight->at(e)));
        m = it->second;
      }
      known = known && (b.kind == BufferKind::Temp || m < std::numeric_limits<double>::infinity());
      fixed.push_back(m);
      cells.push_back(b.kind == BufferKind::Temp ? bounds_.read(l.buffer) : nullptr);
    }
    if (!known) continue;
    s.run = [run = std::move(s.run), bound = std::move(*bound), leaf = std::move(fixed), cells = std::move(cells),
             scratch = std::vector<double>(), to = bounds_.written(out)](const RunContext& ctx) mutable {
      run(ctx);
      for (std::size_t l = 0; l < cells.size(); ++l)
        if (cells[l]) leaf[l] = cells[l]->known();
      to->publish(bound(leaf, scratch));
    };
  }
  bounds_.keep_single_writers(p_.steps);
}

}  // namespace

std::unique_ptr<Target> make_cpu_target(Program& p, const LoweringOptions& o) {
  return std::make_unique<CpuTarget>(p, o);
}

}  // namespace saturn::lower
