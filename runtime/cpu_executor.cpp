#include "runtime/cpu_executor.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lower/library_calls.hpp"
#include "runtime/program_io.hpp"

namespace saturn::runtime {

Expected<std::unique_ptr<CpuExecutor>> CpuExecutor::create(const ir::Graph& g, const CpuExecutorOptions& o) {
  std::unique_ptr<CpuExecutor> e(new CpuExecutor());
  e->pool_ = std::make_unique<ThreadPool>(o.threads);
  lower::set_library_threads(e->pool_->size());
  auto program = lower::compile_cpu(g, o.lowering);
  if (!program) return program.error();
  e->program_ = *program;
  e->source_ = g.source;
  e->profile_ = o.profile;
  const std::size_t bytes = std::max<std::size_t>(64, e->program_->arena_bytes);
  std::uint8_t* raw = nullptr;
  try {
    raw = static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t(64)));
  } catch (const std::bad_alloc&) {
    return Diagnostic{SourceLoc{g.source, 0, 0}, out_of_memory("its intermediate values (the arena)", bytes)};
  }
  e->arena_ = std::unique_ptr<std::uint8_t[], void (*)(std::uint8_t*)>(
      raw, [](std::uint8_t* p) { ::operator delete[](p, std::align_val_t(64)); });
  return e;
}

Expected<std::vector<ir::Tensor>> CpuExecutor::run(std::span<const ir::Tensor> inputs) {
  std::vector<ir::Tensor> outs;
  auto r = run_into(inputs, outs);
  if (!r) return r.error();
  return outs;
}

Expected<bool> CpuExecutor::run_into(std::span<const ir::Tensor> inputs, std::vector<ir::Tensor>& outs) {
  const lower::Program& p = *program_;
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{source_, 0, 0}, msg}; };
  if (auto why = prepare_outputs(p, outs)) return fail(*why);
  if (auto why = input_count_mismatch(p, inputs)) return fail(*why);
  lower::RunContext ctx;
  ctx.pool = pool_.get();
  ctx.addr.resize(p.buffers.size(), nullptr);
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const lower::Buffer& buf = p.buffers[b];
    switch (buf.kind) {
      case lower::BufferKind::Temp:
        ctx.addr[b] = arena_.get() + p.offsets[b];
        break;
      case lower::BufferKind::Output:
        break;  // below
      case lower::BufferKind::Weight:
        ctx.addr[b] = const_cast<std::uint8_t*>(buf.weight->bytes());
        break;
      case lower::BufferKind::Input: {
        if (auto why = input_mismatch(buf, inputs)) return fail(*why);
        // Steps only read inputs.
        ctx.addr[b] = const_cast<std::uint8_t*>(inputs[static_cast<std::size_t>(buf.input_index)].bytes());
        break;
      }
    }
  }
  for (std::size_t k = 0; k < p.outputs.size(); ++k) ctx.addr[static_cast<std::size_t>(p.outputs[k])] = outs[k].bytes();
  step_ms_.assign(profile_ ? p.steps.size() : 0, 0.0);
  try {
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
      if (!profile_) {
        p.steps[s].run(ctx);
        continue;
      }
      auto t0 = std::chrono::steady_clock::now();
      p.steps[s].run(ctx);
      step_ms_[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return true;
}

}  // namespace saturn::runtime
