// The cost model prices what the lowering runs: fused elementwise chains
// once (one kernel, the bytes it moves in and out), and the extractor
// chooses by that price.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "extract/calibration_pass.hpp"
#include "extract/cost_model.hpp"
#include "extract/extractors.hpp"
#include "ir/sat_format.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/lowering.hpp"
#include "scratch.hpp"

using namespace saturn;
using extract::ExtractionProblem;
using extract::FuseRole;

namespace {

// 1 GFLOP/s everywhere, 1 GB/s, 1 us per kernel or call: an f32 element is
// read or written in 0.004 us, one operation takes 0.001 us.
const extract::CostModel kUnit(extract::TargetSpec{"unit", 1, 1, 1, 1, 1, 1, {}, {}, {}});

double cost_of(const std::string& sat) {
  auto g = ir::read_sat(sat, "t.sat");
  if (!g) FAIL(g.error().to_string());
  auto c = extract::graph_cost(*g, kUnit);
  if (!c) FAIL(c.error().to_string());
  return *c;
}

int kernels_of(const std::string& sat) {
  auto g = ir::read_sat(sat, "t.sat");
  if (!g) FAIL(g.error().to_string());
  auto p = lower::compile_cpu(*g);
  if (!p) FAIL(p.error().to_string());
  return (*p)->fused_kernels;
}

// A 3x3 convolution (padding 1) of [1 16 8 8] by [16 16 3 3] weights
// (9216 bytes): its attributes and its source's and weights' types.
struct Conv3x3 {
  ir::Attrs attrs;
  ir::ValueType x{ir::DType::F32, ir::shape_of({1, 16, 8, 8})}, w{ir::DType::F32, ir::shape_of({16, 16, 3, 3})};
  Conv3x3() {
    attrs.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    attrs.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  }
};

ExtractionProblem::Node node(std::uint32_t cls, std::vector<std::uint32_t> children, const char* op, double cost) {
  ExtractionProblem::Node n;
  n.cls = cls;
  n.children = std::move(children);
  n.op = op;
  n.cost = cost;
  return n;
}

// A batched 4x128x128 by 4x128x64 product, which the CPU roofline prices
// at about 60 us: the op of the calibration passes with scripted times.
extract::TimedOp batched_product() {
  const ir::ValueType p{ir::DType::F32, ir::shape_of({4, 128, 128})}, v{ir::DType::F32, ir::shape_of({4, 128, 64})};
  return {ir::OpRegistry::get().find("blas.matmul"), {}, {p, v}, {{true, true}, {false, false}}, v};
}

// Answers each op of a pass its next time in `script` (by signature),
// counting each op's timings in `timed`; `last` names the op timed last.
struct ScriptedTimer {
  explicit ScriptedTimer(const std::map<std::string, std::vector<double>>& s) : script(s) {}
  const std::map<std::string, std::vector<double>>& script;
  std::map<std::string, int> timed;
  std::string last;
  std::map<const extract::TimedOp*, std::string> names;
  // The timer of a pass over `ops`, which must outlive it.
  extract::OpTimer over(const std::map<std::string, extract::TimedOp>& ops) {
    names.clear();
    for (const auto& [sig, o] : ops) names[&o] = sig;
    return [this](const extract::TimedOp& o) -> Expected<double> {
      last = names.at(&o);
      return script.at(last).at(static_cast<std::size_t>(timed[last]++));
    };
  }
};

}  // namespace

TEST_CASE("a fused elementwise chain is priced as one kernel") {
  // Alone, each op reads 4 us and writes 4 us of memory and costs 1 us of
  // overhead: exp 9 (8 us of arithmetic), neg 9, relu 9. Fused: 10 us of
  // arithmetic against 8 us of memory, one overhead.
  const std::string chain = R"((graph chain
    (input x f32 [1000])
    (node a exp (y) (x))
    (node b neg (z) (y))
    (node c relu (w) (z))
    (output w)))";
  CHECK(cost_of(chain) == Approx(11));
  CHECK(kernels_of(chain) == 1);
}

TEST_CASE("a value used twice is stored - its consumers fuse after it") {
  // y is read by two nodes: stored (9). neg and relu each used once by the
  // add: one kernel reading y twice and writing w: 3 us of arithmetic, 12
  // us of memory, one overhead.
  const std::string shared = R"((graph shared
    (input x f32 [1000])
    (node a exp (y) (x))
    (node b neg (z) (y))
    (node c relu (r) (y))
    (node d add (w) (z r))
    (output w)))";
  CHECK(cost_of(shared) == Approx(9 + 13));
  CHECK(kernels_of(shared) == 2);
  // An output is stored, even when another node uses it.
  const std::string output = R"((graph out
    (input x f32 [1000])
    (node a exp (y) (x))
    (node b neg (z) (y))
    (output y z)))";
  CHECK(cost_of(output) == Approx(9 + 9));
  CHECK(kernels_of(output) == 2);
}

TEST_CASE("an elementwise operand fuses into a reduction - a reduction's result into a broadcast does not") {
  // exp joins the sum: 8 + 1 us of arithmetic against 4 us read.
  CHECK(cost_of(R"((graph r
    (input x f32 [1000])
    (node a exp (y) (x))
    (node s reduce_sum (t) (y) :axes [0] :keepdims 0)
    (output t)))") == Approx(10));
  // The sum [1] and the division [1000] differ in size: the sum is stored.
  const double alone_sum = std::max(1.0, 4.0 + 0.004) + 1;
  const double alone_div = std::max(1.0, 4.0 + 0.004 + 4.0) + 1;
  CHECK(cost_of(R"((graph b
    (input x f32 [1000])
    (node s reduce_sum (t) (x) :axes [0] :keepdims 1)
    (node d div (w) (x t))
    (output w)))") == Approx(alone_sum + alone_div));
}

TEST_CASE("a chain softmax reads in its three kernels is priced thrice - materialized once") {
  // softmax: 5 us of arithmetic; it reads its operand in three kernels
  // (12 us) and writes 4 us, with three overheads: 19 alone.
  auto materialized = [](const std::string& op) {
    return cost_of("(graph s (input x f32 [1000]) (node a " + op +
                   " (y) (x)) (node m materialize (z) (y)) (node s softmax (w) (z) :axis -1) (output w))");
  };
  auto plain = [](const std::string& op) {
    return cost_of("(graph s (input x f32 [1000]) (node a " + op +
                   " (y) (x)) (node s softmax (w) (y) :axis -1) (output w))");
  };
  // exp (8 us of arithmetic) joined: 5 + 3 x 8 = 29 us of arithmetic
  // against 3 x 4 + 4 us of memory, three overheads: 32. Materialized: the
  // exp kernel max(8, 4 + 4) + 1 = 9, then softmax alone, 19: 28.
  CHECK(plain("exp") == Approx(32));
  CHECK(materialized("exp") == Approx(28));
  // neg (1 us) joined: max(5 + 3, 16) + 3 = 19; materialized 9 + 19 = 28.
  CHECK(plain("neg") == Approx(19));
  CHECK(materialized("neg") == Approx(28));
  // A materialize over a value already in memory costs nothing.
  CHECK(cost_of("(graph s (input x f32 [1000]) (node m materialize (z) (x)) (node s softmax (w) (z) :axis -1) "
                "(output w))") == Approx(19));
}

TEST_CASE("the kernels the cost model counts reading an operand are the lowering's") {
  // The ops the cost model prices as reading their first operand in several
  // kernels (operand_passes, extract/cost_model.cpp), built over erf(x)
  // (which none of them computes itself): the lowering computes erf in as
  // many kernels as the model counts, and in more than one.
  const std::map<std::string, std::string> graphs = {
      {"softmax", "(node s softmax (w) (y) :axis -1)"},
      {"log_softmax", "(node s log_softmax (w) (y) :axis -1)"},
      {"reduce_log_sum_exp", "(node s reduce_log_sum_exp (w) (y) :axes [1] :keepdims 1)"},
      {"layer_norm", "(node s layer_norm (w) (y g8 b8) :axis -1)"},
      {"instance_norm", "(node s instance_norm (w) (y g4 b4))"},
  };
  const ir::ValueType x{ir::DType::F32, ir::shape_of({2, 4, 8})};
  const ir::ValueType in[] = {x};
  auto passes = [&](const ir::OpDef& def) { return kUnit.price(def, ir::Attrs{}, in, x, false).fused.operand_passes; };
  for (const auto& [op, node] : graphs) {
    INFO(op);
    auto g = ir::read_sat(
        "(graph t (input x f32 [2 4 8]) (init g4 f32 [4] [1 2 3 4]) (init b4 f32 [4] [0 1 0 1])"
        " (init g8 f32 [8] [1 2 3 4 5 6 7 8]) (init b8 f32 [8] [0 1 0 1 0 1 0 1]) (node e erf (y) (x)) " +
            node + " (output w))",
        "t.sat");
    if (!g) FAIL(g.error().to_string());
    auto p = lower::compile_cpu(*g);
    if (!p) FAIL(p.error().to_string());
    int computing_erf = 0;
    for (const lower::LoopKernel& k : *(*p)->kernels) {
      const ir::SymId roots[] = {k.body, k.post};
      const auto nodes = k.ctx->reachable(roots);
      computing_erf +=
          std::any_of(nodes.begin(), nodes.end(), [&](ir::SymId id) { return k.ctx->node(id).op == ir::SymOp::Erf; });
    }
    CHECK(passes(*ir::OpRegistry::get().find(op)) > 1);
    CHECK(computing_erf == passes(*ir::OpRegistry::get().find(op)));
  }
}

TEST_CASE("the extractor picks a chain the lowering fuses over a cheaper-looking single op") {
  // Class 0 (the output): lib(1), priced 15 alone, or relu(2) with class 2
  // = neg(1). Priced op by op the chain costs 18; fused, 9.
  auto problem = [](bool neg_shared) {
    ExtractionProblem p;
    p.classes = {{0, 1}, {2}, {3}, {4}};
    auto elementwise = [](std::uint32_t cls, std::uint32_t child, const char* op) {
      ExtractionProblem::Node n = node(cls, {child}, op, 9);
      n.fused = {FuseRole::Elementwise, 1, 4, 1, 1000, {4}};
      return n;
    };
    // Class 3 = sqrt(2), a second output when neg is shared.
    p.nodes = {node(0, {1}, "lib", 15), elementwise(0, 2, "relu"), node(1, {}, "x", 0), elementwise(2, 1, "neg"),
               elementwise(3, 2, "sqrt")};
    p.fusion = true;
    p.roots = {0};
    if (neg_shared) p.roots.push_back(3);
    return p;
  };
  auto fused = extract::extract_dag_greedy(problem(false));
  CHECK(fused.choice[0] == 1);
  CHECK(fused.dag_cost == Approx(9));
  // When sqrt also reads neg, neg is stored and the chain costs 9 + 9 + 9;
  // lib leaves neg to sqrt alone, fused: 15 + 9.
  auto stored = extract::extract_dag_greedy(problem(true));
  CHECK(stored.choice[0] == 0);
  CHECK(stored.dag_cost == Approx(15 + 9));
  // Without fusion roles the DAG cost sums the nodes alone.
  auto blind = problem(false);
  blind.fusion = false;
  CHECK(extract::extract_dag_greedy(blind).choice[0] == 0);
}

TEST_CASE("a measured price replaces the roofline for timed ops - only those - and the missing ones are listed") {
  const ir::OpRegistry& r = ir::OpRegistry::get();
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 8, 16, 16})}, w{ir::DType::F32, ir::shape_of({8, 8, 3, 3})};
  const std::vector<ir::ValueType> in{x, w};
  ir::Attrs attrs;
  attrs.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  const extract::OperandFacts conv_facts{{true, true, false}, {false, true}};
  const ir::OpDef& conv = *r.find("dnnl.conv");
  CHECK(cpu->timed(conv));
  CHECK(cpu->timed(*r.find("conv")));  // a plain loop nest
  CHECK_FALSE(cpu->timed(*r.find("relu")));
  // A sum is measured (the roofline prices a broadcast product summed over
  // a middle axis 20-30x below what it runs in); a mean, an exp are not.
  CHECK(cpu->timed(*r.find("reduce_sum")));
  CHECK_FALSE(cpu->timed(*r.find("reduce_mean")));
  CHECK_FALSE(cpu->timed(*r.find("cudnn.conv")));  // another target's library
  const double roofline = cpu->cost(conv, attrs, in, x, false);

  extract::Calibration cal;
  const std::string sig = extract::op_signature(conv, attrs, in, conv_facts, x);
  CHECK(sig == "dnnl.conv :pads [1 1 1 1] (f32[1 8 16 16] w:f32[8 8 3 3]) -> f32[1 8 16 16]");
  // A graph's node without its trailing omitted operands is the same op.
  CHECK(extract::op_signature(conv, attrs, in, {{true, true}, {false, true}}, x) == sig);
  CHECK(extract::op_signature(conv, attrs, in, {{true, false, true}, {false, true}}, x) != sig);
  std::map<std::string, extract::TimedOp> missing;
  cpu->calibration = &cal;
  cpu->unmeasured = &missing;
  CHECK(cpu->price(conv, attrs, in, x, false, &conv_facts).cost == Approx(roofline));
  REQUIRE(missing.count(sig) == 1);
  CHECK(missing.at(sig).def == &conv);
  CHECK(missing.at(sig).facts.given == conv_facts.given);
  cal.us[sig] = 1234;
  CHECK(cpu->price(conv, attrs, in, x, false, &conv_facts).cost == Approx(1234));
  // The same op with its bias, or its weight as an input, is another
  // signature (whose weights are reordered at every run).
  const extract::OperandFacts as_input{{true, true, false}, {false, false}};
  const extract::TargetSpec& spec = cpu->spec();
  CHECK(cpu->price(conv, attrs, in, x, false, &as_input).cost ==
        Approx(roofline + spec.run_weights_reorder_us + 8 * 8 * 9 * 4 / (spec.run_weights_reorder_gbytes_per_s * 1e3)));
  // Elementwise ops stay modeled (they fuse), whatever the table says.
  const std::vector<ir::ValueType> one{x};
  const extract::OperandFacts relu_facts{{true}, {false}};
  cal.us[extract::op_signature(*r.find("relu"), {}, one, relu_facts, x)] = 999;
  CHECK(cpu->price(*r.find("relu"), {}, one, x, false, &relu_facts).cost < 999);
  // Symbolic shapes have no signature: never measured.
  const ir::ValueType sym{ir::DType::F32, {ir::Dim::symbol("N"), ir::Dim::of(8)}};
  CHECK(extract::op_signature(conv, attrs, std::vector<ir::ValueType>{sym, w}, conv_facts, x).empty());
}

TEST_CASE("a calibration pass times a suspect op again and keeps the faster - failures and the budget reported") {
  const ir::OpRegistry& r = ir::OpRegistry::get();
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  // Two batched products the roofline prices alike (about 60 us).
  const ir::ValueType p{ir::DType::F32, ir::shape_of({4, 128, 128})}, v{ir::DType::F32, ir::shape_of({4, 128, 64})};
  const ir::OpDef& matmul = *r.find("blas.matmul");
  const extract::TimedOp op{&matmul, {}, {p, v}, {{true, true}, {false, false}}, v};
  const double roofline = cpu->cost(matmul, {}, op.in, op.out, false);
  std::map<std::string, extract::TimedOp> ops{{"a spell", op}, {"b steady", op}, {"c slow twice", op}, {"d fails", op}};
  // What each op measures, in turn: "a spell" 20x the roofline, then right.
  std::map<std::string, std::vector<double>> script{{"a spell", {20 * roofline, roofline}},
                                                    {"b steady", {2 * roofline}},
                                                    {"c slow twice", {10 * roofline, 12 * roofline}}};
  std::map<const extract::TimedOp*, std::string> names;
  for (const auto& [sig, o] : ops) names[&o] = sig;
  std::map<std::string, int> timed;
  auto fake = [&](const extract::TimedOp& o) -> Expected<double> {
    const std::string& sig = names.at(&o);
    const int k = timed[sig]++;
    if (sig == "d fails") return Diagnostic{SourceLoc{}, "no such primitive"};
    return script.at(sig).at(static_cast<std::size_t>(k));
  };
  extract::Calibration cal;
  const auto pass = extract::run_calibration_pass(ops, cal, fake, &*cpu, 60);
  CHECK(pass.measured == 3);
  CHECK_FALSE(pass.budget_hit);
  REQUIRE(pass.failed.size() == 1);
  CHECK(pass.failed[0].op == "d fails");
  CHECK(pass.failed[0].why == "no such primitive");
  CHECK(cal.us.count("d fails") == 0);
  // Under kSecondLookRatio x the roofline: timed once, kept.
  CHECK(timed["b steady"] == 1);
  CHECK(cal.us.at("b steady") == Approx(2 * roofline));
  // Over it: timed again after the others, the faster kept.
  CHECK(timed["a spell"] == 2);
  CHECK(cal.us.at("a spell") == Approx(roofline));
  CHECK(cal.us.at("c slow twice") == Approx(10 * roofline));
  REQUIRE(pass.second_looks.size() == 2);
  CHECK(pass.second_looks[0].op == "a spell");
  CHECK(pass.second_looks[0].first_us == Approx(20 * roofline));
  CHECK(pass.second_looks[0].second_us == Approx(roofline));
  // Without a roofline nothing is suspect; with no time left, nothing is timed.
  timed.clear();
  extract::Calibration plain;
  CHECK(extract::run_calibration_pass(ops, plain, fake, nullptr, 60).second_looks.empty());
  CHECK(plain.us.at("a spell") == Approx(20 * roofline));
  extract::Calibration none;
  const auto hurried = extract::run_calibration_pass(ops, none, fake, &*cpu, -1);
  CHECK(hurried.budget_hit);
  CHECK(hurried.measured == 0);
  CHECK(none.us.empty());
}

TEST_CASE("a time far over what its op's family reaches is suspect - even under 3x the roofline") {
  // On a machine faster than the roofline's (every product at half its
  // price), a spell that stretches one product 4x leaves it under 3x the
  // roofline, but over 3x the median of the products timed in the pass.
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const extract::TimedOp op = batched_product();
  const double roofline = cpu->cost(*op.def, {}, op.in, op.out, false);
  const std::map<std::string, std::vector<double>> script{{"a", {0.5 * roofline}},
                                                          {"b", {0.5 * roofline}},
                                                          {"c", {0.5 * roofline}},
                                                          {"d stretched", {2 * roofline, 0.5 * roofline}},
                                                          {"e a bit slow", {1.2 * roofline}}};
  std::map<std::string, extract::TimedOp> ops;
  for (const auto& [sig, times] : script) ops.emplace(sig, op);
  ScriptedTimer fake{script};
  extract::Calibration cal;
  const auto pass = extract::run_calibration_pass(ops, cal, fake.over(ops), &*cpu, 60);
  REQUIRE(pass.second_looks.size() == 1);
  CHECK(pass.second_looks[0].op == "d stretched");
  CHECK(cal.us.at("d stretched") == Approx(0.5 * roofline));
  // 2.4x the family's median: kept as measured, timed once.
  CHECK(fake.timed["e a bit slow"] == 1);
  CHECK(cal.us.at("e a bit slow") == Approx(1.2 * roofline));
  // Each measurement is kept with the roofline's price.
  CHECK(cal.roofline_us.at("a") == Approx(roofline));
  CHECK(cal.roofline_us.at("d stretched") == Approx(roofline));
  // Fewer than kFamilySize products: only the roofline's bound holds.
  std::map<std::string, extract::TimedOp> few{{"a", op}, {"d stretched", op}};
  fake.timed.clear();
  extract::Calibration alone;
  CHECK(extract::run_calibration_pass(few, alone, fake.over(few), &*cpu, 60).second_looks.empty());
  CHECK(alone.us.at("d stretched") == Approx(2 * roofline));
}

TEST_CASE("a faster second measurement replaces the first - and moves its family's ratio") {
  extract::Calibration cal;
  // Three products of one family, 20, 2 and 10 times their price: ratio 10.
  cal.record("blas.matmul a", 200, 10, "blas. rows");
  cal.record("blas.matmul b", 20, 10, "blas. rows");
  cal.record("blas.matmul c", 100, 10, "blas. rows");
  REQUIRE(cal.family_ratio("blas. rows"));
  CHECK(*cal.family_ratio("blas. rows") == Approx(10));
  cal.keep_faster("blas.matmul a", 10);  // 1x: the median is now 2
  CHECK(cal.us.at("blas.matmul a") == Approx(10));
  CHECK(*cal.family_ratio("blas. rows") == Approx(2));
  CHECK(cal.roofline_us.at("blas.matmul a") == Approx(10));
  CHECK(cal.family_of.at("blas.matmul a") == "blas. rows");
  cal.keep_faster("blas.matmul c", 500);  // slower: the first stands
  CHECK(cal.us.at("blas.matmul c") == Approx(100));
  cal.keep_faster("blas.matmul unknown", 1);  // never recorded: nothing
  CHECK(cal.us.count("blas.matmul unknown") == 0);
}

TEST_CASE("an op timed while other processes were busy is timed again - whatever its ratio says") {
  // A spell over the whole pass stretches every product alike (each 1.5x
  // the roofline here, the median too): no ratio stands out, but the load
  // watch saw the spell cover "a" and "b".
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const extract::TimedOp op = batched_product();
  const double roofline = cpu->cost(*op.def, {}, op.in, op.out, false);
  const std::map<std::string, std::vector<double>> script{{"a crowded", {1.5 * roofline, 0.5 * roofline}},
                                                          {"b crowded twice", {1.5 * roofline, 1.6 * roofline}},
                                                          {"c quiet", {1.5 * roofline}}};
  std::map<std::string, extract::TimedOp> ops;
  for (const auto& [sig, times] : script) ops.emplace(sig, op);
  ScriptedTimer fake{script};
  int begun = 0;
  const extract::LoadWatch watch{
      [&] { ++begun; },
      [&] { return fake.last == "b crowded twice" || (fake.last == "a crowded" && fake.timed[fake.last] == 1); }};
  extract::Calibration cal;
  const auto pass = extract::run_calibration_pass(ops, cal, fake.over(ops), &*cpu, 60, watch);
  CHECK(begun == 5);  // every timing watched, second looks too
  CHECK(pass.crowded == 2);
  CHECK(pass.crowded_again == 1);
  REQUIRE(pass.second_looks.size() == 2);
  CHECK(pass.second_looks[0].op == "a crowded");
  CHECK(cal.us.at("a crowded") == Approx(0.5 * roofline));
  CHECK(cal.us.at("b crowded twice") == Approx(1.5 * roofline));  // the faster of two crowded timings
  CHECK(fake.timed["c quiet"] == 1);
  // Without a watch, the same times raise no suspicion.
  fake.timed.clear();
  extract::Calibration unwatched;
  const auto blind = extract::run_calibration_pass(ops, unwatched, fake.over(ops), &*cpu, 60);
  CHECK(blind.second_looks.empty());
  CHECK(blind.crowded == 0);
  CHECK(unwatched.us.at("a crowded") == Approx(1.5 * roofline));
}

TEST_CASE("a library call the calibration lacks costs the roofline times its family's ratio - when under 1") {
  const ir::OpRegistry& r = ir::OpRegistry::get();
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const extract::CostModel roofline(cpu->spec());  // never calibrated
  const extract::OperandFacts facts{{true, true}, {false, true}};
  struct Op {
    const ir::OpDef* def = nullptr;
    ir::Attrs attrs;
    std::vector<ir::ValueType> in;
    ir::ValueType out;
    double roofline = 0;
    std::string sig, family;
  };
  ir::Attrs pads;
  pads.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  auto make = [&](const char* name, std::int64_t hw, std::int64_t k = 3,
                  const extract::OperandFacts& f = {{true, true}, {false, true}}) {
    const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 8, hw, hw})};
    Op op{r.find(name), k == 3 ? pads : ir::Attrs{}, {x, {ir::DType::F32, ir::shape_of({8, 8, k, k})}}, x, 0, "", ""};
    op.roofline = roofline.price(*op.def, op.attrs, op.in, x, false, &f).cost;
    op.sig = extract::op_signature(*op.def, op.attrs, op.in, f, x);
    op.family = extract::op_family(*op.def, op.attrs, op.in, x, f);
    return op;
  };
  // 3x3 oneDNN convolutions of three ops, measured at 0.4, 0.5 and 3 times
  // the roofline; two more never; one written directly (no roofline price
  // kept). They are one family: alternatives of one computation scale alike.
  const std::vector<Op> ops{make("dnnl.conv", 8),  make("dnnl.conv_relu", 16), make("dnnl.wino_conv", 32),
                            make("dnnl.conv", 64), make("dnnl.conv_relu", 24), make("dnnl.conv", 12)};
  for (const Op& op : ops) CHECK(op.family == "dnnl. spatial");
  extract::Calibration cal;
  cpu->calibration = &cal;
  auto priced = [&](const Op& op, const extract::OperandFacts& f = {{true, true}, {false, true}}) {
    return cpu->price(*op.def, op.attrs, op.in, op.out, false, &f).cost;
  };
  auto record = [&](const Op& op, double ratio) { cal.record(op.sig, ratio * op.roofline, op.roofline, op.family); };
  record(ops[0], 0.4);
  record(ops[1], 0.5);
  cal.us[ops[5].sig] = 10 * ops[5].roofline;
  // Two measured: no ratio yet.
  CHECK_FALSE(cal.family_ratio("dnnl. spatial"));
  CHECK(priced(ops[3]) == Approx(ops[3].roofline));
  record(ops[2], 3);
  REQUIRE(cal.family_ratio("dnnl. spatial"));
  CHECK(*cal.family_ratio("dnnl. spatial") == Approx(0.5));  // the median, not the mean
  CHECK(priced(ops[3]) == Approx(0.5 * ops[3].roofline));
  CHECK(priced(ops[4]) == Approx(0.5 * ops[4].roofline));
  // The measured ones cost what they measured.
  CHECK(priced(ops[2]) == Approx(3 * ops[2].roofline));
  CHECK(priced(ops[5]) == Approx(10 * ops[5].roofline));
  // Read from memory, a family of its own; without a ratio of its own, its
  // calls in the cache lend theirs.
  extract::OperandFacts streaming = facts;
  streaming.weights_from_memory = true;
  const Op from_memory = make("dnnl.conv", 64, 3, streaming);
  CHECK(from_memory.family == "dnnl. spatial weights from memory");
  CHECK(from_memory.sig == ops[3].sig + " weights from memory");
  CHECK(priced(from_memory, streaming) == Approx(0.5 * from_memory.roofline));
  // Other families: 1x1 convolutions, depthwise ones, weights computed at
  // run time (no family), plain loop nests (none): the roofline alone.
  const Op pointwise = make("dnnl.conv", 16, 1);
  CHECK(pointwise.family == "dnnl. pointwise");
  CHECK(priced(pointwise) == Approx(pointwise.roofline));
  const extract::OperandFacts computed{{true, true}, {false, false}};
  const Op scaled_weights = make("dnnl.conv", 16, 3, computed);
  CHECK(scaled_weights.family.empty());
  CHECK(priced(scaled_weights, computed) == Approx(scaled_weights.roofline));
  const Op loop = make("conv", 16);
  CHECK(loop.family.empty());
  CHECK(priced(loop) == Approx(loop.roofline));
  // Products of one row and of rows are families apart; one measured
  // slower than priced keeps the roofline's price.
  const ir::OpDef& matmul = *r.find("blas.matmul");
  const extract::OperandFacts plain{{true, true}, {false, true}};
  auto product = [&](std::int64_t m, std::int64_t k) {
    const ir::ValueType a{ir::DType::F32, ir::shape_of({m, k})}, w{ir::DType::F32, ir::shape_of({k, 64})};
    const ir::ValueType o{ir::DType::F32, ir::shape_of({m, 64})};
    Op op{&matmul, {}, {a, w}, o, 0, "", ""};
    op.roofline = roofline.price(matmul, {}, op.in, o, false, &plain).cost;
    op.sig = extract::op_signature(matmul, {}, op.in, plain, o);
    op.family = extract::op_family(matmul, {}, op.in, o, plain);
    return op;
  };
  CHECK(product(1, 64).family == "blas. one row");
  CHECK(product(8, 64).family == "blas. rows");
  for (std::int64_t k : {16, 32, 64}) record(product(8, k), 2);
  CHECK(*cal.family_ratio("blas. rows") == Approx(2));
  const Op slower = product(8, 128);
  CHECK(cpu->price(matmul, {}, slower.in, slower.out, false, &plain).cost == Approx(slower.roofline));
  // A measurement without a roofline price leaves its family: measured
  // again so, the third call no longer counts.
  cal.record(ops[2].sig, 3 * ops[2].roofline, 0, ops[2].family);
  CHECK(cal.roofline_us.count(ops[2].sig) == 0);
  CHECK_FALSE(cal.family_ratio("dnnl. spatial"));
  // Read back from its file, the ratios are the same.
  record(ops[2], 3);
  cal.target = "cpu";
  cal.machine = "m";
  const std::string path = saturn::test::scratch_file("family-calibration.json").string();
  REQUIRE(cal.save(path));
  auto back = extract::Calibration::load(path, "cpu", "m");
  REQUIRE(back);
  CHECK(back->roofline_us == cal.roofline_us);
  CHECK(back->family_of == cal.family_of);
  CHECK(back->family == cal.family);
  CHECK(back->family.size() == 2);
  // A file written before roofline prices were kept: measurements, no ratios.
  auto write = [&](const std::string& rest) {
    std::ofstream(path) << R"({"format": )" << extract::Calibration::kFormat
                        << R"(, "target": "cpu", "machine": "m", "entries": {")" << ops[0].sig << R"(": 3})" << rest
                        << "}";
  };
  write("");
  auto old = extract::Calibration::load(path, "cpu", "m");
  REQUIRE(old);
  CHECK(old->us.size() == 1);
  CHECK(old->family.empty());
  for (const std::string& bad :
       {R"(, "roofline": {")" + ops[0].sig + R"(": 0})", R"(, "families": {")" + ops[0].sig + R"(": "blas. rows"})"}) {
    write(bad);
    auto refused = extract::Calibration::load(path, "cpu", "m");
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().to_string(), Catch::Contains(path));
    CHECK_THAT(refused.error().to_string(), Catch::Contains(ops[0].sig));
  }
}

TEST_CASE("calibration files: written and read back - another machine's ignored - a malformed one named") {
  const auto dir = saturn::test::scratch_dir() / "calibration";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "sub" / "c.json").string();
  extract::Calibration c;
  c.target = "cpu";
  c.machine = "test CPU, 2 threads";
  c.us["blas.matmul (f32[2 2] w:f32[2 2]) -> f32[2 2]"] = 1.5;
  REQUIRE(c.save(path));
  auto back = extract::Calibration::load(path, "cpu", "test CPU, 2 threads");
  REQUIRE(back);
  CHECK(back->us == c.us);
  auto other = extract::Calibration::load(path, "cpu", "test CPU, 1 thread");
  REQUIRE(other);
  CHECK(other->us.empty());
  // No machine given: the file's own (pricing for a machine that is not this one).
  auto theirs = extract::Calibration::load(path, "cpu", "");
  REQUIRE(theirs);
  CHECK(theirs->machine == "test CPU, 2 threads");
  CHECK(theirs->us == c.us);
  auto other_target = extract::Calibration::load(path, "cuda", "");
  REQUIRE(other_target);
  CHECK(other_target->us.empty());
  auto none = extract::Calibration::load((dir / "missing.json").string(), "cpu", "x");
  REQUIRE(none);
  CHECK(none->us.empty());
  {
    std::ofstream(path) << R"({"format": )" << extract::Calibration::kFormat
                        << R"(, "target": "cpu", "machine": "m", "entries": {"op": -1}})";
  }
  auto negative = extract::Calibration::load(path, "cpu", "m");
  REQUIRE_FALSE(negative);
  CHECK_THAT(negative.error().to_string(), Catch::Contains(path));
  CHECK(extract::Calibration::default_path("cpu", "a") != extract::Calibration::default_path("cpu", "b"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("an op that moves little enough is priced at the cache's rate - a larger one at memory's") {
  // 1 GB/s from memory, 10 GB/s for ops moving at most 100 KB: relu of
  // 10,000 f32 elements moves 80 KB (8 us at 10 GB/s), of 100,000 elements
  // 800 KB (800 us at 1 GB/s); 1 us of overhead each, arithmetic far below.
  extract::TargetSpec spec{"cached", 1e6, 1, 1, 1, 1, 1, {}, {}, {}};
  spec.cache_bytes = 100e3;
  spec.cache_gbytes_per_s = 10;
  const extract::CostModel cached(spec);
  const ir::OpDef& relu = *ir::OpRegistry::get().find("relu");
  const ir::ValueType small{ir::DType::F32, {ir::Dim::of(10000)}};
  const ir::ValueType large{ir::DType::F32, {ir::Dim::of(100000)}};
  CHECK(cached.price(relu, {}, std::vector<ir::ValueType>{small}, small, false).cost == Approx(9));
  CHECK(cached.price(relu, {}, std::vector<ir::ValueType>{large}, large, false).cost == Approx(801));
  // The shipped CPU model knows a cache; the CUDA one prices memory alone.
  CHECK(extract::CostModel::for_target("cpu")->spec().cache_bytes > 0);
  CHECK(extract::CostModel::for_target("cuda")->spec().cache_bytes == 0);
}

TEST_CASE("max pooling is priced as the loop over its windows - plus the pad copy - oneDNN's plus its NaN scan") {
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const auto& registry = ir::OpRegistry::get();
  const ir::OpDef* windows = registry.find("windows");
  const ir::OpDef* reduce_max = registry.find("reduce_max");
  const ir::OpDef* loop = registry.find("max_pool");
  const ir::OpDef* dnnl = registry.find("dnnl.max_pool");
  ir::Attrs w;
  w.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  w.set("strides", std::vector<std::int64_t>{2, 2});
  const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 64, 111, 111})};
  const ir::ValueType taps{ir::DType::F32, ir::shape_of({1, 64, 55, 55, 3, 3})};
  const ir::ValueType pooled{ir::DType::F32, ir::shape_of({1, 64, 55, 55})};
  auto cost = [&](const ir::OpDef* op, const ir::Attrs& a, const ir::ValueType& in, const ir::ValueType& out) {
    return cpu->cost(*op, a, std::vector<ir::ValueType>{in}, out, false);
  };
  // SqueezeNet's pools (windows inside x): the loop, 1.7 M taps at the
  // loop rate (27 us) and a kernel's overhead, below oneDNN's call, which
  // scans its 3.2 MB source for a NaN too.
  CHECK(cpu->timed(*loop));  // (a calibration measures it)
  const double as_loop = cost(loop, w, x, pooled);
  const double as_call = cost(dnnl, w, x, pooled);
  CHECK(as_loop == Approx(64 * 55 * 55 * 9 / 64e3 + 1).epsilon(0.01));
  CHECK(as_call == Approx(as_loop + 64 * 111 * 111 * 4 / 150e3).epsilon(0.01));
  // Its decomposed form: the windows a view priced as a copy (an upper
  // bound), their maximum read in full: above the op.
  ir::Attrs last;
  last.set("axes", std::vector<std::int64_t>{4, 5});
  last.set("keepdims", std::int64_t{0});
  CHECK(cost(windows, w, x, taps) + cost(reduce_max, last, taps, pooled) > 2 * as_loop);
  // ResNet's stem pool reads past x (padding 1): the loop first copies x
  // padded, 3.2 + 3.3 MB at the copy rate and a call; oneDNN's does not.
  ir::Attrs padded = w;
  padded.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  const ir::ValueType stem{ir::DType::F32, ir::shape_of({1, 64, 112, 112})};
  const ir::ValueType stem_out{ir::DType::F32, ir::shape_of({1, 64, 56, 56})};
  const double copy = 5 + (112.0 * 112 + 114 * 114) * 64 * 4 / 100e3;
  CHECK(cost(loop, padded, stem, stem_out) == Approx(cost(loop, w, stem, stem_out) + copy).epsilon(0.01));
  CHECK(cost(loop, padded, stem, stem_out) > cost(dnnl, padded, stem, stem_out));
  // ceil_mode's last window past the end: 111 -> 56 windows read 113.
  ir::Attrs ceil = w;
  ceil.set("ceil_mode", std::int64_t{1});
  const ir::ValueType ceil_x{ir::DType::F32, ir::shape_of({1, 64, 112, 112})};
  CHECK(cost(loop, ceil, ceil_x, stem_out) ==
        Approx(cost(loop, w, ceil_x, stem_out) + 5 + (112.0 * 112 + 113 * 113) * 64 * 4 / 100e3).epsilon(0.01));
}

TEST_CASE("an activation post-op adds its arithmetic at the loop rate - no memory pass") {
  // Loops at 2 GFLOP/s, the library at 1, 1 GB/s, 1 us a call.
  const extract::CostModel m(extract::TargetSpec{"post-ops", 2, 1, 1, 1, 1, 1, {"dnnl."}, {}, {}});
  // [1 32 8 8] by [32 32 1 1]: 131 072 flops (131 us), 16 KB in and 4 KB of
  // weights (20.5 us); 2048 results.
  auto price = [&](const char* op) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{1, 1});
    const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 32, 8, 8})};
    const ir::ValueType w{ir::DType::F32, ir::shape_of({32, 32, 1, 1})};
    return m.price(*ir::OpRegistry::get().find(op), a, std::vector<ir::ValueType>{x, w}, x, false).cost;
  };
  const double conv = 2 * 2048 * 32 / 1e3 + 1;
  CHECK(price("dnnl.conv") == Approx(conv));
  CHECK(price("dnnl.conv_relu") == Approx(conv + 2048 * 1 / 2e3));
  CHECK(price("dnnl.conv_hard_swish") == Approx(conv + 2048 * 4 / 2e3));
  CHECK(price("dnnl.conv_silu") == Approx(conv + 2048 * 11 / 2e3));  // sigmoid's 10 and the mul
  CHECK(price("dnnl.cl_conv_silu") == Approx(price("dnnl.conv_silu")));
}

TEST_CASE("a depthwise convolution's post-op costs depthwise_post_op_factor times its arithmetic") {
  extract::TargetSpec spec{"post-ops", 2, 1, 1, 1, 1, 1, {"dnnl."}, {}, {}};
  spec.depthwise_post_op_factor = 3;
  const extract::CostModel m(spec);
  // [1 32 8 8] by [32 1 3 3] in 32 groups: 2048 results.
  auto price = [&](const char* op, std::int64_t group) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    a.set("group", group);
    const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 32, 8, 8})};
    const ir::ValueType w{ir::DType::F32, ir::shape_of({32, 32 / group, 3, 3})};
    return m.price(*ir::OpRegistry::get().find(op), a, std::vector<ir::ValueType>{x, w}, x, false).cost;
  };
  CHECK(price("dnnl.conv_silu", 32) - price("dnnl.conv", 32) == Approx(3 * 2048 * 11 / 2e3));
  CHECK(price("dnnl.conv_hard_swish", 32) - price("dnnl.conv", 32) == Approx(3 * 2048 * 4 / 2e3));
  CHECK(price("dnnl.conv_silu", 1) - price("dnnl.conv", 1) == Approx(2048 * 11 / 2e3));
  // Grouped but not depthwise (4 channels a group): as any post-op.
  CHECK(price("dnnl.conv_silu", 8) - price("dnnl.conv", 8) == Approx(2048 * 11 / 2e3));
}

TEST_CASE("a grouped convolution in oneDNN's blocked layout pays its reorders - channels last pays its kernel's rate") {
  // 1 GFLOP/s, 1 GB/s, 1 us a call; reorders 10 us and 1 GB/s; channels
  // last at half the rate, a quarter where 16 divides the groups.
  extract::TargetSpec spec{"grouped", 1, 1, 1, 1, 1, 1, {"dnnl."}, {}, {}};
  spec.grouped_conv_reorder_us = 10;
  spec.reorder_gbytes_per_s = 1;
  spec.channels_last_efficiency = 0.5;
  spec.channels_last_g16_efficiency = 0.25;
  const extract::CostModel m(spec);
  const ir::OpDef& blocked = *ir::OpRegistry::get().find("dnnl.conv");
  const ir::OpDef& channels_last = *ir::OpRegistry::get().find("dnnl.cl_conv");
  // [1 32 8 8] by [32 32/g 1 1]: 2 * 64 * 32 * 32/g flops; 8 KB in, 8 KB
  // out, 4 KB / g of weights.
  auto price = [&](const ir::OpDef& def, std::int64_t groups) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{1, 1});
    a.set("group", groups);
    const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 32, 8, 8})};
    const ir::ValueType w{ir::DType::F32, ir::shape_of({32, 32 / groups, 1, 1})};
    return m.price(def, a, std::vector<ir::ValueType>{x, w}, x, false).cost;
  };
  const double flops_us = 2 * 64 * 32 * 32 / 1e3;  // at 1 GFLOP/s, ungrouped
  // Grouped (2, or 16 groups): the blocked call moves source and result
  // twice more (4 x 8192 bytes at 1 GB/s) after 10 us.
  CHECK(price(blocked, 2) == Approx(std::max(flops_us / 2, (16384 + 2048) / 1e3) + 1 + 10 + 4 * 8.192));
  CHECK(price(channels_last, 2) == Approx(std::max(flops_us / 2 / 0.5, (16384 + 2048) / 1e3) + 1));
  CHECK(price(channels_last, 16) == Approx(std::max(flops_us / 16 / 0.25, (16384 + 256) / 1e3) + 1));
  // Depthwise (32 groups of one channel) and ungrouped: the same kernel
  // either way, nothing added.
  CHECK(price(blocked, 32) == Approx(price(channels_last, 32)));
  CHECK(price(blocked, 1) == Approx(std::max(flops_us, (16384 + 4096) / 1e3) + 1));
}

TEST_CASE("a reshape of a transposed value is priced as the copy the lowering makes - one that stays a view is not") {
  // [2 3 4] transposed to [2 4 3]: merging its last two dims (strides 1
  // and 4) needs a copy, splitting one of them does not. The unit model
  // prices the copy as a kernel: 1 us plus 96 bytes read and 96 written at
  // 1 GB/s. The transpose itself is priced alike either way.
  const auto shuffle = [](const char* shape) {
    return std::string(R"((graph shuffle
      (input x f32 [2 3 4])
      (node t transpose (y) (x) :perm [0 2 1])
      (node r reshape (z) (y) :shape )") +
           shape + R"()
      (output z)))";
  };
  const double transpose = 1 + 0.192;
  CHECK(cost_of(shuffle("[2 12]")) == Approx(transpose + 1 + 0.192));
  CHECK(cost_of(shuffle("[2 2 2 3]")) == Approx(transpose + 0.01));
  // The lowering agrees: a copy step before the output's in the first
  // program only.
  const auto copies = [&](const char* shape) {
    auto g = ir::read_sat(shuffle(shape), "t.sat");
    REQUIRE(g);
    auto p = lower::compile_cpu(*g);
    REQUIRE(p);
    int n = 0;
    for (const lower::Step& s : (*p)->steps) n += s.label.rfind("output copy", 0) != 0;
    return n;
  };
  CHECK(copies("[2 12]") == 1);
  CHECK(copies("[2 2 2 3]") == 0);
  // A target's own copy rate replaces the kernel's.
  extract::TargetSpec spec{"copies", 1, 1, 1, 1, 1, 1, {}, {}, {}};
  spec.copy_call_us = 5;
  spec.copy_gbytes_per_s = 0.1;
  const extract::CostModel m(spec);
  const ir::ValueType x{ir::DType::F32, ir::shape_of({2, 3, 4})}, y{ir::DType::F32, ir::shape_of({2, 4, 3})};
  ir::Attrs perm;
  perm.set("perm", std::vector<std::int64_t>{0, 2, 1});
  ir::Attrs to;
  to.set("shape", std::vector<std::int64_t>{2, 12});
  const ir::OpDef& reshape = *ir::OpRegistry::get().find("reshape");
  const ir::OpDef& transpose_op = *ir::OpRegistry::get().find("transpose");
  const ir::ValueType z{ir::DType::F32, ir::shape_of({2, 12})};
  auto after =
      m.price_after(reshape, to, std::vector<ir::ValueType>{y}, z, transpose_op, perm, std::vector<ir::ValueType>{x});
  REQUIRE(after);
  CHECK(*after == Approx(5 + 192 / 100.0));
  // After anything but a transpose, a reshape is what price() says.
  CHECK_FALSE(m.price_after(reshape, to, std::vector<ir::ValueType>{y}, z, *ir::OpRegistry::get().find("relu"), {},
                            std::vector<ir::ValueType>{y}));
}

TEST_CASE("a max over windows is priced as the max_pool of the windows' operand - measured once calibrated") {
  // reduce_max(windows(x)) is the loop a max_pool of x runs; priced as a
  // plain reduction it was never measured, and a calibration that measured
  // oneDNN's pooling left it at the roofline's price (resnet18's stem
  // pooling: 55 us modeled, 0.84 ms run).
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  const ir::ValueType x{ir::DType::F32, ir::shape_of({1, 64, 113, 113})};
  const ir::ValueType windows{ir::DType::F32, ir::shape_of({1, 64, 56, 56, 3, 3})};
  const ir::ValueType pooled{ir::DType::F32, ir::shape_of({1, 64, 56, 56})};
  ir::Attrs window;
  window.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  window.set("strides", std::vector<std::int64_t>{2, 2});
  ir::Attrs over_windows;
  over_windows.set("axes", std::vector<std::int64_t>{4, -1});
  over_windows.set("keepdims", std::int64_t{0});
  const ir::OpDef& reduce_max = *r.find("reduce_max");
  const auto after = [&](const ir::Attrs& reduce, const ir::ValueType& out, const char* producer = "windows") {
    return cpu->price_after(reduce_max, reduce, std::vector<ir::ValueType>{windows}, out, *r.find(producer), window,
                            std::vector<ir::ValueType>{x});
  };
  const extract::OperandFacts facts{{true}, {false}};
  const double pool =
      cpu->price(*r.find("max_pool"), window, std::vector<ir::ValueType>{x}, pooled, false, &facts).cost;
  REQUIRE(after(over_windows, pooled));
  CHECK(*after(over_windows, pooled) == Approx(pool));
  // Measured: the max_pool is a timed op, listed for the calibration and
  // then priced at what it took.
  extract::Calibration cal;
  std::map<std::string, extract::TimedOp> missing;
  cpu->calibration = &cal;
  cpu->unmeasured = &missing;
  after(over_windows, pooled);
  const std::string sig =
      extract::op_signature(*r.find("max_pool"), window, std::vector<ir::ValueType>{x}, facts, pooled);
  REQUIRE(missing.count(sig) == 1);
  cal.us[sig] = 435;
  CHECK(*after(over_windows, pooled) == Approx(435));
  // A max over other axes, one that keeps them, or over another producer
  // is priced as price() says.
  ir::Attrs other = over_windows;
  other.set("axes", std::vector<std::int64_t>{1});
  CHECK_FALSE(after(other, ir::ValueType{ir::DType::F32, ir::shape_of({1, 56, 56, 3, 3})}));
  ir::Attrs kept = over_windows;
  kept.set("keepdims", std::int64_t{1});
  CHECK_FALSE(after(kept, ir::ValueType{ir::DType::F32, ir::shape_of({1, 64, 56, 56, 1, 1})}));
  CHECK_FALSE(after(over_windows, pooled, "relu"));
}

TEST_CASE("a concat that extends a concat along its axis is priced by the operands it writes") {
  // c1 = concat(a, b), c2 = concat(c1, d) along the same axis: c2 copies
  // only d into the buffer c1 shares (read 40 bytes, write 40), 1 us a
  // kernel. Along another axis it copies all its operands (read 160,
  // write 160).
  const std::string chained = R"((graph chain
    (input a f32 [10 1]) (input b f32 [10 1]) (input d f32 [20 1])
    (node c1 concat (u) (a b) :axis 0)
    (node c2 concat (v) (u d) :axis 0)
    (output v)))";
  const std::string across = R"((graph across
    (input a f32 [10 1]) (input b f32 [10 1]) (input d f32 [20 1])
    (node c1 concat (u) (a b) :axis 0)
    (node c2 concat (v) (u d) :axis 1)
    (output v)))";
  const double first = 1 + 0.160;  // 80 bytes read, 80 written
  CHECK(cost_of(chained) == Approx(first + 1 + 0.160));
  CHECK(cost_of(across) == Approx(first + 1 + 0.320));
}

TEST_CASE("the extractor weighs a producer by what it costs its consumer's layout") {
  // Class 0 (the output): a reshape of class 1, free as a view, 10 after
  // class 1's transpose (a copy). Class 1: the transpose (1) or another
  // node (3), both of class 2 (an input). The transpose looks cheaper
  // alone; with the copy it costs 11 against 3.01.
  ExtractionProblem p;
  p.classes = {{0}, {1, 2}, {3}};
  ExtractionProblem::Node reshape = node(0, {1}, "reshape", 0.01);
  reshape.layout = {{1}, 10};
  p.nodes = {reshape, node(1, {2}, "transpose", 1), node(1, {2}, "other", 3), node(2, {}, "x", 0)};
  p.roots = {0};
  CHECK(extract::dag_cost(p, {0, 1, 3}) == Approx(11));
  CHECK(extract::tree_cost(p, {0, 1, 3}) == Approx(11));
  CHECK(extract::dag_cost(p, {0, 2, 3}) == Approx(3.01));
  auto x = extract::extract_dag_greedy(p);
  CHECK(x.choice[1] == 2);
  CHECK(x.dag_cost == Approx(3.01));
  // Without the layout price the transpose wins.
  p.nodes[0].layout = {};
  CHECK(extract::extract_dag_greedy(p).choice[1] == 1);
}

TEST_CASE("weights too many for the cache are priced read from memory - Winograd's larger form too") {
  // 1 TFLOP/s for the library, 1000 GB/s in memory; weights of a program
  // over 1 MB come from memory at 1 GB/s, Winograd's at twice their bytes.
  extract::TargetSpec spec{"streams", 1, 1, 1000, 1000, 1, 1, {"dnnl."}, {}, {}};
  spec.weight_cache_bytes = 1e6;
  spec.weight_gbytes_per_s = 1;
  spec.weight_expansion = {{"dnnl.wino_", 2.0}};
  extract::CostModel m(spec);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  // 9216 bytes of weights (9.2 us at 1 GB/s).
  const Conv3x3 conv;
  const ir::Attrs& a = conv.attrs;
  const ir::ValueType &x = conv.x, &w = conv.w;
  const std::vector<ir::ValueType> in{x, w};
  const extract::OperandFacts facts{{true, true}, {false, true}};
  const double flops_us = 2.0 * 64 * 16 * 16 * 9 / 1e6;  // 0.3 us
  const double moved_us = (4096 + 9216 + 4096) / 1e6;
  auto price = [&](const char* op, const extract::OperandFacts* f) {
    return m.price(*r.find(op), a, in, x, false, f).cost;
  };
  m.program_weight_bytes = 1e6;  // fits: priced as any operand
  CHECK_FALSE(m.weights_stream());
  CHECK(price("dnnl.conv", &facts) == Approx(std::max(flops_us, moved_us) + 1));
  m.program_weight_bytes = 2e6;
  CHECK(m.weights_stream());
  CHECK(price("dnnl.conv", &facts) == Approx(9.216 + 1));
  CHECK(price("dnnl.wino_conv", &facts) == Approx(2 * 9.216 + 1));
  // Which operands are weights the facts say: none, nothing from memory.
  const extract::OperandFacts no_weight{{true, true}, {false, false}};
  CHECK(price("dnnl.conv", &no_weight) == Approx(std::max(flops_us, moved_us) + 1));
  // A loop reading a weight reads it from memory too: a broadcast product
  // by a [1000 1000] weight moves 4 MB of it (4000 us at 1 GB/s).
  const ir::ValueType row{ir::DType::F32, ir::shape_of({1, 1000})}, big{ir::DType::F32, ir::shape_of({1000, 1000})};
  const extract::OperandFacts mul_facts{{true, true}, {false, true}};
  const extract::NodePrice mul =
      m.price(*r.find("mul"), {}, std::vector<ir::ValueType>{row, big}, big, false, &mul_facts);
  CHECK(mul.cost > 4000);
  REQUIRE(mul.fused.read_us.size() == 2);
  CHECK(mul.fused.read_us[1] == Approx(4000));
  CHECK(mul.fused.read_us[0] < 1);
  // A calibration keeps the times apart: the signature says so, and the op
  // listed to measure carries it to the timing.
  extract::Calibration cal;
  std::map<std::string, extract::TimedOp> missing;
  m.calibration = &cal;
  m.unmeasured = &missing;
  price("dnnl.conv", &facts);
  REQUIRE(missing.size() == 1);
  CHECK(missing.begin()->first ==
        "dnnl.conv :kernel_shape [3 3] :pads [1 1 1 1] (f32[1 16 8 8] w:f32[16 16 3 3]) -> f32[1 16 8 8] weights from "
        "memory");
  CHECK(missing.begin()->second.facts.weights_from_memory);
  cal.us[missing.begin()->first] = 77;
  CHECK(price("dnnl.conv", &facts) == Approx(77));
  m.program_weight_bytes = 0;
  CHECK(price("dnnl.conv", &facts) == Approx(std::max(flops_us, moved_us) + 1));  // (the hot time: not measured)
  // The shipped CPU model streams them past 32 MB; the GPU's never.
  CHECK(extract::CostModel::for_target("cpu")->spec().weight_cache_bytes == Approx(32e6));
  CHECK(extract::CostModel::for_target("cuda")->spec().weight_cache_bytes == 0);
}

TEST_CASE("a call in a blocked layout of its own pays the conversion of each activation and of its result") {
  // 10 us and 1 GB/s a converted value: Winograd's convolution converts its
  // source, the value it adds and its result (three values, 4 KB each);
  // the direct one converts nothing.
  extract::TargetSpec spec{"blocked", 1, 1, 1000, 1000, 1, 1, {"dnnl."}, {}, {}};
  spec.blocked_layout_calls = {"dnnl.wino_"};
  spec.blocked_reorder_us = 10;
  spec.blocked_reorder_gbytes_per_s = 1;
  const extract::CostModel m(spec);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  const Conv3x3 conv;
  const ir::Attrs& a = conv.attrs;
  const ir::ValueType &x = conv.x, &w = conv.w;
  const ir::ValueType b{ir::DType::F32, ir::shape_of({16})};
  const std::vector<ir::ValueType> in{x, w, b, x};
  const extract::OperandFacts facts{{true, true, true, true}, {false, true, true, false}};
  const double direct = m.price(*r.find("dnnl.conv_add"), a, in, x, false, &facts).cost;
  const double winograd = m.price(*r.find("dnnl.wino_conv_add"), a, in, x, false, &facts).cost;
  CHECK(winograd - direct == Approx(3 * (10 + 4.096)));
  // Without facts, operand 0 is the activation.
  const double alone = m.price(*r.find("dnnl.wino_conv"), a, std::vector<ir::ValueType>{x, w}, x, false).cost;
  CHECK(alone - m.price(*r.find("dnnl.conv"), a, std::vector<ir::ValueType>{x, w}, x, false).cost ==
        Approx(2 * (10 + 4.096)));
}

TEST_CASE("a library convolution whose weights are computed at run time pays their reorder - constant ones do not") {
  // 12 us and 1 GB/s: 16x16x3x3 weights (9216 bytes) scaled at run time.
  extract::TargetSpec spec{"reorders", 1, 1, 1000, 1000, 1, 1, {"dnnl."}, {}, {}};
  spec.run_weights_reorder_us = 12;
  spec.run_weights_reorder_gbytes_per_s = 1;
  const extract::CostModel m(spec);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  const Conv3x3 conv;
  const ir::Attrs& a = conv.attrs;
  const ir::ValueType &x = conv.x, &w = conv.w;
  const std::vector<ir::ValueType> in{x, w};
  const extract::OperandFacts constant{{true, true}, {false, true}}, computed{{true, true}, {false, false}};
  for (const char* op : {"dnnl.conv", "dnnl.conv_relu"}) {
    INFO(op);
    const double once = m.price(*r.find(op), a, in, x, false, &constant).cost;
    CHECK(m.price(*r.find(op), a, in, x, false, &computed).cost - once == Approx(12 + 9.216));
  }
  // A product's weights are read as they are.
  const ir::ValueType p{ir::DType::F32, ir::shape_of({16, 16})};
  const std::vector<ir::ValueType> pin{p, p};
  CHECK(m.price(*r.find("blas.matmul"), {}, pin, p, false, &computed).cost ==
        m.price(*r.find("blas.matmul"), {}, pin, p, false, &constant).cost);
}

TEST_CASE("a sum, max or min that keeps the innermost axis is priced at its slower rate - along it is not") {
  // Loops at 1 GFLOP/s, memory far faster; a sum across rows at a tenth of
  // that: [4 100 50] summed over its middle axis, 20,000 additions.
  extract::TargetSpec spec{"rows", 1, 1, 1, 1e6, 0, 0, {}, {}, {}};
  spec.across_rows_reduce_efficiency = 0.1;
  const extract::CostModel m(spec);
  auto price = [&](std::vector<std::int64_t> dims, std::vector<std::int64_t> axes, const char* op = "reduce_sum") {
    ir::Attrs a;
    a.set("axes", axes);
    a.set("keepdims", std::int64_t{1});
    const ir::ValueType x{ir::DType::F32, ir::shape_of(dims)};
    ir::ValueType out = x;
    for (std::int64_t ax : axes) out.shape[static_cast<std::size_t>(ax < 0 ? ax + 3 : ax)] = ir::Dim::of(1);
    return m.price(*ir::OpRegistry::get().find(op), a, std::vector<ir::ValueType>{x}, out, false);
  };
  const extract::NodePrice across = price({4, 100, 50}, {1});
  CHECK(across.cost == Approx(200).epsilon(0.01));
  CHECK(across.fused.compute_us == Approx(200).epsilon(0.01));  // (what the chain fused into it pays)
  CHECK(price({4, 100, 50}, {0}).cost == Approx(200).epsilon(0.01));
  CHECK(price({4, 100, 50}, {2}).cost == Approx(20).epsilon(0.01));
  CHECK(price({4, 100, 50}, {-1}).cost == Approx(20).epsilon(0.01));
  CHECK(price({4, 100, 50}, {1, 2}).cost == Approx(20).epsilon(0.01));
  CHECK(price({400, 50, 1}, {1}).cost == Approx(20).epsilon(0.01));  // (rows of one element: contiguous)
  // The same loop for a max or a min (swin_t's q, k, v picked by a max over
  // axis 0 of a one-hot where).
  for (const char* op : {"reduce_max", "reduce_min"}) {
    INFO(op);
    CHECK(price({4, 100, 50}, {0}, op).cost == Approx(200).epsilon(0.01));
    CHECK(price({4, 100, 50}, {2}, op).cost == Approx(20).epsilon(0.01));
  }
}
