#include "tools/opt_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "extract/extractors.hpp"
#include "ir/graph_dot.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "pipeline/explain_report.hpp"
#include "pipeline/html_report.hpp"
#include "pipeline/optimize.hpp"
#include "pipeline/saturate.hpp"
#include "tools/cli_common.hpp"
#include "tools/dot_command.hpp"

namespace saturn::cli {

namespace fs = std::filesystem;

void add_opt_command(CLI::App& app, OptOptions& o) {
  auto* cmd = app.add_subcommand("opt", "Optimize a model for a target: saturate with rulesets, extract the cheapest.");
  cmd->add_option("model", o.model, "Model (.onnx or .sat)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--target", o.pipeline.target, "Target whose cost model picks the program")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--rules", o.rules, "More rule files or folders of .rules files (after the shipped ones)");
  cmd->add_flag("--no-default-rules", o.no_default_rules, "Do not load the shipped rulesets/");
  cmd->add_option("-o,--output", o.out, "Write the optimized model (.onnx or .sat)");
  cmd->add_flag("--inline-weights", o.inline_weights,
                "A .sat output keeps every weight in its text (by default weights over 64 KiB go to OUT.data)");
  cmd->add_option("--report", o.report, "Write the report as JSON");
  cmd->add_option("--dot", o.dot,
                  "Draw the saturated e-graph, the extracted program marked: .dot or .gv (Graphviz text), .svg, .png "
                  "or .pdf (needs Graphviz's dot)");
  cmd->add_option("--explain", o.pipeline.explain,
                  "Explain how VALUE (a value of the model as written) came to be computed as the optimized program "
                  "computes it: the chain of rule applications, each replayed (repeatable)");
  cmd->add_option("--html", o.html,
                  "Write one self-contained page: the graph before and after (changed nodes filled), the e-graph's "
                  "growth, the rules that fired, each node's modeled cost");
  cmd->add_option("--extractor", o.pipeline.extractor, std::string("Extractor: ") + extract::kExtractorNames)
      ->capture_default_str();
  add_saturation_flags(*cmd, o.pipeline.saturation, "Stop each rule phase after N iterations",
                       "Stop saturating after S seconds (all phases)");
  cmd->add_option("--extract-time-limit", o.pipeline.extract_time_limit_s,
                  "Stop improving the DAG extraction after S seconds (reported)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "Print the report as JSON on stdout");
  cmd->add_flag("--measure", o.measure,
                "Run the model as written and the optimized program on the target, report both measured latencies, "
                "and keep the written model when the optimized one measured slower");
  cmd->add_option("--measure-runs", o.measuring.runs, "--measure: timed runs of each (interleaved)")
      ->check(non_negative())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--inputs", o.measuring.inputs,
                  "--measure: input tensors (.pb or .npy) in graph-input order (default: seeded random values)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--threads", o.measuring.threads, "--measure, --calibrate: CPU threads (0: the free CPUs)")
      ->check(non_negative())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_calibration_flags(*cmd, o.calibration);
  cmd->add_flag("--quiet,-q", o.quiet, "No progress and no summary on stderr");
}

namespace {

// The before/after page: both graphs drawn by Graphviz (their text when
// it is not installed), the changed nodes filled.
int write_html(const ir::Graph& before, const ir::Graph& after, const nlohmann::json& report, const std::string& path) {
  // Both pictures within 30 s: past it, a picture is shown as its text
  // (dot's layout of densenet121 takes many minutes).
  double budget_s = 30;
  auto draw = [&budget_s](const ir::Graph& g, const ir::Graph& other) {
    pipeline::GraphPicture p;
    auto types = ir::infer_types(g);
    p.dot =
        ir::graph_to_dot(g, types ? *types : std::map<std::string, ir::ValueType>{}, pipeline::changed_nodes(g, other));
    const auto t0 = std::chrono::steady_clock::now();
    if (budget_s > 0.5) p.svg = render_svg(p.dot, budget_s).value_or("");
    budget_s -= std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return p;
  };
  pipeline::GraphPicture written = draw(before, after);
  pipeline::GraphPicture optimized = draw(after, before);
  const std::string page = pipeline::html_report(before, after, report, written, optimized);
  std::ofstream f(path, std::ios::binary);
  f << page;
  if (!f.flush()) return bad_input("cannot write " + path);
  return kOk;
}

}  // namespace

int run_opt(const OptOptions& o) {
  if (!o.out.empty() && !has_suffix(o.out, ".onnx") && !has_suffix(o.out, ".sat"))
    return bad_input("-o: the optimized model must be a .onnx or .sat file, got '" + o.out + "'");
  if (o.measure && o.pipeline.target == "cuda")  // before any work
    if (auto why = cuda_unavailable()) return bad_input("--measure on the cuda target: " + *why);
  OptimizeOptions oo = o.pipeline;
  if (oo.saturation.memory_limit_mb == 0) oo.saturation.memory_limit_mb = default_memory_limit_mb();
  oo.saturation.progress = !o.quiet && stderr_is_terminal();
  auto files = pipeline::collect_rule_files(oo.target, !o.no_default_rules, o.rules);
  if (!files) return bad_input(files.error().to_string());
  oo.rule_files = std::move(*files);
  if (!o.dot.empty() && !graphviz_name_ok(o.dot)) return kBadInput;
  oo.egraph_dot = !o.dot.empty();
  oo.explain_all = !o.html.empty();  // the page explains a node on click
  const auto read_start = std::chrono::steady_clock::now();
  auto graph = read_model(o.model);
  if (!graph) return bad_input(graph.error().to_string());
  const double read_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - read_start).count();
  auto res = optimize_calibrated(*graph, oo, o.calibration, o.measuring.threads);
  if (!res) return bad_input(res.error().to_string());
  nlohmann::json& report = res->report;
  report["phases"]["read"] = {{"time_ms", read_ms}, {"stop_reason", "done"}};
  report["model"] = o.model;
  if (o.measure && !res->unsound) {
    MeasureOptions mo = o.measuring;
    mo.target = oo.target;
    auto keep = measure_against_written(*graph, res->graph, mo, report);
    if (!keep) return bad_input(keep.error().to_string());
    if (!*keep) res->graph = *graph;  // never a program slower than the one measured
  }
  if (!res->unsound && !o.out.empty()) {
    auto t = std::chrono::steady_clock::now();
    if (has_suffix(o.out, ".sat")) {
      ir::SatFileOptions so;
      if (o.inline_weights) so.external_above = SIZE_MAX;
      auto w = ir::write_sat_file(res->graph, o.out, so);
      if (!w) return bad_input(w.error().to_string());
    } else {
      auto w = ir::export_onnx_file(res->graph, o.out);
      if (!w) return bad_input(w.error().to_string());
    }
    report["phases"]["export"] = {
        {"time_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count()},
        {"stop_reason", "done"}};
  }
  if (!o.dot.empty()) {
    if (int status = write_graphviz(res->egraph_dot, o.dot); status != kOk) return status;
  }
  if (!o.html.empty() && !res->unsound)
    if (int status = write_html(*graph, res->graph, report, o.html); status != kOk) return status;
  if (!o.report.empty()) {
    std::ofstream f(o.report);
    f << report.dump(2) << "\n";
    if (!f) return bad_input("cannot write " + o.report);
  }
  if (o.json) std::cout << report.dump() << "\n";
  if (!o.json && !res->unsound && report.contains("explanations"))
    for (const std::string& value : o.pipeline.explain) {  // (--html explains every value; only these print)
      const auto& e = report["explanations"][value];
      std::cout << (e.contains("error") ? "value '" + value + "': " + e["error"].get<std::string>() + "\n"
                                        : pipeline::explanation_text(e));
    }
  if (res->unsound) {
    std::cerr << "saturn: error: unsound rewrite: " << report["error"].get<std::string>()
              << "\nsaturn: note: a rule made two e-classes of different types equal, so it changes what the "
                 "program computes (prove rules with `saturn verify`)\n";
    return kCheckFailed;
  }
  if (!o.quiet) {
    std::cerr << "saturn opt " << o.model << " --target " << oo.target << "\n" << summarize(report);
    if (report["phases"]["saturate"]["stop_reason"] != "saturated") {
      std::cerr << "saturn: note: saturation stopped at its "
                << report["phases"]["saturate"]["stop_reason"].get<std::string>();
      for (const auto& [name, p] : report["phases"].items())  // which rule phase, and its share of the limits
        if (name.starts_with("saturate.") && p["stop_reason"] != "saturated")
          std::cerr << "; rule phase " << name.substr(9) << ": " << p["stop_reason"].get<std::string>()
                    << " (its share " << p["node_limit"].get<std::size_t>() << " e-nodes, "
                    << p["time_limit_s"].get<double>() << " s)";
      std::cerr << " (raise --iter-limit / --node-limit / --time-limit / --memory-limit)\n";
    }
    if (report["phases"]["extract"]["stop_reason"] == "time_limit")
      std::cerr << "saturn: note: extraction stopped at --extract-time-limit\n";
  }
  if (report.contains("measured") && !report["measured"]["outputs_agree"].get<bool>()) {
    // A rule changed what the program computes: the model as written was kept (and written).
    std::cerr << "saturn: error: the optimized program computes other outputs than the model as written ("
              << report["measured"]["outputs_mismatch"].get<std::string>()
              << "); kept the model as written (prove rules with `saturn verify`)\n";
    return kCheckFailed;
  }
  return kOk;
}

}  // namespace saturn::cli
