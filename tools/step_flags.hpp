// What `saturn grad` and `saturn train` share: the flags that say which
// training step to build (loss, optimizer and its hyper-parameters, batch,
// frozen weights, gradient rules), and a program that runs a graph on a
// target (interp, cpu or cuda) with the memory plan it reports.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.hpp"
#include "pipeline/training_step.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct StepFlags {
  std::string model;
  std::string loss;
  std::string optimizer = "sgd";
  double lr = 0.01, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = -1;  // -1: the optimizer's default (0.01 for adamw, else 0)
  std::int64_t batch = 0;
  std::vector<std::string> freeze;
  std::string prediction;
  std::vector<std::string> grad_rules;  // more (defgrad ...) files or folders
  bool no_shipped_grads = false;
};

// `gradients_only`: --optimizer also takes `none` (saturn grad: the
// gradients as outputs).
void add_step_flags(CLI::App& cmd, StepFlags& f, std::int64_t default_batch, bool gradients_only);

struct BuiltStep {
  ir::Graph model;  // as read
  pipeline::TrainingStep step;
  pipeline::TrainingOptions options;
};
// Reads the model and the gradient rules, and builds the step.
Expected<BuiltStep> build_step(const StepFlags& f);

// A graph compiled for a target; run() takes inputs in graph-input order.
struct CompiledGraph {
  std::function<Expected<bool>(std::span<const ir::Tensor>, std::vector<ir::Tensor>&)> run;
  // The cpu target can write outputs into inputs' memory
  // (runtime::CpuExecutor::run_in_place); null elsewhere.
  std::function<bool(std::size_t output, std::size_t input)> can_update_in_place;
  std::function<Expected<bool>(std::span<ir::Tensor>, std::vector<ir::Tensor>&,
                               std::span<const std::pair<std::size_t, std::size_t>>)>
      run_in_place;
  nlohmann::json memory;  // arena_bytes, naive_bytes, liveness_bound_bytes (compiled targets)
  double compile_ms = 0;
  std::shared_ptr<void> keep;
};
Expected<CompiledGraph> compile_graph(const ir::Graph& g, const std::string& target, int threads);

// `saturn opt`'s optimization with its shipped rules (calibrated where a
// calibration is cached, as `saturn run`'s), as train and grad --report run
// the step.
Expected<ir::Graph> optimize_for(const ir::Graph& g, const std::string& target, double* ms = nullptr);

// The step as it runs: optimized (unless no_opt), ordered to keep few bytes
// alive (pipeline/memory_order.hpp), then its cheap late values
// rematerialized (unless no_remat; pipeline/rematerialize.hpp).
struct StepProgram {
  ir::Graph graph;
  double opt_ms = 0;
  std::size_t remat_values = 0, remat_bytes = 0;
};
Expected<StepProgram> step_program(const ir::Graph& step, const std::string& target, bool no_opt, bool no_remat);

}  // namespace saturn::cli
