#include "runtime/cuda_executor.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "runtime/program_io.hpp"

namespace saturn::runtime {

namespace {

std::uint8_t* as_address(std::uint64_t device_address) { return reinterpret_cast<std::uint8_t*>(device_address); }

}  // namespace

Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const ir::Graph& g, const CudaExecutorOptions& o) {
  auto driver = device::cuda::CudaDriver::get();
  if (!driver) return driver.error();
  if (o.device < 0 || o.device >= (*driver)->device_count()) {
    Diagnostic d;
    d.loc.file = g.source;
    d.message = "the cuda target has no device " + std::to_string(o.device) + " here (" +
                std::to_string((*driver)->device_count()) + " found)";
    return d;
  }
  lower::LoweringOptions lowering = o.lowering;
  if (lowering.cuda_arch.empty()) lowering.cuda_arch = (*driver)->device(o.device).arch();
  auto program = lower::compile_cuda(g, lowering);
  if (!program) return program.error();
  std::unique_ptr<CudaExecutor> e(new CudaExecutor());
  e->program_ = *program;
  e->source_ = g.source;
  e->profile_ = o.profile;
  e->graphs_ = o.graphs;
  if (const char* env = std::getenv("SATURN_CUDA_GRAPHS"); env && std::strcmp(env, "0") == 0) e->graphs_ = false;
  if (!e->graphs_) e->graphs_note_ = "off (CudaExecutorOptions::graphs or SATURN_CUDA_GRAPHS=0)";
  try {
    e->context_ = std::make_unique<device::cuda::Context>(o.device);
    e->stream_ = std::make_unique<device::cuda::Stream>();
    const lower::Program& p = *e->program_;
    e->arena_ = std::make_unique<device::cuda::DeviceBuffer>(std::max<std::size_t>(256, p.arena_bytes));
    e->own_.resize(p.buffers.size());
    e->addr_.assign(p.buffers.size(), nullptr);
    for (std::size_t b = 0; b < p.buffers.size(); ++b) {
      const lower::Buffer& buf = p.buffers[b];
      if (buf.kind == lower::BufferKind::Temp) {
        e->addr_[b] = as_address(e->arena_->address(p.offsets[b]));
        continue;
      }
      e->own_[b] = std::make_unique<device::cuda::DeviceBuffer>(std::max<std::size_t>(buf.bytes, 4));
      if (buf.kind == lower::BufferKind::Weight) e->own_[b]->copy_from_host(buf.weight->bytes(), buf.bytes);
      e->addr_[b] = as_address(e->own_[b]->address());
    }
  } catch (const DiagnosticError& err) {
    return err.diag;
  }
  return e;
}

CudaExecutor::~CudaExecutor() {
  // Graphs, device memory and the program's device state (modules, library
  // handles) go before the context is released.
  stretches_.clear();
  own_.clear();
  arena_.reset();
  program_.reset();
  stream_.reset();
}

Expected<std::vector<ir::Tensor>> CudaExecutor::run(std::span<const ir::Tensor> inputs) {
  std::vector<ir::Tensor> outs;
  auto r = run_into(inputs, outs);
  if (!r) return r.error();
  return outs;
}

Expected<bool> CudaExecutor::run_into(std::span<const ir::Tensor> inputs, std::vector<ir::Tensor>& outs) {
  const lower::Program& p = *program_;
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{source_, 0, 0}, msg}; };
  if (auto why = input_count_mismatch(p, inputs)) return fail(*why);
  if (auto why = prepare_outputs(p, outs)) return fail(*why);
  try {
    for (std::size_t b = 0; b < p.buffers.size(); ++b) {
      const lower::Buffer& buf = p.buffers[b];
      if (buf.kind != lower::BufferKind::Input) continue;
      if (auto why = input_mismatch(buf, inputs)) return fail(*why);
      device::cuda::copy_to_device(reinterpret_cast<std::uint64_t>(addr_[b]),
                                   inputs[static_cast<std::size_t>(buf.input_index)].bytes(), buf.bytes, *stream_);
    }
    lower::RunContext ctx;
    ctx.addr = addr_;
    ctx.stream = stream_.get();
    step_ms_.assign(profile_ ? p.steps.size() : 0, 0.0);
    device::cuda::Event start, end;
    start.record(*stream_);
    run_steps(ctx);
    end.record(*stream_);
    device_ms_ = end.since(start);
    if (!captured_ && graphs_ && !profile_) capture_stretches(ctx);
    for (std::size_t k = 0; k < p.outputs.size(); ++k)
      device::cuda::copy_to_host(outs[k].bytes(),
                                 reinterpret_cast<std::uint64_t>(addr_[static_cast<std::size_t>(p.outputs[k])]),
                                 outs[k].nbytes(), *stream_);
  } catch (const DiagnosticError& e) {
    return fail(e.diag.message);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return true;
}

void CudaExecutor::run_steps(const lower::RunContext& ctx) {
  const lower::Program& p = *program_;
  if (profile_) {
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
      device::cuda::Event before, after;
      before.record(*stream_);
      p.steps[s].run(ctx);
      after.record(*stream_);
      step_ms_[s] = after.since(before);
    }
    return;
  }
  std::size_t s = 0;
  for (const Stretch& st : stretches_) {
    for (; s < st.first; ++s) p.steps[s].run(ctx);
    st.graph->launch(*stream_);
    s = st.last;
  }
  for (; s < p.steps.size(); ++s) p.steps[s].run(ctx);
}

void CudaExecutor::capture_stretches(const lower::RunContext& ctx) {
  captured_ = true;
  const lower::Program& p = *program_;
  std::string failure;  // the first capture's error
  std::size_t refused = 0;
  // Steps [s, e) as one graph, or null when some step's work cannot be
  // captured (a library call that synchronizes, say).
  auto capture = [&](std::size_t s, std::size_t e) -> std::unique_ptr<device::cuda::Graph> {
    try {
      return device::cuda::Graph::capture(*stream_, [&] {
        for (std::size_t k = s; k < e; ++k) p.steps[k].run(ctx);
      });
    } catch (const DiagnosticError& err) {
      if (failure.empty()) failure = err.diag.message;
    } catch (const std::exception& err) {
      if (failure.empty()) failure = err.what();
    }
    return nullptr;
  };
  auto keep = [&](std::size_t s, std::size_t e, std::unique_ptr<device::cuda::Graph> g) {
    stretches_.push_back(Stretch{s, e, std::move(g)});
  };
  for (std::size_t s = 0; s < p.steps.size();) {
    std::size_t e = s;
    while (e < p.steps.size() && !p.steps[e].host_sync) ++e;
    if (e - s >= 2) {
      if (auto g = capture(s, e)) {
        keep(s, e, std::move(g));
      } else {
        // Leave out the steps that fail alone, and capture what is between.
        std::vector<bool> alone(e - s);
        for (std::size_t k = s; k < e; ++k) alone[k - s] = capture(k, k + 1) != nullptr;
        for (std::size_t a = s; a < e;) {
          std::size_t b = a;
          while (b < e && alone[b - s]) ++b;
          if (b - a >= 2)
            if (auto g = capture(a, b)) keep(a, b, std::move(g));
          if (b < e) ++refused;
          a = b + 1;
        }
      }
    }
    s = std::max(e, s + 1);
  }
  if (refused > 0)
    graphs_note_ = std::to_string(refused) + " steps run outside graphs: " + failure;
  else if (stretches_.empty())
    graphs_note_ = "no stretch of two or more steps runs without the host";
}

std::size_t CudaExecutor::graph_steps() const {
  std::size_t n = 0;
  for (const Stretch& st : stretches_) n += st.last - st.first;
  return n;
}

}  // namespace saturn::runtime
