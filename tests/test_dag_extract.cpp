// Extraction problems, tree- and DAG-greedy extractors, egraph-serialize input.
#include <catch2/catch.hpp>

#include "egraph/serialize.hpp"
#include "extract/extractors.hpp"
#include "extraction_problems.hpp"
#include "helpers.hpp"

using namespace saturn::extract;

using saturn::test::make_problem;

TEST_CASE("DAG extraction pays a shared subterm once - tree extraction per use") {
  // Root 0 = f(1, 2). Classes 1 and 2 can each be a private leaf (cost 4)
  // or g(3) (cost 1) over a shared class 3 (cost 5): alone, either switch
  // costs more (1 + 5 > 4); together they save (1 + 1 + 5 < 4 + 4).
  auto p = make_problem(4,
                        {{0, 1, {1, 2}},  // n0
                         {1, 4, {}},      // n1 private leaf
                         {1, 1, {3}},     // n2 via shared
                         {2, 4, {}},      // n3 private leaf
                         {2, 1, {3}},     // n4 via shared
                         {3, 5, {}}},     // n5 shared
                        {0});
  auto tree = extract_tree_greedy(p);
  CHECK(tree.tree_cost == 9.0);  // 1 + 4 + 4: each child's cheapest tree
  CHECK(tree.dag_cost == 9.0);
  auto dag = extract_dag_greedy(p);
  CHECK(dag.dag_cost == 8.0);  // 1 + 1 + 1 + 5: the shared class paid once
  CHECK(dag.tree_cost == 13.0);
  CHECK(dag.choice[1] == 2);
  CHECK(dag.choice[2] == 4);
  CHECK(dag_cost(p, dag.choice) == dag.dag_cost);
}

TEST_CASE("a swap is followed up through a node whose other children are free literals not in the program yet") {
  // Root 0 = f(1, 2). Classes 1 and 2 are each a private leaf (4) or a
  // slice (0.5) of one shared product, class 3 (5), with bounds of their
  // own: literal classes 4 and 5 (free). Switching 1 alone costs more
  // (0.5 + 5 > 4); switching 2 after it reads class 5, which no node of
  // the program reads yet (a merged product's second slice's ends). The
  // follow-up takes it: 1 + 0.5 + 0.5 + 5 = 7 < 9.
  auto p = make_problem(
      6,
      {{0, 1, {1, 2}}, {1, 4, {}}, {1, 0.5, {3, 4}}, {2, 4, {}}, {2, 0.5, {3, 5}}, {3, 5, {}}, {4, 0, {}}, {5, 0, {}}},
      {0});
  auto x = extract_dag_greedy(p);
  CHECK(x.dag_cost == 7.0);
  CHECK(x.choice[1] == 2);
  CHECK(x.choice[2] == 4);
}

TEST_CASE("a swap is not followed up through a free constant's other users") {
  // Root 0 = f(a_1 .. a_n). Each a_i is a leaf (2) or m_i(k) (3) over a
  // constant k = const(literal), both free. Every swap to m_i brings k in;
  // following it up through k's n - 1 other users would price n * (n - 1)
  // programs (densenet121's epsilon: nine in ten of its pricings) and can
  // never pay, since sharing a free class saves nothing.
  constexpr std::uint32_t n = 40, k = n + 1, literal = n + 2;
  std::vector<std::tuple<std::uint32_t, double, std::vector<std::uint32_t>>> nodes;
  std::vector<std::uint32_t> all;
  for (std::uint32_t a = 1; a <= n; ++a) {
    nodes.push_back({a, 2, {}});
    nodes.push_back({a, 3, {k}});
    all.push_back(a);
  }
  nodes.push_back({0, 1, all});
  nodes.push_back({k, 0, {literal}});
  nodes.push_back({literal, 0, {}});
  auto p = make_problem(n + 3, nodes, {0});
  auto x = extract_dag_greedy(p);
  CHECK(x.dag_cost == 1 + 2 * n);
  CHECK(x.passes == 1);
  CHECK(x.programs_priced == n);  // each swap once, no follow-up
}

TEST_CASE("extractors never choose a cycle") {
  // Class 0 = a(1) | leaf 10; class 1 = b(0) | leaf 1. Zero-cost nodes make
  // ties that a careless extractor closes into a cycle.
  auto p = make_problem(2, {{0, 0, {1}}, {0, 10, {}}, {1, 0, {0}}, {1, 1, {}}}, {0});
  for (auto x : {extract_tree_greedy(p), extract_dag_greedy(p)}) {
    CHECK(std::isfinite(dag_cost(p, x.choice)));
    CHECK(x.dag_cost == 1.0);  // a(leaf 1)
  }
  // A choice that is a cycle costs infinity.
  std::vector<std::int32_t> cyclic = {0, 2};
  CHECK(dag_cost(p, cyclic) == kInfinity);
  CHECK(tree_cost(p, cyclic) == kInfinity);
}

TEST_CASE("infinite nodes are never chosen - no finite program is reported as infinite") {
  auto p = make_problem(2, {{0, 1, {1}}, {1, kInfinity, {}}}, {0});
  CHECK(extract_dag_greedy(p).dag_cost == kInfinity);
  auto q = make_problem(2, {{0, 1, {1}}, {0, 7, {}}, {1, kInfinity, {}}}, {0});
  CHECK(extract_dag_greedy(q).dag_cost == 7.0);
}

TEST_CASE("egraph-serialize JSON: read - extract - and errors name the entry") {
  const std::string json = R"({
    "nodes": {
      "r": {"op": "f", "children": ["x", "y"], "eclass": "R", "cost": 1},
      "x": {"op": "g", "children": ["s"], "eclass": "X", "cost": 1},
      "x2": {"op": "leafx", "children": [], "eclass": "X", "cost": 4},
      "y": {"op": "h", "children": ["s"], "eclass": "Y", "cost": 1},
      "y2": {"op": "leafy", "children": [], "eclass": "Y", "cost": 4},
      "s": {"op": "shared", "children": [], "eclass": "S", "cost": 5}
    },
    "root_eclasses": ["R"]
  })";
  auto p = read_serialized_json(json, "t.json");
  REQUIRE(p);
  CHECK(p->classes.size() == 4);
  CHECK(p->nodes.size() == 6);
  CHECK(extract_tree_greedy(*p).tree_cost == 9.0);
  CHECK(extract_dag_greedy(*p).dag_cost == 8.0);

  CHECK_THAT(read_serialized_json("{", "bad.json").error().to_string(), Catch::Contains("bad.json"));
  CHECK_THAT(
      read_serialized_json(
          R"({"nodes": {"a": {"op": "f", "children": ["zz"], "eclass": "A"}}, "root_eclasses": ["A"]})", "b.json")
          .error()
          .to_string(),
      Catch::Contains("node \"a\": child \"zz\" is not a node"));
  CHECK_THAT(read_serialized_json(
                 R"({"nodes": {"a": {"op": "f", "eclass": "A", "cost": "x"}}, "root_eclasses": ["A"]})", "c.json")
                 .error()
                 .to_string(),
             Catch::Contains("\"cost\" must be a number"));
  // Negative costs are rewards (extraction-gym's maxsat set), read as given.
  auto reward = read_serialized_json(
      R"({"nodes": {"a": {"op": "f", "eclass": "A", "cost": -1}}, "root_eclasses": ["A"]})", "d.json");
  REQUIRE(reward);
  CHECK(reward->nodes[0].cost == -1.0);
  CHECK(extract_dag_greedy(*reward).dag_cost == -1.0);
}

TEST_CASE("Saturn's own e-graphs round-trip through egraph-serialize JSON") {
  using namespace saturn::egraph;
  EGraph g;
  EClassId root = add_term(g, saturn::test::term_from("(* (+ a b) (+ a b))"));
  auto rules = saturn::test::rules_from("(rule comm (+ ?x ?y) => (+ ?y ?x))");
  Runner().run(g, rules);
  EClassId roots[] = {g.find(root)};
  auto p = read_serialized_json(to_serialized_json(g, roots), "g.json");
  REQUIRE(p);
  auto direct = problem_from_egraph(g, roots, [](const EGraph&, NodeId) { return 1.0; });
  CHECK(p->nodes.size() == direct.nodes.size());
  CHECK(extract_dag_greedy(*p).dag_cost == extract_dag_greedy(direct).dag_cost);
  CHECK(extract_dag_greedy(direct).dag_cost == 4.0);  // *, +, a, b: the sum is shared
  CHECK(extract_tree_greedy(direct).tree_cost == 7.0);
}
