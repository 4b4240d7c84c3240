// The CPU executor: runs a compiled lower::Program.
//
// It owns the arena (one 64-byte-aligned allocation the memory planner laid
// out), the thread pool, and the program (JIT code, oneDNN primitives,
// weights: loaded once, at creation). run() binds the inputs' memory in
// place (no copy), runs the steps in order and copies the outputs out.
//
// The team a run takes follows the CPUs other processes leave free
// (runtime/team_choice.hpp), up to the threads asked for. oneDNN's
// primitives run on the team size they were made for, so a smaller team
// runs a program of its own, compiled from the same graph the first time
// that size is needed (and kept): the same steps and values, its library
// calls made for that team.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"
#include "runtime/team_choice.hpp"
#include "runtime/thread_pool.hpp"

namespace saturn::runtime {

struct CpuExecutorOptions {
  int threads = 0;  // 0: every free CPU; more than the process may use: capped (runtime::team_size)
  // Each run on as many of `threads` (the most) as other processes leave
  // free (runtime::TeamChoice); false: always `threads` (calibration,
  // which times one team).
  bool adapt_team = true;
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

  // The program the last run took (before any run, the one of the team it
  // was created with): the same steps for every team, their library calls
  // made for that team. step_ms() is by its steps.
  const lower::Program& program() const { return *current_->program; }
  // The threads it was created with, and why that many.
  int threads() const { return first_->pool->size(); }
  const std::string& threads_reason() const { return threads_reason_; }
  // Runs so far by team size, and the team of the last run (or the one
  // use_team set since).
  const std::map<int, std::int64_t>& runs_by_team() const { return runs_by_team_; }
  int last_team() const { return current_->pool->size(); }
  // Runs on `threads` threads from now on (for tests and tools: for good
  // when the executor does not adapt, else until its next run, which takes
  // the team the load asks for).
  Expected<bool> use_team(int threads);
  // Milliseconds per step of the last run (with profile on).
  const std::vector<double>& step_ms() const { return step_ms_; }
  // While profiling, runs keep the team they have (step_ms() stays by the
  // same program's steps).
  void set_profile(bool on) { profile_ = on; }

 private:
  CpuExecutor() = default;
  // Runs with the outputs written at `output_addr` (by output).
  Expected<bool> run_bound(std::span<const ir::Tensor> inputs, const std::vector<std::uint8_t*>& output_addr);
  // A program compiled for one team size, and that team.
  struct TeamProgram {
    std::shared_ptr<lower::Program> program;
    std::unique_ptr<ThreadPool> pool;
  };
  // The program for `threads`, compiled now when it is the first run on
  // that many; nullptr (and the reason) when it does not compile.
  Expected<TeamProgram*> program_for(int threads);
  // Moves to the team the CPUs' load asks for, before a run (and opens the
  // load's window when none is); after one, closes it when due.
  void select_team();
  void run_ended();
  Expected<bool> reserve_arena(std::size_t bytes);

  std::map<int, TeamProgram> programs_;  // by team size
  TeamProgram* first_ = nullptr;
  TeamProgram* current_ = nullptr;
  ir::Graph graph_;  // what a team's program compiles from (weights shared)
  lower::LoweringOptions lowering_;
  std::optional<TeamChoice> team_choice_;
  std::map<int, std::int64_t> runs_by_team_;
  std::string threads_reason_;
  std::size_t arena_bytes_ = 0;
  std::shared_ptr<std::uint8_t[]> arena_;
  std::string source_;
  bool profile_ = false;
  std::vector<double> step_ms_;
};

}  // namespace saturn::runtime
