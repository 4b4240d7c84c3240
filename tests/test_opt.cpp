// End to end: every bundled model, optimized for every target with the
// shipped rulesets, computes what the original computes (reference
// interpreter, random inputs); and the pieces `saturn opt` is made of.
#include <filesystem>
#include <random>
#include <set>

#include "bench/models.hpp"
#include "extract/cost_model.hpp"
#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/lowering.hpp"
#include "pipeline/optimize.hpp"
#include "random_graphs.hpp"
#include "rules/tensor_builtins.hpp"
#include "rules/tensor_egraph.hpp"
#include "runtime/interp.hpp"

using namespace saturn;
namespace fs = std::filesystem;

namespace {

std::vector<ir::Tensor> random_inputs(const ir::Graph& g, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<ir::Tensor> out;
  for (const ir::GraphValue& in : g.inputs) {
    ir::Tensor t(in.type.dtype, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
    out.push_back(std::move(t));
  }
  return out;
}

// Largest |a - b| / (atol + rtol |b|) over all elements (<= 1: close).
double worst_error(const ir::Tensor& a, const ir::Tensor& b, double rtol = 1e-3, double atol = 1e-4) {
  REQUIRE(a.dims() == b.dims());
  double worst = 0;
  for (std::size_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.at(i) - b.at(i)) / (atol + rtol * std::abs(b.at(i))));
  return worst;
}

void check_same_outputs(const ir::Graph& original, const ir::Graph& optimized, std::uint32_t seed) {
  auto inputs = random_inputs(original, seed);
  auto want = runtime::interpret(original, inputs);
  REQUIRE(want);
  auto got = runtime::interpret(optimized, inputs);
  if (!got) FAIL(got.error().to_string());
  REQUIRE(got->size() == want->size());
  for (std::size_t k = 0; k < want->size(); ++k) {
    INFO("output " << k);
    CHECK(worst_error((*got)[k], (*want)[k]) <= 1.0);
  }
}

pipeline::OptimizeOptions shipped(const std::string& target) {
  pipeline::OptimizeOptions o;
  o.target = target;
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", target);
  return o;
}

std::string rules_file(const std::string& text) {
  const auto p = test::scratch_file("test.rules");
  std::ofstream(p) << text;
  return p.string();
}

// relu(conv(in)) by a k x k kernel of `out` by `c` channels, with a bias:
// the branches of the Inception, SqueezeNet and ShuffleNet graphs below.
std::string relu_conv(models::GraphBuilder& b, const std::string& in, std::int64_t out, std::int64_t c,
                      std::int64_t k = 1, const ir::Attrs& a = {}) {
  return b.op("relu", {b.op("conv", {in, b.weight({out, c, k, k}, 0.3), b.weight({out}, 0.1)}, a)});
}

}  // namespace

TEST_CASE("every bundled model optimizes to an equivalent - cheaper or equal program", "[opt][e2e]") {
  const fs::path dir = fs::path(test::source_dir()) / "docs/examples/models";
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  REQUIRE(models.size() >= 3);
  for (const fs::path& m : models) {
    for (const char* target : {"cpu", "cuda"}) {
      INFO(m.filename().string() << " --target " << target);
      auto g = ir::import_onnx_file(m.string());
      REQUIRE(g);
      auto res = pipeline::optimize(*g, shipped(target));
      if (!res) FAIL(res.error().to_string());
      REQUIRE_FALSE(res->unsound);
      const auto& r = res->report;
      for (const char* key : {"cost_before", "cost_after", "nodes_before", "nodes_after", "rules", "phases"})
        CHECK(r.contains(key));
      CHECK(r["cost_after"].get<double>() <= r["cost_before"].get<double>() * (1 + 1e-9));
      for (const char* phase : {"import", "saturate", "extract"}) {
        CHECK(r["phases"][phase]["time_ms"].get<double>() >= 0);
        CHECK(r["phases"][phase].contains("stop_reason"));
      }
      // The shipped rules reach a fixed point on these models: two rules
      // that undo each other through ever new terms (a conv's bias split off
      // and folded back, wrapped in one more reshape each time) hit the
      // iteration limit instead.
      CHECK(r["phases"]["saturate"]["stop_reason"] == "saturated");
      // A target only ever gets its own library calls.
      for (const ir::Node& n : res->graph.nodes) {
        bool cpu_lib = n.op.rfind("blas.", 0) == 0 || n.op.rfind("dnnl.", 0) == 0;
        bool cuda_lib = n.op.rfind("cublas.", 0) == 0 || n.op.rfind("cudnn.", 0) == 0;
        CHECK_FALSE((std::string(target) == "cpu" ? cuda_lib : cpu_lib));
      }
      check_same_outputs(*g, res->graph, 7);
      check_same_outputs(*g, res->graph, 8);
      // The optimized graph survives export and re-import unchanged in meaning.
      auto bytes = ir::export_onnx_bytes(res->graph);
      REQUIRE(bytes);
      auto back = ir::import_onnx_bytes(*bytes, "optimized");
      if (!back) FAIL(back.error().to_string());
      check_same_outputs(*g, *back, 9);
    }
  }
}

TEST_CASE("a ReLU6 after a convolution becomes oneDNN's clip post-op - and computes the same", "[opt][e2e]") {
  // MobileNetV2's block: a 1x1 expansion and a depthwise 3x3, each followed
  // by clip(0, 6).
  models::GraphBuilder b("relu6");
  std::string x = b.input("x", {1, 8, 14, 14});
  ir::Attrs relu6;
  relu6.set("min", 0.0);
  relu6.set("max", 6.0);
  ir::Attrs depthwise;
  depthwise.set("group", std::int64_t{32});
  depthwise.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  std::string e = b.op("clip", {b.op("conv", {x, b.weight({32, 8, 1, 1}, 0.5), b.weight({32}, 0.1)})}, relu6);
  std::string d =
      b.op("clip", {b.op("conv", {e, b.weight({32, 1, 3, 3}, 0.5), b.weight({32}, 0.1)}, depthwise)}, relu6);
  const ir::Graph g = b.finish({d});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  CHECK(ops.value("dnnl.conv_clip", 0) == 2);
  CHECK_FALSE(ops.contains("clip"));
  check_same_outputs(g, res->graph, 3);
  // Written as ONNX, the call is the Conv and Clip it stands for.
  auto bytes = ir::export_onnx_bytes(res->graph);
  REQUIRE(bytes);
  auto back = ir::import_onnx_bytes(*bytes, "relu6");
  if (!back) FAIL(back.error().to_string());
  check_same_outputs(g, *back, 4);
  for (const ir::Node& n : back->nodes) CHECK(n.op != "dnnl.conv_clip");
}

TEST_CASE(
    "SiLU and hard swish after convolutions become oneDNN's post-ops - not a depthwise one's - and compute the "
    "same",
    "[opt][e2e]") {
  // EfficientNet's block (a 1x1 expansion and a depthwise 3x3, each
  // followed by x * sigmoid(x), written either way round) and MobileNet
  // V3's (hard swish). The depthwise convolution's post-op is priced at
  // twice its arithmetic (measured slower than the sigmoid-mul kernel
  // after the call, on a Zen 4 and on an Intel Xeon), so its SiLU stays a
  // kernel.
  models::GraphBuilder b("swish");
  std::string x = b.input("x", {1, 8, 14, 14});
  ir::Attrs depthwise;
  depthwise.set("group", std::int64_t{32});
  depthwise.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  std::string y = b.op("conv", {x, b.weight({32, 8, 1, 1}, 0.5), b.weight({32}, 0.1)});
  std::string e = b.op("mul", {y, b.op("sigmoid", {y})});
  std::string z = b.op("conv", {e, b.weight({32, 1, 3, 3}, 0.5), b.weight({32}, 0.1)}, depthwise);
  std::string d = b.op("mul", {b.op("sigmoid", {z}), z});
  std::string h = b.op("hard_swish", {b.op("conv", {d, b.weight({16, 32, 1, 1}, 0.5)})});
  const ir::Graph g = b.finish({h});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  CHECK(ops.value("dnnl.conv_silu", 0) + ops.value("dnnl.cl_conv_silu", 0) == 1);
  CHECK(ops.value("dnnl.conv_hard_swish", 0) == 1);
  CHECK(ops.value("sigmoid", 0) == 1);
  CHECK(ops.value("mul", 0) == 1);
  CHECK_FALSE(ops.contains("hard_swish"));
  check_same_outputs(g, res->graph, 3);
  auto bytes = ir::export_onnx_bytes(res->graph);
  REQUIRE(bytes);
  auto back = ir::import_onnx_bytes(*bytes, "swish");
  if (!back) FAIL(back.error().to_string());
  check_same_outputs(g, *back, 4);
}

TEST_CASE("a squeeze-and-excitation scale folds into the next convolution's weights where they are the smaller",
          "[opt]") {
  // EfficientNet's first block (32x112x112 scaled, then a 1x1 convolution
  // by 16x32 weights: the scale is applied to 512 weights instead of 401408
  // activations) and a late one (672x14x14 scaled, by 112x672 weights:
  // fewer, but oneDNN would convert them into its layout at every run,
  // 12 us plus 301 KB at 6.5 GB/s, where scaling the activations takes 7).
  models::GraphBuilder b("se");
  auto squeeze_excite = [&](const std::string& x, std::int64_t c, std::int64_t out) {
    std::string s = b.op("sigmoid", {b.op("global_avg_pool", {x})});
    return b.op("conv", {b.op("mul", {x, s}), b.weight({out, c, 1, 1}, 0.2), b.weight({out}, 0.1)});
  };
  const std::string early = squeeze_excite(b.input("x", {1, 32, 112, 112}), 32, 16);
  const std::string late = squeeze_excite(b.input("y", {1, 672, 14, 14}), 672, 112);
  const ir::Graph g = b.finish({early, late});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  INFO(res->report["ops_after"].dump());
  CHECK(res->report["rules"]["fold-channel-scale-into-conv"]["applications"].get<int>() > 0);
  auto types = ir::infer_types(res->graph);
  REQUIRE(types);
  std::multiset<std::vector<std::int64_t>> scaled;
  for (const ir::Node& n : res->graph.nodes)
    if (n.op == "mul") scaled.insert(ir::static_dims(types->at(n.outputs[0]).shape));
  CHECK(scaled == std::multiset<std::vector<std::int64_t>>{{16, 32, 1, 1}, {1, 672, 14, 14}});
  check_same_outputs(g, res->graph, 5);
}

TEST_CASE("a zero pad of the spatial dims becomes the padding of the pool or convolution it feeds", "[opt]") {
  // Inception v3's pool branch as torch exports it (a zero pad, then a 3x3
  // average without padding of its own) and TensorFlow's SAME padding with
  // a stride (a one-sided pad, then a strided convolution): both pads go,
  // the pool counting its padding (count_include_pad 1). A pad by ones and a
  // pad of the channels are no such padding and stay.
  models::GraphBuilder b("pads");
  const std::string x = b.input("x", {1, 8, 9, 9});
  auto pad = [&](const std::string& v, std::vector<std::int64_t> pads, double value) {
    ir::Attrs a;
    a.set("pads", std::move(pads));
    a.set("value", value);
    return b.op("pad", {v}, a);
  };
  ir::Attrs pool3;
  pool3.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  ir::Attrs stride2;
  stride2.set("strides", std::vector<std::int64_t>{2, 2});
  const std::string pooled = b.op("avg_pool", {pad(x, {0, 0, 1, 1, 0, 0, 1, 1}, 0.0)}, pool3);
  const std::string strided =
      b.op("conv", {pad(x, {0, 0, 0, 0, 0, 0, 1, 1}, 0.0), b.weight({4, 8, 3, 3}, 0.3), b.weight({4}, 0.1)}, stride2);
  const std::string ones = b.op("avg_pool", {pad(x, {0, 0, 1, 1, 0, 0, 1, 1}, 1.0)}, pool3);
  const std::string channels = b.op("avg_pool", {pad(x, {0, 1, 1, 1, 0, 1, 1, 1}, 0.0)}, pool3);
  const ir::Graph g = b.finish({pooled, strided, ones, channels});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("pad", 0) == 2);
  CHECK(res->report["rules"]["pad-into-avg_pool"]["changed"].get<int>() > 0);
  CHECK(res->report["rules"]["pad-into-conv"]["changed"].get<int>() > 0);
  int counting = 0;
  for (const ir::Node& n : res->graph.nodes)
    if (n.op.ends_with("avg_pool") && n.attrs.i("count_include_pad", 0) == 1 &&
        n.attrs.ints("pads") == std::vector<std::int64_t>{1, 1, 1, 1})
      ++counting;
  CHECK(counting == 1);
  check_same_outputs(g, res->graph, 7);
}

TEST_CASE("a convolution of a concatenation with few outputs is two convolutions summed - no concat", "[opt]") {
  // SqueezeNet's fire module: a 1x1 and a 3x3 expansion side by side, then
  // the next squeeze convolution (16 outputs from 64 + 64 channels); and a
  // classifier over another such pair (96 outputs from 48 + 40 channels:
  // more outputs than the concatenation has channels, so it is kept).
  models::GraphBuilder b("fire");
  std::string x = b.input("x", {1, 16, 20, 20});
  ir::Attrs pad1;
  pad1.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  ir::Attrs axis1;
  axis1.set("axis", std::int64_t{1});
  const std::string fire = b.op("concat", {relu_conv(b, x, 64, 16, 1, {}), relu_conv(b, x, 64, 16, 3, pad1)}, axis1);
  const std::string squeeze = relu_conv(b, fire, 16, 128, 1, {});
  const std::string fire2 = b.op("concat", {relu_conv(b, x, 48, 16, 1, {}), relu_conv(b, x, 40, 16, 3, pad1)}, axis1);
  const std::string classifier = b.op("conv", {fire2, b.weight({96, 88, 1, 1}, 0.3), b.weight({96}, 0.1)});
  const ir::Graph g = b.finish({squeeze, classifier});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("concat", 0) == 1);
  CHECK(ops.value("dnnl.conv_add_relu", 0) == 1);
  CHECK(res->report["rules"]["conv-of-concat"]["applications"].get<int>() > 0);
  check_same_outputs(g, res->graph, 6);
}

TEST_CASE("ShuffleNet's channel shuffle of two halves is their stack - no transpose - the same values", "[opt]") {
  // A ShuffleNet v2 block's end: the two branches concatenated, split in
  // two groups of channels, the groups transposed and merged; then the
  // next block's halves. shuffle-as-stack makes it one stack of the
  // branches (one interleaving copy when lowered, test_cpu_codegen).
  models::GraphBuilder b("shuffle");
  std::string x = b.input("x", {1, 8, 10, 10});
  ir::Attrs axis1, split, swap, merge;
  axis1.set("axis", std::int64_t{1});
  split.set("shape", std::vector<std::int64_t>{1, 2, 8, 10, 10});
  swap.set("perm", std::vector<std::int64_t>{0, 2, 1, 3, 4});
  merge.set("shape", std::vector<std::int64_t>{1, -1, 10, 10});
  const std::string cat = b.op("concat", {relu_conv(b, x, 8, 8), relu_conv(b, x, 8, 8)}, axis1);
  const std::string shuffled = b.op("reshape", {b.op("transpose", {b.op("reshape", {cat}, split)}, swap)}, merge);
  const ir::Graph g = b.finish({relu_conv(b, shuffled, 4, 16)});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("transpose", 0) == 0);
  CHECK(ops.value("concat", 0) == 1);
  CHECK(res->report["rules"]["shuffle-as-stack"]["applications"].get<int>() > 0);
  bool stacked = false;
  for (const ir::Node& n : res->graph.nodes)
    if (n.op == "concat") stacked = n.attrs.i("axis", 0) == 2;
  CHECK(stacked);
  check_same_outputs(g, res->graph, 6);
}

TEST_CASE("max pooling of a concatenation pools the parts - the concat copies the pooled values", "[opt]") {
  // GoogLeNet's pool after an inception block: four branches side by
  // side, a 3x3 max pool by 2 (ceil mode), then a convolution with more
  // outputs than channels (which conv-of-concat leaves whole). Pooling
  // each branch first, the concatenation copies a quarter of the bytes.
  models::GraphBuilder b("pooled");
  const std::string x = b.input("x", {1, 16, 28, 28});
  ir::Attrs axis1, pool;
  axis1.set("axis", std::int64_t{1});
  pool.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  pool.set("strides", std::vector<std::int64_t>{2, 2});
  pool.set("ceil_mode", std::int64_t{1});
  const std::string block = b.op(
      "concat", {relu_conv(b, x, 64, 16), relu_conv(b, x, 128, 16), relu_conv(b, x, 32, 16), relu_conv(b, x, 32, 16)},
      axis1);
  const std::string pooled = b.op("max_pool", {block}, pool);
  const ir::Graph g = b.finish({relu_conv(b, pooled, 320, 256)});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  INFO(res->report["ops_after"].dump());
  CHECK(res->report["rules"]["max_pool-of-concat"]["applications"].get<int>() > 0);
  std::set<std::string> concats;
  for (const ir::Node& n : res->graph.nodes)
    if (n.op == "concat") concats.insert(n.outputs[0]);
  CHECK(!concats.empty());
  for (const ir::Node& n : res->graph.nodes)
    if (n.op.ends_with("max_pool")) {
      INFO(n.op << " of " << n.inputs[0]);
      CHECK(!concats.count(n.inputs[0]));
    }
  check_same_outputs(g, res->graph, 6);
}

TEST_CASE("attention written as einsums runs as batched library products - the same values", "[opt]") {
  // maxvit_t's window attention: q k^T and p v as einsums over [B G H I D].
  models::GraphBuilder b("einsum_attention");
  std::string q = b.input("q", {1, 8, 4, 49, 32}), k = b.input("k", {1, 8, 4, 49, 32}),
              v = b.input("v", {1, 8, 4, 49, 32});
  auto eq = [](const char* e) {
    ir::Attrs a;
    a.set("equation", std::string(e));
    return a;
  };
  ir::Attrs last;
  last.set("axis", std::int64_t{-1});
  const std::string s = b.op("einsum", {q, k}, eq("B G H I D, B G H J D -> B G H I J"));
  const std::string o = b.op("einsum", {b.op("softmax", {s}, last), v}, eq("B G H I J, B G H J D -> B G H I D"));
  // And one whose output order is not the product's: "ik,kj->ji" is (a b)^T.
  const std::string t = b.op("einsum", {b.input("a", {128, 64}), b.input("c", {64, 96})}, eq("ik,kj->ji"));
  const ir::Graph g = b.finish({o, t});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("einsum", 0) == 0);
  CHECK(ops.value("blas.matmul", 0) + ops.value("blas.gemm", 0) == 3);
  CHECK(res->report["rules"]["einsum2-matmul"]["applications"].get<int>() >= 3);
  check_same_outputs(g, res->graph, 7);
}

TEST_CASE("Winograd is chosen for large 3x3 stride-1 convolutions only - epilogues kept - written back as Conv",
          "[opt]") {
  // A ResNet basic block at 256x14x14 (231 MFLOP a convolution), then a
  // small 3x3 convolution (14 MFLOP) and a strided one: Winograd's extra
  // cost per call outweighs its saving on the small one, and oneDNN has no
  // strided Winograd kernel.
  models::GraphBuilder b("winograd");
  std::string x = b.input("x", {1, 256, 14, 14});
  auto conv = [&](const std::string& in, std::int64_t out, std::int64_t stride, std::int64_t pad = 1,
                  std::int64_t dilation = 1) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("strides", std::vector<std::int64_t>{stride, stride});
    a.set("pads", std::vector<std::int64_t>{pad, pad, pad, pad});
    a.set("dilations", std::vector<std::int64_t>{dilation, dilation});
    return b.op("conv", {in, b.weight({out, 256, 3, 3}, 0.1), b.weight({out}, 0.1)}, a);
  };
  std::string y = b.op("relu", {conv(x, 256, 1)});
  y = b.op("relu", {b.op("add", {conv(y, 256, 1), x})});
  // Neither a padding of 2 nor a dilated kernel has a Winograd kernel either.
  const ir::Graph g = b.finish({conv(y, 8, 1), conv(y, 256, 2), conv(y, 256, 1, 2), conv(y, 256, 1, 2, 2)});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("dnnl.wino_conv_relu", 0) == 1);
  // The residual is added after the call, not by its sum post-op: that
  // would convert the residual into Winograd's blocked layout too, a third
  // conversion dearer than one add+relu kernel over the NHWC values.
  CHECK(ops.value("dnnl.wino_conv", 0) == 1);
  CHECK(ops.value("add", 0) == 1);
  CHECK_FALSE(ops.contains("dnnl.wino_conv_add_relu"));
  CHECK(ops.value("dnnl.conv", 0) == 4);
  // Written as ONNX: Conv, Add and Relu, every node named once.
  auto bytes = ir::export_onnx_bytes(res->graph);
  REQUIRE(bytes);
  auto back = ir::import_onnx_bytes(*bytes, "winograd");
  if (!back) FAIL(back.error().to_string());
  std::set<std::string> names;
  for (const ir::Node& n : back->nodes) {
    CHECK(n.op.rfind("dnnl.", 0) != 0);
    CHECK(names.insert(n.name).second);
  }
  CHECK(back->nodes.size() == 9);  // 6 Conv, 1 Add, 2 Relu
}

TEST_CASE("Winograd is chosen for ResNet's 64-channel 3x3 convolutions at 56x56 - its conversions priced", "[opt]") {
  // 231 MFLOP a call, as at 14x14 above, but converting 800 KB activations
  // into oneDNN's blocked layout and back: measured 0.60 ms a call against
  // 1.0 direct in resnet18's program (Zen 4, 2026-11-29). A fixed price
  // per call set before the conversions were priced kept it direct.
  models::GraphBuilder b("winograd56");
  std::string y = b.input("x", {1, 64, 56, 56});
  ir::Attrs a;
  a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  for (int i = 0; i < 2; ++i)
    y = b.op("relu", {b.op("conv", {y, b.weight({64, 64, 3, 3}, 0.05), b.weight({64}, 0.1)}, a)});
  const ir::Graph g = b.finish({y});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  INFO(res->report["ops_after"].dump());
  CHECK(res->report["ops_after"].value("dnnl.wino_conv_relu", 0) == 2);
}

TEST_CASE("Winograd's larger weights lose once a program's weights come from memory at every run", "[opt]") {
  // ResNet's 512-channel 3x3 convolution at 7x7 (9.4 MB of weights): alone
  // its weights stay in the cache between runs, and Winograd's fewer
  // multiplications win; four of them (38 MB, over the CPU model's 32) are
  // read from memory at every run, Winograd's in a form 16/9 larger
  // (resnet18's: 1.56-1.77 ms a call against 1.35-1.39 direct).
  auto chain = [](int convs) {
    models::GraphBuilder b("streams");
    std::string y = b.input("x", {1, 512, 7, 7});
    b.weight({10'000'000}, 0.0);  // 40 MB that no node reads: never loaded, not counted
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    for (int i = 0; i < convs; ++i)
      y = b.op("relu", {b.op("conv", {y, b.weight({512, 512, 3, 3}, 0.01), b.weight({512}, 0.1)}, a)});
    return b.finish({y});
  };
  auto one = pipeline::optimize(chain(1), shipped("cpu"));
  REQUIRE(one);
  INFO(one->report["ops_after"].dump());
  CHECK(one->report["weights"]["bytes"].get<double>() == Approx((512 * 512 * 9 + 512) * 4.0));
  CHECK_FALSE(one->report["weights"]["from_memory"].get<bool>());
  CHECK(one->report["ops_after"].value("dnnl.wino_conv_relu", 0) == 1);
  auto four = pipeline::optimize(chain(4), shipped("cpu"));
  REQUIRE(four);
  INFO(four->report["ops_after"].dump());
  CHECK(four->report["weights"]["bytes"].get<double>() == Approx(4 * (512 * 512 * 9 + 512) * 4.0));
  CHECK(four->report["weights"]["from_memory"].get<bool>());
  CHECK(four->report["ops_after"].value("dnnl.conv_relu", 0) == 4);
  CHECK(pipeline::summarize(four->report).find("priced as read from memory") != std::string::npos);
}

TEST_CASE("products by weights read from memory stay library calls - never a broadcast product and sum", "[opt]") {
  // Nine 1x1000 by 1000x1000 products (36 MB of weights, read from memory
  // at every run): the library call and decompose.rules' matmul-def (a
  // broadcast mul and a reduce_sum over the middle axis) read the same
  // bytes, but that sum runs at 2.4 GFLOP/s (densenet121's classifier: 0.86
  // ms against oneDNN's 0.24).
  models::GraphBuilder b("products");
  std::string y = b.input("x", {1, 1000});
  for (int i = 0; i < 9; ++i) y = b.op("matmul", {y, b.weight({1000, 1000}, 0.001)});
  auto res = pipeline::optimize(b.finish({y}), shipped("cpu"));
  REQUIRE(res);
  const nlohmann::json ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(res->report["weights"]["from_memory"].get<bool>());
  CHECK_FALSE(ops.contains("reduce_sum"));
  int calls = 0;
  for (const auto& [op, n] : ops.items())
    if (op.rfind("blas.", 0) == 0 || op.rfind("dnnl.", 0) == 0) calls += n.get<int>();
  CHECK(calls == 9);
}

TEST_CASE("an operand softmax and layer_norm read thrice is stored where dear - recomputed where cheap", "[opt]") {
  // softmax reads its operand in three kernels (max, sum, result), and so
  // does layer_norm (mean, variance, result). Five transcendental ops are
  // dearer to compute three times than to store once; a masked add is not.
  auto dear_chain = [](models::GraphBuilder& b, std::string t) {
    for (const char* op : {"tanh", "exp", "sigmoid", "tanh", "erf"}) t = b.op(op, {t});
    return t;
  };
  for (const char* op : {"softmax", "layer_norm"}) {
    INFO(op);
    auto normalize = [&](models::GraphBuilder& b, const std::string& t) {
      return std::string(op) == "softmax" ? b.op("softmax", {t}) : b.layer_norm(t, 1024);
    };
    models::GraphBuilder dear("dear");
    std::string x = dear.input("x", {256, 1024});
    const ir::Graph g = dear.finish({normalize(dear, dear_chain(dear, x))});
    auto res = pipeline::optimize(g, shipped("cpu"));
    REQUIRE(res);
    CHECK(res->report["ops_after"].value("materialize", 0) == 1);
    check_same_outputs(g, res->graph, 5);
    // The lowering follows: the chain is one kernel, computed once, where
    // the graph as written computes it in each of the three.
    auto stored = lower::compile_cpu(res->graph);
    auto recomputed = lower::compile_cpu(g);
    REQUIRE(stored);
    REQUIRE(recomputed);
    auto computing_erf = [](const lower::Program& p) {
      int n = 0;
      for (const lower::LoopKernel& k : *p.kernels) {
        const ir::SymId roots[] = {k.body, k.post};
        const auto nodes = k.ctx->reachable(roots);
        n +=
            std::any_of(nodes.begin(), nodes.end(), [&](ir::SymId id) { return k.ctx->node(id).op == ir::SymOp::Erf; });
      }
      return n;
    };
    CHECK(computing_erf(**stored) == 1);
    CHECK(computing_erf(**recomputed) == 3);
    CHECK((*stored)->fused_kernels == (*recomputed)->fused_kernels + 1);

    models::GraphBuilder cheap("cheap");
    std::string y = cheap.input("y", {256, 1024});
    const ir::Graph h = cheap.finish({normalize(cheap, cheap.op("add", {y, cheap.weight({1, 1024}, 1.0)}))});
    auto kept = pipeline::optimize(h, shipped("cpu"));
    REQUIRE(kept);
    CHECK_FALSE(kept->report["ops_after"].contains("materialize"));
  }
}

TEST_CASE("grouped convolutions run channels last unless 16 divides the groups - depthwise ones as they were",
          "[opt]") {
  // RegNet's grouped 3x3 convolutions (groups of 8 and 16 channels) skip
  // oneDNN's blocked layout and its two reorders a call; ResNeXt's 32
  // groups keep it (oneDNN's channels-last kernel is 2-3x slower there);
  // a depthwise one is the same kernel either way and stays as written.
  models::GraphBuilder b("grouped");
  std::string x = b.input("x", {1, 160, 14, 14});
  auto conv = [&](const std::string& in, std::int64_t channels, std::int64_t groups) {
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    a.set("group", groups);
    return b.op("conv", {in, b.weight({channels, channels / groups, 3, 3}, 0.1), b.weight({channels}, 0.1)}, a);
  };
  std::string regnet = b.op("relu", {conv(x, 160, 10)});
  std::string residual = b.op("add", {conv(regnet, 160, 20), x});
  std::string resnext = conv(b.input("z", {1, 256, 14, 14}), 256, 32);
  std::string depthwise = b.op("relu", {conv(x, 160, 160)});
  const ir::Graph g = b.finish({residual, resnext, depthwise});
  auto res = pipeline::optimize(g, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  INFO(ops.dump());
  CHECK(ops.value("dnnl.cl_conv_relu", 0) == 1);
  CHECK(ops.value("dnnl.cl_conv_add", 0) == 1);
  CHECK(ops.value("dnnl.conv", 0) == 1);       // ResNeXt's
  CHECK(ops.value("dnnl.conv_relu", 0) == 1);  // the depthwise one
  CHECK_FALSE(ops.contains("dnnl.cl_conv"));
  check_same_outputs(g, res->graph, 5);
}

TEST_CASE("the main wins happen: BLAS/oneDNN calls - folded batchnorm - conv+relu fusion", "[opt][e2e]") {
  auto cnn = models::resnet(16, {8, 16}, 1, 10);
  auto res = pipeline::optimize(cnn, shipped("cpu"));
  REQUIRE(res);
  auto ops = res->report["ops_after"];
  CHECK_FALSE(ops.contains("batch_norm"));  // folded into the convolutions' weights
  CHECK(ops.value("dnnl.conv_relu", 0) > 0);
  CHECK(res->report["cost_after"].get<double>() < res->report["cost_before"].get<double>() / 2);

  auto mlp = models::mlp(64, {784, 1024, 1024, 10});
  auto m = pipeline::optimize(mlp, shipped("cpu"));
  REQUIRE(m);
  // Every product is a BLAS call. Its bias add runs in one kernel with the
  // ReLU after it: as sgemm's C (the lowering adds C in the kernel that
  // stores the result) or as an add fused into the ReLU, which cost the same.
  auto calls = [](const nlohmann::json& ops, const std::string& lib) {
    return ops.value(lib + ".gemm", 0) + ops.value(lib + ".matmul", 0);
  };
  CHECK(calls(m->report["ops_after"], "blas") == 3);
  CHECK_FALSE(m->report["ops_after"].contains("matmul"));
  CHECK_FALSE(m->report["ops_after"].contains("gemm"));
  auto program = lower::compile_cpu(m->graph);
  REQUIRE(program);
  CHECK((*program)->library_calls == 3);
  CHECK((*program)->fused_kernels == 3);  // bias (+ ReLU) per layer

  // On cuda the two large products are cuBLAS calls; the last (64x1024 by
  // 1024x10) is cheaper as Saturn's kernel than a 7 us call (measured on an
  // H100, docs/cost-model.md).
  auto gpu = pipeline::optimize(mlp, shipped("cuda"));
  REQUIRE(gpu);
  CHECK(calls(gpu->report["ops_after"], "cublas") == 2);
}

TEST_CASE("transposed convolutions: a tiling one becomes a GEMM - others a library call - never a conv", "[opt][e2e]") {
  // U-Net's 2x2 stride-2 upsampling (and a 1-D and a 3-D tiling one), and
  // one whose windows overlap (stride 2, kernel 3, padded).
  struct Case {
    std::vector<std::int64_t> x, w, strides, pads;
    bool tiles;
  };
  // The product pays where each input position has many channels (the
  // transposes and the bias add it needs move the result twice more): 256
  // here, as in U-Net's decoder.
  const std::vector<Case> cases = {{{1, 256, 8, 6}, {256, 64, 2, 2}, {2, 2}, {}, true},
                                   {{1, 256, 40}, {256, 64, 3}, {3}, {}, true},
                                   {{1, 256, 4, 3, 4}, {256, 64, 2, 1, 2}, {2, 1, 2}, {}, true},
                                   {{1, 64, 16, 12}, {64, 32, 3, 3}, {2, 2}, {1, 1, 1, 1}, false}};
  for (const Case& c : cases) {
    INFO("x rank " << c.x.size() << (c.tiles ? ", tiling" : ", overlapping"));
    models::GraphBuilder b("up");
    ir::Attrs a = models::ints_attr("strides", c.strides);
    if (!c.pads.empty()) a.set("pads", c.pads);
    std::string y = b.op("conv_transpose", {b.input("x", c.x), b.weight(c.w, 0.2), b.weight({c.w[1]}, 0.2)}, a);
    ir::Graph g = b.finish({b.op("relu", {y})});
    auto cpu = pipeline::optimize(g, shipped("cpu"));
    REQUIRE(cpu);
    const auto& ops = cpu->report["ops_after"];
    CHECK_FALSE(ops.contains("conv"));  // never the zero-spread convolution (K times the work)
    CHECK_FALSE(ops.contains("dnnl.conv"));
    if (c.tiles) {
      CHECK(ops.value("blas.matmul", 0) == 1);
      CHECK_FALSE(ops.contains("dnnl.conv_transpose"));
    } else {
      CHECK(ops.value("dnnl.conv_transpose", 0) == 1);
      CHECK_FALSE(ops.contains("blas.matmul"));
    }
    check_same_outputs(g, cpu->graph, 7);
    auto gpu = pipeline::optimize(g, shipped("cuda"));
    REQUIRE(gpu);
    // On cuda a cuDNN call costs 5 us (measured on an H200): these small
    // ones stay Saturn's kernel or become a cuBLAS product, but never the
    // zero-spread convolution either.
    CHECK_FALSE(gpu->report["ops_after"].contains("conv"));
    CHECK_FALSE(gpu->report["ops_after"].contains("cudnn.conv"));
    check_same_outputs(g, gpu->graph, 8);
  }
}

TEST_CASE("an unsound rule is caught at run time and named", "[opt]") {
  // Dropping a transpose changes the shape: the analysis sees two types in
  // one e-class and names the rule.
  auto g = models::transformer(1, 1, 4, 8, 2, 16);
  pipeline::OptimizeOptions o;
  o.rule_files = {rules_file("(rule drop-transpose (transpose ?x ?p) => ?x)\n")};
  auto res = pipeline::optimize(g, o);
  REQUIRE(res);
  REQUIRE(res->unsound);
  CHECK_THAT(res->report["error"].get<std::string>(), Catch::Contains("drop-transpose"));
  CHECK_THAT(res->report["error"].get<std::string>(), Catch::Contains("different types"));
}

TEST_CASE("rules that do not type-check are rejected at load time with their place", "[opt]") {
  auto g = models::mlp(2, {4, 3});
  auto load = [&](const std::string& text) {
    pipeline::OptimizeOptions o;
    o.rule_files = {rules_file(text)};
    auto res = pipeline::optimize(g, o);
    REQUIRE_FALSE(res);
    return res.error().to_string();
  };
  CHECK_THAT(load("(rule r (frobnicate ?x) => ?x)"), Catch::Contains(":1:10: error: unknown op 'frobnicate'"));
  CHECK_THAT(load("(rule r (transpose ?x) => ?x)"), Catch::Contains("its e-graph form is (transpose x0 perm)"));
  CHECK_THAT(load("(rule r (relu ?x) => ?x :if (= (rank ?y) 2))"), Catch::Contains("?y"));
  CHECK_THAT(load("(rule r (relu ?x) => ?x :if (rnak ?x))"), Catch::Contains("rnak"));
}

TEST_CASE("models the target cannot run - or the e-graph cannot express - are errors naming what", "[opt]") {
  // A cuDNN call has infinite cost on the CPU: nothing else computes it.
  models::GraphBuilder b("gpu_only");
  std::string x = b.input("x", {2, 3});
  auto g = b.finish({b.op("cublas.matmul", {x, b.weight({3, 4}, 1.0)})});
  pipeline::OptimizeOptions o;  // no rules: nothing can replace the call
  auto res = pipeline::optimize(g, o);
  REQUIRE_FALSE(res);
  CHECK_THAT(res.error().to_string(), Catch::Contains("target cpu cannot run this model"));
  CHECK_THAT(res.error().to_string(), Catch::Contains("cublas.matmul"));
  o.target = "cuda";
  CHECK(pipeline::optimize(g, o));

  // An attribute the op does not declare would be lost in the e-graph.
  models::GraphBuilder c("odd");
  std::string y = c.input("y", {2, 3});
  ir::Attrs odd;
  odd.set("frobnication", std::int64_t{3});
  auto h = c.finish({c.op("relu", {y}, odd)});
  auto t = rules::to_egraph(h);
  REQUIRE_FALSE(t);
  CHECK_THAT(t.error().to_string(), Catch::Contains("node 'relu_0'"));
  CHECK_THAT(t.error().to_string(), Catch::Contains("attribute 'frobnication' is not part of the e-graph form"));
}

TEST_CASE("graph -> e-graph -> graph with the imported nodes is the same program", "[opt]") {
  auto g = models::resnet(8, {4}, 1, 3);
  auto t = rules::to_egraph(g);
  REQUIRE(t);
  // Each class's first node is the imported one here: nothing else was added.
  auto back = rules::from_egraph(*t, [&](egraph::EClassId c) { return t->graph.nodes(t->graph.find(c))[0].id; });
  if (!back) FAIL(back.error().to_string());
  CHECK(back->outputs == g.outputs);
  check_same_outputs(g, *back, 3);
  // Types are known per class, and constants are marked constant.
  const auto& out = t->analysis->data(t->outputs[0]);
  CHECK(out.kind == rules::TensorInfo::Kind::Tensor);
  CHECK(ir::to_string(out.type.shape) == "[1 3]");
  CHECK_FALSE(out.constant);
}

TEST_CASE("values named as the rebuilt graph names its own keep their meaning", "[opt]") {
  // Found by tools/fuzz_targets.py --opt: the rebuilt graph named the value
  // of e-class 4 "v4", also the name of the source's first output, which
  // then came from the wrong node (or the graph did not type-check). And
  // equal nodes (s1, s2: one e-node, named s1) give two outputs.
  const char* text = R"((graph names
  (input a i8 [3 4 2 1])
  (input v9 f32 [2])
  (init v12 f32 [2] [1 2])
  (node n2 reduce_max (v2) (a) :axes [2] :keepdims 0)
  (node n4 reduce_max (v4) (a) :axes [1] :keepdims 0)
  (node n5 concat (v5) (v2 v2) :axis 1)
  (node n6 pad (v6) (v2) :pads [2 0 0 -1 0 0] :mode "constant")
  (node n7 add (c1) (v9 v12))
  (node n8 mul (v3) (c1 v9))
  (node n9 neg (s1) (v9))
  (node n10 neg (s2) (v9))
  (output v4 v5 v6 v9 v12 v3 v4 s2 s1)))";
  auto g = ir::read_sat(text, "names.sat");
  if (!g) FAIL(g.error().to_string());
  for (const char* target : {"cpu", "cuda"}) {
    INFO(target);
    auto res = pipeline::optimize(*g, shipped(target));
    if (!res) FAIL(res.error().to_string());
    CHECK(res->graph.outputs == g->outputs);
    std::set<std::string> defined;  // every value once
    for (const ir::GraphValue& in : res->graph.inputs) CHECK(defined.insert(in.name).second);
    for (const auto& [name, value] : res->graph.initializers) CHECK(defined.insert(name).second);
    for (const ir::Node& n : res->graph.nodes)
      for (const std::string& o : n.outputs) CHECK(defined.insert(o).second);
    // A node the optimizer kept keeps its names (messages name the user's node).
    CHECK(std::any_of(res->graph.nodes.begin(), res->graph.nodes.end(), [](const ir::Node& n) {
      return n.name == "n4" && n.op == "reduce_max" && n.outputs == std::vector<std::string>{"v4"};
    }));
    auto inputs = random_inputs(*g, 7);
    auto want = runtime::interpret(*g, inputs);
    REQUIRE(want);
    auto got = runtime::interpret(res->graph, inputs);
    if (!got) FAIL(got.error().to_string());
    REQUIRE(got->size() == want->size());
    for (std::size_t k = 0; k < want->size(); ++k) {
      INFO("output " << k);
      REQUIRE((*got)[k].dims() == (*want)[k].dims());
      for (std::size_t i = 0; i < (*want)[k].numel(); ++i) CHECK((*got)[k].at(i) == (*want)[k].at(i));
    }
  }
}

TEST_CASE("random elementwise graphs optimize to programs computing the same values", "[opt]") {
  // Every type, extremes among the inputs (tests/random_graphs.hpp); both
  // fail (an integer division by zero, maybe another first) or agree.
  int optimized = 0;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const test::RandomGraph r = test::random_elementwise_graph(seed);
    const char* target = seed % 4 ? "cpu" : "cuda";
    INFO("seed " << seed << " --target " << target << ": " << r.text);
    auto res = pipeline::optimize(r.graph, shipped(target));
    if (!res) FAIL(res.error().to_string());
    REQUIRE_FALSE(res->unsound);
    optimized += res->graph.nodes.size() < r.graph.nodes.size();
    auto want = runtime::interpret(r.graph, r.inputs);
    auto got = runtime::interpret(res->graph, r.inputs);
    REQUIRE(static_cast<bool>(got) == static_cast<bool>(want));
    if (!want) continue;
    for (std::size_t k = 0; k < want->size(); ++k) {
      const ir::Tensor &g = (*got)[k], &w = (*want)[k];
      INFO("output " << k << " of " << w.summary());
      REQUIRE(g.dtype() == w.dtype());
      REQUIRE(g.dims() == w.dims());
      for (std::size_t i = 0; i < w.numel(); ++i) {
        INFO("element " << i);
        if (!ir::is_float(w.dtype()))
          CHECK(g.at_int(i) == w.at_int(i));
        else if (std::isnan(w.at(i)))
          CHECK(std::isnan(g.at(i)));
        else if (std::isinf(w.at(i)))
          CHECK(g.at(i) == w.at(i));
        else
          CHECK(g.at(i) == Approx(w.at(i)).epsilon(1e-5).margin(1e-6));
      }
    }
  }
  CHECK(optimized > 50);  // the rules did something
}

TEST_CASE("tensor built-ins", "[opt][builtins]") {
  rules::BuiltinRegistry& reg = rules::BuiltinRegistry::global();
  rules::register_tensor_builtins(reg);
  models::GraphBuilder b("t");
  std::string x = b.input("x", {2, 3, 5});
  std::string c = b.fill({1, 3, 1}, 1.0);
  std::string z = b.fill({}, 0.0);
  std::string y = b.op("mul", {x, c});
  auto g = b.finish({y, b.op("add", {x, z})});
  auto t = rules::to_egraph(g);
  REQUIRE(t);
  // Evaluate (f args...) with ?x ?c ?z bound to the classes of x, c and z.
  auto eval = [&](const std::string& expr) {
    std::vector<egraph::EClassId> bind;
    for (const std::string& n : {x, c, z}) {
      auto sym = egraph::Op::symbol(n);
      std::optional<egraph::EClassId> cls;
      for (egraph::EClassId k : t->graph.class_ids())
        for (egraph::NodeId node : t->graph.nodes(k)) {
          auto kids = t->graph.children(node);
          if (kids.size() == 1) {
            auto leaf = rules::leaf_symbol(t->graph, kids[0]);
            if (leaf && (*leaf == sym || t->analysis->constants().name_of(*leaf) == n)) cls = k;
          }
        }
      REQUIRE(cls);
      bind.push_back(*cls);
    }
    auto parsed = parse_sexprs(expr, "expr");
    REQUIRE(parsed);
    std::vector<std::string> names = {"?x", "?c", "?z"};
    auto e = rules::Expr::compile((*parsed)[0],
                                  [&](const std::string& v) -> std::optional<egraph::VarId> {
                                    for (std::size_t i = 0; i < names.size(); ++i)
                                      if (v == names[i]) return static_cast<egraph::VarId>(i);
                                    return std::nullopt;
                                  },
                                  reg);
    rules::EvalContext ctx{t->graph, bind};
    auto v = e.eval(ctx);
    return v ? v->to_string() : std::string("fail");
  };
  CHECK(eval("(shape ?x)") == "[2 3 5]");
  CHECK(eval("(rank ?x)") == "3");
  CHECK(eval("(dtype ?x)") == "f32");
  CHECK(eval("(dim ?x -1)") == "5");
  CHECK(eval("(numel ?x)") == "30");
  CHECK(eval("(is-one ?c)") == "true");
  CHECK(eval("(is-zero ?c)") == "false");
  CHECK(eval("(is-zero ?z)") == "true");
  CHECK(eval("(is-const ?c)") == "true");
  CHECK(eval("(is-const ?x)") == "false");
  CHECK(eval("(broadcasts-to ?c ?x)") == "true");
  CHECK(eval("(broadcasts-to ?x ?c)") == "false");
  CHECK(eval("(channel-bias? ?c ?x)") == "true");
  CHECK(eval("(perm-compose [1 2 0] [1 2 0])") == "[2 0 1]");
  CHECK(eval("(perm-compose [1 0 2] [2 1 0])") == "[2 0 1]");
  CHECK(eval("(perm-inverse [1 2 0])") == "[2 0 1]");
  CHECK(eval("(perm-identity? (perm-compose [1 2 0] (perm-inverse [1 2 0])))") == "true");
  CHECK(eval("(perm-of [] 3)") == "[2 1 0]");
  CHECK(eval("(perm-of [] 1099511627776)") == "fail");      // (no list of 2^40 elements: kMaxListLength)
  CHECK(eval("(perm-compose [0 0 1] [0 1 2])") == "fail");  // not a permutation
  CHECK(eval("(swap-last 4)") == "[0 1 3 2]");
  CHECK(eval("(axes-from -2 4)") == "[2 3]");
  CHECK(eval("(reduced-count ?x [0 2])") == "10");
  CHECK(eval("(result-shape transpose ?x [2 0 1])") == "[5 2 3]");
  CHECK(eval("(result-shape matmul ?x ?x)") == "fail");  // [2 3 5] x [2 3 5] does not fit
  CHECK(eval("(leading-shape ?x)") == "[2 1 1]");
  CHECK(eval("(channel-shape ?x)") == "[3 1]");
  // x[2 3 5]: [:, 1:3, 1:] then [:, 1:, 2:-1] = [:, 2:3, 3:4].
  CHECK(eval("(slice-compose starts ?x [1 1] [3 5] [1 2] [] [1 2] [5 -1] [1 2] [])") == "[2 3]");
  CHECK(eval("(slice-compose ends ?x [1 1] [3 5] [1 2] [] [1 2] [5 -1] [1 2] [])") == "[3 4]");
  CHECK(eval("(slice-compose axes ?x [1 1] [3 5] [1 2] [] [1 2] [5 -1] [1 2] [])") == "[1 2]");
  CHECK(eval("(slice-compose starts ?x [0] [1] [0] [2] [0] [1] [0] [])") == "fail");  // a step of 2

  SECTION("slice of slice computes the same as the composed slice") {
    models::GraphBuilder s("slices");
    std::string in = s.input("x", {4, 6});
    ir::Attrs a1, a2;
    a1.set("starts", std::vector<std::int64_t>{1, -5});
    a1.set("ends", std::vector<std::int64_t>{4, 6});
    a1.set("axes", std::vector<std::int64_t>{0, 1});
    a2.set("starts", std::vector<std::int64_t>{1});
    a2.set("ends", std::vector<std::int64_t>{-1});
    a2.set("axes", std::vector<std::int64_t>{-1});
    auto sg = s.finish({s.op("slice", {s.op("slice", {in}, a1)}, a2)});
    auto res = pipeline::optimize(sg, shipped("cpu"));
    REQUIRE(res);
    CHECK(res->report["ops_after"]["slice"].get<int>() == 1);
    check_same_outputs(sg, res->graph, 5);
  }
}

TEST_CASE("measured prices decide: the timed ops missing are measured once - a library call measured slow loses",
          "[opt]") {
  auto mlp = models::mlp(4, {32, 64, 10});
  auto o = shipped("cpu");
  extract::Calibration cal;
  int asked = 0;
  std::set<std::string> ops;
  o.calibration = &cal;
  o.measure = [&](const std::map<std::string, extract::TimedOp>& missing, extract::Calibration& c) {
    ++asked;
    for (const auto& [sig, op] : missing) {
      ops.insert(op.def->name);
      c.us[sig] = op.def->kind == ir::OpKind::Library ? 1e6 : 1.0;  // here BLAS is slow
    }
    return nlohmann::json{{"measured", missing.size()}};
  };
  auto res = pipeline::optimize(mlp, o);
  REQUIRE(res);
  CHECK(asked == 1);
  CHECK(ops.count("blas.gemm") == 1);
  CHECK(ops.count("matmul") == 1);  // the model as written is measured too
  for (const auto& [op, n] : res->report["ops_after"].items()) CHECK(op.rfind("blas.", 0) != 0);
  CHECK(res->report["calibration"]["modeled_ops"] == 0);
  CHECK(res->report["calibration"]["measured"].get<std::size_t>() == cal.us.size());
  // Measured fast, BLAS wins again; nothing is left to measure.
  for (auto& [sig, us] : cal.us) us = sig.rfind("blas.", 0) == 0 ? 1.0 : 1e6;
  auto again = pipeline::optimize(mlp, o);
  REQUIRE(again);
  CHECK(asked == 1);
  CHECK(again->report["ops_after"].value("matmul", 0) == 0);
  CHECK(again->report["calibration"]["timed_ops_missing"] == 0);
}

TEST_CASE("a channel shuffle's reshape is priced as the copy the lowering makes - in the e-graph as in the graph",
          "[opt]") {
  // ShuffleNet's shuffle: [1 116 28 28] split in two groups of channels,
  // the groups transposed, merged back. Merging the transposed dims needs
  // a copy of the 364 KB (CostModel::price_after); splitting them again
  // does not.
  const auto shuffle = [](const char* shape) {
    return std::string(R"((graph shuffle
      (input x f32 [1 116 28 28])
      (node a relu (y) (x))
      (node s reshape (g) (y) :shape [1 2 58 28 28])
      (node t transpose (h) (g) :perm [0 2 1 3 4])
      (node r reshape (z) (h) :shape )") +
           shape + R"()
      (output z)))";
  };
  auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const double bytes = 116 * 28 * 28 * 4;
  const double copy = cpu->spec().copy_call_us + 2 * bytes / (cpu->spec().copy_gbytes_per_s * 1e3);
  std::map<std::string, double> after;
  for (const char* shape : {"[1 116 28 28]", "[1 58 2 28 28]"}) {
    INFO(shape);
    auto g = ir::read_sat(shuffle(shape), "shuffle.sat");
    REQUIRE(g);
    auto res = pipeline::optimize(*g, shipped("cpu"));
    REQUIRE(res);
    check_same_outputs(*g, res->graph, 3);
    // The extractor's price of its choice (in the e-graph) is the
    // program's (in the graph written out).
    after[shape] = res->report["extraction"]["dag_cost"].get<double>();
    CHECK(res->report["cost_after"].get<double>() == Approx(after[shape]).epsilon(1e-6));
  }
  CHECK(after["[1 116 28 28]"] - after["[1 58 2 28 28]"] == Approx(copy - 0.01).epsilon(1e-3));
}
