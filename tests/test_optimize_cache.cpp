// The optimized-graph cache (pipeline/optimize_cache.hpp): a second
// optimization of the same model reads the graph the first one kept, the
// very same program; anything optimize() reads that differs (a weight's
// bytes, a rule file's text, the target, a limit, the prices) is a miss,
// and a damaged entry is a miss, never a wrong graph.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "pipeline/optimize_cache.hpp"
#include "runtime/interp.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  auto d = test::temp_path("saturn-opt-cache", name);
  fs::remove_all(d);
  return d;
}

pipeline::OptimizeOptions options(const std::string& target = "cpu") {
  pipeline::OptimizeOptions o;
  o.target = target;
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", target);
  return o;
}

ir::Graph model() {
  auto g = ir::import_onnx_file(test::source_dir() + "/docs/examples/models/resnet_small.onnx");
  REQUIRE(g);
  return *g;
}

std::vector<fs::path> entries(const fs::path& d) {
  std::vector<fs::path> out;
  if (fs::exists(d))
    for (const auto& e : fs::directory_iterator(d)) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("a second optimization of the same model is the kept graph - the same program") {
  const fs::path dir = fresh_dir("hit");
  const pipeline::OptimizeCache cache(dir);
  const ir::Graph g = model();
  const auto o = options();
  auto first = pipeline::optimize_cached(g, o, cache);
  REQUIRE(first);
  CHECK(first->report["cache"] == "miss");
  REQUIRE(entries(dir).size() == 1);
  auto second = pipeline::optimize_cached(g, o, cache);
  REQUIRE(second);
  CHECK(second->report["cache"] == "hit");
  // Exactly the graph the first run ran: library calls and weights included.
  CHECK(ir::write_sat(second->graph) == ir::write_sat(first->graph));
  CHECK(second->report["nodes_after"] == first->report["nodes_after"]);
  auto fresh = pipeline::optimize(g, o);
  REQUIRE(fresh);
  CHECK(ir::write_sat(second->graph).size() == ir::write_sat(fresh->graph).size());
  std::map<std::string, int> ops_fresh, ops_kept;
  for (const auto& n : fresh->graph.nodes) ++ops_fresh[n.op];
  for (const auto& n : second->graph.nodes) ++ops_kept[n.op];
  CHECK(ops_kept == ops_fresh);
  // It computes what the model computes.
  std::vector<ir::Tensor> in{test::random_tensor(ir::static_dims(g.inputs[0].type.shape), 3, -1, 1, ir::DType::F32)};
  auto want = runtime::interpret(g, in);
  auto got = runtime::interpret(second->graph, in);
  REQUIRE(want);
  REQUIRE(got);
  for (std::size_t i = 0; i < (*want)[0].numel(); ++i) CHECK((*got)[0].at(i) == Approx((*want)[0].at(i)).margin(1e-4));
  fs::remove_all(dir.parent_path());
}

TEST_CASE("what the optimization reads is in the key - a change is a miss") {
  const ir::Graph g = model();
  const auto o = options();
  const auto base = pipeline::OptimizeCache::key(g, o);
  REQUIRE(base);
  CHECK(pipeline::OptimizeCache::key(g, o) == base);  // deterministic

  ir::Graph other_weight = g;
  auto& w = other_weight.initializers.begin()->second;
  w.set(0, w.at(0) + 1);  // copy-on-write: g keeps its values
  CHECK(pipeline::OptimizeCache::key(other_weight, o) != base);
  CHECK(pipeline::OptimizeCache::key(g, o) == base);

  CHECK(pipeline::OptimizeCache::key(g, options("cuda")) != base);
  auto fewer_iters = o;
  fewer_iters.saturation.iter_limit = 3;
  CHECK(pipeline::OptimizeCache::key(g, fewer_iters) != base);
  auto other_extractor = o;
  other_extractor.extractor = "tree-greedy";
  CHECK(pipeline::OptimizeCache::key(g, other_extractor) != base);

  // A rule file's text, not only its name.
  const fs::path dir = fresh_dir("rules");
  fs::create_directories(dir);
  const fs::path rules = dir / "mine.rules";
  std::ofstream(rules) << "(rule r (relu (relu ?x)) => (relu ?x))\n";
  auto with_rules = o;
  with_rules.rule_files.push_back(rules.string());
  const auto k1 = pipeline::OptimizeCache::key(g, with_rules);
  std::ofstream(rules) << "(rule r (relu (relu ?x)) => (relu ?x))\n; edited\n";
  const auto k2 = pipeline::OptimizeCache::key(g, with_rules);
  REQUIRE(k1);
  REQUIRE(k2);
  CHECK(*k1 != *k2);
  with_rules.rule_files.push_back((dir / "missing.rules").string());
  CHECK_FALSE(pipeline::OptimizeCache::key(g, with_rules));  // not kept: optimize() reports the missing file

  // The prices.
  extract::Calibration cal;
  cal.target = "cpu";
  cal.machine = "test machine";
  auto priced = o;
  priced.calibration = &cal;
  const auto p1 = pipeline::OptimizeCache::key(g, priced);
  cal.us["conv f32[1 3 8 8]"] = 12.5;
  CHECK(pipeline::OptimizeCache::key(g, priced) != p1);
  // An optimization that measures is never kept.
  priced.measure = [](const std::map<std::string, extract::TimedOp>&, extract::Calibration&) {
    return nlohmann::json::object();
  };
  CHECK_FALSE(pipeline::OptimizeCache::key(g, priced));
  fs::remove_all(dir.parent_path());
}

TEST_CASE("a damaged or foreign cache entry is optimized again") {
  const fs::path dir = fresh_dir("damaged");
  const pipeline::OptimizeCache cache(dir);
  const ir::Graph g = model();
  const auto o = options();
  REQUIRE(pipeline::optimize_cached(g, o, cache));
  auto files = entries(dir);
  REQUIRE(files.size() == 1);
  {
    std::fstream s(files[0], std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(-5, std::ios::end);
    s.put('\x7f');
  }
  auto again = pipeline::optimize_cached(g, o, cache);
  REQUIRE(again);
  CHECK(again->report["cache"] == "miss");
  CHECK(pipeline::optimize_cached(g, o, cache)->report["cache"] == "hit");
  // No folder: nothing kept, every optimization runs.
  const pipeline::OptimizeCache off{fs::path()};
  auto r = pipeline::optimize_cached(g, o, off);
  REQUIRE(r);
  CHECK(r->report["cache"] == "off");
  fs::remove_all(dir.parent_path());
}
