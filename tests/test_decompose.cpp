// Every decomposition in rulesets/decompose.rules computes its op's
// definition: each composite is put alone in an e-graph, saturated with the
// decomposition rules, extracted with composites priced at infinity (so the
// program is made of primitives only), and run against the op's reference
// semantics on random inputs. A composite with no decomposition fails here.
#include <cmath>
#include <limits>
#include <random>

#include "bench/models.hpp"
#include "extract/extractors.hpp"
#include "helpers.hpp"
#include "pipeline/saturate.hpp"
#include "rules/tensor_builtins.hpp"
#include "rules/tensor_egraph.hpp"
#include "runtime/interp.hpp"

using namespace saturn;

namespace {

struct Case {
  std::string op;
  std::vector<std::vector<std::int64_t>> inputs;  // shapes; inputs after the first may be constants
  ir::Attrs attrs;
  bool positive = false;  // inputs in (0.5, 2): logs and square roots
};

ir::Attrs attr(const char* k, ir::AttrValue v) {
  ir::Attrs a;
  a.set(k, std::move(v));
  return a;
}

using Ints = std::vector<std::int64_t>;

// Window attributes (convolution, pooling, windows) from name/value pairs.
ir::Attrs attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attrs a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// The loaded decomposition rules (decompose.rules and constfold.rules).
std::vector<rules::Phase> decomposition_phases() {
  rules::register_tensor_builtins(rules::BuiltinRegistry::global());
  std::vector<rules::RuleFile> files;
  for (const char* f : {"decompose.rules", "constfold.rules"}) {
    auto r = rules::load_rules(test::source_dir() + "/rulesets/" + f, rules::BuiltinRegistry::global(),
                               rules::check_tensor_op);
    if (!r) FAIL(r.error().to_string());
    files.push_back(std::move(*r));
  }
  auto loaded = rules::group_phases(std::move(files));
  REQUIRE(loaded);
  return std::move(*loaded);
}

// Saturates g's e-graph with the decompositions, extracts a program of
// primitives only (erf aside: it has no closed form), and checks that it
// computes g's outputs on `inputs`: the same types and shapes, values within
// float rounding, NaN where g gives NaN.
void check_primitive_form(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  static const std::vector<rules::Phase> loaded = decomposition_phases();
  auto t = rules::to_egraph(g);
  if (!t) FAIL(t.error().to_string());
  pipeline::SaturateOptions so;
  so.iter_limit = 8;
  auto phases = loaded;
  pipeline::saturate(t->graph, phases, so);
  REQUIRE_FALSE(t->analysis->conflict());
  auto cost = [&](const egraph::EGraph& eg, egraph::NodeId n) -> double {
    if (eg.children(n).empty() || eg.op(n).is_literal()) return 0;
    const ir::OpDef* d = ir::OpRegistry::get().find(eg.op(n).name());
    if (d && d->name == "erf") return 1.0;
    return d && d->kind == ir::OpKind::Composite ? extract::kInfinity : 1.0;
  };
  auto p = extract::problem_from_egraph(t->graph, t->outputs, cost);
  auto x = extract::extract_tree_greedy(p);
  REQUIRE(x.dag_cost < extract::kInfinity);  // a primitives-only program exists
  auto prim = rules::from_egraph(*t, [&](egraph::EClassId k) {
    return p.node_ids[static_cast<std::size_t>(x.choice[p.class_index(t->graph.find(k))])];
  });
  if (!prim) FAIL(prim.error().to_string());
  for (const ir::Node& n : prim->nodes) {
    INFO(n.op);
    // identity only names an output that is an input (clip without bounds).
    CHECK((n.op == "erf" || n.op == "identity" || ir::OpRegistry::get().find(n.op)->kind == ir::OpKind::Primitive));
  }
  auto want = runtime::interpret(g, inputs);
  auto got = runtime::interpret(*prim, inputs);
  REQUIRE(want);
  if (!got) FAIL(got.error().to_string());
  REQUIRE(got->size() == want->size());
  for (std::size_t k = 0; k < want->size(); ++k) {
    const ir::Tensor &w = (*want)[k], &o = (*got)[k];
    REQUIRE(o.dtype() == w.dtype());
    REQUIRE(o.dims() == w.dims());
    for (std::size_t i = 0; i < w.numel(); ++i) {
      INFO("element " << i << ": want " << w.at(i) << ", got " << o.at(i));
      if (std::isnan(w.at(i)))
        CHECK(std::isnan(o.at(i)));
      else
        CHECK((o.at(i) == w.at(i) || std::abs(o.at(i) - w.at(i)) <= 1e-4 + 1e-3 * std::abs(w.at(i))));
    }
  }
}

}  // namespace

TEST_CASE("every decomposition computes its op's definition - in primitives only", "[decompose]") {
  ir::Attrs ln = attr("axis", std::int64_t{-1});
  ln.set("epsilon", 1e-5);
  ir::Attrs gm = attr("alpha", 0.5);
  gm.set("beta", 2.0);
  ir::Attrs red = attr("axes", std::vector<std::int64_t>{1});
  const std::vector<Case> cases = {
      {"sub", {{2, 3}, {3}}, {}},
      {"relu", {{2, 3}}, {}},
      {"min", {{2, 3}, {2, 1}}, {}},
      {"exp", {{2, 3}}, {}},
      {"log", {{2, 3}}, {}, true},
      {"sigmoid", {{2, 3}}, {}},
      {"tanh", {{2, 3}}, {}},
      {"abs", {{2, 3}}, {}},
      {"gelu", {{2, 3}}, {}},
      {"softmax", {{2, 3, 4}}, attr("axis", std::int64_t{1})},
      {"reduce_mean", {{2, 3, 4}}, red},
      {"layer_norm", {{2, 3, 4}, {4}, {4}}, ln},
      {"batch_norm", {{2, 3, 2, 2}, {3}, {3}, {3}, {3}}, attr("epsilon", 1e-5), true},
      {"gemm", {{2, 3}, {3, 4}, {4}}, gm},
      {"global_avg_pool", {{1, 2, 3, 3}}, {}},
      {"global_max_pool", {{1, 2, 3, 3}}, {}},
      {"reduce_l1", {{2, 3}}, red},
      {"reduce_sum_square", {{2, 3}}, red},
      {"reduce_l2", {{2, 3}}, red},
      {"reduce_log_sum", {{2, 3}}, red, true},
      {"reduce_log_sum_exp", {{2, 3}}, red},
      {"reduce_min", {{2, 3}}, red},
      {"softplus", {{2, 3}}, {}},
      {"leaky_relu", {{2, 3}}, attr("alpha", 0.1)},
      {"hard_sigmoid", {{2, 3}}, {}},
      {"hard_swish", {{2, 3}}, {}},
      {"elu", {{2, 3}}, attr("alpha", 0.7)},
      {"cos", {{2, 3}}, {}},
      {"tan", {{2, 3}}, {}},
      {"sinh", {{2, 3}}, {}},
      {"cosh", {{2, 3}}, {}},
      {"asinh", {{2, 3}}, {}},
      {"acosh", {{2, 3}}, {}, true},
      {"atanh", {{2, 3}}, {}},
      {"celu", {{2, 3}}, attr("alpha", 0.7)},
      {"softsign", {{2, 3}}, {}},
      {"thresholded_relu", {{2, 3}}, attr("alpha", 0.2)},
      {"shrink", {{2, 3}}, attrs({{"bias", 0.1}, {"lambd", 0.3}})},
      {"mish", {{2, 3}}, {}},
      // Pixel shuffles by blocks of 2 (the verifier's dims, up to 3, only
      // reach blocks of 1 for depth_to_space: 4 channels are needed).
      {"depth_to_space", {{1, 8, 2, 3}}, attr("blocksize", std::int64_t{2})},
      {"depth_to_space", {{2, 12, 1, 2}}, attrs({{"blocksize", std::int64_t{2}}, {"mode", std::string("CRD")}})},
      {"space_to_depth", {{1, 3, 4, 6}}, attr("blocksize", std::int64_t{2})},
      {"cumsum", {{2, 5, 3}}, attr("axis", std::int64_t{1})},
      {"cumsum",
       {{4, 3}},
       attrs({{"axis", std::int64_t{-2}}, {"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}})},
      {"cumprod", {{2, 5, 3}}, attr("axis", std::int64_t{1})},
      {"cumprod",
       {{4, 3}},
       attrs({{"axis", std::int64_t{-2}}, {"exclusive", std::int64_t{1}}, {"reverse", std::int64_t{1}}})},
      // Windows, convolution and pooling: strides, dilations, asymmetric and
      // automatic padding, groups, a bias, 1-D to 3-D, ceil_mode (extra
      // windows, and a tail no window reaches), both average divisors.
      {"windows",
       {{2, 7, 6}},
       attrs({{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"dilations", Ints{2, 3}}})},
      {"windows", {{3, 5}}, attrs({{"kernel_shape", Ints{5}}})},
      {"conv", {{1, 2, 5, 5}, {3, 2, 3, 3}}, attrs({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}})},
      {"conv", {{1, 4, 6, 6}, {4, 2, 2, 2}, {4}}, attrs({{"group", std::int64_t{2}}, {"dilations", Ints{2, 2}}})},
      {"conv", {{2, 2, 7}, {2, 2, 3}, {2}}, attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2}}})},
      {"conv", {{1, 1, 4, 5}, {2, 1, 2, 3}}, attrs({{"pads", Ints{0, 1, 2, 0}}})},
      {"conv", {{1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}}, attrs({{"strides", Ints{1, 2, 1}}})},
      {"conv_transpose", {{1, 2, 3, 3}, {2, 3, 3, 3}}, attrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}})},
      {"conv_transpose",
       {{1, 4, 3}, {4, 1, 2}, {2}},
       attrs({{"group", std::int64_t{2}}, {"dilations", Ints{2}}, {"output_padding", Ints{1}}, {"strides", Ints{3}}})},
      {"conv_transpose",
       {{2, 2, 2, 3}, {2, 2, 3, 2}},
       attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 1}}})},
      {"conv_transpose", {{1, 1, 4}, {1, 2, 3}}, attrs({{"output_shape", Ints{10}}, {"strides", Ints{2}}})},
      {"conv_transpose", {{1, 1, 5}, {1, 1, 3}}, attrs({{"pads", Ints{3, 3}}})},
      {"max_pool",
       {{1, 2, 5, 5}},
       attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"max_pool",
       {{1, 1, 6, 6}},
       attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}})},
      {"max_pool",
       {{1, 1, 7, 7}},
       attrs({{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}})},
      {"max_pool",
       {{1, 2, 7}},
       attrs({{"kernel_shape", Ints{1}}, {"strides", Ints{3}}, {"ceil_mode", std::int64_t{1}}})},
      {"avg_pool",
       {{1, 2, 5, 5}},
       attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"avg_pool",
       {{1, 2, 5, 5}},
       attrs({{"kernel_shape", Ints{3, 3}},
              {"strides", Ints{2, 2}},
              {"pads", Ints{1, 1, 1, 1}},
              {"count_include_pad", std::int64_t{1}}})},
      {"avg_pool",
       {{1, 1, 6, 6}},
       attrs({{"kernel_shape", Ints{3, 3}},
              {"strides", Ints{2, 2}},
              {"pads", Ints{0, 0, 1, 1}},
              {"ceil_mode", std::int64_t{1}},
              {"count_include_pad", std::int64_t{1}}})},
      {"avg_pool",
       {{1, 1, 4, 4, 4}},
       attrs({{"kernel_shape", Ints{2, 2, 2}}, {"auto_pad", std::string("SAME_LOWER")}})},
  };
  for (const Case& c : cases) {
    INFO(c.op);
    models::GraphBuilder b("one");
    std::vector<std::string> ins = {b.input("x", c.inputs[0])};
    for (std::size_t i = 1; i < c.inputs.size(); ++i)
      ins.push_back(c.positive ? b.fill(c.inputs[i], 1.5) : b.weight(c.inputs[i], 1.0));
    auto g = b.finish({b.op(c.op, ins, c.attrs)});
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(c.positive ? 0.5 : -2.0, 2.0);
    ir::Tensor in(ir::DType::F32, c.inputs[0]);
    for (std::size_t i = 0; i < in.numel(); ++i) in.set(i, u(rng));
    check_primitive_form(g, {in});
  }
}

namespace {

// An operand of the op under test: fed at run time, or a constant of the model.
struct Operand {
  ir::Tensor value;
  bool constant = false;
};

Operand fed(ir::Tensor t) { return {std::move(t), false}; }
Operand constant(ir::Tensor t) { return {std::move(t), true}; }

ir::Tensor floats(Ints dims, std::vector<double> v) {
  return ir::Tensor::of_doubles(ir::DType::F32, std::move(dims), v);
}
ir::Tensor ints(Ints dims, const Ints& v) { return ir::Tensor::of_ints(ir::DType::I64, std::move(dims), v); }
ir::Tensor bools(Ints dims, const Ints& v) { return ir::Tensor::of_ints(ir::DType::Bool, std::move(dims), v); }
ir::Tensor random(Ints dims, std::uint32_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  ir::Tensor t(ir::DType::F32, std::move(dims));
  for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

// One node of `op` over the operands, with `results` outputs, all outputs of
// the graph; checked by check_primitive_form.
void check_op(const std::string& op, std::vector<Operand> operands, ir::Attrs attrs = {}, std::size_t results = 1) {
  ir::Graph g;
  g.name = op;
  ir::Node n{op, op, {}, {}, std::move(attrs), op};
  std::vector<ir::Tensor> inputs;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::string name = std::string("v").append(std::to_string(i));
    n.inputs.push_back(name);
    if (operands[i].constant) {
      g.initializers.emplace(name, operands[i].value);
    } else {
      g.inputs.push_back({name, {operands[i].value.dtype(), ir::shape_of(operands[i].value.dims())}});
      g.declared_inputs.push_back(name);
      inputs.push_back(operands[i].value);
    }
  }
  for (std::size_t r = 0; r < results; ++r) {
    n.outputs.push_back(std::string("y").append(std::to_string(r)));
    g.outputs.push_back(n.outputs.back());
  }
  g.nodes.push_back(std::move(n));
  check_primitive_form(g, inputs);
}

const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("decompositions over other types and special values - comparisons and logic - shapes - gather",
          "[decompose]") {
  // Values where comparisons, rounding and sign differ: signed zeros,
  // integers, halves, tiny numbers, infinities, NaN.
  const ir::Tensor special = floats({10}, {0.0, -0.0, 1.0, -2.5, 2.0, -1e-9, kInf, -kInf, NAN, 1.5});
  const ir::Tensor against = floats({10}, {-0.0, 0.0, 2.0, -2.5, 1.0, -1e-9, kInf, NAN, NAN, -kInf});
  SECTION("clip, selu, sign, prelu, floor, ceil") {
    check_op("clip", {fed(random({2, 3}, 1))}, attrs({{"min", -0.5}, {"max", 0.7}}));
    check_op("clip", {fed(random({2, 3}, 2))}, attrs({{"min", -0.5}}));
    check_op("clip", {fed(random({2, 3}, 3))}, attrs({{"max", 0.7}}));
    check_op("clip", {fed(random({2, 3}, 4))});
    check_op("clip", {fed(ints({4}, {-3, 0, 2, 9}))}, attrs({{"min", std::int64_t{-1}}, {"max", std::int64_t{5}}}));
    check_op("selu", {fed(random({2, 3}, 5))});
    check_op("sign", {fed(special)});
    check_op("sign", {fed(ints({3}, {-4, 0, 7}))});
    check_op("prelu", {fed(random({2, 3}, 6)), constant(random({3}, 7))});
    check_op("floor", {fed(special)});
    check_op("ceil", {fed(special)});
    check_op("floor", {fed(floats({6}, {-0.5, 0.5, 3.999, -3.999, 1e6 + 0.5, -1e-30}))});
  }
  SECTION("pow - every IEEE special case - and reduce_prod") {
    // Bases and exponents crossing: zeros of both signs, +-1, negative and
    // positive finite values, +-inf, NaN; integers (odd and even) and not.
    const std::vector<double> bases = {0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, kInf, -kInf, NAN};
    const std::vector<double> exps = {0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, -0.5, 2.5, kInf, -kInf, NAN};
    std::vector<double> xs, ys;
    for (double b : bases)
      for (double e : exps) {
        xs.push_back(b);
        ys.push_back(e);
      }
    const auto n = static_cast<std::int64_t>(xs.size());
    check_op("pow", {fed(floats({n}, xs)), constant(floats({n}, ys))});
    check_op("pow", {fed(random({2, 3}, 47, 0.5, 3.0)), constant(floats({}, {2.0}))});  // x * x
    check_op("pow", {fed(random({2, 3}, 48, -3.0, 3.0)), constant(floats({3}, {3.0, -2.0, 0.75}))});
    check_op("reduce_prod", {fed(random({2, 3, 4}, 49, -2.0, 2.0))},
             attrs({{"axes", Ints{1}}, {"keepdims", std::int64_t{1}}}));
    check_op("reduce_prod", {fed(floats({3, 4}, {1.5, -2.0, 0.0, 3.0, -1.0, -1.0, -1.0, 2.0, kInf, 0.0, 1.0, -kInf}))},
             attrs({{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}));
    check_op("reduce_prod", {fed(random({2, 3}, 50))});
  }
  SECTION("comparisons - with NaN and infinities") {
    for (const char* op : {"greater", "less_equal", "greater_equal", "equal"}) {
      INFO(op);
      check_op(op, {fed(special), constant(against)});
      check_op(op, {fed(ints({5}, {-1, 0, 2, 5, 7})), constant(ints({5}, {-1, 3, 2, 4, 7}))});
    }
    check_op("equal", {fed(bools({4}, {0, 1, 0, 1})), constant(bools({4}, {0, 0, 1, 1}))});
    // NaN is not equal to itself; infinities are the extremes.
    check_op("is_nan", {fed(special)});
    for (std::int64_t neg : {0, 1})
      for (std::int64_t pos : {0, 1})
        check_op("is_inf", {fed(special)}, attrs({{"detect_negative", neg}, {"detect_positive", pos}}));
  }
  SECTION("logic") {
    for (const char* op : {"and", "or", "xor"}) {
      INFO(op);
      check_op(op, {fed(bools({4}, {0, 1, 0, 1})), constant(bools({4}, {0, 0, 1, 1}))});
      check_op(op, {fed(bools({2, 2}, {0, 1, 1, 0})), constant(bools({2}, {1, 0}))});  // broadcast
    }
    check_op("not", {fed(bools({3}, {0, 1, 1}))});
  }
  SECTION("concat, split, tile, fill, shape, size, range, trilu") {
    check_op("concat", {fed(random({2, 3}, 8)), constant(random({2, 2}, 9))}, attr("axis", std::int64_t{1}));
    check_op("concat", {fed(special), constant(against), constant(special)}, attr("axis", std::int64_t{0}));
    check_op("concat",
             {fed(random({1, 2, 1}, 10)), constant(random({1, 2, 3}, 11)), fed(random({1, 2, 2}, 12)),
              constant(random({1, 2, 1}, 13))},
             attr("axis", std::int64_t{-1}));
    check_op("concat", {fed(ints({2}, {4, 5})), constant(ints({1}, {6}))}, attr("axis", std::int64_t{0}));
    check_op("split", {fed(random({2, 5}, 14))}, attr("axis", std::int64_t{1}), 3);  // 2 2 1
    check_op("split", {fed(random({4, 2}, 15))}, attrs({{"axis", std::int64_t{0}}, {"split", Ints{1, 3}}}), 2);
    check_op("tile", {fed(random({2, 3}, 16))}, attr("repeats", Ints{2, 3}));
    check_op("tile", {fed(ints({3}, {1, 2, 3}))}, attr("repeats", Ints{2}));
    check_op("fill", {}, attrs({{"shape", Ints{2, 3}}, {"value", floats({1}, {2.5})}}));
    check_op("fill", {}, attrs({{"shape", Ints{}}, {"value", ints({1}, {7})}}));
    check_op("shape", {fed(random({2, 3, 4}, 17))}, attr("start", std::int64_t{1}));
    check_op("shape", {fed(random({2, 3, 4}, 18))}, attrs({{"start", std::int64_t{-3}}, {"end", std::int64_t{-1}}}));
    check_op("size", {fed(random({2, 3, 4}, 19))});
    check_op("range", {constant(floats({}, {1.0})), constant(floats({}, {7.5})), constant(floats({}, {2.0}))});
    check_op("range", {constant(ints({}, {10})), constant(ints({}, {1})), constant(ints({}, {-3}))});
    check_op("trilu", {fed(random({2, 3, 4}, 20))}, attrs({{"upper", std::int64_t{1}}, {"k", std::int64_t{1}}}));
    check_op("trilu", {fed(floats({2, 5}, {0.0, -0.0, 1.0, -2.5, 2.0, -1e-9, kInf, -kInf, NAN, 1.5}))},
             attrs({{"upper", std::int64_t{0}}, {"k", std::int64_t{-1}}}));
  }
  SECTION("trilu and gather on rank 2 - gather's negative indices - integer data") {
    check_op("trilu", {fed(random({3, 3}, 21))}, attrs({{"upper", std::int64_t{0}}, {"k", std::int64_t{0}}}));
    check_op("gather", {fed(random({3, 4}, 22)), constant(ints({2, 2}, {0, -1, 2, 1}))}, attr("axis", std::int64_t{0}));
    check_op("gather", {fed(random({2, 3, 4}, 23)), constant(ints({5}, {3, 0, -4, 1, 3}))},
             attr("axis", std::int64_t{2}));
    check_op("gather", {fed(random({3, 2}, 24)), constant(ints({}, {-2}))}, attr("axis", std::int64_t{0}));
    check_op("gather", {fed(special), constant(ints({3}, {8, 6, 1}))}, attr("axis", std::int64_t{0}));
    check_op("gather", {fed(ints({4}, {5, -6, 7, -8})), constant(ints({2}, {3, 0}))}, attr("axis", std::int64_t{0}));
  }
  SECTION("gather_elements - every axis - negative indices - indices shorter off the axis - integer data") {
    check_op("gather_elements", {fed(random({3, 4}, 25)), constant(ints({3, 2}, {0, -1, 3, 1, 2, 0}))},
             attr("axis", std::int64_t{1}));
    check_op("gather_elements", {fed(random({3, 4}, 26)), constant(ints({2, 3}, {2, 0, -3, 1, 1, 0}))},
             attr("axis", std::int64_t{0}));
    check_op("gather_elements",
             {fed(random({2, 3, 4}, 27)),
              constant(ints({2, 2, 5}, {3, 0, -4, 1, 3, 2, 2, 1, 0, -1, 0, 0, 1, 1, 2, 3, -2, -3, 0, 1}))},
             attr("axis", std::int64_t{-1}));
    check_op("gather_elements", {fed(ints({2, 2}, {5, -6, 7, -8})), constant(ints({2, 2}, {1, 0, 1, 1}))},
             attr("axis", std::int64_t{0}));
  }
  SECTION("einsum - one to three operands - ellipsis and broadcasting") {
    auto eq = [](const char* e) { return attr("equation", std::string(e)); };
    check_op("einsum", {fed(random({2, 3}, 31)), constant(random({3, 4}, 32))}, eq("ij,jk->ik"));
    check_op("einsum", {fed(random({2, 3}, 33)), constant(random({3, 4}, 34))}, eq("ij,jk"));
    check_op("einsum", {fed(random({2, 1, 3, 4}, 35)), constant(random({5, 4, 2}, 36))}, eq("...ij,...jk->...ik"));
    check_op("einsum", {fed(random({2, 3}, 37))}, eq("ij->ji"));
    check_op("einsum", {fed(random({2, 3}, 38))}, eq("ij->"));
    check_op("einsum", {fed(random({3}, 39)), constant(random({4}, 40))}, eq("i,j->ij"));
    check_op("einsum", {fed(random({2, 3}, 41)), constant(random({3, 4}, 42)), constant(random({4, 2}, 43))},
             eq("ij,jk,kl->il"));
    check_op("einsum", {fed(random({2, 3, 4}, 44)), constant(random({2, 4, 3}, 45))}, eq("bij,bji->b"));
  }
  SECTION("argmax and argmin - first and last of ties - NaN - infinities - keepdims") {
    // Ties (2 twice, -1 twice), infinities, and NaN first, inside and alone in a row.
    const ir::Tensor rows = floats({5, 4}, {2.0,   -1.0,  2.0,   -1.0,  //
                                            NAN,   5.0,   -kInf, 1.0,   //
                                            0.0,   NAN,   3.0,   3.0,   //
                                            -kInf, -kInf, -kInf, NAN,   //
                                            kInf,  0.5,   kInf,  -0.0});
    for (const char* op : {"argmax", "argmin"})
      for (std::int64_t last : {0, 1})
        for (std::int64_t keep : {0, 1}) {
          INFO(op << " select_last_index " << last << " keepdims " << keep);
          for (std::int64_t axis : {1, 0, -1})
            check_op(op, {fed(rows)}, attrs({{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}}));
          check_op(op, {fed(random({2, 3, 4}, 46))},
                   attrs({{"axis", std::int64_t{1}}, {"keepdims", keep}, {"select_last_index", last}}));
        }
  }
  SECTION("log_softmax, instance_norm, lrn") {
    check_op("log_softmax", {fed(random({2, 3, 4}, 25))}, attr("axis", std::int64_t{1}));
    check_op("instance_norm", {fed(random({2, 3, 2, 2}, 26)), constant(random({3}, 27)), constant(random({3}, 28))},
             attr("epsilon", 1e-5));
    check_op("lrn", {fed(random({1, 5, 2, 2}, 29))},
             attrs({{"size", std::int64_t{3}}, {"alpha", 0.3}, {"beta", 0.75}}));
    check_op("lrn", {fed(random({2, 4, 3}, 30))}, attrs({{"size", std::int64_t{2}}, {"bias", 2.0}}));
  }
}

TEST_CASE("resize decomposes one axis at a time into products with constant matrices - every mode", "[decompose]") {
  struct Case {
    const char* mode;
    const char* transform;
    Ints sizes;
    int antialias = 0;
  };
  const std::vector<Case> cases = {{"nearest", "half_pixel", {1, 2, 6, 7}},
                                   {"linear", "align_corners", {1, 2, 5, 2}},
                                   {"cubic", "half_pixel", {1, 2, 2, 9}, 1},
                                   {"linear", "tf_crop_and_resize", {1, 2, 4, 6}},
                                   {"nearest", "pytorch_half_pixel", {1, 1, 1, 1}},
                                   {"linear", "asymmetric", {1, 3, 3, 5}}};  // axis 1 moved last and back
  for (const Case& c : cases) {
    INFO(c.mode << " " << c.transform);
    ir::Attrs a = attr("sizes", c.sizes);
    a.set("mode", std::string(c.mode));
    a.set("coordinate_transformation_mode", std::string(c.transform));
    a.set("antialias", std::int64_t{c.antialias});
    a.set("roi", std::vector<double>{0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2});
    a.set("extrapolation_value", -5.0);
    check_op("resize", {fed(random({1, 2, 3, 4}, 31))}, a);
  }
  SECTION("nearest resizing of integers") {
    ir::Attrs a = attr("sizes", Ints{2, 5});
    check_op("resize", {fed(ints({2, 3}, {4, -5, 6, 7, 8, -9}))}, a);
  }
}
