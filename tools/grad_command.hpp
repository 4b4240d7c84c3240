// `saturn grad`: the training step of a model as a graph (docs/training.md):
// forward, loss, backward from rulesets/grad/, and the optimizer's update,
// written as .sat or .onnx for `saturn opt`, `saturn run` or any ONNX
// runtime; --report prices its memory plan (arena against every buffer kept
// and against the liveness bound).
#pragma once

#include <string>

#include "tools/step_flags.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct GradOptions {
  StepFlags step;
  std::string out;
  std::string report;
  std::string target = "cpu";
  bool no_opt = false;
  bool no_remat = false;
  bool json = false;
};

void add_grad_command(CLI::App& app, GradOptions& opts);
int run_grad(const GradOptions& opts);

}  // namespace saturn::cli
