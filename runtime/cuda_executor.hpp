// The CUDA executor: runs a lower::Program compiled for the CUDA target
// (lower::compile_cuda) on one device.
//
// It owns the device memory: the arena the memory planner laid out, the
// weights (copied to the device once, at creation), and one buffer per
// graph input and output. run() copies the inputs in, runs the steps on one
// stream, and copies the outputs out: host-device copies happen only at the
// program's borders (and around ops that run their reference kernel on the
// host, which the program lists).
//
// After its first run (which makes the device state: modules, library
// handles, cuDNN's measured algorithms) it captures every stretch of two or
// more steps that never wait for the host into a CUDA graph, and later runs
// launch each stretch at once instead of step by step: a batch-1 model's
// steps are a few microseconds each on the device, about what launching
// them costs the host. Work that cannot be captured leaves the executor
// running step by step, as before.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "device/cuda_driver.hpp"
#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"

namespace saturn::runtime {

struct CudaExecutorOptions {
  int device = 0;
  lower::LoweringOptions lowering;
  bool profile = false;  // time every step (step_ms), with events; runs step by step
  // Replay the steps as CUDA graphs after the first run (SATURN_CUDA_GRAPHS=0
  // in the environment turns it off as well).
  bool graphs = true;
};

class CudaExecutor {
 public:
  // A Diagnostic (never a throw) when there is no driver or device, or the
  // graph does not lower.
  static Expected<std::unique_ptr<CudaExecutor>> create(const ir::Graph& g, const CudaExecutorOptions& o = {});
  ~CudaExecutor();

  // Inputs in graph-input order, checked like the interpreter's.
  Expected<std::vector<ir::Tensor>> run(std::span<const ir::Tensor> inputs);
  Expected<bool> run_into(std::span<const ir::Tensor> inputs, std::vector<ir::Tensor>& outputs);

  const lower::Program& program() const { return *program_; }
  const device::cuda::DeviceInfo& device() const { return context_->device(); }
  // Milliseconds the last run's steps took on the device (between events
  // recorded on the stream before the first step and after the last).
  double device_ms() const { return device_ms_; }
  const std::vector<double>& step_ms() const { return step_ms_; }
  void set_profile(bool on) { profile_ = on; }
  // Steps that later runs replay in CUDA graphs (0 before the second run,
  // with graphs off, or when the capture failed), and why steps run outside
  // them (empty when none do but those that wait for the host).
  std::size_t graph_steps() const;
  const std::string& graphs_note() const { return graphs_note_; }

 private:
  CudaExecutor() = default;
  std::shared_ptr<lower::Program> program_;
  // Declared first, destroyed last: the memory and stream live in the context.
  std::unique_ptr<device::cuda::Context> context_;
  std::unique_ptr<device::cuda::Stream> stream_;
  std::unique_ptr<device::cuda::DeviceBuffer> arena_;
  std::vector<std::unique_ptr<device::cuda::DeviceBuffer>> own_;  // weights, inputs, outputs (by BufferId)
  std::vector<std::uint8_t*> addr_;                               // device address of every buffer
  std::string source_;
  bool profile_ = false;
  double device_ms_ = 0;
  std::vector<double> step_ms_;
  // Steps [first, last) replayed as one graph, in program order.
  struct Stretch {
    std::size_t first = 0, last = 0;
    std::unique_ptr<device::cuda::Graph> graph;
  };
  void capture_stretches(const lower::RunContext& ctx);
  void run_steps(const lower::RunContext& ctx);
  bool graphs_ = true;
  bool captured_ = false;
  std::string graphs_note_;
  std::vector<Stretch> stretches_;
};

}  // namespace saturn::runtime
