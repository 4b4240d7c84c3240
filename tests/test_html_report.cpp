// `saturn opt --html` (pipeline/html_report.hpp): the page holds both
// graphs with the changed nodes marked, the e-graph's growth (one point per
// iteration), the rules that fired, each node's modeled cost, and nothing
// loaded from elsewhere. tests/python/test_html_browser.py renders it in
// headless Chromium.
#include <catch2/catch.hpp>

#include <regex>

#include "helpers.hpp"
#include "ir/sat_format.hpp"
#include "pipeline/html_report.hpp"
#include "pipeline/optimize.hpp"

using namespace saturn;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

const char* kModel =
    "(graph m (input x f32 [2 3]) (init w f32 [3 4] [1 2 3 4 5 6 7 8 9 10 11 12]) (init b f32 [4] [1 2 3 4])"
    " (node mm matmul (y) (x w)) (node \"add<b>\" add (z) (y b)) (node r relu (u) (z)) (output u))";

}  // namespace

TEST_CASE("changed nodes are those the other graph lacks - same op, operands and results") {
  auto a = ir::read_sat("(graph a (input x f32 [2]) (node p neg (y) (x)) (node q exp (z) (y)) (output z))", "a.sat");
  auto b = ir::read_sat("(graph b (input x f32 [2]) (node p neg (y) (x)) (node q tanh (z) (y)) (output z))", "b.sat");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(pipeline::changed_nodes(*a, *b) == std::vector<bool>{false, true});
  CHECK(pipeline::changed_nodes(*a, *a) == std::vector<bool>{false, false});
}

TEST_CASE("the page shows both graphs, the growth per iteration, the rules that fired and modeled costs") {
  auto g = ir::read_sat(kModel, "m<1>.sat");
  REQUIRE(g);
  pipeline::OptimizeOptions o;
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
  auto res = pipeline::optimize(*g, o);
  REQUIRE(res);
  const nlohmann::json& r = res->report;
  pipeline::GraphPicture before{"<?xml version=\"1.0\"?>\n<svg id=\"picture-before\"></svg>", "digraph {}"};
  pipeline::GraphPicture after{"", "digraph { n0 [label=\"a<b>\"] }"};
  const std::string page = pipeline::html_report(*g, res->graph, r, before, after);
  INFO(page.substr(0, 2000));
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  // The SVG inline, without its XML prolog; no Graphviz: the text, escaped.
  CHECK(contains(page, "<svg id=\"picture-before\"></svg>"));
  CHECK_FALSE(contains(page, "<?xml"));
  CHECK(contains(page, "<pre>digraph { n0 [label=&quot;a&lt;b&gt;&quot;] }</pre>"));
  // Names are escaped everywhere.
  CHECK(contains(page, "m&lt;1&gt;"));
  CHECK_FALSE(contains(page, "add<b>"));
  // Self-contained: nothing fetched from elsewhere.
  CHECK_FALSE(contains(page, "src=\"http"));
  CHECK_FALSE(contains(page, "<link"));
  // Modeled figures say so.
  CHECK(contains(page, "cost (modeled)"));
  CHECK(contains(page, "nothing was run"));
  // One plotted point per iteration of every phase, for both lines.
  std::size_t iterations = 0;
  for (const auto& p : r["rule_phases"]) iterations += p["enodes"].size();
  REQUIRE(iterations > 0);
  std::smatch m;
  const std::regex enodes("class=\"enodes\"[^>]*points=\"([^\"]*)\"");
  REQUIRE(std::regex_search(page, m, enodes));
  CHECK(count(m[1].str(), ",") == iterations);
  CHECK(count(page, "<polyline") == 2);
  // A row per rule that matched.
  std::size_t fired = 0;
  for (const auto& [name, c] : r["rules"].items()) fired += c["matches"].get<std::size_t>() > 0;
  CHECK(count(page, "<tr class=\"fired\">") == fired);
  // A row per node of the optimized program, with its modeled cost.
  CHECK(count(page, "<tr id=\"row-") == res->graph.nodes.size());
  REQUIRE(r["node_costs_after"].size() == res->graph.nodes.size());
  for (const auto& c : r["node_costs_after"]) CHECK(c.get<double>() >= 0);
}

TEST_CASE("with explanations, the page holds each written node's - opened by a click on it") {
  auto g = ir::read_sat(kModel, "m.sat");
  REQUIRE(g);
  pipeline::OptimizeOptions o;
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
  o.explain_all = true;
  auto res = pipeline::optimize(*g, o);
  REQUIRE(res);
  REQUIRE(res->report["explanations"].size() == g->nodes.size());
  const std::string page = pipeline::html_report(*g, res->graph, res->report, {}, {});
  CHECK(count(page, "<details class=\"explain\"") == g->nodes.size());
  for (std::size_t n = 0; n < g->nodes.size(); ++n) CHECK(contains(page, "id=\"explain-" + std::to_string(n) + "\""));
  CHECK_FALSE(contains(page, "NOT replayed"));
  CHECK(contains(page, "#graph-before g.node"));  // the click handler
  // Without: the section says so.
  o.explain_all = false;
  auto plain = pipeline::optimize(*g, o);
  REQUIRE(plain);
  CHECK(contains(pipeline::html_report(*g, plain->graph, plain->report, {}, {}), "No explanations were recorded."));
}

TEST_CASE("saturn opt --html to a place that cannot be written is exit 2 naming it - a missing rule file too") {
  const std::string model = test::source_dir() + "/docs/examples/models/mlp.onnx";
  auto r = test::run_cli("opt " + model + " -q --no-calibration --html /nonexistent-saturn-dir/page.html");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("cannot write /nonexistent-saturn-dir/page.html"));
  auto rules = test::run_cli("opt " + model + " -q --rules /nonexistent-saturn-dir/mine.rules");
  CHECK(rules.status == 2);
  CHECK_THAT(rules.err, Catch::Contains("no such file or folder '/nonexistent-saturn-dir/mine.rules'"));
}
