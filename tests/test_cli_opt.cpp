// `saturn opt` and `saturn extract` from the command line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "extract/calibration.hpp"
#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "ir/tensor.hpp"

using saturn::test::run_cli;
using saturn::test::source_dir;
namespace fs = std::filesystem;

namespace {

fs::path temp(const std::string& name) { return saturn::test::temp_path("saturn-cli-opt-", name); }

}  // namespace

TEST_CASE("opt writes the optimized model and a report with the documented keys") {
  const std::string model = source_dir() + "/docs/examples/models/resnet_small.onnx";
  for (const char* out : {"r.onnx", "r.sat"}) {
    auto o = temp(out), rep = temp("r.json");
    auto r = run_cli("opt " + model + " --target cpu -o " + o.string() + " --report " + rep.string());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.err, Catch::Contains("modeled cost:"));
    CHECK(fs::file_size(o) > 0);
    std::ifstream f(rep);
    auto j = nlohmann::json::parse(f);
    for (const char* key : {"cost_before", "cost_after", "nodes_before", "nodes_after", "rules", "phases"})
      CHECK(j.contains(key));
    CHECK(j["cost_after"].get<double>() < j["cost_before"].get<double>());
    CHECK(j["rules"]["fold-bn-into-conv-nobias"]["applications"].get<int>() > 0);
    CHECK(j["rules"]["fold-bn-into-conv-nobias"]["at"].get<std::string>().find("taso.rules:") != std::string::npos);
    for (const char* phase : {"import", "saturate", "extract"}) CHECK(j["phases"][phase].contains("stop_reason"));
    // The DAG extractor's work: at least one program priced per pass.
    CHECK(j["phases"]["extract"]["programs_priced"].get<int>() >= j["phases"]["extract"]["passes"].get<int>());
    CHECK(j["phases"]["extract"]["passes"].get<int>() >= 1);
    // The optimized model loads and runs (test_opt checks its values).
    if (std::string(out) == "r.onnx") {
      auto run = run_cli("run " + o.string() + " --target interp --json");
      CHECK(run.status == 2);  // no inputs given: bad input, but the model itself loaded
      CHECK_THAT(run.err, Catch::Contains("takes 1 inputs"));
    }
  }
}

TEST_CASE("opt: bad rules and bad flags exit 2 naming the place") {
  const std::string model = source_dir() + "/docs/examples/models/mlp.onnx";
  auto bad = temp("bad.rules");
  std::ofstream(bad) << "(defoptimizer mine\n  (rule r (matmul ?a) => ?a))\n";
  auto r = run_cli("opt " + model + " --rules " + bad.string());
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad.rules:2:12: error: 'matmul' has 1 children"));
  CHECK(run_cli("opt " + model + " --target tpu").status == 2);
  CHECK(run_cli("opt " + model + " --extractor magic").status == 2);
  CHECK(run_cli("opt " + model + " -o out.txt").status == 2);
  CHECK(run_cli("opt " + model + " --rules /no/such/dir").status == 2);
}

TEST_CASE("opt: an unsound user rule exits 1 and names the rule") {
  const std::string model = source_dir() + "/docs/examples/models/transformer_layer.onnx";
  auto bad = temp("unsound.rules");
  std::ofstream(bad) << "(rule swap-matmul (matmul ?a ?b) => (matmul ?b ?a))\n";
  auto r = run_cli("opt " + model + " --no-default-rules --rules " + bad.string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("swap-matmul"));
}

TEST_CASE("opt: user rules add to the shipped ones - limits are reported") {
  const std::string model = source_dir() + "/docs/examples/models/mlp.onnx";
  auto mine = temp("mine.rules");
  std::ofstream(mine) << "(defoptimizer mine :phase 2 (rule relu-as-max (relu ?x) => (max ?x ?x)))\n";
  auto r = run_cli("opt " + model + " --json --quiet --rules " + mine.string());
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["rules"].contains("relu-as-max"));
  CHECK(j["rules"].contains("matmul-blas"));
  auto lim = run_cli("opt " + model + " --json --quiet --iter-limit 1");
  REQUIRE(lim.status == 0);
  CHECK(nlohmann::json::parse(lim.out)["phases"]["saturate"]["stop_reason"] == "iter_limit");
}

TEST_CASE("extract reads egraph-serialize JSON and prints tree and DAG cost") {
  auto g = temp("g.json");
  std::ofstream(g) << R"({"nodes": {
      "r": {"op": "f", "children": ["x", "y"], "eclass": "R", "cost": 1},
      "x": {"op": "g", "children": ["s"], "eclass": "X", "cost": 1},
      "x2": {"op": "a", "children": [], "eclass": "X", "cost": 4},
      "y": {"op": "h", "children": ["s"], "eclass": "Y", "cost": 1},
      "y2": {"op": "b", "children": [], "eclass": "Y", "cost": 4},
      "s": {"op": "s", "children": [], "eclass": "S", "cost": 5}},
    "root_eclasses": ["R"]})";
  auto tree = run_cli("extract " + g.string() + " --extractor tree-greedy --json");
  REQUIRE(tree.status == 0);
  CHECK(nlohmann::json::parse(tree.out)["dag_cost"].get<double>() == 9.0);
  auto dag = run_cli("extract " + g.string() + " --json");
  REQUIRE(dag.status == 0);
  auto j = nlohmann::json::parse(dag.out);
  CHECK(j["extractor"] == "dag-greedy");
  CHECK(j["dag_cost"].get<double>() == 8.0);
  CHECK(j["tree_cost"].get<double>() == 13.0);
  auto text = run_cli("extract " + g.string());
  CHECK_THAT(text.out, Catch::Contains("tree cost 13, dag cost 8"));
  auto bad = temp("bad.json");
  std::ofstream(bad) << "{\"nodes\": 3}";
  auto b = run_cli("extract " + bad.string());
  CHECK(b.status == 2);
  CHECK_THAT(b.err, Catch::Contains("bad.json"));
  CHECK(run_cli("extract " + g.string() + " --extractor nope").status == 2);
  auto ilp = run_cli("extract " + g.string() + " --extractor ilp --json");
  REQUIRE(ilp.status == 0);
  auto k = nlohmann::json::parse(ilp.out);
  CHECK(k["status"] == "optimal");
  CHECK(k["dag_cost"].get<double>() == 8.0);
  CHECK(k["bound"].get<double>() == Approx(8.0));
  CHECK(k["incumbent"].get<double>() == 8.0);
  CHECK(k.contains("time_ms"));
  CHECK_THAT(run_cli("extract " + g.string() + " --extractor ilp").out, Catch::Contains("ilp: optimal"));
}

TEST_CASE("opt --extractor ilp reports the solve - and its program computes what the model does") {
  const std::string model = source_dir() + "/docs/examples/models/resnet_small.onnx";
  auto out = temp("ilp.onnx");
  auto r = run_cli("opt " + model + " --target cpu --extractor ilp --json -o " + out.string());
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["extraction"]["extractor"] == "ilp");
  CHECK((j["extraction"]["status"] == "optimal" || j["extraction"]["status"] == "feasible" ||
         j["extraction"]["status"] == "timeout"));
  CHECK(j["extraction"]["dag_cost"].get<double>() <= j["extraction"]["incumbent"].get<double>() + 1e-9);
  // The ILP's program gives the outputs of the model as written.
  const std::string inputs = source_dir() + "/docs/examples/models/resnet_small.input.pb";
  auto dir = temp("ilp-out");
  auto plain = run_cli("run " + model + " --target interp --inputs " + inputs + " -o " + dir.string());
  REQUIRE(plain.status == 0);
  auto check = run_cli("run " + out.string() + " --target interp --inputs " + inputs + " --check " +
                       (dir / "output_0.pb").string());
  INFO(check.err);
  CHECK(check.status == 0);
}

TEST_CASE("opt --measure runs the model as written and the optimized program - reports both - keeps the faster") {
  const std::string model = source_dir() + "/docs/examples/models/resnet_small.onnx";
  const std::string inputs = source_dir() + "/docs/examples/models/resnet_small.input.pb";
  auto o = temp("m.onnx");
  auto r = run_cli("opt " + model + " --measure --measure-runs 5 --threads 1 --inputs " + inputs + " --json -o " +
                   o.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.contains("measured"));
  const auto& m = j["measured"];
  CHECK(m["target"] == "cpu");
  CHECK(m["runs"] == 5);
  CHECK(m["threads"] == 1);
  CHECK(m["outputs_agree"] == true);
  CHECK(m["outputs_mismatch"] == "");
  const double written = m["written_ms"].get<double>(), optimized = m["optimized_ms"].get<double>();
  CHECK(written > 0);
  CHECK(optimized > 0);
  CHECK(m["written_min_ms"].get<double>() <= written);
  CHECK(m["optimized_min_ms"].get<double>() <= optimized);
  CHECK(m["speedup"].get<double>() == Approx(written / optimized));
  // Never a program slower than the other one measured: the optimized one
  // is kept only when its median is not above the written model's.
  CHECK(m["kept"] == (optimized <= written ? "optimized" : "written"));
  // What -o holds is the program kept.
  auto back = run_cli("opt " + o.string() + " --no-default-rules --json -q");
  REQUIRE(back.status == 0);
  const auto k = nlohmann::json::parse(back.out);
  // (The model as written has its batch norms; the optimized one folds them into the convolutions.)
  REQUIRE(j["ops_before"].contains("batch_norm"));
  REQUIRE_FALSE(j["ops_after"].contains("batch_norm"));
  CHECK(k["ops_before"].contains("batch_norm") == (m["kept"] == "written"));
  // The summary says which figure is measured and which modeled.
  auto text = run_cli("opt " + model + " --measure --measure-runs 3 --inputs " + inputs);
  REQUIRE(text.status == 0);
  CHECK_THAT(text.err, Catch::Contains("x modeled)"));
  CHECK_THAT(text.err, Catch::Contains("x measured)"));
}

TEST_CASE("opt --measure: another target - symbolic inputs without values - exit 2 saying why") {
  const std::string model = source_dir() + "/docs/examples/models/mlp.onnx";
  // (On a machine with a GPU, --measure runs there: test_cuda_device.)
  auto cuda = run_cli("opt " + model + " --measure --measure-runs 2 --target cuda");
  if (cuda.status != 0) {
    CHECK(cuda.status == 2);
    CHECK_THAT(cuda.err, Catch::Contains("--measure on the cuda target: "));
  }
  auto sat = temp("sym.sat");
  std::ofstream(sat) << "(graph g\n  (input x f32 [N 3])\n  (node n relu (y) (x))\n  (output y))\n";
  auto sym = run_cli("opt " + sat.string() + " --measure");
  CHECK(sym.status == 2);
  CHECK_THAT(sym.err, Catch::Contains("input 'x' has shape [N 3]; give --inputs"));
}

TEST_CASE("opt --measure catches a rule that changes what the program computes - keeps the model as written - exit 1") {
  const std::string model = source_dir() + "/docs/examples/models/mlp.onnx";
  auto wrong = temp("wrong.rules");
  std::ofstream(wrong) << "(defoptimizer wrong\n  (rule relu-gone (relu ?x) => ?x))\n";
  auto o = temp("w.onnx");
  auto r =
      run_cli("opt " + model + " --rules " + wrong.string() + " --measure --measure-runs 2 --json -o " + o.string());
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("computes other outputs than the model as written (output 0: worst element"));
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["ops_before"].contains("relu"));
  CHECK_FALSE(j["ops_after"].contains("relu"));  // what the wrong rule made
  CHECK(j["measured"]["outputs_agree"] == false);
  CHECK(j["measured"]["kept"] == "written");
  // -o holds the model as written: its ReLUs are there.
  auto back = run_cli("opt " + o.string() + " --no-default-rules --json -q");
  REQUIRE(back.status == 0);
  CHECK(nlohmann::json::parse(back.out)["ops_before"].contains("relu"));
}

TEST_CASE("calibrate without a model measures the probe - its weights in the cache, then from memory") {
  const fs::path cache = temp("probe-calibration.json");
  fs::remove(cache);
  // (A budget that lets each probe time an op or two: the whole probe takes
  // 45 s on 2 cores.)
  auto r = run_cli("calibrate --threads 1 --json --budget 0.001 --calibration-file " + cache.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["models"].size() == 2);
  CHECK(j["models"][0]["model"] == "probe");
  CHECK(j["models"][1]["model"] == "probe, weights from memory");
  for (const auto& m : j["models"]) {
    CHECK(m["budget_hit"] == true);
    CHECK(m["measured"].get<int>() >= 1);
    CHECK(m["timed_ops_missing"].get<int>() > 20);  // every layer's alternatives
    // Timings other processes crowded: counted (how many depends on the
    // machine's load), never more than were timed.
    CHECK(m["crowded"].get<int>() >= 0);
    CHECK(m["crowded"].get<int>() <= m["measured"].get<int>());
    CHECK(m["crowded_again"].get<int>() <= static_cast<int>(m["second_looks"].size()));
  }
  // What it measured is kept with the roofline's price and its family.
  const auto file = nlohmann::json::parse(std::ifstream(cache));
  CHECK(file["entries"].size() == j["entries"]);
  for (const auto& [sig, us] : file["entries"].items()) {
    INFO(sig);
    CHECK(file["roofline"].contains(sig));
  }
}

TEST_CASE("calibrate measures a model's timed ops once - opt and run price with them - a bad cache is exit 2") {
  const std::string model = source_dir() + "/docs/examples/models/mlp.onnx";
  const fs::path cache = temp("calibration.json");
  fs::remove(cache);
  const std::string file = " --calibration-file " + cache.string();
  auto first = run_cli("calibrate " + model + " --threads 1 --json" + file);
  INFO(first.err);
  REQUIRE(first.status == 0);
  const auto j = nlohmann::json::parse(first.out);
  REQUIRE(j["models"].size() == 1);
  const int measured = j["models"][0]["measured"].get<int>();
  CHECK(measured > 0);
  CHECK(j["models"][0]["failed"].empty());
  CHECK(j["entries"].get<int>() == measured);
  CHECK_THAT(j["machine"].get<std::string>(), Catch::Contains("1 thread"));
  REQUIRE(fs::exists(cache));
  // The second time, everything is known: nothing is measured.
  auto again = nlohmann::json::parse(run_cli("calibrate " + model + " --threads 1 --json" + file).out);
  CHECK(again["models"][0]["measured"] == 0);
  CHECK(again["models"][0]["timed_ops_missing"] == 0);
  CHECK(again["entries"].get<int>() == measured);
  // opt prices every timed op of the model and its rewrites by measurement.
  auto opt = run_cli("opt " + model + " --threads 1 --json" + file);
  REQUIRE(opt.status == 0);
  const auto report = nlohmann::json::parse(opt.out);
  REQUIRE(report.contains("calibration"));
  CHECK(report["calibration"]["modeled_ops"] == 0);
  CHECK(report["calibration"]["entries"].get<int>() == measured);
  CHECK_THAT(opt.err, Catch::Contains("prices: this machine's measurements for every library call and loop nest"));
  {
    // One BLAS product forgotten, of a family measured more than three
    // times, the others (made) twice as fast as the roofline: priced as the
    // roofline times their ratio (CostModel::family_scale).
    nlohmann::json c = nlohmann::json::parse(std::ifstream(cache));
    std::vector<std::string> rows;
    for (const auto& [sig, family] : c["families"].items())
      if (family == "blas. rows") rows.push_back(sig);
    REQUIRE(rows.size() > 3);
    for (const std::string& sig : rows) c["entries"][sig] = c["roofline"][sig].get<double>() / 2;
    for (const char* table : {"entries", "roofline", "families"}) c[table].erase(rows.front());
    const fs::path forgot = temp("calibration-forgot.json");
    std::ofstream(forgot) << c.dump();
    auto scaled_run = run_cli("opt " + model + " --threads 1 --json --calibration-file " + forgot.string());
    REQUIRE(scaled_run.status == 0);
    const auto scaled = nlohmann::json::parse(scaled_run.out)["calibration"];
    CHECK(scaled["modeled_ops"] == 1);
    CHECK(scaled["scaled_ops"] == 1);
    CHECK_THAT(scaled_run.err,
               Catch::Contains("prices: the roofline for 1 library calls and loop nests not measured "
                               "on this machine, 1 of them scaled by what calls like them measured here"));
  }
  // Measured with another thread count, the file is another machine's: not read.
  const auto other_run = run_cli("opt " + model + " --threads 2 --json" + file);
  auto other = nlohmann::json::parse(other_run.out);
  CHECK(other["calibration"]["entries"] == 0);
  CHECK(other["calibration"]["modeled_ops"].get<int>() > 0);
  CHECK_THAT(other_run.err, Catch::Contains("prices: the roofline for " +
                                            std::to_string(other["calibration"]["modeled_ops"].get<int>()) +
                                            " library calls and loop nests not measured on this machine"));
  CHECK_THAT(other_run.err, Catch::Contains("saturn calibrate without a model, a probe of typical layers"));
  // --no-calibration: the roofline alone.
  const auto roofline_run = run_cli("opt " + model + " --no-calibration --json" + file);
  auto roofline = nlohmann::json::parse(roofline_run.out);
  CHECK_FALSE(roofline.contains("calibration"));
  CHECK_THAT(roofline_run.err, Catch::Contains("prices: the roofline alone"));
  // A malformed cache is bad input naming the file, for opt and run alike.
  { std::ofstream(cache) << "{ not json"; }
  for (const std::string& verb : {"opt " + model, "run " + model + " --target cpu"}) {
    auto bad = run_cli(verb + " --threads 1" + file);
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains(cache.string()));
    CHECK_THAT(bad.err, Catch::Contains("not JSON"));
  }
  // cuda measures on the device (test_cuda_device); without one, exit 2 saying so.
  auto no_device = run_cli("calibrate " + model + " --target cuda");
  if (no_device.status != 0) {
    CHECK(no_device.status == 2);
    auto cuda = run_cli("opt " + model + " --target cuda --calibrate");
    CHECK(cuda.status == 2);
    CHECK_THAT(cuda.err, Catch::Contains("--calibrate on the cuda target: "));
    // Not asked to measure, opt prices with the roofline.
    CHECK(run_cli("opt " + model + " --target cuda").status == 0);
    // ... or with the measurements of a GPU elsewhere, when a file is named.
    const fs::path gpu = temp("gpu-calibration.json");
    {
      std::ofstream(gpu) << R"({"format": )" << saturn::extract::Calibration::kFormat
                         << R"(, "target": "cuda", "machine": "Test GPU, cuda", "entries": {"matmul": 1.0}})";
    }
    auto priced = run_cli("opt " + model + " --target cuda --json --calibration-file " + gpu.string());
    INFO(priced.err);
    REQUIRE(priced.status == 0);
    CHECK(nlohmann::json::parse(priced.out)["calibration"]["entries"] == 1);
    auto missing = run_cli("opt " + model + " --target cuda --calibration-file " + temp("none.json").string());
    CHECK(missing.status == 2);
    CHECK_THAT(missing.err, Catch::Contains("no such calibration file"));
  }
  // A budget that runs out is reported; what was measured is kept.
  fs::remove(cache);
  auto hurried = nlohmann::json::parse(run_cli("calibrate " + model + " --threads 1 --budget 0.001 --json" + file).out);
  CHECK(hurried["models"][0]["budget_hit"] == true);
  CHECK(hurried["models"][0]["measured"] == 1);  // the budget is checked before each op
  CHECK(hurried["entries"] == 1);
  CHECK(hurried["models"][0]["modeled_ops"].get<int>() == measured - 1);
}

TEST_CASE("opt -o X.sat puts weights over 64 KiB in X.sat.data - --inline-weights keeps them in the text") {
  // A product by a [200 200] weight (160 KB) and a small bias.
  auto model = temp("big.sat"), input = temp("x.pb");
  {
    std::ofstream f(model);
    f << "(graph big (input x f32 [2 200]) (init w f32 [200 200] [";
    for (int i = 0; i < 200 * 200; ++i) f << (i ? " " : "") << (i % 17) * 0.125 - 1;
    f << "]) (init b f32 [200] [";
    for (int i = 0; i < 200; ++i) f << (i ? " " : "") << i * 0.5;
    f << "]) (node mm matmul (y) (x w)) (node add add (z) (y b)) (output z))\n";
  }
  saturn::ir::Tensor x(saturn::ir::DType::F32, {2, 200});
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 7) - 3);
  REQUIRE(saturn::ir::write_tensor_pb(x, input.string()));
  auto split = temp("split.sat"), whole = temp("whole.sat"), ref = temp("ref");
  REQUIRE(
      run_cli("run " + model.string() + " --target interp --inputs " + input.string() + " -o " + ref.string()).status ==
      0);
  auto r = run_cli("opt " + model.string() + " --target cpu -q -o " + split.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const fs::path data = split.string() + ".data";
  REQUIRE(fs::exists(data));
  CHECK(fs::file_size(data) == 160000);  // the weight (a multiple of 64 bytes); the bias stays in the text
  REQUIRE(run_cli("opt " + model.string() + " --target cpu -q --inline-weights -o " + whole.string()).status == 0);
  CHECK_FALSE(fs::exists(whole.string() + ".data"));
  CHECK(fs::file_size(whole) > fs::file_size(split) + 100000);
  // Both run, with the outputs of the model as written.
  for (const auto& sat : {split, whole}) {
    auto run = run_cli("run " + sat.string() + " --target cpu --no-opt --inputs " + input.string() + " --check " +
                       (ref / "output_0.pb").string());
    INFO(sat << ": " << run.err);
    CHECK(run.status == 0);
  }
  // The data file goes with the .sat: moved alone, the .sat says which file it lacks.
  fs::rename(data, data.string() + ".moved");
  auto lost = run_cli("run " + split.string() + " --target cpu --no-opt --inputs " + input.string());
  CHECK(lost.status == 2);
  CHECK_THAT(lost.err, Catch::Contains("cannot open the data file") && Catch::Contains("split.sat.data"));
}
