// The guard/binding expression language, evaluated against an e-graph.
#include <catch2/catch.hpp>

#include "egraph/constant_folding.hpp"
#include "egraph/runner.hpp"
#include "helpers.hpp"
#include "rules/expr.hpp"

using namespace saturn::rules;
using saturn::egraph::EGraph;
using saturn::egraph::Op;

namespace {
// Evaluates `text` with ?a bound to class `a`, ?b to `b`.
std::optional<Value> eval(EGraph& g, const std::string& text, EClassId a = {}, EClassId b = {}) {
  auto forms = saturn::parse_sexprs(text, "expr");
  REQUIRE(forms);
  REQUIRE(forms->size() == 1);
  auto vars = [](const std::string& n) -> std::optional<saturn::egraph::VarId> {
    if (n == "?a") return 0;
    if (n == "?b") return 1;
    return std::nullopt;
  };
  Expr e = Expr::compile((*forms)[0], vars, BuiltinRegistry::global());
  std::vector<EClassId> bindings{a, b};
  EvalContext ctx{g, bindings};
  return e.eval(ctx);
}
std::string show(const std::optional<Value>& v) { return v ? v->to_string() : "(fails)"; }
}  // namespace

TEST_CASE("arithmetic keeps integers exact and refuses overflow") {
  EGraph g;
  CHECK(show(eval(g, "(+ 1 2 3)")) == "6");
  CHECK(show(eval(g, "(- 5)")) == "-5");
  CHECK(show(eval(g, "(/ 6 3)")) == "2");
  CHECK(show(eval(g, "(/ 7 2)")) == "3.5");
  CHECK(show(eval(g, "(/ 1 0)")) == "(fails)");
  CHECK(show(eval(g, "(mod -7 3)")) == "2");
  CHECK(show(eval(g, "(* 4611686018427387904 2)")) == "(fails)");
  CHECK(show(eval(g, "(+ 0.5 1)")) == "1.5");
  CHECK(show(eval(g, "(max 1 7 3)")) == "7");
  CHECK(show(eval(g, "(max [0 1 1 0])")) == "1");  // a list's elements count
  CHECK(show(eval(g, "(min 4 [5 -2] 3)")) == "-2");
  CHECK(show(eval(g, "(max [])")) == "(fails)");
  CHECK(show(eval(g, "(abs -3)")) == "3");
}

TEST_CASE("comparisons - logic and conditionals") {
  EGraph g;
  CHECK(show(eval(g, "(< 1 2)")) == "true");
  CHECK(show(eval(g, "(>= 1 2)")) == "false");
  CHECK(show(eval(g, "(= 2 2.0)")) == "true");
  CHECK(show(eval(g, "(= [1 2] [1 2])")) == "true");
  CHECK(show(eval(g, "(!= [1 2] [2 1])")) == "true");
  CHECK(show(eval(g, "(and (< 1 2) (not false))")) == "true");
  CHECK(show(eval(g, "(or false (= 1 2))")) == "false");
  CHECK(show(eval(g, "(and false (/ 1 0))")) == "false");  // short-circuits
  CHECK(show(eval(g, "(if (< 1 2) 10 20)")) == "10");
  CHECK(show(eval(g, "(< [1] 2)")) == "(fails)");
}

TEST_CASE("list built-ins") {
  EGraph g;
  CHECK(show(eval(g, "(len [4 5 6])")) == "3");
  CHECK(show(eval(g, "(nth [4 5 6] -1)")) == "6");
  CHECK(show(eval(g, "(nth [4 5 6] 3)")) == "(fails)");
  CHECK(show(eval(g, "(concat [1] [2 3])")) == "[1 2 3]");
  CHECK(show(eval(g, "(reverse [1 2 3])")) == "[3 2 1]");
  CHECK(show(eval(g, "(range 3)")) == "[0 1 2]");
  CHECK(show(eval(g, "(sum [1 2 3])")) == "6");
  CHECK(show(eval(g, "(prod [2 3 4])")) == "24");
  CHECK(show(eval(g, "(list 1 2)")) == "[1 2]");
  // No list past kMaxListLength (2^20): the rule does not fire, memory stays small.
  CHECK(show(eval(g, "(len (concat (range 1048576) [1]))")) == "(fails)");
  CHECK(show(eval(g, "(len (concat (range 524288) (range 524288)))")) == "1048576");
  CHECK(show(eval(g, "(range 1048577)")) == "(fails)");
}

TEST_CASE("variables resolve through literals and constant folding") {
  EGraph g;
  auto& cf = g.add_analysis<saturn::egraph::ConstantFolding>();
  (void)cf;
  EClassId three = g.add(Op::integer(3));
  EClassId sum = saturn::egraph::add_term(g, saturn::test::term_from("(+ 2 5)"));
  EClassId x = g.add(Op::symbol("x"));
  Number shape[] = {std::int64_t{2}, std::int64_t{3}};
  EClassId lst = g.add(Op::list(shape));
  g.rebuild();
  CHECK(show(eval(g, "(+ ?a ?b)", three, sum)) == "10");
  CHECK(show(eval(g, "(const? ?a)", x)) == "false");
  CHECK(show(eval(g, "(+ ?a 1)", x)) == "(fails)");
  CHECK(show(eval(g, "(= ?a x)", x)) == "true");
  CHECK(show(eval(g, "(= ?a ?b)", x, three)) == "false");
  CHECK(show(eval(g, "(nth ?a 1)", lst)) == "3");
  CHECK(show(eval(g, "(value ?a)", lst)) == "[2 3]");
}

TEST_CASE("guards and computed bindings drive rewriting") {
  EGraph g;
  EClassId root = saturn::egraph::add_term(g, saturn::test::term_from("(+ (* 3 4) (/ x 0))"));
  auto rules = saturn::test::rules_from(R"(
(rule fold-add (+ ?a ?b) => ?c :if (const? ?a) :if (const? ?b) :let (?c (+ ?a ?b)))
(rule fold-mul (* ?a ?b) => ?c :if (and (const? ?a) (const? ?b)) :let (?c (* ?a ?b)))
(rule div-self (/ ?a ?b) => 1 :if (const? ?b) :if (!= ?b 0) :if (= ?a ?b))
)");
  saturn::egraph::Runner runner;
  auto rep = runner.run(g, rules);
  CHECK(rep.stop_reason == saturn::egraph::StopReason::Saturated);
  CHECK(g.find(saturn::egraph::add_term(g, saturn::test::term_from("(* 3 4)"))) == g.find(g.add(Op::integer(12))));
  CHECK(rep.rules[0].rejected > 0);  // (+ 12 (/ x 0)): not constant
  CHECK(rep.rules[2].applications == 0);
  CHECK(g.find(root) != g.find(g.add(Op::integer(12))));
}
