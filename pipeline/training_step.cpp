#include "pipeline/training_step.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "ir/dtype.hpp"
#include "pipeline/autodiff.hpp"

namespace saturn::pipeline {

namespace {

// Each kind's names, the one reports use first.
constexpr std::pair<const char*, LossKind> kLosses[] = {
    {"mse", LossKind::MeanSquaredError},   {"cross-entropy", LossKind::CrossEntropy},
    {"bce", LossKind::BinaryCrossEntropy}, {"nll", LossKind::NegativeLogLikelihood},
    {"ce", LossKind::CrossEntropy},        {"bce-logits", LossKind::BinaryCrossEntropy}};
constexpr std::pair<const char*, OptimizerKind> kOptimizers[] = {{"sgd", OptimizerKind::Sgd},
                                                                 {"momentum", OptimizerKind::Momentum},
                                                                 {"adam", OptimizerKind::Adam},
                                                                 {"adamw", OptimizerKind::AdamW},
                                                                 {"none", OptimizerKind::None}};

template <class Kind, std::size_t N>
std::optional<Kind> kind_named(const std::pair<const char*, Kind> (&table)[N], const std::string& name) {
  for (const auto& [n, k] : table)
    if (name == n) return k;
  return std::nullopt;
}
template <class Kind, std::size_t N>
std::string name_of(const std::pair<const char*, Kind> (&table)[N], Kind kind) {
  for (const auto& [n, k] : table)
    if (k == kind) return n;
  return "?";
}
template <class Kind, std::size_t N>
std::vector<std::string> names(const std::pair<const char*, Kind> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& [n, k] : table) out.push_back(n);
  return out;
}

}  // namespace

std::optional<LossKind> loss_from_name(const std::string& n) { return kind_named(kLosses, n); }
std::optional<OptimizerKind> optimizer_from_name(const std::string& n) { return kind_named(kOptimizers, n); }
std::string loss_name(LossKind k) { return name_of(kLosses, k); }
std::string optimizer_name(OptimizerKind k) { return name_of(kOptimizers, k); }
std::vector<std::string> loss_names() { return names(kLosses); }
std::vector<std::string> optimizer_names() { return names(kOptimizers); }
bool is_classification(LossKind k) { return k == LossKind::CrossEntropy || k == LossKind::NegativeLogLikelihood; }

namespace {

struct StepError {
  std::string message;
};

// Appends named nodes and scalar constants to the step graph.
class StepWriter {
 public:
  explicit StepWriter(ir::Graph& g) : g_(g) {}

  std::string node(const std::string& op, std::vector<std::string> inputs, const std::string& out,
                   ir::Attrs attrs = {}) {
    ir::Node n;
    n.name = out;
    n.op = op;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
    return out;
  }
  std::string scalar(double v, ir::DType t) {
    std::ostringstream name;
    name.precision(17);
    name << "train/const/" << ir::dtype_name(t) << "/" << v;
    g_.initializers.try_emplace(name.str(), ir::Tensor::scalar(t, v));
    return name.str();
  }
  std::string fresh(const std::string& stem) { return "train/" + stem + "/" + std::to_string(counter_++); }

 private:
  ir::Graph& g_;
  int counter_ = 0;
};

ir::Attrs with(std::initializer_list<std::pair<const char*, ir::AttrValue>> l) {
  ir::Attrs a;
  for (const auto& [k, v] : l) a.set(k, v);
  return a;
}

bool all_finite(const ir::Tensor& t) {
  for (std::size_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.at(i))) return false;
  return true;
}

void bind_inputs(ir::Graph& g, std::int64_t batch) {
  for (ir::GraphValue& in : g.inputs)
    for (ir::Dim& d : in.type.shape) {
      if (d.is_static()) continue;
      if (batch <= 0)
        throw StepError{"input '" + in.name + "' has the symbolic shape " + ir::to_string(in.type.shape) +
                        ": give the batch size (--batch B)"};
      d = ir::Dim::of(d.c * batch + d.k);
    }
}

// batch_norm(x, scale, bias, mean, var) with the batch's statistics, as in
// training mode; returns the running statistics' next values.
std::pair<std::string, std::string> batch_statistics(StepWriter& w, ir::Node& n, const ir::ValueType& xt,
                                                     double momentum) {
  auto dims = ir::static_dims(xt.shape);
  std::vector<std::int64_t> axes, cshape(dims.size(), 1);
  std::int64_t count = 1;
  for (std::size_t a = 0; a < dims.size(); ++a)
    if (a != 1) {
      axes.push_back(static_cast<std::int64_t>(a));
      count *= dims[a];
    }
  cshape[1] = dims[1];
  const std::string &x = n.inputs[0], &scale = n.inputs[1], &bias = n.inputs[2], &mean = n.inputs[3],
                    &var = n.inputs[4];
  ir::DType t = xt.dtype;
  std::string p = "train/bn/" + n.outputs[0] + "/";
  auto as_c = with({{"shape", cshape}, {"allowzero", std::int64_t{1}}});
  auto as_vec = with({{"shape", std::vector<std::int64_t>{dims[1]}}, {"allowzero", std::int64_t{1}}});
  // Means over the spatial axes first, then the batch: a row reduction and
  // a small one (GraphBuilder::reduce_kept says why); equal groups keep the
  // mean exact.
  auto mean_over = [&](const std::string& v, const std::string& out) {
    if (dims.size() <= 2) return w.node("reduce_mean", {v}, out, with({{"axes", axes}, {"keepdims", std::int64_t{1}}}));
    std::vector<std::int64_t> spatial(axes.begin() + 1, axes.end());
    std::string inner =
        w.node("reduce_mean", {v}, out + "/spatial", with({{"axes", spatial}, {"keepdims", std::int64_t{1}}}));
    return w.node("reduce_mean", {inner}, out,
                  with({{"axes", std::vector<std::int64_t>{0}}, {"keepdims", std::int64_t{1}}}));
  };
  std::string m = mean_over(x, p + "mean");
  std::string xc = w.node("sub", {x, m}, p + "centered");
  std::string v = mean_over(w.node("mul", {xc, xc}, p + "sq"), p + "var");
  std::string rstd = w.node(
      "recip", {w.node("sqrt", {w.node("add", {v, w.scalar(n.attrs.f("epsilon", 1e-5), t)}, p + "ve")}, p + "std")},
      p + "rstd");
  std::string y = w.node("mul", {w.node("mul", {xc, rstd}, p + "xhat"), w.node("reshape", {scale}, p + "scale", as_c)},
                         p + "scaled");
  // The node's own result name stays, so the rest of the graph is unchanged.
  w.node("add", {y, w.node("reshape", {bias}, p + "bias", as_c)}, n.outputs[0]);
  // Running statistics: (1 - momentum) old + momentum batch (the variance unbiased, as torch's).
  std::string keep_old = w.scalar(1 - momentum, t), take_new = w.scalar(momentum, t);
  std::string bm = w.node("reshape", {m}, p + "mean_c", as_vec);
  std::string bv = w.node(
      "mul",
      {w.node("reshape", {v}, p + "var_c", as_vec), w.scalar(count > 1 ? double(count) / double(count - 1) : 1.0, t)},
      p + "var_unbiased");
  std::string next_mean =
      w.node("add", {w.node("mul", {mean, keep_old}, p + "m_old"), w.node("mul", {bm, take_new}, p + "m_new")},
             mean + ".next");
  std::string next_var = w.node(
      "add", {w.node("mul", {var, keep_old}, p + "v_old"), w.node("mul", {bv, take_new}, p + "v_new")}, var + ".next");
  return {next_mean, next_var};
}

std::string append_loss(StepWriter& w, ir::Graph& g, const TrainingOptions& o, const std::string& pred,
                        const ir::ValueType& pt, const std::string& labels) {
  ir::DType t = pt.dtype;
  auto dims = ir::static_dims(pt.shape);
  auto mean_all = with({{"keepdims", std::int64_t{0}}});
  switch (o.loss) {
    case LossKind::MeanSquaredError: {
      std::string d = w.node("sub", {pred, labels}, "train/loss/diff");
      return w.node("reduce_mean", {w.node("mul", {d, d}, "train/loss/sq")}, "loss", mean_all);
    }
    case LossKind::BinaryCrossEntropy: {
      // mean(max(p, 0) - p t + log(1 + exp(-|p|))): stable for any logit.
      std::string pos = w.node("relu", {pred}, "train/loss/relu");
      std::string pt_ = w.node("mul", {pred, labels}, "train/loss/pt");
      std::string sp =
          w.node("softplus", {w.node("neg", {w.node("abs", {pred}, "train/loss/abs")}, "train/loss/negabs")},
                 "train/loss/softplus");
      std::string each = w.node("add", {w.node("sub", {pos, pt_}, "train/loss/lin"), sp}, "train/loss/each");
      return w.node("reduce_mean", {each}, "loss", mean_all);
    }
    case LossKind::CrossEntropy:
    case LossKind::NegativeLogLikelihood: {
      // -mean over the samples of the log-probability of the labelled class
      // (classes on the last axis), picked by a one-hot mask.
      std::int64_t classes = dims.back();
      std::vector<std::int64_t> ids(static_cast<std::size_t>(classes));
      for (std::int64_t i = 0; i < classes; ++i) ids[static_cast<std::size_t>(i)] = i;
      g.initializers.emplace("train/classes", ir::Tensor::of_ints(ir::DType::I64, {classes}, ids));
      std::string logp = o.loss == LossKind::CrossEntropy
                             ? w.node("log_softmax", {pred}, "train/loss/logp", with({{"axis", std::int64_t{-1}}}))
                             : pred;
      std::string lab =
          w.node("unsqueeze", {labels}, "train/loss/labels", with({{"axes", std::vector<std::int64_t>{-1}}}));
      std::string hot = w.node("cast", {w.node("equal", {lab, "train/classes"}, "train/loss/hit")}, "train/loss/onehot",
                               with({{"to", std::string(ir::dtype_name(t))}}));
      std::string picked = w.node("reduce_sum", {w.node("mul", {hot, logp}, "train/loss/masked")}, "train/loss/picked",
                                  with({{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", std::int64_t{0}}}));
      return w.node("neg", {w.node("reduce_mean", {picked}, "train/loss/mean", mean_all)}, "loss");
    }
  }
  return "";
}

ir::ValueType labels_type(const TrainingOptions& o, const ir::ValueType& pt) {
  if (!is_classification(o.loss)) return pt;
  ir::Shape s = pt.shape;
  s.pop_back();
  return ir::ValueType{ir::DType::I64, s};
}

// The optimizer's update of one weight; adds its state slots.
void append_update(StepWriter& w, TrainingStep& step, const TrainingOptions& o, const std::string& weight,
                   const ir::Tensor& initial, const std::string& grad, const std::string& count) {
  ir::DType t = initial.dtype();
  ir::ValueType type{t, ir::shape_of(initial.dims())};
  auto zeros = [&] {
    std::vector<double> z(initial.numel(), 0.0);
    return ir::Tensor::of_doubles(t, initial.dims(), z);
  };
  auto add_state = [&](StateSlot::Kind k, const std::string& in, const std::string& out, ir::Tensor init) {
    step.graph.inputs.push_back({in, type});
    step.state.push_back(StateSlot{k, in, out, std::move(init), weight});
  };
  std::string p = "train/opt/" + weight + "/";
  std::string g = grad;
  bool decoupled = o.optimizer == OptimizerKind::AdamW;
  if (o.weight_decay != 0 && !decoupled)
    g = w.node("add", {g, w.node("mul", {weight, w.scalar(o.weight_decay, t)}, p + "decay")}, p + "g");
  std::string lr = w.scalar(o.lr, t);
  std::string next = weight + ".next";
  switch (o.optimizer) {
    case OptimizerKind::None:
      return;
    case OptimizerKind::Sgd:
      w.node("sub", {weight, w.node("mul", {g, lr}, p + "step")}, next);
      break;
    case OptimizerKind::Momentum: {
      std::string v = weight + ".momentum";
      std::string vn = w.node("add", {w.node("mul", {v, w.scalar(o.momentum, t)}, p + "v_old"), g}, v + ".next");
      w.node("sub", {weight, w.node("mul", {vn, lr}, p + "step")}, next);
      add_state(StateSlot::Kind::Momentum, v, vn, zeros());
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      std::string m = weight + ".adam_m", v = weight + ".adam_v";
      std::string mn = w.node("add",
                              {w.node("mul", {m, w.scalar(o.beta1, t)}, p + "m_old"),
                               w.node("mul", {g, w.scalar(1 - o.beta1, t)}, p + "m_new")},
                              m + ".next");
      std::string vn = w.node("add",
                              {w.node("mul", {v, w.scalar(o.beta2, t)}, p + "v_old"),
                               w.node("mul", {w.node("mul", {g, g}, p + "g2"), w.scalar(1 - o.beta2, t)}, p + "v_new")},
                              v + ".next");
      // Bias corrections 1 - beta^t, from the shared step count.
      std::string c1 =
          w.node("sub", {w.scalar(1, t), w.node("pow", {w.scalar(o.beta1, t), count}, p + "b1t")}, p + "c1");
      std::string c2 =
          w.node("sub", {w.scalar(1, t), w.node("pow", {w.scalar(o.beta2, t), count}, p + "b2t")}, p + "c2");
      std::string denom = w.node(
          "add", {w.node("sqrt", {w.node("div", {vn, c2}, p + "vhat")}, p + "rms"), w.scalar(o.eps, t)}, p + "denom");
      std::string upd =
          w.node("mul", {w.node("div", {w.node("div", {mn, c1}, p + "mhat"), denom}, p + "ratio"), lr}, p + "step");
      std::string base = weight;
      if (decoupled && o.weight_decay != 0)
        base = w.node("mul", {weight, w.scalar(1 - o.lr * o.weight_decay, t)}, p + "decayed");
      w.node("sub", {base, upd}, next);
      add_state(StateSlot::Kind::AdamFirst, m, mn, zeros());
      add_state(StateSlot::Kind::AdamSecond, v, vn, zeros());
      break;
    }
  }
}

}  // namespace

Expected<ir::Graph> bind_batch(const ir::Graph& g, std::int64_t batch) {
  ir::Graph b = g;
  try {
    bind_inputs(b, batch);
  } catch (const StepError& e) {
    return Diagnostic{SourceLoc{g.source}, e.message};
  }
  auto typed = ir::infer_types(b);
  if (!typed) return typed.error();
  return b;
}

Expected<TrainingStep> build_training_step(const ir::Graph& model, const rules::GradRules& rules,
                                           const TrainingOptions& o) {
  TrainingStep step;
  ir::Graph& g = step.graph;
  g = model;
  g.name = model.name + "_train_step";
  try {
    bind_inputs(g, o.batch);
    auto typed = ir::infer_types(g);
    if (!typed) return typed.error();
    if (g.outputs.empty()) throw StepError{"the model has no output"};
    step.prediction = o.prediction.empty() ? g.outputs[0] : o.prediction;
    if (!typed->count(step.prediction)) throw StepError{"no value '" + step.prediction + "' to compute the loss from"};
    for (const std::string& name : {std::string("loss"), std::string("labels")})
      if (typed->count(name)) throw StepError{"the model already has a value named '" + name + "'"};
    ir::ValueType pt = (*typed)[step.prediction];
    if (!ir::is_float(pt.dtype)) throw StepError{"the prediction '" + step.prediction + "' is not floating-point"};
    if (is_classification(o.loss) && pt.shape.size() < 2)
      throw StepError{loss_name(o.loss) + " takes a prediction [batch ... classes]; '" + step.prediction + "' is " +
                      ir::to_string(pt.shape)};
    for (const ir::GraphValue& in : g.inputs) step.data_inputs.push_back(in.name);

    // Which initializers are trained: floating-point weights of rank >= 1
    // with finite values (masks hold -inf), not batch-norm statistics, not
    // frozen.
    std::set<std::string> stats;
    for (const ir::Node& n : g.nodes)
      if (n.op == "batch_norm" && n.inputs.size() == 5) stats.insert({n.inputs[3], n.inputs[4]});
    for (const std::string& f : o.freeze)
      if (!g.initializers.count(f)) throw StepError{"--freeze: the model has no weight '" + f + "'"};
    std::vector<std::string> weights;
    for (const auto& [name, t] : g.initializers)
      if (ir::is_float(t.dtype()) && t.rank() >= 1 && !stats.count(name) && all_finite(t) &&
          std::find(o.freeze.begin(), o.freeze.end(), name) == o.freeze.end())
        weights.push_back(name);
    if (weights.empty()) throw StepError{"the model has no weight to train"};

    StepWriter w(g);
    // Batch norms use the batch's statistics; their running statistics
    // become state.
    std::vector<StateSlot> running;
    std::vector<ir::Node> nodes = std::move(g.nodes);
    g.nodes.clear();
    for (ir::Node& n : nodes) {
      if (n.op != "batch_norm" || n.inputs.size() != 5 || !g.initializers.count(n.inputs[3]) ||
          !g.initializers.count(n.inputs[4])) {
        g.nodes.push_back(std::move(n));
        continue;
      }
      auto [next_mean, next_var] = batch_statistics(w, n, (*typed)[n.inputs[0]], o.bn_momentum);
      step.batch_norms.push_back(n.name.empty() ? n.outputs[0] : n.name);
      running.push_back(
          StateSlot{StateSlot::Kind::RunningMean, n.inputs[3], next_mean, g.initializers.at(n.inputs[3]), n.inputs[3]});
      running.push_back(
          StateSlot{StateSlot::Kind::RunningVar, n.inputs[4], next_var, g.initializers.at(n.inputs[4]), n.inputs[4]});
    }

    g.inputs.push_back({"labels", labels_type(o, pt)});
    append_loss(w, g, o, step.prediction, pt, "labels");

    // Weights become inputs: the step reads them and writes their next values.
    for (const std::string& name : weights) {
      const ir::Tensor& t = g.initializers.at(name);
      g.inputs.push_back({name, ir::ValueType{t.dtype(), ir::shape_of(t.dims())}});
    }
    std::map<std::string, ir::Tensor> initial;
    for (const std::string& name : weights) {
      initial.emplace(name, g.initializers.at(name));
      g.initializers.erase(name);
    }
    for (const StateSlot& s : running) {
      const ir::Tensor& t = g.initializers.at(s.input);
      g.inputs.push_back({s.input, ir::ValueType{t.dtype(), ir::shape_of(t.dims())}});
      g.initializers.erase(s.input);
    }

    std::size_t before = g.nodes.size();
    GradientOptions go;
    go.decomposer = o.decomposer;
    auto grads = append_gradients(g, rules, "loss", weights, go);
    if (!grads) return grads.error();
    step.decomposed = grads->decomposed;
    step.backward_nodes = g.nodes.size() - before;
    step.gradient_of = grads->of;

    std::string count;
    if (o.optimizer == OptimizerKind::Adam || o.optimizer == OptimizerKind::AdamW) {
      // The step count t (a scalar of the weights' type), advanced first.
      ir::DType t = initial.at(weights[0]).dtype();
      g.inputs.push_back({"train.step", ir::ValueType{t, {}}});
      count = w.node("add", {"train.step", w.scalar(1, t)}, "train.step.next");
    }
    for (const std::string& name : weights) {
      const ir::Tensor& t = initial.at(name);
      if (o.optimizer != OptimizerKind::None) {
        step.state.push_back(StateSlot{StateSlot::Kind::Weight, name, name + ".next", t, name});
        step.weights.push_back(name);
      }
      append_update(w, step, o, name, t, grads->of.at(name), count);
    }
    if (!count.empty())
      step.state.push_back(StateSlot{StateSlot::Kind::Step, "train.step", count,
                                     ir::Tensor::scalar(initial.at(weights[0]).dtype(), 0), ""});
    for (StateSlot& s : running) step.state.push_back(std::move(s));

    g.outputs = {"loss", step.prediction};
    if (o.optimizer == OptimizerKind::None) {
      for (const std::string& name : weights) {
        step.weights.push_back(name);
        g.outputs.push_back(grads->of.at(name));
      }
      // Without an update the weights stay inputs with no next value.
      std::vector<StateSlot> read_only;
      for (const std::string& name : weights)
        read_only.push_back(StateSlot{StateSlot::Kind::Weight, name, name, initial.at(name), name});
      step.state.insert(step.state.begin(), read_only.begin(), read_only.end());
    } else {
      for (const StateSlot& s : step.state) g.outputs.push_back(s.output);
    }
    // State slots: inputs in the order of `state` after the data and labels.
    std::vector<ir::GraphValue> ordered;
    for (const ir::GraphValue& v : g.inputs)
      if (std::find(step.data_inputs.begin(), step.data_inputs.end(), v.name) != step.data_inputs.end() ||
          v.name == "labels")
        ordered.push_back(v);
    for (const StateSlot& s : step.state)
      for (const ir::GraphValue& v : g.inputs)
        if (v.name == s.input &&
            std::none_of(ordered.begin(), ordered.end(), [&](const auto& x) { return x.name == v.name; }))
          ordered.push_back(v);
    g.inputs = std::move(ordered);
    auto checked = ir::infer_types(g);
    if (!checked) return checked.error();
  } catch (const StepError& e) {
    return Diagnostic{SourceLoc{model.source}, e.message};
  }
  return step;
}

ir::Graph with_trained_state(const ir::Graph& model, const TrainingStep& step, const std::vector<ir::Tensor>& state) {
  ir::Graph g = model;
  for (std::size_t i = 0; i < step.state.size() && i < state.size(); ++i) {
    const StateSlot& s = step.state[i];
    if (s.kind == StateSlot::Kind::Weight || s.kind == StateSlot::Kind::RunningMean ||
        s.kind == StateSlot::Kind::RunningVar)
      g.initializers[s.weight] = state[i];
  }
  return g;
}

}  // namespace saturn::pipeline
