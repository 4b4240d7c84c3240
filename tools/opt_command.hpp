// `saturn opt`: import a model, saturate it with the shipped rulesets (and
// the user's), extract the cheapest program for a target, write it and a
// report of what changed and why.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace saturn::cli {

struct OptOptions {
  std::string model;
  std::string target = "cpu";
  std::vector<std::string> rules;  // files or directories, after the shipped ones
  bool no_default_rules = false;
  std::string out;
  std::string report;
  std::string extractor = "dag-greedy";
  std::size_t iter_limit = 30;
  std::size_t node_limit = 200000;
  double time_limit_s = 10.0;
  double extract_time_limit_s = 10.0;
  std::size_t memory_limit_mb = 0;
  std::string scheduler = "backoff";
  bool json = false;
  bool quiet = false;
};

void add_opt_command(CLI::App& app, OptOptions& opts);
int run_opt(const OptOptions& opts);

}  // namespace saturn::cli
