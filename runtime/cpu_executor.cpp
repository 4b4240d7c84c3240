#include "runtime/cpu_executor.hpp"

#include <algorithm>
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
  if (auto why = prepare_outputs(*program_, outs)) return Diagnostic{SourceLoc{source_, 0, 0}, *why};
  std::vector<std::uint8_t*> addr(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) addr[k] = outs[k].bytes();
  return run_bound(inputs, addr);
}

bool CpuExecutor::can_update_in_place(std::size_t output, std::size_t input) const {
  const lower::Program& p = *program_;
  if (output >= p.outputs.size()) return false;
  const lower::BufferId out = p.outputs[output];
  const lower::Buffer& ob = p.buffers[static_cast<std::size_t>(out)];
  if (ob.kind != lower::BufferKind::Output) return false;
  lower::BufferId in = -1;
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == lower::BufferKind::Input && p.buffers[b].input_index == static_cast<int>(input))
      in = static_cast<lower::BufferId>(b);
  if (in < 0) return false;
  const lower::Buffer& ib = p.buffers[static_cast<std::size_t>(in)];
  if (ib.dtype != ob.dtype || ib.bytes != ob.bytes) return false;
  auto has = [](const std::vector<lower::BufferId>& v, lower::BufferId b) {
    return std::find(v.begin(), v.end(), b) != v.end();
  };
  std::size_t first_write = p.steps.size();
  for (std::size_t s = 0; s < p.steps.size() && first_write == p.steps.size(); ++s)
    if (has(p.steps[s].writes, out)) first_write = s;
  for (std::size_t s = first_write; s < p.steps.size(); ++s) {
    if (!has(p.steps[s].reads, in)) continue;
    if (s > first_write || !has(p.steps[s].in_place_ok, in) || p.steps[s].writes.size() != 1) return false;
  }
  return true;
}

Expected<bool> CpuExecutor::run_in_place(std::span<ir::Tensor> inputs, std::vector<ir::Tensor>& outs,
                                         std::span<const std::pair<std::size_t, std::size_t>> in_place) {
  const lower::Program& p = *program_;
  std::vector<bool> elsewhere(p.outputs.size(), false);
  for (const auto& [o, i] : in_place) {
    if (!can_update_in_place(o, i) || i >= inputs.size())
      return Diagnostic{SourceLoc{source_, 0, 0},
                        "output " + std::to_string(o) + " cannot be written into input " + std::to_string(i)};
    elsewhere[o] = true;
  }
  if (auto why = prepare_outputs(p, outs, &elsewhere)) return Diagnostic{SourceLoc{source_, 0, 0}, *why};
  std::vector<std::uint8_t*> addr(outs.size(), nullptr);
  for (std::size_t k = 0; k < outs.size(); ++k)
    if (!elsewhere[k]) addr[k] = outs[k].bytes();
  // A tensor sharing its storage with another is copied first (its
  // bytes()), so the caller's other copies keep the old value.
  for (const auto& [o, i] : in_place) addr[o] = inputs[i].bytes();
  return run_bound(inputs, addr);
}

Expected<bool> CpuExecutor::run_bound(std::span<const ir::Tensor> inputs,
                                      const std::vector<std::uint8_t*>& output_addr) {
  const lower::Program& p = *program_;
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{source_, 0, 0}, msg}; };
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
        // Steps only read inputs (but for those run_in_place updates).
        ctx.addr[b] = const_cast<std::uint8_t*>(inputs[static_cast<std::size_t>(buf.input_index)].bytes());
        break;
      }
    }
  }
  for (std::size_t k = 0; k < p.outputs.size(); ++k) ctx.addr[static_cast<std::size_t>(p.outputs[k])] = output_addr[k];
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
