// egraph-serialize JSON and DOT output.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "egraph/serialize.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;

TEST_CASE("egraph-serialize JSON lists every live node with its class and children") {
  EGraph g;
  EClassId root = add_term(g, saturn::test::term_from("(+ a (* a 1))"));
  auto rules = saturn::test::rules_from("(rule mul1 (* ?x 1) => ?x)");
  Runner().run(g, rules);
  EClassId roots[] = {root};
  auto j = nlohmann::json::parse(to_serialized_json(g, roots, [](Op op) { return op.name() == "*" ? 5.0 : 1.0; }));
  REQUIRE(j.contains("nodes"));
  REQUIRE(j["root_eclasses"].size() == 1);
  CHECK(j["root_eclasses"][0] == std::to_string(g.find(root).v));
  CHECK(j["nodes"].size() == g.num_nodes());
  std::size_t stars = 0;
  for (auto& [id, node] : j["nodes"].items()) {
    // Each child names a node that exists, and the node's class is its class.
    for (auto& child : node["children"]) REQUIRE(j["nodes"].contains(child.get<std::string>()));
    CHECK(node["eclass"] == std::to_string(g.find(EClassId(static_cast<std::uint32_t>(std::stoul(id)))).v));
    if (node["op"] == "*") {
      ++stars;
      CHECK(node["cost"] == 5.0);
      // (* a 1) was merged with a: its first child is in its own class.
      CHECK(j["nodes"][node["children"][0].get<std::string>()]["eclass"] == node["eclass"]);
    }
  }
  CHECK(stars == 1);
}

TEST_CASE("DOT output draws one cluster per class") {
  EGraph g;
  add_term(g, saturn::test::term_from("(f a b)"));
  g.rebuild();
  std::string dot = to_dot(g);
  CHECK(dot.rfind("digraph egraph {", 0) == 0);
  std::size_t clusters = 0;
  for (std::size_t p = dot.find("subgraph cluster_"); p != std::string::npos; p = dot.find("subgraph cluster_", p + 1))
    ++clusters;
  CHECK(clusters == 3);
  CHECK(dot.find("label=\"f\"") != std::string::npos);
  CHECK(dot.find("lhead=cluster_") != std::string::npos);
}
