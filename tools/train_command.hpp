// `saturn train`: trains a model's weights on NumPy arrays (docs/training.md).
// The training step (`saturn grad`'s graph) is optimized by `saturn opt`'s
// rules and compiled once; each batch runs it and feeds its next state back.
// A final evaluation (accuracy for classification losses) runs the model
// with the trained weights; -o writes them into the model.
#pragma once

#include <string>

#include "tools/step_flags.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct TrainOptions {
  StepFlags step;
  std::string data, labels, eval_data, eval_labels;
  int epochs = 10;
  std::string target = "cpu";
  int threads = 0;
  std::string out;
  unsigned seed = 0;
  bool no_opt = false;
  bool no_remat = false;
  bool json = false;
  bool quiet = false;
};

void add_train_command(CLI::App& app, TrainOptions& opts);
int run_train(const TrainOptions& opts);

}  // namespace saturn::cli
