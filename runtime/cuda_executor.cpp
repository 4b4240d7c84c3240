#include "runtime/cuda_executor.hpp"

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
  // Device memory and the program's device state (modules, library
  // handles) go before the context is released.
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
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
      if (!profile_) {
        p.steps[s].run(ctx);
        continue;
      }
      device::cuda::Event before, after;
      before.record(*stream_);
      p.steps[s].run(ctx);
      after.record(*stream_);
      step_ms_[s] = after.since(before);
    }
    end.record(*stream_);
    device_ms_ = end.since(start);
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

}  // namespace saturn::runtime
