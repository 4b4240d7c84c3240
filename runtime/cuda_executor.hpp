// The CUDA executor: runs a lower::Program compiled for the CUDA target
// (lower::compile_cuda) on one device.
//
// It owns the device memory: the arena the memory planner laid out, the
// weights (copied to the device once, at creation), and one buffer per
// graph input and output. run() copies the inputs in, runs the steps on one
// stream, and copies the outputs out: host-device copies happen only at the
// program's borders (and around ops that run their reference kernel on the
// host, which the program lists).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"
#include "device/cuda_driver.hpp"

namespace saturn::runtime {

struct CudaExecutorOptions {
  int device = 0;
  lower::LoweringOptions lowering;
  bool profile = false;  // time every step (step_ms), with events
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

 private:
  CudaExecutor() = default;
  std::shared_ptr<lower::Program> program_;
  // Declared first, destroyed last: the memory and stream live in the context.
  std::unique_ptr<device::cuda::Context> context_;
  std::unique_ptr<device::cuda::Stream> stream_;
  std::unique_ptr<device::cuda::DeviceBuffer> arena_;
  std::vector<std::unique_ptr<device::cuda::DeviceBuffer>> own_;  // weights, inputs, outputs (by BufferId)
  std::vector<std::uint8_t*> addr_;                       // device address of every buffer
  std::string source_;
  bool profile_ = false;
  double device_ms_ = 0;
  std::vector<double> step_ms_;
};

}  // namespace saturn::runtime
