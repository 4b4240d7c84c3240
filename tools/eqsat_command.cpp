#include "tools/eqsat_command.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "egraph/constant_folding.hpp"
#include "egraph/runner.hpp"
#include "egraph/serialize.hpp"
#include "egraph/term.hpp"
#include "extract/tree_greedy.hpp"
#include "rules/rule_file.hpp"
#include "tools/cli_common.hpp"
#include "pipeline/saturate.hpp"

namespace saturn::cli {

void add_eqsat_command(CLI::App& app, EqsatOptions& o) {
  auto* cmd = app.add_subcommand("eqsat", "Saturate symbolic terms with text rules and extract the cheapest form.");
  cmd->add_option("--rules", o.rule_files, "Rule files (.rules)")->required()->check(CLI::ExistingFile);
  cmd->add_option("terms", o.terms_file, "File with one s-expression term per line (TERMS-FILE)")
      ->check(CLI::ExistingFile);
  add_saturation_flags(*cmd, o.saturation, "Stop after N iterations", "Stop after S seconds of saturation");
  cmd->add_flag("--json", o.json, "Print one JSON object per term");
  cmd->add_flag("--quiet,-q", o.quiet, "No progress on the terminal");
  cmd->add_flag("--no-incremental", o.no_incremental,
                "Search every match every iteration, as egg does (default: semi-naive, only matches through new "
                "e-nodes; same results)");
  cmd->add_flag("--const-fold", o.const_fold, "Enable the constant-folding analysis (+ - * / pow min max abs neg)");
  cmd->add_option("--cost", o.op_costs, "Per-operator extraction cost OP=COST (default 1 each: AST size)");
  cmd->add_option("--egraph-json", o.egraph_json,
                  "Write the saturated e-graph (egraph-serialize JSON); "
                  "with several terms, FILE gets the term's index before its extension");
  cmd->add_option("--dot", o.dot, "Write the saturated e-graph as Graphviz (same naming as --egraph-json)");
}

namespace {

std::string indexed_path(const std::string& path, std::size_t index, std::size_t count) {
  if (count <= 1) return path;
  auto dot = path.find_last_of('.');
  auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + "." + std::to_string(index);
  return path.substr(0, dot) + "." + std::to_string(index) + path.substr(dot);
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int run_eqsat(const EqsatOptions& opts) {
  using namespace saturn::egraph;
  EqsatOptions o = opts;
  // `--rules A B TERMS` reads greedily: the last path is the terms file.
  if (o.terms_file.empty()) {
    if (o.rule_files.size() < 2) return bad_input("eqsat: expected --rules FILE... TERMS-FILE");
    o.terms_file = o.rule_files.back();
    o.rule_files.pop_back();
  }
  std::vector<rules::RuleFile> files;
  for (const std::string& path : o.rule_files) {
    auto f = rules::load_rules(path);
    if (!f) return bad_input(f.error().to_string());
    files.push_back(std::move(*f));
  }
  auto phases = rules::group_phases(std::move(files));
  if (!phases) return bad_input(phases.error().to_string());
  auto terms = rules::load_terms(o.terms_file);
  if (!terms) return bad_input(terms.error().to_string());
  if (terms->empty()) return bad_input(o.terms_file + ": error: no terms in the file");

  extract::OpCostTable costs;
  for (const std::string& spec : o.op_costs) {
    auto eq = spec.rfind('=');
    char* end = nullptr;
    double c = eq == std::string::npos ? 0 : std::strtod(spec.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == spec.c_str() + eq + 1 || *end != '\0' || c < 0 || std::isnan(c))
      return bad_input("--cost expects OP=COST with a non-negative number, got '" + spec + "'");
    costs.set(Op::symbol(spec.substr(0, eq)), c);
  }

  if (o.saturation.memory_limit_mb == 0) o.saturation.memory_limit_mb = default_memory_limit_mb();
  const bool progress = !o.quiet && stderr_is_terminal();
  bool conflict = false;
  for (std::size_t ti = 0; ti < terms->size(); ++ti) {
    const Term& term = (*terms)[ti];
    EGraph g;
    ConstantFolding* cf = o.const_fold ? &g.add_analysis<ConstantFolding>() : nullptr;
    EClassId root = add_term(g, term);
    g.rebuild();

    SaturateOptions so = o.saturation;
    so.incremental = !o.no_incremental;
    so.progress = progress;
    so.label = "term " + std::to_string(ti + 1) + "/" + std::to_string(terms->size());
    SaturateResult sat = saturate(g, *phases, so);
    const std::size_t iterations = sat.iterations;
    const std::string& stop = sat.stop;
    const double runner_ms = sat.time_ms;

    extract::TreeGreedyExtractor ex(g, std::cref(costs));
    auto best = ex.extract(root);
    const double best_cost = ex.cost(root);

    if (!o.egraph_json.empty()) {
      EClassId roots[] = {g.find(root)};
      if (!write_file(indexed_path(o.egraph_json, ti, terms->size()), to_serialized_json(g, roots, std::cref(costs))))
        return bad_input("cannot write " + o.egraph_json);
    }
    if (!o.dot.empty() && !write_file(indexed_path(o.dot, ti, terms->size()), to_dot(g)))
      return bad_input("cannot write " + o.dot);

    if (o.json) {
      nlohmann::json j = {{"term", term.to_string()},
                          {"iterations", iterations},
                          {"enodes", g.num_nodes()},
                          {"eclasses", g.num_classes()},
                          {"stop_reason", stop},
                          {"time_ms", runner_ms},
                          {"best", best ? nlohmann::json(best->to_string()) : nlohmann::json(nullptr)},
                          {"best_cost", std::isfinite(best_cost) ? nlohmann::json(best_cost) : nlohmann::json(nullptr)},
                          {"phases", sat.phases},
                          {"rules", sat.rules}};
      std::cout << j.dump() << "\n";
    } else {
      if (ti == 0)
        std::cout << std::left << std::setw(4) << "#" << std::right << std::setw(6) << "iters" << std::setw(10)
                  << "e-nodes" << std::setw(10) << "e-classes"
                  << "  " << std::left << std::setw(11) << "stop" << std::right << std::setw(10) << "time ms"
                  << std::setw(8) << "cost"
                  << "  term => best\n";
      std::ostringstream cost;
      cost << best_cost;
      std::cout << std::left << std::setw(4) << ti + 1 << std::right << std::setw(6) << iterations << std::setw(10)
                << g.num_nodes() << std::setw(10) << g.num_classes() << "  " << std::left << std::setw(11) << stop
                << std::right << std::setw(10) << std::fixed << std::setprecision(2) << runner_ms << std::setw(8)
                << cost.str() << "  " << term.to_string() << "  =>  " << (best ? best->to_string() : "(none)") << "\n";
      std::cout.unsetf(std::ios::floatfield);
    }
    if (stop != "saturated" && !o.json)
      std::cerr << "saturn: note: term " << ti + 1 << " stopped at its " << stop
                << " before saturating (raise --iter-limit / --node-limit / --time-limit / --memory-limit)\n";
    if (cf && !cf->conflicts().empty()) {
      conflict = true;
      for (const auto& c : cf->conflicts()) std::cerr << "saturn: error: term " << ti + 1 << ": " << c << "\n";
    }
  }
  return conflict ? kCheckFailed : kOk;
}

}  // namespace saturn::cli
