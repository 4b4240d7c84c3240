// Every decomposition in rulesets/decompose.rules computes its op's
// definition: each composite is put alone in an e-graph, saturated with the
// decomposition rules, extracted with composites priced at infinity (so the
// program is made of primitives only), and run against the op's reference
// semantics on random inputs. A composite with no decomposition fails here.
#include <random>

#include "bench/models.hpp"
#include "extract/extractors.hpp"
#include "helpers.hpp"
#include "rules/tensor_builtins.hpp"
#include "rules/tensor_egraph.hpp"
#include "runtime/interp.hpp"
#include "tools/saturate.hpp"

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

}  // namespace

TEST_CASE("every decomposition computes its op's definition - in primitives only", "[decompose]") {
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
      // Windows, convolution and pooling: strides, dilations, asymmetric and
      // automatic padding, groups, a bias, 1-D to 3-D, ceil_mode (extra
      // windows, and a tail no window reaches), both average divisors.
      {"windows", {{2, 7, 6}}, attrs({{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"dilations", Ints{2, 3}}})},
      {"windows", {{3, 5}}, attrs({{"kernel_shape", Ints{5}}})},
      {"conv", {{1, 2, 5, 5}, {3, 2, 3, 3}}, attrs({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}})},
      {"conv", {{1, 4, 6, 6}, {4, 2, 2, 2}, {4}}, attrs({{"group", std::int64_t{2}}, {"dilations", Ints{2, 2}}})},
      {"conv", {{2, 2, 7}, {2, 2, 3}, {2}}, attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2}}})},
      {"conv", {{1, 1, 4, 5}, {2, 1, 2, 3}}, attrs({{"pads", Ints{0, 1, 2, 0}}})},
      {"conv", {{1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}}, attrs({{"strides", Ints{1, 2, 1}}})},
      {"max_pool", {{1, 2, 5, 5}}, attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"max_pool", {{1, 1, 6, 6}}, attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}})},
      {"max_pool", {{1, 1, 7, 7}}, attrs({{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}})},
      {"max_pool", {{1, 2, 7}}, attrs({{"kernel_shape", Ints{1}}, {"strides", Ints{3}}, {"ceil_mode", std::int64_t{1}}})},
      {"avg_pool", {{1, 2, 5, 5}}, attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"avg_pool", {{1, 2, 5, 5}},
       attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", std::int64_t{1}}})},
      {"avg_pool", {{1, 1, 6, 6}},
       attrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{0, 0, 1, 1}}, {"ceil_mode", std::int64_t{1}},
              {"count_include_pad", std::int64_t{1}}})},
      {"avg_pool", {{1, 1, 4, 4, 4}}, attrs({{"kernel_shape", Ints{2, 2, 2}}, {"auto_pad", std::string("SAME_LOWER")}})},
  };
  for (const Case& c : cases) {
    INFO(c.op);
    models::GraphBuilder b("one");
    std::vector<std::string> ins = {b.input("x", c.inputs[0])};
    for (std::size_t i = 1; i < c.inputs.size(); ++i)
      ins.push_back(c.positive ? b.fill(c.inputs[i], 1.5) : b.weight(c.inputs[i], 1.0));
    auto g = b.finish({b.op(c.op, ins, c.attrs)});
    auto t = rules::to_egraph(g);
    if (!t) FAIL(t.error().to_string());
    cli::SaturateOptions so;
    so.iter_limit = 8;
    auto phases = *loaded;
    cli::saturate(t->graph, phases, so);
    REQUIRE_FALSE(t->analysis->conflict());
    auto cost = [&](const egraph::EGraph& eg, egraph::NodeId n) -> double {
      if (eg.children(n).empty() || eg.op(n).is_literal()) return 0;
      const ir::OpDef* d = ir::OpRegistry::get().find(eg.op(n).name());
      // erf has no closed form in the primitives: gelu keeps it.
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
    for (const ir::Node& n : prim->nodes)
      CHECK((n.op == "erf" || ir::OpRegistry::get().find(n.op)->kind == ir::OpKind::Primitive));
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(c.positive ? 0.5 : -2.0, 2.0);
    ir::Tensor in(ir::DType::F32, c.inputs[0]);
    for (std::size_t i = 0; i < in.numel(); ++i) in.set(i, u(rng));
    auto want = runtime::interpret(g, std::vector<ir::Tensor>{in});
    auto got = runtime::interpret(*prim, std::vector<ir::Tensor>{in});
    REQUIRE(want);
    if (!got) FAIL(got.error().to_string());
    for (std::size_t i = 0; i < (*want)[0].numel(); ++i)
      CHECK(std::abs((*got)[0].at(i) - (*want)[0].at(i)) <= 1e-4 + 1e-3 * std::abs((*want)[0].at(i)));
  }
}
