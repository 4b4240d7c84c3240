#include "runtime/cpu_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "ir/huge_pages.hpp"
#include "lower/library_calls.hpp"
#include "runtime/program_io.hpp"

namespace saturn::runtime {

namespace {

// The program a team of `threads` runs: oneDNN's primitives are made for
// the team size they run on, and the lowering shares kernels out by it.
Expected<std::shared_ptr<lower::Program>> compile_for_team(const ir::Graph& g, lower::LoweringOptions o, int threads) {
  lower::set_library_threads(threads);
  o.threads = threads;
  return lower::compile_cpu(g, o);
}

}  // namespace

Expected<std::unique_ptr<CpuExecutor>> CpuExecutor::create(const ir::Graph& g, const CpuExecutorOptions& o) {
  std::unique_ptr<CpuExecutor> e(new CpuExecutor());
  e->graph_ = g;
  e->lowering_ = o.lowering;
  auto pool = std::make_unique<ThreadPool>(o.threads);
  const int first = pool->size();
  e->threads_reason_ = pool->size_reason();
  auto program = compile_for_team(g, o.lowering, first);
  if (!program) return program.error();
  e->lowering_.progress = {};  // (a later team's compile is not the one the user watched)
  TeamProgram& tp = e->programs_[first];
  tp.program = *program;
  tp.pool = std::move(pool);
  e->first_ = e->current_ = &tp;
  e->source_ = g.source;
  e->profile_ = o.profile;
  // The most a run may take: what was asked for, or every usable CPU when
  // the free ones chose.
  const int most = o.threads > 0 ? first : usable_cpus();
  if (o.adapt_team && most > 1) {
    e->team_choice_.emplace(most, first);
    e->threads_reason_ += "; each run takes as many of " + std::to_string(most) + " as other processes leave free";
  }
  if (auto r = e->reserve_arena(tp.program->arena_bytes); !r) return r.error();
  return e;
}

Expected<bool> CpuExecutor::reserve_arena(std::size_t bytes) {
  bytes = std::max<std::size_t>(64, bytes);
  if (arena_ && bytes <= arena_bytes_) return true;
  auto arena = ir::allocate_on_huge_pages(bytes);
  if (!arena) return Diagnostic{SourceLoc{source_, 0, 0}, out_of_memory("its intermediate values (the arena)", bytes)};
  arena_ = std::move(arena);
  arena_bytes_ = bytes;
  return true;
}

Expected<CpuExecutor::TeamProgram*> CpuExecutor::program_for(int threads) {
  if (auto it = programs_.find(threads); it != programs_.end()) return &it->second;
  auto pool = std::make_unique<ThreadPool>(threads);
  auto program = compile_for_team(graph_, lowering_, pool->size());
  if (!program) return program.error();
  if (auto r = reserve_arena((*program)->arena_bytes); !r) return r.error();
  TeamProgram& tp = programs_[pool->size()];
  tp.program = *program;
  tp.pool = std::move(pool);
  return &tp;
}

Expected<bool> CpuExecutor::use_team(int threads) {
  auto tp = program_for(std::clamp(threads, 1, usable_cpus()));
  if (!tp) return tp.error();
  current_ = *tp;
  return true;
}

void CpuExecutor::select_team() {
  if (!team_choice_ || profile_) return;
  team_choice_->run_starts(TeamChoice::Clock::now(), read_cpu_load);
  const int team = team_choice_->size();
  if (team == current_->pool->size()) return;
  auto tp = program_for(team);
  if (!tp) {  // (not expected: the first team's compiled) it runs on, and the choice stops
    team_choice_.reset();
    current_ = first_;
    return;
  }
  current_ = *tp;
}

Expected<std::vector<ir::Tensor>> CpuExecutor::run(std::span<const ir::Tensor> inputs) {
  std::vector<ir::Tensor> outs;
  auto r = run_into(inputs, outs);
  if (!r) return r.error();
  return outs;
}

Expected<bool> CpuExecutor::run_into(std::span<const ir::Tensor> inputs, std::vector<ir::Tensor>& outs) {
  select_team();
  if (auto why = prepare_outputs(program(), outs)) return Diagnostic{SourceLoc{source_, 0, 0}, *why};
  std::vector<std::uint8_t*> addr(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) addr[k] = outs[k].bytes();
  return run_bound(inputs, addr);
}

void CpuExecutor::run_ended() {
  if (team_choice_) team_choice_->run_ended(TeamChoice::Clock::now(), read_cpu_load);
}

namespace {

bool updatable_in_place(const lower::Program& p, std::size_t output, std::size_t input) {
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

}  // namespace

bool CpuExecutor::can_update_in_place(std::size_t output, std::size_t input) const {
  return updatable_in_place(*current_->program, output, input) && updatable_in_place(*first_->program, output, input);
}

Expected<bool> CpuExecutor::run_in_place(std::span<ir::Tensor> inputs, std::vector<ir::Tensor>& outs,
                                         std::span<const std::pair<std::size_t, std::size_t>> in_place) {
  select_team();
  const lower::Program& p = *current_->program;
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
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{source_, 0, 0}, msg}; };
  const lower::Program& p = *current_->program;
  if (auto why = input_count_mismatch(p, inputs)) return fail(*why);
  lower::set_library_threads(current_->pool->size());
  ++runs_by_team_[current_->pool->size()];
  lower::RunContext ctx;
  ctx.pool = current_->pool.get();
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
    run_ended();
    return fail(e.what());
  }
  run_ended();
  return true;
}

}  // namespace saturn::runtime
