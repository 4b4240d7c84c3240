// The CPU executor: runs a compiled lower::Program.
//
// It owns the arena (one 64-byte-aligned allocation the memory planner laid
// out), the thread pool, and the program (JIT code, oneDNN primitives,
// weights: loaded once, at creation). run() binds the inputs' memory in
// place (no copy), runs the steps in order and copies the outputs out.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"
#include "runtime/thread_pool.hpp"

namespace saturn::runtime {

struct CpuExecutorOptions {
  int threads = 0;  // 0: every free CPU; more than the process may use: capped (runtime::team_size)
  lower::LoweringOptions lowering;
  bool profile = false;  // time every step (step_ms)
};

class CpuExecutor {
 public:
  static Expected<std::unique_ptr<CpuExecutor>> create(const ir::Graph& g, const CpuExecutorOptions& o = {});

  // Inputs in graph-input order, checked like the interpreter's (dtype,
  // exact static shape).
  Expected<std::vector<ir::Tensor>> run(std::span<const ir::Tensor> inputs);
  // The same, writing into `outputs` (resized and reallocated only when
  // their number, types or shapes differ): no allocation per run.
  Expected<bool> run_into(std::span<const ir::Tensor> inputs, std::vector<ir::Tensor>& outputs);

  // Whether output `output` may be written into input `input`'s memory, as
  // a training step updates its weights and optimizer state in place: same
  // type and size, and no step reads the input after the first step that
  // writes the output, except that step itself reading each element where
  // it writes it (Step::in_place_ok).
  bool can_update_in_place(std::size_t output, std::size_t input) const;
  // run_into, except that each (output, input) pair of `in_place` (each
  // checked by can_update_in_place) writes the output into that input's
  // tensor, which then holds the new value; outs[output] is left untouched
  // (no memory is allocated for it).
  Expected<bool> run_in_place(std::span<ir::Tensor> inputs, std::vector<ir::Tensor>& outputs,
                              std::span<const std::pair<std::size_t, std::size_t>> in_place);

  const lower::Program& program() const { return *program_; }
  // The threads it runs on, and why that many.
  int threads() const { return pool_->size(); }
  const std::string& threads_reason() const { return pool_->size_reason(); }
  // Milliseconds per step of the last run (with profile on).
  const std::vector<double>& step_ms() const { return step_ms_; }
  void set_profile(bool on) { profile_ = on; }

 private:
  CpuExecutor() = default;
  // Runs with the outputs written at `output_addr` (by output).
  Expected<bool> run_bound(std::span<const ir::Tensor> inputs, const std::vector<std::uint8_t*>& output_addr);
  std::shared_ptr<lower::Program> program_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<std::uint8_t[], void (*)(std::uint8_t*)> arena_{nullptr, nullptr};
  std::string source_;
  bool profile_ = false;
  std::vector<double> step_ms_;
};

}  // namespace saturn::runtime
