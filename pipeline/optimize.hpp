// The optimization pipeline as a library call: a graph in, the cheapest
// equivalent graph for a target out, with the report `saturn opt` prints.
// The CLI, the benchmarks and the end-to-end tests all go through here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
};

struct OptimizeResult {
  ir::Graph graph;
  nlohmann::json report;  // keys documented in docs/cli.md (saturn opt)
  bool unsound = false;   // a rule merged classes of different types (report["error"] says which)
};

// Bad rules or a model the target cannot run are errors (exit status 2);
// an unsound rule is a result with `unsound` set (exit status 1).
Expected<OptimizeResult> optimize(const ir::Graph& g, const OptimizeOptions& o);

// The shipped rulesets/ folder: $SATURN_RULESETS, else the source tree's.
std::string shipped_rulesets_dir();
// The .rules files of a folder (sorted), without the library substitutions
// of the other target: blas/dnnl files are CPU-only, cublas/cudnn CUDA-only.
std::vector<std::string> rule_files_for(const std::string& dir, const std::string& target);

// The readable summary of a report (what `saturn opt` prints on stderr).
std::string summarize(const nlohmann::json& report);

}  // namespace saturn::pipeline
