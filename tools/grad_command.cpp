#include "tools/grad_command.hpp"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "tools/cli_common.hpp"

namespace saturn::cli {

void add_grad_command(CLI::App& app, GradOptions& o) {
  auto* cmd =
      app.add_subcommand("grad", "Build a model's training step: forward, loss, backward and optimizer update.");
  add_step_flags(*cmd, o.step, 32, true);
  cmd->add_option("-o,--out", o.out, "Write the step graph (.sat or .onnx)");
  cmd->add_option("--report", o.report,
                  "Write the step's memory plan as JSON (arena_bytes, naive_bytes, liveness_bound_bytes)");
  cmd->add_option("--target", o.target, "Target whose memory plan --report prices")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_flag("--no-opt", o.no_opt, "--report: plan the step as built, not as `saturn opt` optimizes it");
  cmd->add_flag("--no-remat", o.no_remat, "--report: keep every value the backward pass reads (no rematerialization)");
  cmd->add_flag("--json", o.json, "Print the summary as JSON");
}

int run_grad(const GradOptions& o) {
  auto built = build_step(o.step);
  if (!built) return bad_input(built.error().to_string());
  const pipeline::TrainingStep& step = built->step;
  std::size_t params = 0;
  for (const pipeline::StateSlot& s : step.state)
    if (s.kind == pipeline::StateSlot::Kind::Weight) params += s.initial.numel();
  nlohmann::json summary = {{"model", o.step.model},
                            {"loss", pipeline::loss_name(built->options.loss)},
                            {"optimizer", pipeline::optimizer_name(built->options.optimizer)},
                            {"weights", step.weights.size()},
                            {"parameters", params},
                            {"state", step.state.size()},
                            {"forward_nodes", built->model.nodes.size()},
                            {"backward_nodes", step.backward_nodes},
                            {"step_nodes", step.graph.nodes.size()},
                            {"batch_norms_in_training_mode", step.batch_norms.size()},
                            {"decomposed", step.decomposed}};
  if (!o.out.empty()) {
    auto w =
        has_suffix(o.out, ".sat") ? ir::write_sat_file(step.graph, o.out) : ir::export_onnx_file(step.graph, o.out);
    if (!w) return bad_input(w.error().to_string());
    summary["out"] = o.out;
  }
  if (!o.report.empty()) {
    auto prepared = step_program(step.graph, o.target, o.no_opt, o.no_remat);
    if (!prepared) return bad_input(prepared.error().to_string());
    const ir::Graph& planned = prepared->graph;
    const double opt_ms = prepared->opt_ms;
    auto compiled = compile_graph(planned, o.target, 0);
    if (!compiled) return bad_input(compiled.error().to_string());
    nlohmann::json report = compiled->memory;
    report["optimized"] = !o.no_opt;
    report["opt_ms"] = opt_ms;
    report["target"] = o.target;
    report["step_nodes"] = planned.nodes.size();
    report["remat_values"] = prepared->remat_values;
    report["remat_bytes"] = prepared->remat_bytes;
    // The state (weights, moments, running statistics) lives outside the
    // arena: once where the step updates it in place, twice where its next
    // value needs a buffer of its own.
    std::size_t state_bytes = 0, double_buffered = 0, in_place = 0;
    const bool updates = built->options.optimizer != pipeline::OptimizerKind::None;
    for (std::size_t i = 0; i < step.state.size(); ++i) {
      state_bytes += step.state[i].initial.nbytes();
      if (!updates) continue;
      if (compiled->can_update_in_place && compiled->can_update_in_place(2 + i, 2 + i))
        ++in_place;
      else
        double_buffered += step.state[i].initial.nbytes();
    }
    report["state_bytes"] = state_bytes;
    report["state_updated_in_place"] = in_place;
    report["state_double_buffered_bytes"] = double_buffered;
    summary["memory"] = report;
    std::ofstream f(o.report);
    f << report.dump(2) << "\n";
    if (!f) return bad_input("cannot write " + o.report);
  }
  if (o.json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cerr << "grad: " << summary["loss"].get<std::string>() << " loss, " << summary["optimizer"].get<std::string>()
              << "; " << step.weights.size() << " weights (" << params << " parameters), " << built->model.nodes.size()
              << " forward + " << step.backward_nodes << " backward nodes, " << step.state.size() << " state slots";
    if (!step.batch_norms.empty()) std::cerr << ", " << step.batch_norms.size() << " batch norms on batch statistics";
    if (!step.decomposed.empty())
      std::cerr << ", " << step.decomposed.size() << " composites differentiated through their decomposition";
    std::cerr << "\n";
    if (summary.contains("memory"))
      std::cerr << "memory (" << o.target << "): arena " << summary["memory"]["arena_bytes"]
                << " bytes, every buffer kept " << summary["memory"]["naive_bytes"] << ", liveness bound "
                << summary["memory"]["liveness_bound_bytes"] << "\n";
  }
  return kOk;
}

}  // namespace saturn::cli
