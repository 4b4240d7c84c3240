// End to end on the CPU target: every bundled model, as imported and as
// `saturn opt --target cpu` leaves it (BLAS / oneDNN substitutions, folded
// batch norms), compiles and gives the interpreter's outputs on its bundled
// input (and PyTorch's outputs, for the models exported from it); `saturn
// run --target cpu` checks, benchmarks and reports memory.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/onnx_import.hpp"
#include "lower/lowering.hpp"
#include "lower/memory_plan.hpp"
#include "pipeline/optimize.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"
#include "tests/helpers.hpp"

namespace fs = std::filesystem;
using namespace saturn;

namespace {

void check_close(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    REQUIRE(got[k].dims() == want[k].dims());
    for (std::size_t i = 0; i < got[k].numel(); ++i) {
      INFO("output " << k << " element " << i);
      CHECK(got[k].at(i) == Approx(want[k].at(i)).epsilon(1e-4).margin(1e-5));
    }
  }
}

}  // namespace

TEST_CASE("Bundled models on the CPU target give the interpreter's outputs - before and after saturn opt") {
  const fs::path dir = fs::path(test::source_dir()) / "docs/examples/models";
  int models = 0, from_torch = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnx") continue;
    ++models;
    std::string stem = e.path().stem().string();
    INFO(stem);
    auto input = ir::read_tensor_pb((dir / (stem + ".input.pb")).string());
    REQUIRE(input);
    std::vector<ir::Tensor> inputs{*input};
    auto g = ir::import_onnx_for_inputs(e.path().string(), inputs);
    REQUIRE(g);
    auto want = runtime::interpret(*g, inputs);
    REQUIRE(want);
    // A model exported from PyTorch (tools/check_torch_models.py
    // --write-fixture) also carries PyTorch's output: the interpreter gives it.
    if (const fs::path torch_out = dir / (stem + ".torch.pb"); fs::exists(torch_out)) {
      auto torch = ir::read_tensor_pb(torch_out.string());
      REQUIRE(torch);
      ++from_torch;
      check_close({want->front()}, {*torch});
    }

    pipeline::OptimizeOptions o;
    o.target = "cpu";
    o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
    auto opt = pipeline::optimize(*g, o);
    REQUIRE(opt);
    for (const ir::Graph* graph : {&*g, &opt->graph}) {
      for (bool fuse : {true, false}) {
        runtime::CpuExecutorOptions co;
        co.threads = 2;
        co.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
        co.lowering.fuse = fuse;
        auto exec = runtime::CpuExecutor::create(*graph, co);
        if (!exec) FAIL(exec.error().to_string());
        const lower::Program& p = (*exec)->program();
        CHECK(p.reference_ops.empty());  // every op of these models has a native lowering
        // Only the libraries the extractor chose run: as written, Saturn's loops.
        if (graph == &opt->graph)
          CHECK(p.library_calls > 0);
        else
          CHECK(p.library_calls == 0);
        CHECK(p.arena_bytes <= p.naive_bytes);
        CHECK(p.arena_bytes >= p.lower_bound_bytes);
        lower::check_memory_plan(p);
        for (int run = 0; run < 2; ++run) {  // the arena is reused across runs
          auto got = (*exec)->run(ir::runtime_inputs(*graph, inputs));
          if (!got) FAIL(got.error().to_string());
          check_close(*got, *want);
        }
      }
    }
  }
  CHECK(models >= 4);
  CHECK(from_torch >= 1);
}

TEST_CASE("saturn run --target cpu checks outputs and reports latency and memory as JSON") {
  const std::string m = test::source_dir() + "/docs/examples/models/transformer_layer";
  auto tmp = test::scratch_dir() / "cpu-run";
  auto ref = test::run_cli("run " + m + ".onnx --inputs " + m + ".input.pb -o " + tmp.string());
  REQUIRE(ref.status == 0);
  auto r = test::run_cli("run " + m + ".onnx --target cpu --inputs " + m + ".input.pb --check " +
                         (tmp / "output_0.pb").string() + " --atol 1e-5 --bench 5 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["runs"] == 5);
  CHECK(j["median_ms"].get<double>() >= j["min_ms"].get<double>());
  CHECK(j["min_ms"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<double>() < j["naive_bytes"].get<double>());
  CHECK(j["check"][0]["ok"] == true);
  // A wrong expected output fails the check (exit 1), on this target too.
  auto bad = test::run_cli("run " + m + ".onnx --target cpu --inputs " + m + ".input.pb --check " + m + ".input.pb");
  CHECK(bad.status == 1);
  // Inputs of the wrong shape: exit 2, saying what the model expects.
  auto wrong = test::run_cli("run " + m + ".onnx --target cpu --inputs " + test::source_dir() +
                             "/docs/examples/models/mlp.input.pb");
  CHECK(wrong.status == 2);
  fs::remove_all(tmp);
}

TEST_CASE("The CPU target refuses symbolic shapes - naming the value") {
  ir::Graph g;
  g.name = "dynamic";
  g.inputs.push_back({"x", {ir::DType::F32, {ir::Dim::symbol("N"), ir::Dim::of(4)}}});
  g.declared_inputs.push_back("x");
  g.nodes.push_back(ir::Node{"r", "relu", {"x"}, {"y"}, {}, "Relu"});
  g.outputs = {"y"};
  auto p = lower::compile_cpu(g);
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("static shapes") != std::string::npos);
  CHECK(p.error().message.find("'x'") != std::string::npos);
  CHECK(p.error().message.find("[N 4]") != std::string::npos);
}
