// The symbolic semantics (ir/symbolic.hpp) agree with the interpreter's:
// every op `saturn verify` reasons with is applied to symbolic operands, and
// each result element, evaluated at random values, must equal eval's result
// at those values. Movement ops are traced through eval; the others share a
// kernel with it, so this catches a kernel whose two instantiations diverge.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "ir/op.hpp"
#include "ir/symbolic.hpp"

using namespace saturn::ir;

namespace {

struct Case {
  std::string op;
  std::vector<std::vector<std::int64_t>> shapes;  // an empty optional operand: {-1}
  Attrs attrs;
  std::size_t outputs = 1;
  DType dtype = DType::F32;  // the operands' (integers: nonzero values in [-9, 9])
};

Attrs attrs(std::initializer_list<std::pair<std::string, AttrValue>> kv) {
  Attrs a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

void check(const Case& c, std::mt19937& rng) {
  INFO(c.op);
  const OpDef* def = OpRegistry::get().find(c.op);
  REQUIRE(def);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::uniform_int_distribution<int> small(1, 9), sign(0, 1);
  SymContext ctx;
  std::vector<SymTensor> sym;
  std::vector<Tensor> concrete;
  std::vector<double> values;  // by variable index
  auto given = std::make_unique<bool[]>(c.shapes.size() + 1);
  for (std::size_t k = 0; k < c.shapes.size(); ++k) {
    given[k] = !(c.shapes[k].size() == 1 && c.shapes[k][0] == -1);
    if (!given[k]) {
      sym.emplace_back();
      concrete.emplace_back();
      continue;
    }
    SymTensor s(ctx, c.dtype, c.shapes[k]);
    Tensor t(c.dtype, c.shapes[k]);
    for (std::size_t i = 0; i < t.numel(); ++i) {
      double v = is_float(c.dtype) ? static_cast<float>(dist(rng)) : small(rng) * (sign(rng) ? 1.0 : -1.0);
      t.set(i, v);
      s.set(i, ctx.var(std::string("v").append(std::to_string(values.size()))));
      values.push_back(v);
    }
    sym.push_back(std::move(s));
    concrete.push_back(std::move(t));
  }
  std::span<const bool> g(given.get(), c.shapes.size());
  auto expect = def->eval(c.attrs, concrete, g, c.outputs);
  auto got = apply_symbolic(*def, c.attrs, sym, g, c.outputs);
  REQUIRE(got.size() == expect.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    REQUIRE(got[r].dims() == expect[r].dims());
    for (std::size_t i = 0; i < got[r].numel(); ++i) {
      double v = ctx.evaluate(got[r].id(i), [&](std::size_t var) { return values[var]; });
      double e = expect[r].at(i);
      // eval rounds to float32; the symbolic value is exact in double.
      if (std::isnan(e) || std::isnan(v))
        CHECK(std::isnan(e) == std::isnan(v));
      else if (std::isinf(e))
        CHECK(v == e);
      else
        CHECK(v == Approx(e).epsilon(1e-5).margin(1e-6));
    }
  }
}

}  // namespace

TEST_CASE("symbolic semantics agree with eval") {
  std::mt19937 rng(7);
  std::vector<Case> cases;
  for (const char* u :
       {"neg", "recip", "sqrt", "exp2", "log2",  "sin",     "cos",  "exp",      "log",        "tanh",
        "erf", "abs",   "sign", "ceil", "floor", "sigmoid", "relu", "softplus", "hard_swish", "identity"})
    cases.push_back({u, {{2, 3}}, {}});
  cases.push_back({"leaky_relu", {{5}}, attrs({{"alpha", 0.25}})});
  cases.push_back({"elu", {{5}}, attrs({{"alpha", 0.5}})});
  cases.push_back({"selu", {{5}}, {}});
  cases.push_back({"hard_sigmoid", {{5}}, attrs({{"alpha", 0.5}, {"beta", 0.25}})});
  cases.push_back({"gelu", {{4}}, {}});
  cases.push_back({"gelu", {{4}}, attrs({{"approximate", std::string("tanh")}})});
  cases.push_back({"clip", {{6}}, attrs({{"min", -0.5}, {"max", 0.5}})});
  for (const char* b : {"add", "sub", "mul", "div", "max", "min", "prelu", "pow"})
    cases.push_back({b, {{2, 1, 3}, {4, 1}}, {}});
  for (const char* b : {"less", "less_equal", "greater", "greater_equal", "equal"})
    cases.push_back({b, {{3, 2}, {2}}, {}});
  cases.push_back({"mod", {{3}, {3}}, {}});
  cases.push_back({"mod", {{4}, {4}}, attrs({{"fmod", std::int64_t{1}}})});
  // Integer division, both modulos and power (IntDiv, IntRem, IntPow), and
  // widening casts, over symbolic integers.
  for (DType t : {DType::I64, DType::I32}) {
    for (const char* b : {"div", "mod", "pow"}) cases.push_back({b, {{2, 3}, {3}}, {}, 1, t});
    cases.push_back({"mod", {{2, 3}, {3}}, attrs({{"fmod", std::int64_t{1}}}), 1, t});
  }
  cases.push_back({"cast", {{5}}, attrs({{"to", std::string("i64")}}), 1, DType::I32});
  cases.push_back({"cast", {{5}}, attrs({{"to", std::string("i32")}}), 1, DType::I8});
  for (const char* red : {"reduce_sum", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_l1",
                          "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"}) {
    cases.push_back({red, {{2, 3, 2}}, attrs({{"axes", std::vector<std::int64_t>{1}}})});
    cases.push_back({red, {{2, 3}}, attrs({{"keepdims", std::int64_t{0}}})});
  }
  cases.push_back({"softmax", {{2, 3}}, {}});
  cases.push_back({"log_softmax", {{2, 3}}, attrs({{"axis", std::int64_t{0}}})});
  cases.push_back({"matmul", {{2, 2, 3}, {3, 4}}, {}});
  cases.push_back({"matmul", {{3}, {3, 2}}, {}});
  cases.push_back({"gemm",
                   {{3, 2}, {4, 3}, {4}},
                   attrs({{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}})});
  cases.push_back({"batch_norm", {{2, 3, 2}, {3}, {3}, {3}, {3}}, {}});
  cases.push_back({"layer_norm", {{2, 3, 2}, {2}, {3, 2}}, attrs({{"axis", std::int64_t{1}}})});
  cases.push_back({"instance_norm", {{2, 3, 2}, {3}, {3}}, {}});
  cases.push_back({"conv",
                   {{1, 4, 5, 4}, {2, 2, 3, 2}, {2}},
                   attrs({{"group", std::int64_t{2}},
                          {"pads", std::vector<std::int64_t>{1, 0, 0, 1}},
                          {"strides", std::vector<std::int64_t>{2, 1}}})});
  cases.push_back({"dnnl.conv_relu", {{1, 2, 3, 3}, {3, 2, 2, 2}, {-1}}, {}});
  cases.push_back({"cudnn.conv", {{1, 2, 3, 3}, {3, 2, 2, 2}, {3}}, {}});
  for (const char* pool : {"max_pool", "avg_pool", "dnnl.avg_pool"})
    cases.push_back({pool,
                     {{1, 2, 4, 5}},
                     attrs({{"kernel_shape", std::vector<std::int64_t>{2, 3}},
                            {"pads", std::vector<std::int64_t>{1, 1, 0, 1}},
                            {"count_include_pad", std::int64_t{1}}})});
  cases.push_back({"global_avg_pool", {{2, 3, 2, 2}}, {}});
  cases.push_back({"global_max_pool", {{2, 3, 2, 2}}, {}});
  cases.push_back({"where", {{2, 3}, {2, 3}, {3}}, {}});
  // Traced movement ops.
  cases.push_back({"transpose", {{2, 3, 4}}, attrs({{"perm", std::vector<std::int64_t>{2, 0, 1}}})});
  cases.push_back({"reshape", {{2, 6}}, attrs({{"shape", std::vector<std::int64_t>{3, -1}}})});
  cases.push_back({"slice",
                   {{4, 5}},
                   attrs({{"starts", std::vector<std::int64_t>{1, -1}},
                          {"ends", std::vector<std::int64_t>{3, -6}},
                          {"axes", std::vector<std::int64_t>{0, 1}},
                          {"steps", std::vector<std::int64_t>{1, -2}}})});
  cases.push_back({"concat", {{2, 3}, {1, 3}}, attrs({{"axis", std::int64_t{0}}})});
  cases.push_back({"expand", {{3, 1}}, attrs({{"shape", std::vector<std::int64_t>{2, 3, 4}}})});
  cases.push_back({"pad", {{2, 3}}, attrs({{"pads", std::vector<std::int64_t>{1, 0, 0, 2}}})});
  cases.push_back({"tile", {{2, 3}}, attrs({{"repeats", std::vector<std::int64_t>{2, 1}}})});
  cases.push_back({"split", {{4, 3}}, attrs({{"axis", std::int64_t{0}}}), 2});
  for (const Case& c : cases) check(c, rng);
}

TEST_CASE("integer division - remainder and power as every kernel computes them") {
  const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  CHECK(int_quotient(7, 2) == 3);
  CHECK(int_quotient(-7, 2) == -3);           // toward zero
  CHECK(int_quotient(lowest, -1) == lowest);  // wraps instead of trapping
  CHECK(int_quotient(5, 0) == std::nullopt);
  CHECK(int_remainder(-7, 2) == -1);  // the dividend's sign
  CHECK(int_remainder(lowest, -1) == 0);
  CHECK(int_remainder(1, 0) == std::nullopt);
  CHECK(int_power(3, 5) == 243);
  CHECK(int_power(-2, 3) == -8);
  CHECK(int_power(3, 0) == 1);
  CHECK(int_power(3, 40) == static_cast<std::int64_t>(12157665459056928801ULL));  // wraps, as numpy
  CHECK(int_power(2, -1) == 0);
  CHECK(int_power(-1, -3) == -1);
  CHECK(int_power(1, -5) == 1);
  CHECK(int_power(0, -1) == std::nullopt);
  SymContext ctx;
  Sym x = ctx.var("x"), y = ctx.var("y");
  auto at = [&](Sym e, double a, double b) { return ctx.evaluate(e.id(), [&](std::size_t v) { return v ? b : a; }); };
  CHECK(at(scalar::int_div(x, y), -9, 4) == -2);
  CHECK(at(scalar::int_rem(x, y), -9, 4) == -1);
  CHECK(at(scalar::int_pow(x, y), -3, 3) == -27);
  CHECK(std::isnan(at(scalar::int_div(x, y), 1, 0)));
  CHECK(at(scalar::fmod(x, y), -7.5, 2) == -1.5);
}

TEST_CASE("the DAG applies only exact rewrites and ops without semantics say so") {
  SymContext ctx;
  Sym x = ctx.var("x"), y = ctx.var("y");
  CHECK((x + y).id() == (y + x).id());     // commutativity
  CHECK((x - y).id() == (x + (-y)).id());  // subtraction is adding the negation
  CHECK((x + 0.0).id() == x.id());
  CHECK((x * 1.0).id() == x.id());
  CHECK((x / y).id() != (x * (1.0 / y)).id());             // not exact in IEEE: left to the prover
  CHECK((x * 0.0).id() != ctx.constant(0).id());           // inf * 0 is NaN: not folded
  CHECK(scalar::eq(x, x).id() != ctx.constant(1).id());    // NaN == NaN is false: not folded
  const OpDef* resize = OpRegistry::get().find("resize");  // (its weights are not symbolic)
  REQUIRE(resize);
  SymTensor t(ctx, DType::F32, {3});
  bool given = true;
  CHECK_THROWS_AS(
      apply_symbolic(*resize, Attrs{}, std::span<const SymTensor>(&t, 1), std::span<const bool>(&given, 1), 1),
      SymbolicUnsupported);
}

TEST_CASE("select_by_index picks a known position - requires a symbolic one to be in range") {
  SymContext ctx;
  std::vector<Sym> row{ctx.var("a"), ctx.var("b"), ctx.var("c")};
  auto element = [&](std::int64_t k) { return row[static_cast<std::size_t>(k)]; };
  CHECK(select_by_index(ctx.constant(-1), 3, element, "gather").id() == row[2].id());
  CHECK(select_by_index(ctx.constant(1), 3, element, "gather").id() == row[1].id());
  CHECK_THROWS_AS(select_by_index(ctx.constant(3), 3, element, "gather"), SymbolicUnsupported);
  CHECK(ctx.requirements().empty());
  const Sym i = ctx.var("i", true);
  const Sym picked = select_by_index(i, 3, element, "gather");
  CHECK(ctx.requirements().size() == 2);  // -3 <= i and i < 3
  // Evaluated: i = 0 and i = -3 both pick a; i = 2 and i = -1 pick c.
  for (const auto& [index, want] :
       std::vector<std::pair<double, double>>{{0, 10}, {-3, 10}, {2, 30}, {-1, 30}, {1, 20}}) {
    // Variables by index: a, b, c are 10, 20, 30; i (the fourth) the index.
    auto value = [&](std::size_t v) { return v == 3 ? index : 10.0 * static_cast<double>(v + 1); };
    CHECK(ctx.evaluate(picked.id(), value) == want);
  }
}
