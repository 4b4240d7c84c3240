// `saturn opt`: import a model, saturate it with the shipped rulesets (and
// the user's), extract the cheapest program for a target, write it and a
// report of what changed and why.
#pragma once

#include <string>
#include <vector>

#include "pipeline/optimize.hpp"
#include "tools/calibrate.hpp"
#include "tools/measure.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct OptOptions {
  std::string model;
  OptimizeOptions pipeline;        // target, extractor, limits; rule_files are filled from the two below
  std::vector<std::string> rules;  // files or directories, after the shipped ones
  bool no_default_rules = false;
  std::string out;
  bool inline_weights = false;  // a .sat output keeps large weights in its text, not in OUT.data
  std::string report;
  std::string dot;   // the saturated e-graph, the extracted program marked (.dot, .svg, ...)
  std::string html;  // the page of what changed (pipeline/html_report.hpp)
  bool json = false;
  bool quiet = false;
  bool measure = false;  // time the model as written and the optimized program, keep the faster
  MeasureOptions measuring;
  CalibrationFlags calibration;
};

void add_opt_command(CLI::App& app, OptOptions& opts);
int run_opt(const OptOptions& opts);

}  // namespace saturn::cli
