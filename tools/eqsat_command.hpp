// `saturn eqsat`: equality saturation of plain symbolic terms (egg's
// SymbolLang) with text rulesets, then tree-cost extraction.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace saturn::cli {

struct EqsatOptions {
  std::vector<std::string> rule_files;
  std::string terms_file;
  std::size_t iter_limit = 30;
  std::size_t node_limit = 10000;
  double time_limit_s = 5.0;
  std::size_t memory_limit_mb = 0;  // 0: half of physical memory
  std::string scheduler = "backoff";
  bool json = false;
  bool quiet = false;
  bool const_fold = false;
  bool no_incremental = false;
  std::vector<std::string> op_costs;  // "OP=COST"
  std::string egraph_json;            // write egraph-serialize JSON here
  std::string dot;                    // write Graphviz here
};

void add_eqsat_command(CLI::App& app, EqsatOptions& opts);
int run_eqsat(const EqsatOptions& opts);

}  // namespace saturn::cli
