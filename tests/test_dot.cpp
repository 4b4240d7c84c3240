// `saturn dot`: a model drawn with its types (ir/graph_dot), an e-graph with
// its classes as clusters and the extracted program marked
// (extract/problem_dot), and the command that writes them as Graphviz text
// or, through Graphviz's dot, as pictures.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "extract/extractors.hpp"
#include "extract/problem_dot.hpp"
#include "helpers.hpp"
#include "ir/graph_dot.hpp"
#include "ir/sat_format.hpp"

using namespace saturn;
using saturn::test::run_cli;
namespace fs = std::filesystem;

namespace {

fs::path temp(const std::string& name) { return saturn::test::temp_path("saturn-dot-", name); }

const char* kModel =
    "(graph small (input x f32 [2 3]) (init w f32 [3 4] [1 2 3 4 5 6 7 8 9 10 11 12])"
    " (node mm matmul (y) (x w)) (node r relu (z) (y)) (node dead neg (d) (x)) (node s add (u) (z z)) (output u))";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a model is drawn with its values' types - weights in their nodes - dead nodes dashed") {
  auto g = ir::read_sat(kModel, "small.sat");
  REQUIRE(g);
  auto types = ir::infer_types(*g);
  REQUIRE(types);
  const std::string dot = ir::graph_to_dot(*g, *types);
  INFO(dot);
  CHECK(dot.rfind("digraph \"small\" {", 0) == 0);
  CHECK(contains(dot, R"(in0 [shape=ellipse, style=filled, fillcolor="#dbe9f6", label="x\nf32[2 3]"];)"));
  CHECK(contains(dot, R"(n0 [label="matmul\nmm\nw: f32[3 4]", id="node-0"];)"));  // the weight in its node, not an edge
  CHECK(contains(dot, R"(in0 -> n0 [label="f32[2 3]"];)"));
  CHECK(contains(dot, R"(n0 -> n1 [label="f32[2 4]"];)"));
  CHECK(contains(dot, R"(n2 [label="neg\ndead", style="rounded,dashed", color=grey, fontcolor=grey, id="node-2"];)"));
  // Two edges into one node: numbered by operand.
  CHECK(contains(dot, R"(n1 -> n3 [label="f32[2 4]", headlabel="0"];)"));
  CHECK(contains(dot, R"(n1 -> n3 [label="f32[2 4]", headlabel="1"];)"));
  CHECK(contains(dot, R"(out0 [shape=ellipse, style=filled, fillcolor="#e2f0d9", label="u\nf32[2 4]"];)"));
  CHECK(contains(dot, "n3 -> out0;"));
  CHECK_FALSE(contains(dot, "-> n0 [label=\"f32[3 4]\""));
  CHECK(ir::dot_quoted("a\"b\\c\nd") == R"("a\"b\\c\nd")");
  // Highlighted nodes are filled (a dead one stays dashed).
  const std::vector<bool> marked = {false, true, true, false};
  const std::string lit = ir::graph_to_dot(*g, *types, marked);
  CHECK(contains(lit, R"(n1 [label="relu\nr", style="rounded,filled", fillcolor="#ffd966", id="node-1"];)"));
  CHECK(contains(lit, R"(n2 [label="neg\ndead", style="rounded,dashed")"));
  CHECK(contains(lit, R"(n0 [label="matmul\nmm\nw: f32[3 4]", id="node-0"];)"));
}

TEST_CASE("an e-graph is drawn with classes as clusters - the extracted program marked - cycles drawn") {
  // Root class 2: f(a) (cost 1 + 1) or g(b) (cost 1 + 5); class 0 also
  // holds h(class 0), a cycle no program takes.
  extract::ExtractionProblem p;
  auto node = [&](std::uint32_t cls, const std::string& op, double cost, std::vector<std::uint32_t> kids) {
    p.nodes.push_back({cls, cost, std::move(kids), op, {}, {}});
    p.classes[cls].push_back(static_cast<std::uint32_t>(p.nodes.size() - 1));
  };
  p.classes.resize(3);
  node(0, "a", 1, {});
  node(1, "b", 5, {});
  node(2, "f", 1, {0});
  node(2, "g", 1, {1});
  node(0, "h", 1, {0});
  p.roots = {2};
  auto ex = extract::extract_by_name("dag-greedy", p, 1.0);
  REQUIRE(ex);
  const std::string dot = extract::problem_to_dot(p, ex->choice);
  INFO(dot);
  for (const char* cluster : {"subgraph cluster_0 {", "subgraph cluster_1 {", "subgraph cluster_2 {"})
    CHECK(contains(dot, cluster));
  CHECK(contains(dot, R"x(label="e2 (root)";)x"));
  const std::string filled = R"(, style="rounded,filled", fillcolor="#fde9a9", penwidth=2];)";
  CHECK(contains(dot, "n0 [label=\"a\\n1\"" + filled));
  CHECK(contains(dot, "n2 [label=\"f\\n1\"" + filled));
  CHECK(contains(dot, "n1 [label=\"b\\n5\"];"));  // class 1 is outside the program
  CHECK(contains(dot, "n3 [label=\"g\\n1\"];"));
  CHECK(contains(dot, "n2 -> n0 [lhead=cluster_0, penwidth=2];"));
  CHECK(contains(dot, "n3 -> n1 [lhead=cluster_1];"));
  CHECK(contains(dot, "n4 -> n0;"));  // into its own class: no lhead (dot refuses a cluster as tail and head)
}

TEST_CASE("saturn dot writes Graphviz text - pictures through Graphviz - bad input is exit 2") {
  const fs::path model = temp("small.sat");
  std::ofstream(model) << kModel << "\n";
  auto out = run_cli("dot " + model.string());
  INFO(out.err);
  REQUIRE(out.status == 0);
  CHECK(out.out.rfind("digraph \"small\" {", 0) == 0);
  const fs::path text = temp("small.dot");
  REQUIRE(run_cli("dot " + model.string() + " -o " + text.string()).status == 0);
  {
    std::ifstream f(text);
    std::string written((std::istreambuf_iterator<char>(f)), {});
    CHECK(written == out.out);
  }
  // An e-graph (egraph-serialize JSON): the program dag-greedy extracts is marked.
  const fs::path egraph = temp("e.json");
  std::ofstream(egraph) << R"({"nodes": {"a": {"op": "x", "children": [], "eclass": "c0", "cost": 1},
    "b": {"op": "neg", "children": ["a"], "eclass": "c1", "cost": 2},
    "c": {"op": "neg", "children": ["b"], "eclass": "c0", "cost": 1}}, "root_eclasses": ["c1"]})";
  auto e = run_cli("dot " + egraph.string());
  INFO(e.err);
  REQUIRE(e.status == 0);
  CHECK(contains(e.out, "(root)"));
  CHECK(contains(e.out, "filled"));
  // A picture: with Graphviz, an SVG; without it, exit 2 saying what is needed.
  const fs::path svg = temp("small.svg");
  auto pic = run_cli("dot " + model.string() + " -o " + svg.string());
  if (pic.status == 0) {
    std::ifstream f(svg);
    std::string written((std::istreambuf_iterator<char>(f)), {});
    CHECK(contains(written, "<svg"));
    CHECK(contains(written, "matmul"));
    CHECK_FALSE(fs::exists(svg.string() + ".dot.tmp"));
  } else {
    CHECK(pic.status == 2);
    CHECK_THAT(pic.err, Catch::Contains("needs Graphviz's `dot`"));
  }
  // Bad input names what is wrong.
  auto ext = run_cli("dot " + model.string() + " -o " + temp("x.txt").string());
  CHECK(ext.status == 2);
  CHECK_THAT(ext.err, Catch::Contains("ends in .dot, .gv, .svg, .png or .pdf"));
  const fs::path bad = temp("bad.sat");
  std::ofstream(bad) << "(graph g (input x f32 [2]) (node n nosuchop (y) (x)) (output y))\n";
  auto b = run_cli("dot " + bad.string());
  CHECK(b.status == 2);
  CHECK_THAT(b.err, Catch::Contains("bad.sat"));
  auto x = run_cli("dot " + egraph.string() + " --extractor nosuch");
  CHECK(x.status == 2);
  CHECK_THAT(x.err, Catch::Contains("unknown extractor 'nosuch'"));
  fs::remove_all(model.parent_path());
}

TEST_CASE("saturn opt --dot draws the saturated e-graph with the program it extracted marked") {
  const std::string model = saturn::test::source_dir() + "/docs/examples/models/mlp.onnx";
  const fs::path dot = temp("mlp-egraph.dot");
  auto opt = run_cli("opt " + model + " --quiet --json --dot " + dot.string());
  INFO(opt.err);
  REQUIRE(opt.status == 0);
  std::ifstream f(dot);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  CHECK(text.rfind("digraph egraph {", 0) == 0);
  CHECK(contains(text, "(root)"));
  // The program's library calls are among the marked nodes: the report's
  // blas.gemm ops (one per layer) each appear filled.
  const auto report = nlohmann::json::parse(opt.out);
  const int gemms = report["ops_after"].value("blas.gemm", 0);
  REQUIRE(gemms > 0);
  std::size_t filled_gemms = 0;
  for (std::size_t at = 0; (at = text.find("[label=\"blas.gemm\\n", at)) != std::string::npos; ++at) {
    const std::size_t end = text.find('\n', at);
    filled_gemms += text.substr(at, end - at).find("filled") != std::string::npos;
  }
  CHECK(filled_gemms == static_cast<std::size_t>(gemms));
  auto bad = run_cli("opt " + model + " --dot " + temp("x.txt").string());
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("ends in .dot, .gv, .svg, .png or .pdf"));
  fs::remove_all(dot.parent_path());
}
