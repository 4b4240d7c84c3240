// `saturn extract`: extract from an egraph-serialize JSON file and print the
// chosen program's tree cost and DAG cost, to compare extractors on public
// e-graph data sets.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace saturn::cli {

struct ExtractOptions {
  std::string egraph;
  std::string extractor = "dag-greedy";
  double time_limit_s = 10.0;
  bool json = false;
};

void add_extract_command(CLI::App& app, ExtractOptions& opts);
int run_extract(const ExtractOptions& opts);

}  // namespace saturn::cli
