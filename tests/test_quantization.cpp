// Quantized models: round, quantize_linear and dequantize_linear as ONNX's
// reference computes them, quantized_conv as its composition, QDQ graphs
// optimized into oneDNN int8 convolutions on the CPU, and a model quantized
// by ONNX Runtime (docs/examples/models/quantized) against ONNX Runtime's
// output.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <random>

#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "ir/op.hpp"
#include "ir/sat_format.hpp"
#include "pipeline/optimize.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"

using namespace saturn;
using namespace saturn::ir;
namespace fs = std::filesystem;

namespace {

Tensor apply(const std::string& op, std::vector<Tensor> args, Attrs a = {}) {
  const OpDef* d = OpRegistry::get().find(op);
  REQUIRE(d != nullptr);
  std::vector<TypedInput> ins;
  for (auto& t : args) ins.push_back(TypedInput{{t.dtype(), shape_of(t.dims())}, &t, true});
  const std::vector<ValueType> types = d->infer(a, ins, 1);
  bool given[16];
  std::fill(std::begin(given), std::end(given), true);
  std::vector<Tensor> res = d->eval(a, args, std::span<const bool>(given, args.size()), 1);
  CHECK(res.at(0).dtype() == types.at(0).dtype);
  CHECK(shape_of(res[0].dims()) == types[0].shape);
  return res[0];
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = t.at(i);
  return v;
}

// The largest difference between a and b over the step of b's quantization.
double steps_apart(const Tensor& a, const Tensor& b, double step) {
  REQUIRE(a.numel() == b.numel());
  double worst = 0;
  for (std::size_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.at(i) - b.at(i)) / step);
  return worst;
}

const char* kQdqConv = R"(
(graph qconv
  (input x f32 [1 4 6 6])
  (init xs f32 [] [0.05])
  (init xz u8 [] [128])
  (init w i8 [8 4 3 3] [%W%])
  (init ws f32 [8 1 1 1] [0.01 0.02 0.015 0.03 0.01 0.025 0.02 0.012])
  (init wz i8 [8 1 1 1] [%WZ%])
  (init b i32 [8] [10 -20 30 -40 50 -60 70 -80])
  (init bs f32 [8] [%BS%])
  (init bz i32 [] [0])
  (init ys f32 [] [0.04])
  (init yz u8 [] [3])
  (node q quantize_linear (xq) (x xs xz))
  (node dx dequantize_linear (xd) (xq xs xz))
  (node dw dequantize_linear (wd) (w ws wz))
  (node db dequantize_linear (bd) (b bs bz))
  (node c conv (y) (xd wd bd) :pads [1 1 1 1])
  (node qy quantize_linear (yq) (y ys yz))
  (node dy dequantize_linear (out) (yq ys yz))
  (output out))
)";

std::string qdq_conv(int weight_zero) {
  std::string text = kQdqConv;
  auto put = [&](const std::string& key, const std::string& v) { text.replace(text.find(key), key.size(), v); };
  std::string w, wz, bs;
  for (int i = 0; i < 8 * 4 * 9; ++i) w += std::to_string((i * 37) % 255 - 127) + " ";
  for (int i = 0; i < 8; ++i) wz += std::to_string(i == 5 ? weight_zero : 0) + " ";
  const double ws[] = {0.01, 0.02, 0.015, 0.03, 0.01, 0.025, 0.02, 0.012};
  for (double s : ws) bs += std::to_string(static_cast<float>(0.05f * static_cast<float>(s))) + " ";
  put("%W%", w);
  put("%WZ%", wz);
  put("%BS%", bs);
  return text;
}

Tensor random_input(std::vector<std::int64_t> dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0, 2);
  Tensor x(DType::F32, std::move(dims));
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, d(rng));
  return x;
}

std::vector<Tensor> run_cpu(const Graph& g, const std::vector<Tensor>& inputs, int* int8_convs) {
  runtime::CpuExecutorOptions co;
  co.threads = 2;
  co.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
  auto exec = runtime::CpuExecutor::create(g, co);
  if (!exec) FAIL(exec.error().to_string());
  const lower::Program& p = (*exec)->program();
  CHECK(p.reference_ops.empty());
  *int8_convs = 0;
  for (const lower::Step& s : p.steps) *int8_convs += s.label.rfind("oneDNN int8 conv", 0) == 0;
  auto got = (*exec)->run(runtime_inputs(g, inputs));
  if (!got) FAIL(got.error().to_string());
  return *got;
}

Expected<pipeline::OptimizeResult> optimize_for_cpu(const Graph& g) {
  pipeline::OptimizeOptions o;
  o.target = "cpu";
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
  return pipeline::optimize(g, o);
}

// The optimized graph written as ONNX (an int8 call as the QDQ composition
// it stands for) and read back computes what it computes.
void check_export(const Graph& g, const std::vector<Tensor>& inputs) {
  auto bytes = export_onnx_bytes(g);
  if (!bytes) FAIL(bytes.error().to_string());
  auto back = import_onnx_bytes(*bytes, "exported.onnx");
  if (!back) FAIL(back.error().to_string());
  auto want = runtime::interpret(g, inputs);
  auto got = runtime::interpret(*back, inputs);
  REQUIRE(want);
  REQUIRE(got);
  CHECK(values((*got)[0]) == values((*want)[0]));
}

int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; }));
}

}  // namespace

TEST_CASE("round takes halves to the even integer - NaN and infinities stay") {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::of_doubles(DType::F32, {10}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6, -2.6, inf, -inf});
  CHECK(values(apply("round", {x})) == std::vector<double>{-2, -2, 0, 0, 2, 2, 3, -3, inf, -inf});
  Tensor nan = Tensor::of_doubles(DType::F32, {1}, {std::nan("")});
  CHECK(std::isnan(apply("round", {nan}).at(0)));
}

TEST_CASE("quantize_linear rounds halves to even and saturates to the zero point's type") {
  Tensor x = Tensor::of_doubles(DType::F32, {7}, {-1000, 0.5, 1.5, 2.5, 126.5, 127.5, 1000});
  Tensor s = Tensor::scalar(DType::F32, 1), u8 = Tensor::scalar(DType::U8, 0), i8 = Tensor::scalar(DType::I8, -1);
  const Tensor qu = apply("quantize_linear", {x, s, u8});
  CHECK(qu.dtype() == DType::U8);
  CHECK(values(qu) == std::vector<double>{0, 0, 2, 2, 126, 128, 255});
  // (The zero point is added after rounding: 0.5 -> 0 - 1.)
  CHECK(values(apply("quantize_linear", {x, s, i8})) == std::vector<double>{-128, -1, 1, 1, 125, 127, 127});
  // A scale per row: x / s in f32, then rounded.
  Tensor rows = Tensor::of_doubles(DType::F32, {2, 1}, {0.5, 4});
  Tensor x2 = Tensor::of_doubles(DType::F32, {2, 2}, {1.25, -3, 6, 10});
  CHECK(values(apply("quantize_linear", {x2, rows, Tensor::scalar(DType::I8, 0)})) == std::vector<double>{2, -6, 2, 2});
  // A zero point of another shape than x's broadcast is a shape error.
  const OpDef* q = OpRegistry::get().find("quantize_linear");
  Tensor bad = Tensor(DType::U8, {3});
  std::vector<TypedInput> ins{{{DType::F32, shape_of({2, 2})}, nullptr, true},
                              {{DType::F32, shape_of({})}, nullptr, true},
                              {{DType::U8, shape_of({3})}, &bad, true}};
  CHECK_THROWS_AS(q->infer({}, ins, 1), ShapeError);
}

TEST_CASE("dequantize_linear is (x - zero point) times the scale - per axis when they broadcast so") {
  Tensor x = Tensor::of_ints(DType::U8, {2, 2}, {0, 255, 10, 20});
  Tensor s = Tensor::of_doubles(DType::F32, {2, 1}, {0.5, 2});
  Tensor z = Tensor::of_ints(DType::U8, {2, 1}, {0, 10});
  const Tensor y = apply("dequantize_linear", {x, s, z});
  CHECK(y.dtype() == DType::F32);
  CHECK(values(y) == std::vector<double>{0, 127.5, 0, 20});
}

TEST_CASE("quantized_conv is quantize_linear of the convolution of the dequantized operands") {
  auto g = read_sat(qdq_conv(0), "q.sat");
  REQUIRE(g);
  std::map<std::string, Tensor> c(g->initializers.begin(), g->initializers.end());
  const Tensor x = apply("quantize_linear", {random_input({1, 4, 6, 6}, 3), c["xs"], c["xz"]});
  const Tensor bias = apply("dequantize_linear", {c["b"], c["bs"], c["bz"]});
  Attrs conv;
  conv.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  const Tensor want = apply("quantize_linear", {apply("conv",
                                                      {apply("dequantize_linear", {x, c["xs"], c["xz"]}),
                                                       apply("dequantize_linear", {c["w"], c["ws"], c["wz"]}), bias},
                                                      conv),
                                                c["ys"], c["yz"]});
  const Tensor got =
      apply("quantized_conv", {x, c["xs"], c["xz"], c["w"], c["ws"], c["wz"], c["ys"], c["yz"], bias}, conv);
  CHECK(got.dtype() == DType::U8);
  CHECK(values(got) == values(want));
}

TEST_CASE("a QDQ convolution optimizes into one oneDNN int8 convolution - within one step of the interpreter") {
  auto g = read_sat(qdq_conv(0), "q.sat");
  REQUIRE(g);
  const std::vector<Tensor> inputs{random_input({1, 4, 6, 6}, 7)};
  auto want = runtime::interpret(*g, inputs);
  REQUIRE(want);
  auto opt = optimize_for_cpu(*g);
  REQUIRE(opt);
  CHECK(count_op(opt->graph, "dnnl.qconv") == 1);
  CHECK(count_op(opt->graph, "dnnl.conv") == 0);
  int int8 = 0;
  const std::vector<Tensor> got = run_cpu(opt->graph, inputs, &int8);
  CHECK(int8 == 1);
  CHECK(steps_apart(got[0], (*want)[0], 0.04) <= 1.0001);
  check_export(opt->graph, inputs);
  // As written: the float convolution between the quantizations, no int8 call.
  const std::vector<Tensor> direct = run_cpu(*g, inputs, &int8);
  CHECK(int8 == 0);
  CHECK(steps_apart(direct[0], (*want)[0], 0.04) <= 1.0001);
}

TEST_CASE("weights with a zero point other than 0 keep the float convolution - oneDNN's int8 call has none") {
  auto g = read_sat(qdq_conv(3), "q.sat");
  REQUIRE(g);
  auto opt = optimize_for_cpu(*g);
  REQUIRE(opt);
  CHECK(count_op(opt->graph, "dnnl.qconv") == 0);
  const std::vector<Tensor> inputs{random_input({1, 4, 6, 6}, 9)};
  auto want = runtime::interpret(*g, inputs);
  REQUIRE(want);
  int int8 = 0;
  const std::vector<Tensor> got = run_cpu(opt->graph, inputs, &int8);
  CHECK(int8 == 0);
  CHECK(steps_apart(got[0], (*want)[0], 0.04) <= 1.0001);
}

TEST_CASE("a QDQ matrix product optimizes into oneDNN's int8 matmul - s8 rows - scales per column") {
  // x [2 3 8] quantized to s8 (zero point -3), b [8 5] s8 with a scale per
  // column (axis 1: [1 5]), the result u8.
  std::string b_values, b_scales;
  for (int i = 0; i < 40; ++i) b_values += std::to_string((i * 53) % 255 - 127) + " ";
  for (int j = 0; j < 5; ++j) b_scales += std::to_string(0.01 + 0.005 * j) + " ";
  const std::string text =
      "(graph qmm (input x f32 [2 3 8])\n"
      " (init xs f32 [] [0.03]) (init xz i8 [] [-3])\n"
      " (init b i8 [8 5] [" +
      b_values + "]) (init bs f32 [1 5] [" + b_scales +
      "])\n"
      " (init bz i8 [1 5] [0 0 0 0 0]) (init ys f32 [] [0.05]) (init yz u8 [] [100])\n"
      " (node q quantize_linear (xq) (x xs xz)) (node dx dequantize_linear (xd) (xq xs xz))\n"
      " (node db dequantize_linear (bd) (b bs bz)) (node m matmul (y) (xd bd))\n"
      " (node qy quantize_linear (yq) (y ys yz)) (output yq))";
  auto g = read_sat(text, "qmm.sat");
  REQUIRE(g);
  const std::vector<Tensor> inputs{random_input({2, 3, 8}, 11)};
  auto want = runtime::interpret(*g, inputs);
  REQUIRE(want);
  auto opt = optimize_for_cpu(*g);
  REQUIRE(opt);
  CHECK(count_op(opt->graph, "dnnl.qmatmul") == 1);
  runtime::CpuExecutorOptions co;
  co.threads = 2;
  co.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
  auto exec = runtime::CpuExecutor::create(opt->graph, co);
  if (!exec) FAIL(exec.error().to_string());
  int int8 = 0;
  for (const lower::Step& s : (*exec)->program().steps) int8 += s.label.rfind("oneDNN int8 matmul 6x5x8", 0) == 0;
  CHECK(int8 == 1);
  auto got = (*exec)->run(runtime_inputs(opt->graph, inputs));
  if (!got) FAIL(got.error().to_string());
  REQUIRE((*got)[0].dtype() == DType::U8);
  CHECK(steps_apart((*got)[0], (*want)[0], 1) <= 1);  // (the result is the quantized u8 itself)
  check_export(opt->graph, inputs);
}

TEST_CASE("a CNN quantized by ONNX Runtime runs in int8 on the CPU - within one step of ONNX Runtime's output") {
  // docs/examples/models/quantized: written by bench/bench_quantized.py
  // --write-fixture (torch export, ONNX Runtime's static QDQ quantizer,
  // per-channel s8 weights, a depthwise convolution and a residual add).
  const std::string stem = test::source_dir() + "/docs/examples/models/quantized/qdq_cnn";
  auto input = read_tensor_pb(stem + ".input.pb");
  auto ort = read_tensor_pb(stem + ".ort.pb");
  REQUIRE(input);
  REQUIRE(ort);
  const std::vector<Tensor> inputs{*input};
  auto g = import_onnx_for_inputs(stem + ".onnx", inputs);
  REQUIRE(g);
  // The output's quantization step: the scale of the dequantize giving it.
  double step = 0;
  for (const Node& n : g->nodes)
    if (n.op == "dequantize_linear" && n.outputs[0] == g->outputs[0]) step = g->initializers.at(n.inputs[1]).at(0);
  REQUIRE(step > 0);
  auto interp = runtime::interpret(*g, inputs);
  REQUIRE(interp);
  CHECK(steps_apart((*interp)[0], *ort, step) <= 1.0001);
  auto opt = optimize_for_cpu(*g);
  REQUIRE(opt);
  int int8 = 0;
  const std::vector<Tensor> got = run_cpu(opt->graph, inputs, &int8);
  CHECK(int8 == 4);  // every convolution, the depthwise one too
  CHECK(steps_apart(got[0], *ort, step) <= 1.0001);
}
