// Gradients as data (rulesets/grad/, pipeline/autodiff): every gradient is
// checked against central finite differences in float64, and every op of the
// registry has a checked gradient or says why it has none.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>

#include "helpers.hpp"
#include "ir/dtype.hpp"
#include "pipeline/autodiff.hpp"
#include "runtime/interp.hpp"

using namespace saturn;

namespace {

const pipeline::Decomposer& decomposer() {
  static pipeline::Decomposer d = [] {
    auto loaded = pipeline::Decomposer::load(test::source_dir() + "/rulesets");
    if (!loaded) FAIL(loaded.error().to_string());
    return *loaded;
  }();
  return d;
}

const rules::GradRules& shipped() {
  static rules::GradRules r = [] {
    auto loaded = rules::load_grad_rules({test::source_dir() + "/rulesets/grad"});
    if (!loaded) FAIL(loaded.error().to_string());
    return *loaded;
  }();
  return r;
}

// An operand of a sample: a float64 tensor drawn in [lo, hi], integer
// indices in [0, hi), a boolean mask, or an omitted optional operand.
struct Operand {
  std::vector<std::int64_t> dims;
  enum Kind { Real, Index, Mask, Absent } kind = Real;
  double lo = -1.5, hi = 1.5;
  bool differentiate = true;
};
Operand real(std::vector<std::int64_t> d, double lo = -1.5, double hi = 1.5) {
  return {std::move(d), Operand::Real, lo, hi, true};
}
Operand positive(std::vector<std::int64_t> d) { return real(std::move(d), 0.5, 2.0); }
// Indices in [-n, n): negative ones count from the end.
Operand index(std::vector<std::int64_t> d, std::int64_t n) {
  return {std::move(d), Operand::Index, double(-n), double(n), false};
}
Operand mask(std::vector<std::int64_t> d) { return {std::move(d), Operand::Mask, 0, 1, false}; }
Operand absent() { return {{}, Operand::Absent, 0, 0, false}; }

struct Sample {
  std::string op;
  std::vector<Operand> operands;
  ir::Attrs attrs = {};
  int results = 1;
};

ir::Attrs attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> l) {
  ir::Attrs a;
  for (const auto& [k, v] : l) a.set(k, v);
  return a;
}
using Ints = std::vector<std::int64_t>;

// One sample per differentiable op (and more where attributes change the
// formula). Operands stay away from kinks (relu at 0, abs at 0).
std::vector<Sample> samples() {
  std::vector<Sample> s;
  for (const char* op : {"add", "sub", "mul", "max", "min"}) s.push_back({op, {real({2, 3}), real({3})}});
  s.push_back({"div", {real({2, 3}), positive({2, 1})}});
  s.push_back({"pow", {positive({2, 3}), real({3})}});
  s.push_back({"mod", {positive({2, 3}), positive({3})}, attrs({{"fmod", std::int64_t{1}}})});
  s.push_back({"prelu", {real({2, 3}), real({3})}});
  s.push_back({"where", {mask({2, 3}), real({2, 3}), real({3})}});
  for (const char* op : {"neg",  "identity",   "materialize", "exp",          "exp2", "sin", "cos",
                         "tanh", "sigmoid",    "softplus",    "erf",          "relu", "abs", "elu",
                         "selu", "leaky_relu", "hard_swish",  "hard_sigmoid", "gelu", "clip"})
    s.push_back({op, {real({2, 5})}});
  s.push_back({"gelu", {real({2, 5})}, attrs({{"approximate", std::string("tanh")}})});
  for (const char* op : {"softsign", "mish", "tan", "sinh", "cosh", "asinh"}) s.push_back({op, {real({2, 5})}});
  s.push_back({"acosh", {real({2, 5}, 1.2, 3.0)}});
  s.push_back({"atanh", {real({2, 5}, -0.8, 0.8)}});
  s.push_back({"celu", {real({2, 5})}, attrs({{"alpha", 0.7}})});
  s.push_back({"thresholded_relu", {real({2, 5})}, attrs({{"alpha", 0.2}})});
  s.push_back({"shrink", {real({2, 5})}, attrs({{"bias", 0.1}, {"lambd", 0.3}})});
  s.push_back({"clip", {real({2, 5})}, attrs({{"min", -0.5}, {"max", 0.7}})});
  for (const char* op : {"log", "log2", "sqrt", "recip"}) s.push_back({op, {positive({2, 4})}});
  s.push_back({"cast", {real({2, 3})}, attrs({{"to", std::string("f64")}})});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_l2", "reduce_sum_square",
                         "reduce_log_sum_exp"}) {
    s.push_back({op, {real({2, 3, 4})}, attrs({{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}})});
    s.push_back({op, {real({2, 3, 4})}, attrs({{"axes", Ints{0, 2}}, {"keepdims", std::int64_t{1}}})});
  }
  for (const char* op : {"reduce_prod", "reduce_log_sum", "reduce_l1"})
    s.push_back({op, {positive({2, 3, 4})}, attrs({{"axes", Ints{-1}}, {"keepdims", std::int64_t{0}}})});
  s.push_back({"softmax", {real({2, 5})}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"log_softmax", {real({3, 4})}, attrs({{"axis", std::int64_t{-1}}})});
  s.push_back(
      {"layer_norm", {real({2, 3, 4}), real({4}), real({4})}, attrs({{"axis", std::int64_t{-1}}, {"epsilon", 1e-5}})});
  s.push_back(
      {"layer_norm", {real({2, 3, 4}), real({3, 4}), absent()}, attrs({{"axis", std::int64_t{1}}, {"epsilon", 1e-5}})});
  s.push_back({"instance_norm", {real({2, 3, 2, 2}), real({3}), real({3})}, attrs({{"epsilon", 1e-5}})});
  s.push_back(
      {"batch_norm", {real({2, 3, 2, 2}), real({3}), real({3}), real({3}), positive({3})}, attrs({{"epsilon", 1e-5}})});
  s.push_back({"global_avg_pool", {real({2, 3, 2, 3})}});
  s.push_back({"global_max_pool", {real({2, 3, 2, 3})}});
  s.push_back({"reshape", {real({2, 6})}, attrs({{"shape", Ints{3, 4}}})});
  s.push_back({"flatten", {real({2, 3, 2})}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"squeeze", {real({2, 1, 3})}, attrs({{"axes", Ints{1}}})});
  s.push_back({"unsqueeze", {real({2, 3})}, attrs({{"axes", Ints{0}}})});
  s.push_back({"transpose", {real({2, 3, 4})}, attrs({{"perm", Ints{1, 2, 0}}})});
  s.push_back({"transpose", {real({2, 3})}});
  s.push_back({"expand", {real({3, 1})}, attrs({{"shape", Ints{2, 3, 4}}})});
  s.push_back({"tile", {real({2, 3})}, attrs({{"repeats", Ints{2, 3}}})});
  s.push_back({"depth_to_space", {real({1, 8, 2, 3})}, attrs({{"blocksize", std::int64_t{2}}})});
  s.push_back(
      {"depth_to_space", {real({2, 8, 2, 1})}, attrs({{"blocksize", std::int64_t{2}}, {"mode", std::string("CRD")}})});
  s.push_back({"space_to_depth", {real({1, 2, 4, 6})}, attrs({{"blocksize", std::int64_t{2}}})});
  s.push_back({"cumsum", {real({2, 5})}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"cumsum", {real({3, 2})}, attrs({{"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}})});
  s.push_back({"cumprod", {real({2, 4})}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"cumprod", {real({3, 2})}, attrs({{"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}})});
  s.push_back(
      {"slice", {real({4, 5})}, attrs({{"starts", Ints{1, -3}}, {"ends", Ints{3, 100}}, {"axes", Ints{0, 1}}})});
  s.push_back(
      {"slice",
       {real({5, 7})},
       attrs({{"starts", Ints{-1, 1}}, {"ends", Ints{-100, 7}}, {"axes", Ints{0, 1}}, {"steps", Ints{-2, 3}}})});
  s.push_back({"pad", {real({2, 3})}, attrs({{"pads", Ints{1, 0, 0, 2}}})});
  s.push_back({"concat", {real({2, 3}), real({2, 1}), real({2, 2})}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"split", {real({2, 6})}, attrs({{"axis", std::int64_t{1}}, {"split", Ints{1, 2, 3}}}), 3});
  s.push_back({"trilu", {real({3, 4})}, attrs({{"upper", std::int64_t{0}}, {"k", std::int64_t{1}}})});
  s.push_back({"gather", {real({5, 3}), index({2, 4}, 5)}, attrs({{"axis", std::int64_t{0}}})});
  s.push_back({"matmul", {real({2, 3, 4}), real({4, 5})}});
  s.push_back({"matmul", {real({3, 4}), real({2, 4, 2})}});
  s.push_back({"gemm", {real({3, 4}), real({4, 2}), real({2})}, attrs({{"alpha", 0.5}, {"beta", 2.0}})});
  s.push_back({"gemm",
               {real({4, 3}), real({2, 4}), real({3, 2})},
               attrs({{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}})});
  s.push_back({"conv",
               {real({2, 3, 5, 5}), real({4, 3, 3, 3}), real({4})},
               attrs({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}})});
  s.push_back(
      {"conv",
       {real({1, 4, 6, 5}), real({4, 1, 3, 2}), absent()},
       attrs({{"group", std::int64_t{4}}, {"dilations", Ints{2, 1}}, {"auto_pad", std::string("SAME_UPPER")}})});
  s.push_back({"max_pool", {real({2, 2, 4, 5})}, attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})});
  s.push_back({"avg_pool", {real({2, 2, 4, 4})}, attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})});
  // Overlapping windows, padding, ceil_mode.
  s.push_back({"max_pool",
               {real({1, 2, 5, 6})},
               attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})});
  s.push_back({"max_pool",
               {real({1, 1, 5, 5})},
               attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}})});
  s.push_back({"avg_pool",
               {real({1, 2, 5, 5})},
               attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})});
  s.push_back({"avg_pool",
               {real({1, 2, 5, 5})},
               attrs({{"kernel_shape", Ints{3, 2}},
                      {"strides", Ints{1, 2}},
                      {"pads", Ints{1, 0, 1, 1}},
                      {"count_include_pad", std::int64_t{1}}})});
  // Through their decompositions (no gradient rule of their own).
  s.push_back({"lrn",
               {positive({1, 5, 2, 2})},
               attrs({{"size", std::int64_t{3}}, {"alpha", 0.5}, {"beta", 0.75}, {"bias", 1.0}})});
  s.push_back({"einsum", {real({2, 3}), real({3, 4})}, attrs({{"equation", std::string("ij,jk->ik")}})});
  s.push_back({"conv_transpose",
               {real({1, 2, 3, 3}), real({2, 3, 2, 2}), real({3})},
               attrs({{"strides", Ints{2, 2}}, {"pads", Ints{0, 1, 0, 0}}})});
  s.push_back({"resize", {real({1, 1, 2, 3})}, attrs({{"sizes", Ints{1, 1, 4, 5}}, {"mode", std::string("linear")}})});
  s.push_back({"gather_elements", {real({3, 4}), index({3, 2}, 4)}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"windows",
               {real({2, 5, 6})},
               attrs({{"kernel_shape", Ints{2, 3}}, {"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}})});
  s.push_back({"gather", {real({2, 5, 3}), index({4}, 5)}, attrs({{"axis", std::int64_t{1}}})});
  s.push_back({"gather", {real({2, 3, 4}), index({}, 4)}, attrs({{"axis", std::int64_t{-1}}})});
  return s;
}

ir::Tensor draw(const Operand& o, std::mt19937& rng) {
  std::vector<double> v(static_cast<std::size_t>(ir::numel(o.dims)));
  if (o.kind == Operand::Index) {
    std::uniform_int_distribution<std::int64_t> d(static_cast<std::int64_t>(o.lo), static_cast<std::int64_t>(o.hi) - 1);
    std::vector<std::int64_t> ints(v.size());
    for (auto& x : ints) x = d(rng);
    return ir::Tensor::of_ints(ir::DType::I64, o.dims, ints);
  }
  if (o.kind == Operand::Mask) {
    std::vector<std::int64_t> ints(v.size());
    for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = (rng() >> 7) & 1;
    return ir::Tensor::of_ints(ir::DType::Bool, o.dims, ints);
  }
  std::uniform_real_distribution<double> d(o.lo, o.hi);
  for (auto& x : v) {
    x = d(rng);
    // Away from the kinks of relu, abs, clip's bounds and hard_swish's.
    while (std::abs(x) < 0.05 || std::abs(std::abs(x) - 0.5) < 0.05 || std::abs(x - 0.7) < 0.05) x = d(rng);
  }
  return ir::Tensor::of_doubles(ir::DType::F64, o.dims, v);
}

// The graph: operands as inputs, the op, then loss = sum_i sum(y_i * r_i)
// with fixed random weights r_i, so every result's gradient is exercised.
ir::Graph sample_graph(const Sample& s, std::mt19937& rng, std::vector<ir::Tensor>& inputs) {
  ir::Graph g;
  g.name = s.op;
  ir::Node n;
  n.name = "n";
  n.op = s.op;
  n.attrs = s.attrs;
  for (std::size_t i = 0; i < s.operands.size(); ++i) {
    const Operand& o = s.operands[i];
    if (o.kind == Operand::Absent) {
      n.inputs.push_back("");
      continue;
    }
    std::string name = test::numbered("x", static_cast<int>(i));
    ir::Tensor t = draw(o, rng);
    g.inputs.push_back({name, ir::ValueType{t.dtype(), ir::shape_of(o.dims)}});
    inputs.push_back(t);
    n.inputs.push_back(name);
  }
  for (int r = 0; r < s.results; ++r) n.outputs.push_back(test::numbered("y", r));
  g.nodes.push_back(n);
  auto types = ir::infer_types(g);
  if (!types) FAIL(types.error().to_string());
  std::string total;
  for (int r = 0; r < s.results; ++r) {
    std::string y = test::numbered("y", r), w = test::numbered("w", r), p = test::numbered("p", r),
                sum = test::numbered("s", r);
    const ir::ValueType& yt = (*types)[y];
    Operand wo = real(ir::static_dims(yt.shape));
    g.initializers.emplace(w, draw(wo, rng));
    g.nodes.push_back(ir::Node{"", "mul", {y, w}, {p}, {}, ""});
    g.nodes.push_back(ir::Node{"", "reduce_sum", {p}, {sum}, attrs({{"keepdims", std::int64_t{0}}}), ""});
    if (total.empty()) {
      total = sum;
    } else {
      std::string t2 = test::numbered("t", r);
      g.nodes.push_back(ir::Node{"", "add", {total, sum}, {t2}, {}, ""});
      total = t2;
    }
  }
  g.outputs = {total};
  return g;
}

double loss_at(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  auto out = runtime::interpret(g, inputs);
  if (!out) FAIL(out.error().to_string());
  return (*out)[0].at(0);
}

void check_gradients(const Sample& s, std::mt19937& rng) {
  std::vector<ir::Tensor> inputs;
  ir::Graph forward = sample_graph(s, rng, inputs);
  std::vector<std::string> wrt;
  for (std::size_t i = 0, k = 0; i < s.operands.size(); ++i) {
    if (s.operands[i].kind == Operand::Absent) continue;
    if (s.operands[i].differentiate) wrt.push_back(forward.inputs[k].name);
    ++k;
  }
  ir::Graph g = forward;
  pipeline::GradientOptions go;
  go.decomposer = &decomposer();
  auto grads = pipeline::append_gradients(g, shipped(), g.outputs[0], wrt, go);
  if (!grads) FAIL(s.op + ": " + grads.error().to_string());
  // An op without a gradient rule is differentiated through its primitive form.
  CHECK(grads->decomposed.size() == (shipped().find(s.op) ? 0u : 1u));
  g.outputs.clear();
  for (const std::string& w : wrt) g.outputs.push_back(grads->of.at(w));
  auto analytic = runtime::interpret(g, inputs);
  if (!analytic) FAIL(s.op + ": " + analytic.error().to_string());
  for (std::size_t k = 0; k < wrt.size(); ++k) {
    std::size_t slot = 0;
    while (forward.inputs[slot].name != wrt[k]) ++slot;
    const ir::Tensor& a = (*analytic)[k];
    REQUIRE(a.numel() == inputs[slot].numel());
    for (std::size_t e = 0; e < a.numel(); ++e) {
      const double h = 1e-6;
      std::vector<ir::Tensor> plus = inputs, minus = inputs;
      plus[slot] = inputs[slot].reshaped(inputs[slot].dims());
      minus[slot] = inputs[slot].reshaped(inputs[slot].dims());
      std::vector<double> vp(inputs[slot].numel()), vm(inputs[slot].numel());
      for (std::size_t j = 0; j < vp.size(); ++j) vp[j] = vm[j] = inputs[slot].at(j);
      vp[e] += h;
      vm[e] -= h;
      plus[slot] = ir::Tensor::of_doubles(ir::DType::F64, inputs[slot].dims(), vp);
      minus[slot] = ir::Tensor::of_doubles(ir::DType::F64, inputs[slot].dims(), vm);
      double numeric = (loss_at(forward, plus) - loss_at(forward, minus)) / (2 * h);
      INFO(s.op << ": d loss / d " << wrt[k] << "[" << e << "]: analytic " << a.at(e) << ", numeric " << numeric);
      CHECK(std::abs(a.at(e) - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
    }
  }
}

}  // namespace

TEST_CASE("every gradient agrees with central finite differences in float64") {
  auto all = samples();
  for (std::size_t i = 0; i < all.size(); ++i) {
    DYNAMIC_SECTION("sample " << i << ": " << all[i].op << ", " << all[i].attrs.all().size() << " attributes") {
      std::mt19937 rng(static_cast<unsigned>(i + 1));
      check_gradients(all[i], rng);
    }
  }
}

TEST_CASE("every op of the registry has a checked gradient or says why it has none") {
  std::set<std::string> sampled;
  for (const Sample& s : samples()) sampled.insert(s.op);
  for (const ir::OpDef* d : ir::OpRegistry::get().all()) {
    INFO("op " << d->name);
    if (shipped().find_nograd(d->name) || shipped().find_zerograd(d->name)) continue;
    // A gradient rule, or the decomposition's (checked by the same samples);
    // a library call takes its composite's, checked there.
    CHECK(sampled.count(d->semantics()) == 1);
  }
}

TEST_CASE("a path through an op without a gradient is an error naming the node") {
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({4, 3})}});
  g.inputs.push_back({"u", ir::ValueType{ir::DType::F32, ir::shape_of({2, 3})}});
  ir::Node n{"up", "scatter_nd", {"x", "i", "u"}, {"y"}, {}, ""};
  g.initializers.emplace("i", ir::Tensor::of_ints(ir::DType::I64, {2, 1}, {0, 2}));
  g.nodes.push_back(n);
  g.nodes.push_back(ir::Node{"", "reduce_sum", {"y"}, {"l"}, attrs({{"keepdims", std::int64_t{0}}}), ""});
  g.outputs = {"l"};
  auto r = pipeline::append_gradients(g, shipped(), "l", {"x"});
  REQUIRE(!r);
  CHECK_THAT(r.error().message,
             Catch::Contains("node 'up'") && Catch::Contains("no gradient") && Catch::Contains("not derived yet"));
}

TEST_CASE("shared values accumulate - values the loss does not reach get zeros") {
  // l = sum(x * x + x), z unused: dl/dx = 2x + 1, dl/dz = 0.
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({3})}});
  g.inputs.push_back({"z", ir::ValueType{ir::DType::F32, ir::shape_of({3})}});
  g.nodes.push_back(ir::Node{"", "mul", {"x", "x"}, {"a"}, {}, ""});
  g.nodes.push_back(ir::Node{"", "add", {"a", "x"}, {"b"}, {}, ""});
  g.nodes.push_back(ir::Node{"", "reduce_sum", {"b"}, {"l"}, attrs({{"keepdims", std::int64_t{0}}}), ""});
  g.outputs = {"l"};
  auto r = pipeline::append_gradients(g, shipped(), "l", {"x", "z"});
  REQUIRE(r);
  CHECK(r->unreached == std::vector<std::string>{"z"});
  g.outputs = {r->of.at("x"), r->of.at("z")};
  std::vector<ir::Tensor> in = {ir::Tensor::of_doubles(ir::DType::F32, {3}, {1, -2, 0.5}),
                                ir::Tensor::of_doubles(ir::DType::F32, {3}, {7, 7, 7})};
  auto out = runtime::interpret(g, in);
  REQUIRE(out);
  CHECK((*out)[0].at(0) == 3);
  CHECK((*out)[0].at(1) == -3);
  CHECK((*out)[0].at(2) == 2);
  CHECK((*out)[1].at(0) == 0);
}

TEST_CASE("gradient files: errors name the place") {
  auto bad = [](const std::string& text) {
    auto r = rules::parse_grad_rules(text, "g.rules");
    REQUIRE(!r);
    return r.error().to_string();
  };
  CHECK_THAT(bad("(defgrad (frob ?x) (?y) (?dy) (d ?x ?dy))"),
             Catch::Contains("g.rules:1:11") && Catch::Contains("unknown op 'frob'"));
  CHECK_THAT(bad("(defgrad (neg ?x) (?y) (?dy) (d ?x ?dz))"), Catch::Contains("unbound variable '?dz'"));
  CHECK_THAT(bad("(defgrad (neg ?x) (?y) (?dy) (d ?q ?dy))"), Catch::Contains("'?q' is not an operand"));
  CHECK_THAT(bad("(defgrad (add ?x) (?y) (?dy) (d ?x ?dy))"), Catch::Contains("takes 2 operands"));
  CHECK_THAT(bad("(defgrad (neg ?x) (?y) (?dy) (d ?x (frob ?dy)))"), Catch::Contains("unknown op or built-in 'frob'"));
  CHECK_THAT(bad("(defgrad (neg ?x) (?y) (?dy) (d ?x ?dy))\n(defgrad (neg ?x) (?y) (?dy) (d ?x ?dy))"),
             Catch::Contains("g.rules:2:1") && Catch::Contains("a second gradient for 'neg'"));
  // A gradient of the wrong shape is caught when it is instantiated.
  auto rules = rules::parse_grad_rules("(defgrad (reduce_sum ?x) (?y) (?dy) (d ?x ?dy))", "w.rules");
  REQUIRE(rules);
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({3})}});
  g.nodes.push_back(ir::Node{"r", "reduce_sum", {"x"}, {"l"}, attrs({{"keepdims", std::int64_t{0}}}), ""});
  auto r = pipeline::append_gradients(g, *rules, "l", {"x"});
  REQUIRE(!r);
  CHECK_THAT(r.error().to_string(), Catch::Contains("w.rules:1:43") && Catch::Contains("f32[]; operand 'x' is f32[3]"));
}
