// `saturn eqsat`: equality saturation of plain symbolic terms (egg's
// SymbolLang) with text rulesets, then tree-cost extraction.
#pragma once

#include <string>
#include <vector>

#include "pipeline/saturate.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct EqsatOptions {
  std::vector<std::string> rule_files;
  std::string terms_file;
  SaturateOptions saturation;  // memory_limit_mb 0: half of physical memory
  bool json = false;
  bool quiet = false;
  bool const_fold = false;
  bool no_incremental = false;        // sets saturation.incremental
  std::vector<std::string> op_costs;  // "OP=COST"
  std::string egraph_json;            // write egraph-serialize JSON here
  std::string dot;                    // write Graphviz here
};

void add_eqsat_command(CLI::App& app, EqsatOptions& opts);
int run_eqsat(const EqsatOptions& opts);

}  // namespace saturn::cli
