#include "tools/extract_command.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "extract/extractors.hpp"
#include "ir/sexpr.hpp"
#include "pipeline/optimize.hpp"
#include "tools/cli_common.hpp"

namespace saturn::cli {

void add_extract_command(CLI::App& app, ExtractOptions& o) {
  auto* cmd = app.add_subcommand("extract", "Extract from an egraph-serialize JSON file; print tree and DAG cost.");
  cmd->add_option("egraph", o.egraph, "E-graph (egraph-serialize JSON)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--extractor", o.extractor, std::string("Extractor: ") + extract::kExtractorNames)
      ->capture_default_str();
  cmd->add_option("--time-limit", o.time_limit_s,
                  "Stop improving a DAG extraction (dag-greedy) or solving (ilp, the incumbent keeps) after S seconds "
                  "(reported)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "Print one JSON object");
}

int run_extract(const ExtractOptions& o) {
  auto text = read_file(o.egraph);
  if (!text) return bad_input(text.error().to_string());
  auto problem = extract::read_serialized_json(*text, o.egraph);
  if (!problem) return bad_input(problem.error().to_string());
  const auto t = std::chrono::steady_clock::now();
  auto ex = extract::extract_by_name(o.extractor, *problem, o.time_limit_s);
  if (!ex) return bad_input("unknown extractor '" + o.extractor + "' (one of " + extract::kExtractorNames + ")");
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  if (o.json) {
    nlohmann::json j{{"egraph", o.egraph},
                     {"extractor", o.extractor},
                     {"classes", problem->classes.size()},
                     {"nodes", problem->nodes.size()},
                     {"tree_cost", num(ex->tree_cost)},
                     {"dag_cost", num(ex->dag_cost)},
                     {"time_ms", ms},
                     {"time_limit_hit", ex->budget_hit}};
    if (ex->exact) j.update(pipeline::exact_json(*ex->exact));
    std::cout << j.dump() << "\n";
  } else {
    std::cout << o.egraph << ": " << problem->classes.size() << " e-classes, " << problem->nodes.size()
              << " e-nodes\nextractor " << o.extractor << ": tree cost " << ex->tree_cost << ", dag cost "
              << ex->dag_cost << " (" << ms << " ms" << (ex->budget_hit ? ", stopped at --time-limit" : "") << ")\n";
    if (ex->exact) std::cout << pipeline::exact_summary(*ex->exact) << "\n";
  }
  if (!std::isfinite(ex->dag_cost)) {
    std::cerr << "saturn: error: a root e-class has no finite, acyclic extraction\n";
    return kCheckFailed;
  }
  return kOk;
}

}  // namespace saturn::cli
