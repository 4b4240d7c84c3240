// The optimization pipeline as a library call: a graph in, the cheapest
// equivalent graph for a target out, with the report `saturn opt` prints.
// The CLI, the benchmarks and the end-to-end tests all go through here.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "extract/calibration.hpp"
#include "extract/problem.hpp"
#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "pipeline/saturate.hpp"

namespace saturn::pipeline {

struct OptimizeOptions {
  std::string target = "cpu";
  std::vector<std::string> rule_files;  // in order; see rule_files_for
  std::string extractor = "dag-greedy";
  // Limits over all rule phases together (memory_limit_mb 0: none).
  SaturateOptions saturation{30, 200000, 10.0, 0, "backoff", true, false, {}};
  double extract_time_limit_s = 10.0;
  // Measured prices (docs/cost-model.md): the calibration the cost model
  // prices timed ops from (null: the roofline alone; not owned) and, when
  // set, what measures the timed ops it lacks (adding them to it; returns
  // the report's "calibration" fields: measured, failed, budget_hit, ...).
  extract::Calibration* calibration = nullptr;
  std::function<nlohmann::json(const std::map<std::string, extract::TimedOp>&, extract::Calibration&)> measure;
  // Draw the saturated e-graph with the extracted program marked
  // (OptimizeResult::egraph_dot).
  bool egraph_dot = false;
  // Values of the model to explain (report["explanations"]; the e-graph
  // then keeps a proof forest: pipeline/explain_report.hpp).
  std::vector<std::string> explain;
  // Explain every value the model's nodes compute (`saturn opt --html`).
  bool explain_all = false;
};

struct OptimizeResult {
  ir::Graph graph;
  nlohmann::json report;   // keys documented in docs/cli.md (saturn opt)
  bool unsound = false;    // a rule merged classes of different types (report["error"] says which)
  std::string egraph_dot;  // Graphviz text (extract/problem_dot.hpp), when OptimizeOptions::egraph_dot
};

// Bad rules or a model the target cannot run are errors (exit status 2);
// an unsound rule is a result with `unsound` set (exit status 1).
Expected<OptimizeResult> optimize(const ir::Graph& g, const OptimizeOptions& o);

// The shipped rulesets/ folder: $SATURN_RULESETS, else the source tree's.
std::string shipped_rulesets_dir();
// The .rules files of a folder (sorted), without the library substitutions
// of the other target: blas/dnnl files are CPU-only, cublas/cudnn CUDA-only.
std::vector<std::string> rule_files_for(const std::string& dir, const std::string& target);
// The rule files an optimization for `target` loads: the shipped ones (unless
// !shipped), then each of `extra` (a folder: its .rules files, as
// rule_files_for). An error names a missing file or folder, or an empty
// shipped folder.
Expected<std::vector<std::string>> collect_rule_files(const std::string& target, bool shipped,
                                                      const std::vector<std::string>& extra);

// What an exact extraction established, as report fields (status, dag_cost
// bound, incumbent, program size, time) and as one readable line.
nlohmann::json exact_json(const extract::ExactSolve& s);
std::string exact_summary(const extract::ExactSolve& s);

// The readable summary of a report (what `saturn opt` prints on stderr).
std::string summarize(const nlohmann::json& report);

}  // namespace saturn::pipeline
