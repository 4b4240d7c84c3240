// cli::calibration_probe: what `saturn calibrate` measures without a model.
// Its layers must reach every family of library calls the cost model
// scales (extract::op_family) often enough to give each a ratio, with their
// weights in the cache, or, in the second probe, all read from memory.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "extract/calibration.hpp"
#include "extract/cost_model.hpp"
#include "ir/graph.hpp"
#include "tools/calibration_probe.hpp"

using namespace saturn;

namespace {

double weight_bytes(const ir::Graph& g) {
  double bytes = 0;
  for (const auto& [name, w] : g.initializers) bytes += static_cast<double>(w.nbytes());
  return bytes;
}

// The family each layer's library form falls in: its convolutions as
// dnnl.conv, its products as blas.matmul, weights constant.
std::map<std::string, int> families(const ir::Graph& g, bool from_memory) {
  auto types = ir::infer_types(g);
  REQUIRE(types);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  std::map<std::string, int> count;
  for (const ir::Node& n : g.nodes) {
    if (n.op == "relu") continue;
    const ir::OpDef& library = *r.find(n.op == "conv" ? "dnnl.conv" : "blas.matmul");
    std::vector<ir::ValueType> in;
    for (const std::string& v : n.inputs) in.push_back(types->at(v));
    extract::OperandFacts facts{{true, true}, {false, true}};
    facts.weights_from_memory = from_memory;
    ++count[extract::op_family(library, n.attrs, in, types->at(n.outputs[0]), facts)];
  }
  return count;
}

}  // namespace

TEST_CASE("the calibration probe reaches every family of library calls, its weights in the cache or not") {
  const auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const double cache = cpu->spec().weight_cache_bytes;
  const ir::Graph in_cache = cli::calibration_probe(false);
  const ir::Graph from_memory = cli::calibration_probe(true);
  CHECK(weight_bytes(in_cache) < cache);
  CHECK(weight_bytes(from_memory) > cache);
  for (const auto& [g, memory] : {std::pair{&in_cache, false}, std::pair{&from_memory, true}}) {
    const std::string suffix = memory ? " weights from memory" : "";
    const auto count = families(*g, memory);
    for (const char* family :
         {"dnnl. spatial", "dnnl. pointwise", "dnnl. depthwise", "dnnl. grouped", "blas. rows", "blas. one row"}) {
      INFO(family << suffix);
      CHECK(count.count(family + suffix) == 1);
      if (count.count(family + suffix)) CHECK(count.at(family + suffix) >= static_cast<int>(extract::kFamilySize));
    }
    // Each layer reads an input of its own: no layer's alternatives are
    // another's.
    std::set<std::string> read;
    for (const ir::Node& n : g->nodes)
      if (n.op != "relu") {
        CHECK(read.insert(n.inputs[0]).second);
        CHECK(std::any_of(g->inputs.begin(), g->inputs.end(),
                          [&](const ir::GraphValue& v) { return v.name == n.inputs[0]; }));
      }
  }
}
