// Tree-cost greedy extraction.
#include <catch2/catch.hpp>
#include <limits>

#include "extract/tree_greedy.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;
using saturn::extract::OpCostTable;
using saturn::extract::TreeGreedyExtractor;

TEST_CASE("picks the smallest equivalent term") {
  EGraph g;
  EClassId root = add_term(g, saturn::test::term_from("(* (+ a 0) 1)"));
  auto rules = saturn::test::rules_from("(rule add0 (+ ?x 0) => ?x) (rule mul1 (* ?x 1) => ?x)");
  Runner().run(g, rules);
  TreeGreedyExtractor ex(g);
  CHECK(ex.cost(root) == 1.0);
  CHECK(ex.extract(root)->to_string() == "a");
}

TEST_CASE("per-operator costs change the choice") {
  EGraph g;
  EClassId root = add_term(g, saturn::test::term_from("(* x 2)"));
  auto rules = saturn::test::rules_from("(rule dbl (* ?x 2) => (+ ?x ?x)) (rule shl (* ?x 2) => (shl ?x 1))");
  Runner().run(g, rules);
  OpCostTable costs;
  costs.set(Op::symbol("*"), 10);
  costs.set(Op::symbol("+"), 3);
  costs.set(Op::symbol("shl"), 1);
  TreeGreedyExtractor ex(g, std::cref(costs));
  CHECK(ex.extract(root)->to_string() == "(shl x 1)");
  CHECK(ex.cost(root) == 3.0);
  costs.set(Op::symbol("shl"), 100);
  TreeGreedyExtractor ex2(g, std::cref(costs));
  CHECK(ex2.extract(root)->to_string() == "(+ x x)");
  CHECK(ex2.cost(root) == 5.0);
}

TEST_CASE("cycles do not trap the extractor") {
  // a = f(a) makes the class cyclic; the finite way out is `a`.
  EGraph g;
  EClassId a = g.add(Op::symbol("a"));
  EClassId fa = g.add(Op::symbol("f"), {a});
  g.merge(a, fa);
  g.rebuild();
  TreeGreedyExtractor ex(g);
  CHECK(ex.cost(a) == 1.0);
  CHECK(ex.extract(fa)->to_string() == "a");
}

TEST_CASE("a class with no finite term has infinite cost") {
  EGraph g;
  EClassId x = g.add(Op::symbol("x"));
  EClassId fx = g.add(Op::symbol("f"), {x});
  g.rebuild();
  OpCostTable costs;
  costs.set(Op::symbol("x"), std::numeric_limits<double>::infinity());
  TreeGreedyExtractor ex(g, std::cref(costs));
  CHECK(std::isinf(ex.cost(fx)));
  CHECK_FALSE(ex.extract(fx).has_value());
}

TEST_CASE("shared subterms are paid per use (tree cost)") {
  EGraph g;
  EClassId root = add_term(g, saturn::test::term_from("(+ (* a b) (* a b))"));
  g.rebuild();
  TreeGreedyExtractor ex(g);
  CHECK(ex.cost(root) == 7.0);
  auto t = ex.extract(root);
  REQUIRE(t);
  CHECK(t->tree_size() == 7.0);
}

TEST_CASE("a tree cost past double's range saturates - the term is still extracted") {
  // x, (+ x x), (+ (+ x x) (+ x x)), ...: 1100 levels cost 2^1100 as a tree.
  EGraph g;
  EClassId c = g.add(Op::symbol("x"), {});
  for (int i = 0; i < 1100; ++i) c = g.add(Op::symbol("+"), {c, c});
  g.rebuild();
  TreeGreedyExtractor ex(g);
  CHECK(ex.cost(c) == std::numeric_limits<double>::max());
  auto t = ex.extract(c);
  REQUIRE(t);
  CHECK(t->nodes.size() == 1101);  // (one node per level: the term shares its subterms)
}
