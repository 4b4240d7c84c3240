// The training step as one graph: forward, loss, backward, optimizer update.
//
// Invariant: the step graph is an ordinary ir::Graph (ops of the registry
// only, static shapes), so `saturn opt` optimizes it and every target runs
// it. Its inputs are the model's data inputs (batch dimension bound), the
// labels, then the state: trained weights, optimizer moments and step
// count, batch-norm running statistics. Its outputs are the loss, the
// prediction, then each state slot's next value: a caller feeds
// `state[i].output` back as `state[i].input` for the next step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "pipeline/decompose_node.hpp"
#include "rules/grad_rules.hpp"

namespace saturn::pipeline {

enum class LossKind { MeanSquaredError, CrossEntropy, BinaryCrossEntropy, NegativeLogLikelihood };
enum class OptimizerKind { None, Sgd, Momentum, Adam, AdamW };

// "mse", "cross-entropy", "bce", "nll" (and the names the CLI accepts).
std::optional<LossKind> loss_from_name(const std::string& name);
std::optional<OptimizerKind> optimizer_from_name(const std::string& name);
std::string loss_name(LossKind k);
std::string optimizer_name(OptimizerKind k);
// Every name the two above read ("none" last: no update).
std::vector<std::string> loss_names();
std::vector<std::string> optimizer_names();
// Cross-entropy and NLL compare class indices: accuracy is meaningful.
bool is_classification(LossKind k);

struct TrainingOptions {
  LossKind loss = LossKind::CrossEntropy;
  OptimizerKind optimizer = OptimizerKind::Sgd;
  double lr = 0.01;
  double momentum = 0.9;                          // momentum's
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam's and adamw's
  double weight_decay = 0;                        // L2 for sgd/momentum/adam; decoupled for adamw
  double bn_momentum = 0.1;                       // running statistics, as torch.nn.BatchNorm's
  std::int64_t batch = 0;           // binds a symbolic leading dimension of the inputs (0: must be static)
  std::vector<std::string> freeze;  // weights that stay constant
  std::string prediction;           // the model output the loss reads ("": the first)
  // Gives composites without a gradient rule their primitive form (null:
  // such an op is an error; pipeline/autodiff.hpp). Not owned.
  const Decomposer* decomposer = nullptr;
};

struct StateSlot {
  enum class Kind { Weight, Momentum, AdamFirst, AdamSecond, Step, RunningMean, RunningVar };
  Kind kind = Kind::Weight;
  std::string input, output;  // step graph input, and the output holding its next value
  ir::Tensor initial;
  std::string weight;  // the model initializer it belongs to
};

struct TrainingStep {
  ir::Graph graph;
  std::vector<std::string> data_inputs;  // the model's inputs (batch bound)
  std::string labels = "labels";
  std::string loss = "loss";
  std::string prediction;
  std::vector<StateSlot> state;
  std::vector<std::string> weights;                // trained, in state order
  std::map<std::string, std::string> gradient_of;  // weight -> value (graph outputs when optimizer is None)
  std::vector<std::string> batch_norms;            // nodes given batch statistics
  std::vector<std::string> decomposed;             // nodes differentiated through their primitive form
  std::size_t backward_nodes = 0;
};

// The graph with its inputs' symbolic dims bound to `batch` (an error
// naming the input when batch is 0 and a dim is symbolic).
Expected<ir::Graph> bind_batch(const ir::Graph& g, std::int64_t batch);

Expected<TrainingStep> build_training_step(const ir::Graph& model, const rules::GradRules& rules,
                                           const TrainingOptions& o);

// The model with its trained weights and running statistics from `state`
// (values in TrainingStep::state order).
ir::Graph with_trained_state(const ir::Graph& model, const TrainingStep& step, const std::vector<ir::Tensor>& state);

}  // namespace saturn::pipeline
