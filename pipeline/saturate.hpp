// Running rule phases in order on one e-graph, with the limits, progress
// display and JSON statistics every verb that saturates reports alike.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "egraph/runner.hpp"
#include "rules/rule_file.hpp"

namespace saturn::pipeline {

struct SaturateOptions {
  std::size_t iter_limit = 30;
  std::size_t node_limit = 10000;
  double time_limit_s = 5.0;  // over all phases together
  std::size_t memory_limit_mb = 0;
  std::string scheduler = "backoff";
  bool incremental = true;
  bool progress = false;
  std::string label;  // shown before the progress line ("term 1/3")
};

struct SaturateResult {
  std::size_t iterations = 0;
  std::string stop = "saturated";  // the first phase that did not saturate says why
  double time_ms = 0;
  nlohmann::json phases = nlohmann::json::array();  // one object per phase
  nlohmann::json rules = nlohmann::json::object();  // rule name -> counts
};

// `configure` may add hooks or an applying-observer to each phase's runner.
SaturateResult saturate(egraph::EGraph& g, std::vector<rules::Phase>& phases, const SaturateOptions& o,
                        const std::function<void(egraph::Runner&)>& configure = {});

// Half of physical memory, in MiB (the default --memory-limit).
std::size_t default_memory_limit_mb();

}  // namespace saturn::pipeline
