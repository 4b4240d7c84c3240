// `saturn opt --explain` (pipeline/explain_report.hpp): the chain from a
// value of the model as written to what the optimized program computes,
// every chain replayed; asking for it changes nothing else.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "pipeline/explain_report.hpp"
#include "pipeline/optimize.hpp"

using namespace saturn;

namespace {

ir::Graph resnet_small() {
  auto g = ir::import_onnx_file(test::source_dir() + "/docs/examples/models/resnet_small.onnx");
  REQUIRE(g);
  return *g;
}

pipeline::OptimizeOptions cpu_options() {
  pipeline::OptimizeOptions o;
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
  return o;
}

std::size_t rule_steps(const nlohmann::json& steps) {
  std::size_t n = 0;
  for (const auto& s : steps) {
    if (s["kind"] == "rule") ++n;
    if (s.contains("operands"))
      for (const auto& o : s["operands"])
        if (o.contains("steps")) n += rule_steps(o["steps"]);
  }
  return n;
}

}  // namespace

TEST_CASE("a fused convolution's explanation names the rules that made it - replayed") {
  const ir::Graph g = resnet_small();
  auto o = cpu_options();
  o.explain = {"relu_2", "gemm_21", "batch_norm_1"};
  auto res = pipeline::optimize(g, o);
  REQUIRE(res);
  const auto& ex = res->report.at("explanations");
  REQUIRE(ex.size() == 3);
  for (const auto& [value, e] : ex.items()) {
    INFO(value << ": " << e.dump(2));
    REQUIRE_FALSE(e.contains("error"));
    CHECK(e["replayed"].get<bool>());
    CHECK_FALSE(e["truncated"].get<bool>());
  }
  // relu(batch_norm(conv)) became one oneDNN call with its ReLU fused.
  const auto& relu = ex["relu_2"];
  CHECK(relu["written"] == "relu");
  CHECK(relu["optimized"] == "dnnl.conv_relu");
  CHECK(rule_steps(relu["steps"]) >= 3);  // fold the batch norm, to oneDNN, fuse the ReLU
  bool to_dnnl = false;
  for (const auto& s : relu["steps"])
    if (s["kind"] == "rule" && s["to"].get<std::string>().find("dnnl.conv_relu") != std::string::npos) to_dnnl = true;
  CHECK(to_dnnl);
  for (const auto& s : relu["steps"])
    if (s["kind"] == "rule") CHECK_THAT(s["at"].get<std::string>(), Catch::Contains(".rules:"));
  // The text names the value, both ops and each rule.
  const std::string text = pipeline::explanation_text(relu);
  CHECK_THAT(text, Catch::Contains("value 'relu_2': relu as written, dnnl.conv_relu in the optimized program"));
  CHECK_THAT(text, Catch::Contains("(replayed)"));
  CHECK_THAT(text, Catch::Contains("fold-bn-into-conv"));
  CHECK_THAT(text, Catch::Contains("conv-relu-dnnl"));
  // Explaining changes nothing else: the same program as without.
  auto plain = pipeline::optimize(g, cpu_options());
  REQUIRE(plain);
  CHECK(ir::write_sat(plain->graph) == ir::write_sat(res->graph));
  CHECK_FALSE(plain->report.contains("explanations"));
}

TEST_CASE("a value that is not computed by a node is bad input naming it") {
  auto o = cpu_options();
  o.explain = {"no_such_value"};
  auto res = pipeline::optimize(resnet_small(), o);
  REQUIRE_FALSE(res);
  CHECK_THAT(res.error().message, Catch::Contains("no value 'no_such_value'"));
  o.explain = {"x"};  // an input
  CHECK_FALSE(pipeline::optimize(resnet_small(), o));
}

TEST_CASE("saturn opt --explain prints the chain - exit 2 for an unknown value") {
  const std::string model = test::source_dir() + "/docs/examples/models/resnet_small.onnx";
  auto r = test::run_cli("opt " + model + " -q --no-calibration --explain relu_9");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("value 'relu_9': relu as written"));
  CHECK_THAT(r.out, Catch::Contains("=> "));
  auto bad = test::run_cli("opt " + model + " -q --explain nope");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("no value 'nope'"));
}
