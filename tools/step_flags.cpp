#include "tools/step_flags.hpp"

#include <CLI/CLI.hpp>
#include <chrono>

#include "pipeline/memory_order.hpp"
#include "pipeline/rematerialize.hpp"
#include "rules/grad_rules.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/cuda_executor.hpp"
#include "runtime/interp.hpp"
#include "tools/calibrate.hpp"
#include "tools/cli_common.hpp"

namespace saturn::cli {

void add_step_flags(CLI::App& cmd, StepFlags& f, std::int64_t default_batch, bool gradients_only) {
  f.batch = default_batch;
  cmd.add_option("model", f.model, "Model (.onnx or .sat) whose weights are trained")->required();
  cmd.add_option("--loss", f.loss, "mse | cross-entropy (from logits, integer labels) | bce (from logits) | nll")
      ->required()
      ->check(CLI::IsMember(pipeline::loss_names()));
  std::vector<std::string> optimizers = pipeline::optimizer_names();
  if (!gradients_only) optimizers.pop_back();  // "none"
  cmd.add_option("--optimizer", f.optimizer,
                 gradients_only ? "sgd | momentum | adam | adamw | none (the gradients as outputs)"
                                : "sgd | momentum | adam | adamw")
      ->check(CLI::IsMember(optimizers))
      ->capture_default_str();
  cmd.add_option("--lr", f.lr, "Learning rate")->check(non_negative())->capture_default_str();
  cmd.add_option("--momentum", f.momentum, "momentum's coefficient")->check(non_negative())->capture_default_str();
  cmd.add_option("--beta1", f.beta1, "adam's first-moment decay")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd.add_option("--beta2", f.beta2, "adam's second-moment decay")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd.add_option("--eps", f.eps, "adam's epsilon")->check(non_negative())->capture_default_str();
  cmd.add_option("--weight-decay", f.weight_decay,
                 "L2 penalty (sgd, momentum, adam) or decoupled decay (adamw); default 0, adamw 0.01")
      ->check(non_negative());
  cmd.add_option("--batch", f.batch, "Batch size: binds the inputs' symbolic leading dimension")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--freeze", f.freeze, "Weights (initializer names) kept constant");
  cmd.add_option("--prediction", f.prediction, "The model output the loss reads (default: the first)");
  cmd.add_option("--grad-rules", f.grad_rules, "More (defgrad ...) files or folders (after rulesets/grad/)");
  cmd.add_flag("--no-shipped-grads", f.no_shipped_grads, "Do not load rulesets/grad/");
}

Expected<BuiltStep> build_step(const StepFlags& f) {
  BuiltStep b;
  auto g = read_model(f.model);
  if (!g) return g.error();
  b.model = std::move(*g);
  std::vector<std::string> sources;
  if (!f.no_shipped_grads) sources.push_back(rules::shipped_grad_dir(shipped_rulesets_dir()));
  sources.insert(sources.end(), f.grad_rules.begin(), f.grad_rules.end());
  auto rules = rules::load_grad_rules(sources);
  if (!rules) return rules.error();
  pipeline::TrainingOptions& o = b.options;
  o.loss = *pipeline::loss_from_name(f.loss);
  o.optimizer = *pipeline::optimizer_from_name(f.optimizer);
  o.lr = f.lr;
  o.momentum = f.momentum;
  o.beta1 = f.beta1;
  o.beta2 = f.beta2;
  o.eps = f.eps;
  o.weight_decay = f.weight_decay >= 0 ? f.weight_decay : (o.optimizer == pipeline::OptimizerKind::AdamW ? 0.01 : 0.0);
  o.batch = f.batch;
  o.freeze = f.freeze;
  o.prediction = f.prediction;
  // Composites without a gradient rule are differentiated through their
  // decomposition (rulesets/decompose.rules).
  static const Expected<pipeline::Decomposer> decomposer = pipeline::Decomposer::load(shipped_rulesets_dir());
  if (!decomposer) return decomposer.error();
  o.decomposer = &*decomposer;
  auto step = pipeline::build_training_step(b.model, *rules, o);
  if (!step) return step.error();
  b.step = std::move(*step);
  return b;
}

Expected<CompiledGraph> compile_graph(const ir::Graph& g, const std::string& target, int threads) {
  CompiledGraph c;
  auto t0 = std::chrono::steady_clock::now();
  auto plan = [&](const lower::Program& p) {
    c.memory = {
        {"arena_bytes", p.arena_bytes}, {"naive_bytes", p.naive_bytes}, {"liveness_bound_bytes", p.lower_bound_bytes}};
  };
  if (target == "cpu") {
    runtime::CpuExecutorOptions co;
    co.threads = threads;
    co.lowering = lowering_options();
    auto made = runtime::CpuExecutor::create(g, co);
    if (!made) return made.error();
    std::shared_ptr<runtime::CpuExecutor> e = std::move(*made);
    plan(e->program());
    c.run = [e](std::span<const ir::Tensor> in, std::vector<ir::Tensor>& out) { return e->run_into(in, out); };
    c.can_update_in_place = [e](std::size_t o, std::size_t i) { return e->can_update_in_place(o, i); };
    c.run_in_place = [e](std::span<ir::Tensor> in, std::vector<ir::Tensor>& out,
                         std::span<const std::pair<std::size_t, std::size_t>> pairs) {
      return e->run_in_place(in, out, pairs);
    };
    c.keep = e;
  } else if (target == "cuda") {
    if (auto why = cuda_unavailable()) return Diagnostic{SourceLoc{}, *why + " (use --target cpu or interp)"};
    runtime::CudaExecutorOptions co;
    co.lowering = lowering_options();
    auto made = runtime::CudaExecutor::create(g, co);
    if (!made) return made.error();
    std::shared_ptr<runtime::CudaExecutor> e = std::move(*made);
    plan(e->program());
    c.run = [e](std::span<const ir::Tensor> in, std::vector<ir::Tensor>& out) { return e->run_into(in, out); };
    c.keep = e;
  } else {
    auto graph = std::make_shared<ir::Graph>(g);
    c.run = [graph](std::span<const ir::Tensor> in, std::vector<ir::Tensor>& out) -> Expected<bool> {
      auto r = runtime::interpret(*graph, in);
      if (!r) return r.error();
      out = std::move(*r);
      return true;
    };
    c.keep = graph;
  }
  c.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

Expected<ir::Graph> optimize_for(const ir::Graph& g, const std::string& target, double* ms) {
  auto t0 = std::chrono::steady_clock::now();
  OptimizeOptions oo;
  oo.target = target == "cuda" ? "cuda" : "cpu";
  oo.saturation.memory_limit_mb = default_memory_limit_mb();
  auto shipped = pipeline::collect_rule_files(oo.target, true, {});
  if (!shipped) return shipped.error();
  oo.rule_files = std::move(*shipped);
  auto res = optimize_calibrated(g, oo, CalibrationFlags{}, 0);
  if (!res) return res.error();
  if (res->unsound)
    return Diagnostic{SourceLoc{}, "optimizing the step was refused: " +
                                       res->report.value("error", std::string("an unsound rule")) + " (--no-opt)"};
  if (ms) *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::move(res->graph);
}

Expected<StepProgram> step_program(const ir::Graph& step, const std::string& target, bool no_opt, bool no_remat) {
  StepProgram p;
  p.graph = step;
  if (!no_opt && target != "interp") {
    auto opt = optimize_for(step, target, &p.opt_ms);
    if (!opt) return Diagnostic{opt.error().loc, opt.error().message + " (--no-opt runs the step as built)"};
    p.graph = std::move(*opt);
  }
  // The order that keeps the fewest bytes alive, then the cheap values
  // read much later computed again there.
  pipeline::order_for_memory(p.graph);
  if (!no_remat) {
    pipeline::RematReport r = pipeline::rematerialize(p.graph);
    p.remat_values = r.values;
    p.remat_bytes = r.bytes;
  }
  return p;
}

}  // namespace saturn::cli
