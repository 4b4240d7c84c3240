#include "tools/train_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>

#include "ir/dtype.hpp"
#include "ir/npy.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "tools/cli_common.hpp"

namespace saturn::cli {

void add_train_command(CLI::App& app, TrainOptions& o) {
  auto* cmd = app.add_subcommand("train", "Train a model's weights on NumPy arrays (the step built by `saturn grad`).");
  add_step_flags(*cmd, o.step, 32, false);
  cmd->add_option("--data", o.data, "Training inputs (.npy), samples on the first axis")->required();
  cmd->add_option("--labels", o.labels,
                  "Training targets (.npy): class indices for cross-entropy and nll, values like the prediction's "
                  "for mse and bce")
      ->required();
  cmd->add_option("--eval-data", o.eval_data, "Held-out inputs for the final evaluation (default: the training data)");
  cmd->add_option("--eval-labels", o.eval_labels, "Held-out targets");
  cmd->add_option("--epochs", o.epochs, "Passes over the training data")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--target", o.target, "cpu | cuda | interp")
      ->check(CLI::IsMember({"cpu", "cuda", "interp"}))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "cpu: threads (0: every free CPU)")->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--out", o.out, "Write the model with its trained weights (.onnx or .sat)");
  cmd->add_option("--seed", o.seed, "Seed of the batches' shuffle")->capture_default_str();
  cmd->add_flag("--no-opt", o.no_opt, "Run the step as built, not as `saturn opt` optimizes it");
  cmd->add_flag("--no-remat", o.no_remat, "Keep every value the backward pass reads (no rematerialization)");
  cmd->add_flag("--json", o.json,
                "Print one JSON object (final_loss, eval_accuracy, step_ms_median, arena_bytes, ...)");
  cmd->add_flag("--quiet", o.quiet, "No progress");
}

namespace {

struct Dataset {
  ir::Tensor x, y;
  std::int64_t samples = 0;
};

// A tensor of `want` type from a NumPy array: the same shape after the
// sample axis, its values converted when the element types differ (said
// in `notes`); integers must hold whole numbers.
Expected<ir::Tensor> as_type(const ir::Tensor& t, ir::DType want, const std::vector<std::int64_t>& sample_dims,
                             const std::string& what, std::vector<std::string>& notes) {
  std::vector<std::int64_t> expected = {t.dims().empty() ? 0 : t.dims()[0]};
  expected.insert(expected.end(), sample_dims.begin(), sample_dims.end());
  if (t.dims().empty() || t.dims() != expected) {
    std::string want_s = "[N";
    for (auto d : sample_dims) want_s += " " + std::to_string(d);
    return Diagnostic{SourceLoc{what},
                      "has the shape " + ir::to_string(ir::shape_of(t.dims())) + "; the model takes " + want_s + "]"};
  }
  if (t.dtype() == want) return t;
  ir::Tensor out(want, t.dims());
  for (std::size_t i = 0; i < t.numel(); ++i) {
    double v = t.at(i);
    if (!ir::is_float(want) && (std::floor(v) != v || !std::isfinite(v)))
      return Diagnostic{SourceLoc{what},
                        "element " + std::to_string(i) + " is " + std::to_string(v) + ", not a class index"};
    out.set(i, v);
  }
  notes.push_back(what + ": " + std::string(ir::dtype_name(t.dtype())) + " converted to " + ir::dtype_name(want));
  return out;
}

Expected<Dataset> read_dataset(const std::string& data, const std::string& labels, const ir::ValueType& input,
                               const ir::ValueType& target, std::vector<std::string>& notes) {
  auto x = ir::read_npy(data);
  if (!x) return x.error();
  auto y = ir::read_npy(labels);
  if (!y) return y.error();
  auto in_dims = ir::static_dims(input.shape), t_dims = ir::static_dims(target.shape);
  auto xs = as_type(*x, input.dtype, std::vector<std::int64_t>(in_dims.begin() + 1, in_dims.end()), data, notes);
  if (!xs) return xs.error();
  auto ys = as_type(*y, target.dtype, std::vector<std::int64_t>(t_dims.begin() + 1, t_dims.end()), labels, notes);
  if (!ys) return ys.error();
  if (xs->dims()[0] != ys->dims()[0])
    return Diagnostic{SourceLoc{labels}, "holds " + std::to_string(ys->dims()[0]) + " samples; " + data + " holds " +
                                             std::to_string(xs->dims()[0])};
  return Dataset{*xs, *ys, xs->dims()[0]};
}

// Rows `ids` of t (samples on the first axis), as one batch.
ir::Tensor gather_rows(const ir::Tensor& t, const std::vector<std::int64_t>& ids, std::size_t first,
                       std::int64_t batch) {
  std::vector<std::int64_t> dims = t.dims();
  dims[0] = batch;
  ir::Tensor out = ir::Tensor::uninitialized(t.dtype(), dims);
  std::size_t row = t.nbytes() / static_cast<std::size_t>(t.dims()[0]);
  for (std::int64_t i = 0; i < batch; ++i) {
    std::size_t k = first + static_cast<std::size_t>(i);
    std::int64_t src = ids[k < ids.size() ? k : k % ids.size()];  // the last batch repeats the first samples
    std::memcpy(out.bytes() + static_cast<std::size_t>(i) * row, t.bytes() + static_cast<std::size_t>(src) * row, row);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Loss and correct count of predictions against targets, for `rows` samples.
struct Score {
  double loss = 0;
  std::int64_t correct = 0, counted = 0;
};
void score(pipeline::LossKind k, const ir::Tensor& pred, const ir::Tensor& target, std::int64_t rows, Score& s) {
  std::size_t per_row = pred.numel() / static_cast<std::size_t>(pred.dims()[0]);
  std::size_t n = per_row * static_cast<std::size_t>(rows);
  if (pipeline::is_classification(k)) {
    std::size_t classes = static_cast<std::size_t>(pred.dims().back());
    for (std::size_t r = 0; r < n / classes; ++r) {
      std::size_t best = 0;
      double mx = -INFINITY, sum = 0;
      for (std::size_t c = 0; c < classes; ++c) {
        double v = pred.at(r * classes + c);
        if (v > mx) mx = v, best = c;
      }
      auto label = static_cast<std::size_t>(target.at_int(r));
      if (k == pipeline::LossKind::CrossEntropy) {
        for (std::size_t c = 0; c < classes; ++c) sum += std::exp(pred.at(r * classes + c) - mx);
        s.loss += -(pred.at(r * classes + label) - mx - std::log(sum));
      } else {
        s.loss += -pred.at(r * classes + label);
      }
      s.correct += best == label;
      ++s.counted;
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    double p = pred.at(i), t = target.at(i);
    s.loss += k == pipeline::LossKind::MeanSquaredError ? (p - t) * (p - t)
                                                        : std::max(p, 0.0) - p * t + std::log1p(std::exp(-std::abs(p)));
    if (k == pipeline::LossKind::BinaryCrossEntropy) s.correct += (p > 0) == (t > 0.5);
    ++s.counted;
  }
}

void progress(int epoch, int epochs, std::size_t done, std::size_t total, double loss, double rate) {
  const int width = 30;
  int filled = total ? static_cast<int>(width * done / total) : width;
  std::cerr << "\r\033[K[epoch " << epoch << "/" << epochs << "] ["
            << std::string(static_cast<std::size_t>(filled), '#')
            << std::string(static_cast<std::size_t>(width - filled), '.') << "] loss " << std::fixed
            << std::setprecision(4) << loss << "  " << std::setprecision(0) << rate << " samples/s" << std::flush;
  std::cerr.unsetf(std::ios::floatfield);
}

}  // namespace

int run_train(const TrainOptions& o) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto built = build_step(o.step);
  if (!built) return bad_input(built.error().to_string());
  pipeline::TrainingStep& step = built->step;
  if (step.data_inputs.size() != 1)
    return bad_input("saturn train takes a model with one input; '" + o.step.model + "' has " +
                     std::to_string(step.data_inputs.size()));
  const ir::GraphValue& input = step.graph.inputs[0];
  const ir::GraphValue& target = step.graph.inputs[1];
  const std::int64_t batch = ir::static_dims(input.type.shape)[0];
  std::vector<std::string> notes;
  auto train = read_dataset(o.data, o.labels, input.type, target.type, notes);
  if (!train) return bad_input(train.error().to_string());
  if ((o.eval_data.empty()) != (o.eval_labels.empty())) return bad_input("give --eval-data and --eval-labels together");
  std::optional<Dataset> eval;
  if (!o.eval_data.empty()) {
    auto e = read_dataset(o.eval_data, o.eval_labels, input.type, target.type, notes);
    if (!e) return bad_input(e.error().to_string());
    eval = std::move(*e);
  }
  if (train->samples < batch)
    return bad_input(o.data + " holds " + std::to_string(train->samples) + " samples, fewer than one batch of " +
                     std::to_string(batch) + " (--batch)");
  const bool show = !o.json && !o.quiet;
  const bool bar = show && stderr_is_terminal();
  for (const std::string& n : notes)
    if (show) std::cerr << "note: " << n << "\n";

  auto prepared = step_program(step.graph, o.target, o.no_opt, o.no_remat);
  if (!prepared) return bad_input(prepared.error().to_string());
  const double opt_ms = prepared->opt_ms;
  const ir::Graph& program = prepared->graph;
  auto compiled = compile_graph(program, o.target, o.threads);
  if (!compiled) return bad_input(compiled.error().to_string());
  if (show)
    std::cerr << "train: " << step.weights.size() << " weights, " << step.graph.nodes.size() << " step nodes ("
              << step.backward_nodes << " backward)" << (o.no_opt || o.target == "interp" ? "" : ", optimized to ")
              << (o.no_opt || o.target == "interp" ? std::string() : std::to_string(program.nodes.size()) + " nodes")
              << " in " << std::lround(opt_ms) << " ms, compiled in " << std::lround(compiled->compile_ms) << " ms"
              << (compiled->memory.empty()
                      ? std::string()
                      : "; arena " + compiled->memory["arena_bytes"].dump() + " bytes (every buffer kept " +
                            compiled->memory["naive_bytes"].dump() + ")")
              << "\n";

  // State in, next state out. Where the compiled step allows it (cpu), each
  // next value is written over its state input (in place: the state is
  // held once); elsewhere the outputs are separate buffers, swapped in.
  std::vector<ir::Tensor> inputs(2 + step.state.size()), outputs;
  for (std::size_t i = 0; i < step.state.size(); ++i) inputs[2 + i] = step.state[i].initial;
  const std::size_t state_out = 2;  // loss, prediction, then the next state
  std::vector<std::pair<std::size_t, std::size_t>> in_place;
  std::size_t state_bytes = 0, double_buffered_bytes = 0;
  for (std::size_t i = 0; i < step.state.size(); ++i) {
    state_bytes += step.state[i].initial.nbytes();
    if (compiled->can_update_in_place && compiled->can_update_in_place(state_out + i, 2 + i))
      in_place.emplace_back(state_out + i, 2 + i);
    else
      double_buffered_bytes += step.state[i].initial.nbytes();
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(train->samples));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(o.seed);
  const std::size_t per_epoch = static_cast<std::size_t>(train->samples / batch);
  std::vector<double> step_ms, epoch_loss;
  const auto start = Clock::now();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double sum = 0;
    const auto epoch_start = Clock::now();
    for (std::size_t b = 0; b < per_epoch; ++b) {
      inputs[0] = gather_rows(train->x, order, b * static_cast<std::size_t>(batch), batch);
      inputs[1] = gather_rows(train->y, order, b * static_cast<std::size_t>(batch), batch);
      const auto t = Clock::now();
      auto ran = in_place.empty() ? compiled->run(inputs, outputs) : compiled->run_in_place(inputs, outputs, in_place);
      if (!ran) return bad_input(ran.error().to_string());
      step_ms.push_back(ms_since(t));
      for (std::size_t i = 0; i < step.state.size(); ++i)
        if (std::none_of(in_place.begin(), in_place.end(), [&](const auto& p) { return p.second == 2 + i; }))
          std::swap(inputs[2 + i], outputs[state_out + i]);
      double loss = outputs[0].at(0);
      if (!std::isfinite(loss)) {
        if (bar) std::cerr << "\n";
        std::cerr << "saturn: train: the loss is " << loss << " at epoch " << epoch << ", batch " << b + 1
                  << " (lower --lr)\n";
        return kCheckFailed;
      }
      sum += loss;
      if (bar)
        progress(epoch, o.epochs, b + 1, per_epoch, sum / double(b + 1),
                 double((b + 1) * batch) / (ms_since(epoch_start) / 1000));
    }
    epoch_loss.push_back(sum / double(per_epoch));
    if (bar)
      std::cerr << "\n";
    else if (show)
      std::cerr << "epoch " << epoch << "/" << o.epochs << ": loss " << epoch_loss.back() << ", "
                << std::lround(double(per_epoch * batch) / (ms_since(epoch_start) / 1000)) << " samples/s\n";
  }
  const double train_s = ms_since(start) / 1000;

  // The final evaluation: the model with its trained state (batch norms on
  // their running statistics), optimized like `saturn run`'s.
  std::vector<ir::Tensor> state(inputs.begin() + 2, inputs.end());
  ir::Graph trained = pipeline::with_trained_state(built->model, step, state);
  auto eval_graph = pipeline::bind_batch(trained, batch);
  if (!eval_graph) return bad_input(eval_graph.error().to_string());
  const auto pred_at = std::find(eval_graph->outputs.begin(), eval_graph->outputs.end(), step.prediction);
  eval_graph->outputs = {pred_at == eval_graph->outputs.end() ? step.prediction : *pred_at};
  if (!o.no_opt && o.target != "interp") {
    auto opt = optimize_for(*eval_graph, o.target);
    if (!opt) return bad_input(opt.error().to_string());
    *eval_graph = std::move(*opt);
  }
  auto evaluator = compile_graph(*eval_graph, o.target, o.threads);
  if (!evaluator) return bad_input(evaluator.error().to_string());
  const Dataset& ev = eval ? *eval : *train;
  std::vector<std::int64_t> all(static_cast<std::size_t>(ev.samples));
  std::iota(all.begin(), all.end(), 0);
  Score sc;
  std::vector<ir::Tensor> eval_out;
  for (std::int64_t first = 0; first < ev.samples; first += batch) {
    std::vector<ir::Tensor> in = {gather_rows(ev.x, all, static_cast<std::size_t>(first), batch)};
    auto ran = evaluator->run(in, eval_out);
    if (!ran) return bad_input(ran.error().to_string());
    ir::Tensor labels = gather_rows(ev.y, all, static_cast<std::size_t>(first), batch);
    score(built->options.loss, eval_out[0], labels, std::min(batch, ev.samples - first), sc);
  }
  const bool classify =
      pipeline::is_classification(built->options.loss) || built->options.loss == pipeline::LossKind::BinaryCrossEntropy;
  nlohmann::json summary = {
      {"model", o.step.model},
      {"target", o.target},
      {"loss", pipeline::loss_name(built->options.loss)},
      {"optimizer", pipeline::optimizer_name(built->options.optimizer)},
      {"epochs", o.epochs},
      {"batch", batch},
      {"steps", step_ms.size()},
      {"final_loss", epoch_loss.empty() ? nullptr : nlohmann::json(epoch_loss.back())},
      {"epoch_losses", epoch_loss},
      {"step_ms_median", median(step_ms)},
      {"samples_per_s", train_s > 0 ? double(step_ms.size() * batch) / train_s : 0},
      {"train_s", train_s},
      {"opt_ms", opt_ms},
      {"compile_ms", compiled->compile_ms},
      {"evaluated_on", eval ? "eval data" : "training data"},
      {"eval_samples", ev.samples},
      {"eval_loss", sc.counted ? sc.loss / double(sc.counted) : 0},
      {"eval_accuracy",
       classify && sc.counted ? nlohmann::json(double(sc.correct) / double(sc.counted)) : nlohmann::json(nullptr)},
      {"remat_values", prepared->remat_values},
      {"remat_bytes", prepared->remat_bytes},
      {"state_bytes", state_bytes},
      {"state_updated_in_place", in_place.size()},
      {"state_slots", step.state.size()},
      {"state_double_buffered_bytes", double_buffered_bytes},
      {"notes", notes}};
  for (const char* k : {"arena_bytes", "naive_bytes", "liveness_bound_bytes"})
    summary[k] = compiled->memory.contains(k) ? compiled->memory[k] : nlohmann::json(nullptr);
  if (!o.out.empty()) {
    auto w = has_suffix(o.out, ".sat") ? ir::write_sat_file(trained, o.out) : ir::export_onnx_file(trained, o.out);
    if (!w) return bad_input(w.error().to_string());
    summary["out"] = o.out;
  }
  if (o.json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cout << std::setprecision(4) << "final loss " << (epoch_loss.empty() ? NAN : epoch_loss.back())
              << " (mean of the last epoch); " << (eval ? "held-out data" : "training data") << ": loss "
              << (sc.counted ? sc.loss / double(sc.counted) : 0.0);
    if (classify && sc.counted) std::cout << ", accuracy " << 100.0 * double(sc.correct) / double(sc.counted) << "%";
    std::cout << " over " << ev.samples << " samples; step " << median(step_ms) << " ms (median of " << step_ms.size()
              << ")\n";
  }
  return kOk;
}

}  // namespace saturn::cli
