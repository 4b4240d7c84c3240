// cli::timed_op_graph: what the calibration runs to time an op. Each copy
// of the op reads weights of its own (copies sharing one found it in the
// cache and measured several times faster than the op runs in a program),
// over the same activations, which a oneDNN op on cpu receives in
// oneDNN's own layout.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "ir/graph.hpp"
#include "runtime/interp.hpp"
#include "tools/calibrate.hpp"

using namespace saturn;

namespace {

// A 3x3 convolution of 8 channels over 6x6, its weight a constant.
extract::TimedOp conv_op(const char* op) {
  extract::TimedOp t;
  t.def = ir::OpRegistry::get().find(op);
  REQUIRE(t.def);
  t.attrs.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  t.attrs.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  t.in = {ir::ValueType{ir::DType::F32, ir::shape_of({1, 8, 6, 6})},
          ir::ValueType{ir::DType::F32, ir::shape_of({8, 8, 3, 3})}};
  t.facts = {{true, true}, {false, true}};
  t.out = t.in[0];
  return t;
}

}  // namespace

TEST_CASE("a timed op's copies read weights of their own over the same activations") {
  const extract::TimedOp op = conv_op("dnnl.conv");
  const ir::Graph g = cli::timed_op_graph(op, "cpu", 3);
  REQUIRE(ir::infer_types(g));
  REQUIRE(g.inputs.size() == 1);  // the activation; the weights are initializers
  CHECK(g.inputs[0].type.shape == op.in[0].shape);
  REQUIRE(g.outputs.size() == 3);
  // The timed nodes, and where their operands come from.
  std::set<std::string> sources, weights;
  int timed = 0;
  for (const ir::Node& n : g.nodes) {
    if (n.name.rfind("timed", 0) != 0) continue;
    ++timed;
    CHECK(n.op == "dnnl.conv");
    CHECK(n.attrs.ints("kernel_shape") == std::vector<std::int64_t>{3, 3});
    REQUIRE(n.inputs.size() == 2);
    sources.insert(n.inputs[0]);
    weights.insert(n.inputs[1]);
    CHECK(g.initializers.count(n.inputs[1]) == 1);
  }
  CHECK(timed == 3);
  CHECK(sources.size() == 1);  // one activation for all
  CHECK(weights.size() == 3);  // a weight each
  // On cpu a oneDNN op's activation comes through oneDNN's layout: the
  // copies do not read the graph input itself.
  CHECK(*sources.begin() != g.inputs[0].name);
  // Weights of their own, with values of their own: the copies compute
  // different results from the same input.
  ir::Tensor x(ir::DType::F32, {1, 8, 6, 6});
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 7) - 3.0);
  auto y = runtime::interpret(g, std::vector<ir::Tensor>{x});
  REQUIRE(y);
  REQUIRE(y->size() == 3);
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = a + 1; b < 3; ++b) {
      bool differ = false;
      for (std::size_t i = 0; i < (*y)[a].numel() && !differ; ++i) differ = (*y)[a].at(i) != (*y)[b].at(i);
      CHECK(differ);
    }
}

TEST_CASE("off the cpu, or for an op that is not oneDNN's, the copies read the activation as given") {
  for (const auto& [op, target] : {std::pair{"dnnl.conv", "cuda"}, std::pair{"conv", "cpu"}}) {
    INFO(op << " on " << target);
    const ir::Graph g = cli::timed_op_graph(conv_op(op), target, 2);
    REQUIRE(ir::infer_types(g));
    REQUIRE(g.nodes.size() == 2);
    for (const ir::Node& n : g.nodes) CHECK(n.inputs[0] == g.inputs[0].name);
  }
}

TEST_CASE("an op whose weights come from memory is timed over copies whose weights overflow the cache") {
  extract::TimedOp op = conv_op("dnnl.conv");
  CHECK(cli::timed_copies(op, "cpu", 1) == 1);  // weights in the cache: alone (or 8 copies when short)
  op.facts.weights_from_memory = true;
  // 8x8x3x3 floats (2.3 KB, 0.19 us at 12 GB/s): as many copies as the
  // cap allows, but not for an op 10 times longer than its weights' read.
  CHECK(cli::timed_copies(op, "cpu", 1) == cli::kMaxWeightCopies);
  CHECK(cli::timed_copies(op, "cpu", 2) == 1);
  // ResNet's 512x512x3x3 (9.4 MB, 786 us): enough to take 3x the CPU
  // model's 32 MB, for a oneDNN call of 0.7 ms; a plain loop nest of 20 ms
  // alone.
  op.in[1] = ir::ValueType{ir::DType::F32, ir::shape_of({512, 512, 3, 3})};
  const double bytes = 512.0 * 512 * 9 * 4;
  const int copies = cli::timed_copies(op, "cpu", 700);
  CHECK(copies == static_cast<int>(std::ceil(cli::kWeightSweep * 32e6 / bytes)));
  CHECK(copies * bytes >= cli::kWeightSweep * 32e6);
  CHECK((copies - 1) * bytes < cli::kWeightSweep * 32e6);
  CHECK(cli::timed_copies(op, "cpu", 20000) == 1);
  // Larger than the sweep alone: two, so that each copy follows another's weights.
  op.in[1] = ir::ValueType{ir::DType::F32, ir::shape_of({8192, 8192, 1, 1})};
  CHECK(cli::timed_copies(op, "cpu", 1000) == 2);
  // The GPU model keeps no such cache: alone.
  CHECK(cli::timed_copies(op, "cuda", 1000) == 1);
}
