// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss imported as their
// function bodies (opsets 12-13 on): the class each target names is picked
// from the input with gather_elements along axis 1, weighted by the
// class's weight, and reduced (none, sum, or mean: the sum over the
// weights picked). SoftmaxCrossEntropyLoss is log_softmax over axis 1, then
// the same; its second result is that log_softmax.
//
// Invariant: a target equal to ignore_index picks class 0 (any index in
// range would do) and contributes 0 to the loss and to the mean's weights,
// so an ignore_index outside [0, C) never reaches gather_elements, which
// refuses an index out of range.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx_importer.hpp"

namespace saturn::ir::onnx_detail {

namespace {

// The loss of `input` [N, C, d...] (log-probabilities) at `target` [N,
// d...], as the NegativeLogLikelihoodLoss body computes it, into `out`.
void nll_loss(Importer& im, const std::string& input, const std::string& target, const std::string& weight,
              const std::string& out) {
  const std::string reduction = im.as("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    im.unsupported("reduction '" + reduction + "' is not none, sum or mean");
  const ValueType& xt = im.type_of(input);
  const ValueType& tt = im.type_of(target);
  const DType dt = xt.dtype;
  if (!is_float(dt)) im.unsupported("the scores must be of a floating type, they are " + std::string(dtype_name(dt)));
  if (tt.dtype != DType::I32 && tt.dtype != DType::I64)
    im.unsupported("the targets must be int32 or int64, they are " + std::string(dtype_name(tt.dtype)));
  if (xt.shape.size() < 2 || tt.shape.size() + 1 != xt.shape.size())
    im.unsupported("scores " + to_string(xt.shape) + " and targets " + to_string(tt.shape) +
                   " are not [N C d...] and [N d...]");
  if (!weight.empty() && (im.type_of(weight).dtype != dt || im.type_of(weight).shape.size() != 1))
    im.unsupported("the weights must be one value of the scores' type per class");
  const std::string base = out;
  auto op = [&](const char* name, std::vector<std::string> ins, Attrs a = {}) {
    return im.emit_fresh(base, name, std::move(ins), std::move(a));
  };
  auto scalar = [&](const char* what, DType t, double v) {
    return im.add_fresh_const(base, what, Tensor::scalar(t, v));
  };
  Attrs to_i64;
  to_i64.set("to", std::string("i64"));
  std::string t = tt.dtype == DType::I64 ? target : op("cast", {target}, to_i64);
  std::string ignored;
  if (im.has_attr("ignore_index")) {
    ignored = op("equal", {t, scalar("ignore_index", DType::I64, static_cast<double>(im.ai("ignore_index", 0)))});
    t = op("where", {ignored, scalar("class0", DType::I64, 0), t});
  }
  Attrs axis1, axes1;
  axis1.set("axis", std::int64_t{1});
  axes1.set("axes", std::vector<std::int64_t>{1});
  const std::string picked = op("squeeze", {op("gather_elements", {input, op("unsqueeze", {t}, axes1)}, axis1)}, axes1);
  // The weight of each target's class (1 without weights), 0 where ignored.
  std::string w;
  if (!weight.empty()) {
    Attrs axis0;
    axis0.set("axis", std::int64_t{0});
    w = op("gather", {weight, t}, axis0);
  }
  if (!ignored.empty()) w = op("where", {ignored, scalar("zero", dt, 0.0), w.empty() ? scalar("one", dt, 1.0) : w});
  std::string loss = op("neg", {picked});
  if (!w.empty()) loss = op("mul", {loss, w});
  if (reduction == "none") {
    im.emit("identity", {loss}, {out});
    return;
  }
  std::vector<std::int64_t> all;
  for (std::size_t k = 0; k < tt.shape.size(); ++k) all.push_back(static_cast<std::int64_t>(k));
  Attrs sum;
  sum.set("axes", all);
  sum.set("keepdims", std::int64_t{0});
  if (reduction == "sum") {
    im.emit("reduce_sum", {loss}, {out}, sum);
  } else if (w.empty()) {
    im.emit("reduce_mean", {loss}, {out}, sum);
  } else {
    // The sum of the weights picked: with ignore_index but no weights, w
    // is where(ignored, 0, 1), whose shape is the targets'.
    im.emit("div", {op("reduce_sum", {loss}, sum), op("reduce_sum", {w}, sum)}, {out});
  }
}

}  // namespace

void import_losses(ImportTable& t) {
  t["NegativeLogLikelihoodLoss"] = [](Importer& im) { nll_loss(im, im.in(0), im.in(1), im.in(2), im.out(0)); };
  t["SoftmaxCrossEntropyLoss"] = [](Importer& im) {
    Attrs axis1;
    axis1.set("axis", std::int64_t{1});
    std::string log_prob = im.out(1);  // (the optional second result)
    if (log_prob.empty())
      log_prob = im.emit_fresh(im.out(0), "log_softmax", {im.in(0)}, axis1);
    else
      im.emit("log_softmax", {im.in(0)}, {log_prob}, axis1);
    nll_loss(im, log_prob, im.in(1), im.in(2), im.out(0));
  };
}

}  // namespace saturn::ir::onnx_detail
