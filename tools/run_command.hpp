// `saturn run`: run a model on inputs, write or check its outputs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lower/program.hpp"
#include "tools/calibrate.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct RunOptions {
  std::string model;
  std::string target = "interp";
  std::vector<std::string> inputs;
  std::vector<std::string> check;
  std::string out_dir;
  double rtol = 1e-3;
  double atol = 1e-7;
  int bench = 0;
  bool json = false;
  int threads = 0;               // cpu target: the most; 0 = every free CPU (runtime::team_size)
  bool fixed_threads = false;    // cpu target: every run on `threads`, whatever the load
  bool profile = false;          // cpu target: time each step of one run
  bool no_fuse = false;          // cpu target: one kernel per elementwise op
  bool no_cache = false;         // compile every kernel again and keep none on disk
  bool no_opt = false;           // cpu and cuda targets: run the graph as written, not `saturn opt`'s program
  CalibrationFlags calibration;  // how the optimization prices (saturn opt's flags)
};

void add_run_command(CLI::App& app, RunOptions& opts);

// What a compiled program is made of (both compiled targets): `saturn run
// --json`'s fields and a Python Program's summary.
void summarize_program(const lower::Program& p, nlohmann::json& summary);
int run_model(const RunOptions& opts);

}  // namespace saturn::cli
