// Reading .rules files: structure, phases, <=>, multirules, and every error
// with its file:line:col.
#include <catch2/catch.hpp>

#include "rules/rule_file.hpp"

using namespace saturn::rules;

namespace {
std::string error_of(const std::string& text) {
  auto r = parse_rules(text, "bad.rules");
  if (r) return "(loaded)";
  return r.error().to_string();
}
}  // namespace

TEST_CASE("defoptimizer groups - docs and phases") {
  // The tensor IR registers `shape` through this door; a stub stands in here.
  BuiltinRegistry::global().add(
      Builtin{"shape", 1, 1, "test stub", [](EvalContext&, std::span<const Value>) { return std::optional<Value>{}; }});
  auto r = parse_rules(R"(
(defoptimizer views
  "Merge and remove view ops."
  :phase 1
  (rule reshape-reshape (reshape (reshape ?x ?s1) ?s2) => (reshape ?x ?s2))
  (rule reshape-id (reshape ?x ?s) => ?x :if (= (shape ?x) ?s))
  (rule add-comm (add ?a ?b) <=> (add ?b ?a)))
)",
                       "views.rules");
  REQUIRE(r);
  REQUIRE(r->optimizers.size() == 1);
  const Optimizer& o = r->optimizers[0];
  CHECK(o.name == "views");
  CHECK(o.doc == "Merge and remove view ops.");
  CHECK(o.phases == std::vector<int>{1});
  REQUIRE(o.rewrites.size() == 4);
  CHECK(o.rewrites[2].name() == "add-comm");
  CHECK(o.rewrites[3].name() == "add-comm-rev");
  CHECK(o.info[1].loc.line == 6);
  CHECK(o.info[1].loc.col == 3);
  CHECK(o.rewrites[0].to_string() == "(reshape (reshape ?x ?s1) ?s2) => (reshape ?x ?s2)");
}

TEST_CASE("rules outside defoptimizer form an optimizer named after the file") {
  auto r = parse_rules("(rule comm (+ ?a ?b) => (+ ?b ?a))", "dir/algebra.rules");
  REQUIRE(r);
  REQUIRE(r->optimizers.size() == 1);
  CHECK(r->optimizers[0].name == "algebra");
  CHECK(r->optimizers[0].phases == std::vector<int>{0});
}

TEST_CASE("multirules - :let and :unverified") {
  auto r = parse_rules(R"(
(multirule merge ((mm ?x ?a) (mm ?x ?b)) => ((left (both ?a ?b)) (right (both ?a ?b))))
(rule fold (+ ?a ?b) => ?c :if (const? ?a) :if (const? ?b) :let (?c (+ ?a ?b)))
(rule approx (f ?x) => (g ?x) :unverified "only holds for small x")
)",
                       "m.rules");
  REQUIRE(r);
  auto& o = r->optimizers[0];
  REQUIRE(o.rewrites.size() == 3);
  CHECK(o.rewrites[0].lhs().size() == 2);
  CHECK(o.rewrites[1].num_lhs_vars() == 2);
  CHECK(o.rewrites[1].var_names().size() == 3);
  REQUIRE(o.info[2].unverified.has_value());
  CHECK(*o.info[2].unverified == "only holds for small x");
}

TEST_CASE("group_phases orders phases and rejects duplicate names across files") {
  auto a = parse_rules("(defoptimizer late :phase 2 (rule r1 (f ?x) => ?x))", "a.rules");
  auto b = parse_rules("(defoptimizer early :phase 1 (rule r2 (g ?x) => ?x))", "b.rules");
  REQUIRE(a);
  REQUIRE(b);
  auto phases = group_phases({*a, *b});
  REQUIRE(phases);
  REQUIRE(phases->size() == 2);
  CHECK((*phases)[0].phase == 1);
  CHECK((*phases)[0].rewrites[0].name() == "r2");
  auto c = parse_rules("(rule r1 (h ?x) => ?x)", "c.rules");
  REQUIRE(c);
  auto dup = group_phases({*a, *c});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().to_string().find("c.rules:1:1: error: duplicate rule name 'r1' (first defined at a.rules:1:") == 0);
}

TEST_CASE("an optimizer may join several phases - its rules run in each") {
  auto a = parse_rules(
      "(defoptimizer views :phase 1 3 (rule r1 (f ?x) => ?x))\n"
      "(defoptimizer expand :phase 2 (rule r2 (g ?x) => ?x))",
      "a.rules");
  REQUIRE(a);
  CHECK(a->optimizers[0].phases == std::vector<int>{1, 3});
  auto phases = group_phases({*a});
  REQUIRE(phases);
  REQUIRE(phases->size() == 3);
  std::vector<std::string> names;
  for (const Phase& p : *phases) names.push_back(std::to_string(p.phase) + ":" + p.rewrites.at(0).name());
  CHECK(names == std::vector<std::string>{"1:r1", "2:r2", "3:r1"});
  CHECK(error_of("(defoptimizer v :phase 1 1 (rule r (f ?x) => ?x))") ==
        "bad.rules:1:26: error: phase 1 is named twice");
  CHECK(error_of("(defoptimizer v :phase x (rule r (f ?x) => ?x))") ==
        "bad.rules:1:24: error: expected a phase number 0..1000 after :phase, found 'x'");
}

TEST_CASE("errors carry file:line:col and say what was expected") {
  CHECK(error_of("(rule r (f ?x) => (g ?y))") ==
        "bad.rules:1:22: error: variable ?y on the right-hand side is not bound by the left-hand side or a :let");
  CHECK(error_of("(rule r (f ?x) -> ?x)") == "bad.rules:1:16: error: expected '=>' or '<=>' after the left-hand side");
  CHECK(error_of("(rule r (f ?x) => ?x :when (g))") ==
        "bad.rules:1:22: error: unknown clause :when (expected :if, :let or :unverified)");
  CHECK(error_of("(rule r (f ?x) => ?x :if (> ?y 0))") ==
        "bad.rules:1:29: error: variable ?y is not bound here (bind it in the left-hand side or an earlier :let)");
  CHECK(error_of("(rule r (f ?x) => ?x :if (frobnicate ?x))") ==
        "bad.rules:1:27: error: unknown function 'frobnicate' in a guard or binding");
  CHECK(error_of("(rule r (f ?x) => ?x :if (len ?x ?x))") ==
        "bad.rules:1:27: error: 'len' takes 1 argument(s), given 2");
  CHECK(
      error_of("(rule r ?x => (f ?x))") ==
      "bad.rules:1:9: error: the left-hand side is a bare variable, which matches every e-class: give it an operator");
  CHECK(error_of("(rule r (f ?x) <=> ?x)").find("bad.rules:1:20: error: the right-hand side of a <=> rule is a bare") ==
        0);
  CHECK(error_of("(rule r (f ?x ?y) <=> (g ?x))") ==
        "bad.rules:1:9: error: in a <=> rule both sides must use the same variables; ?y appears only on the left-hand "
        "side");
  CHECK(error_of("(rule r (f ?x) => ?y :let (?x 1))") ==
        "bad.rules:1:28: error: variable ?x is already bound; :let needs a new name");
  CHECK(error_of("(rule r (f ?x) => ?x)\n(rule r (g ?x) => ?x)") == "bad.rules:2:7: error: duplicate rule name 'r'");
  CHECK(error_of("(rule r (f ?x))") == "bad.rules:1:1: error: expected (rule NAME LHS => RHS)");
  CHECK(error_of("(defoptimizer o :phase x)") ==
        "bad.rules:1:24: error: expected a phase number 0..1000 after :phase, found 'x'");
  CHECK(error_of("(define r)") == "bad.rules:1:2: error: expected defoptimizer, rule or multirule, found 'define'");
  CHECK(error_of("(rule r (?op ?x) => ?x)") == "bad.rules:1:10: error: expected an operator name, found '?op'");
  CHECK(error_of("(multirule m ((f ?x) (g ?x)) => ((h ?x)))") ==
        "bad.rules:1:33: error: a multirule needs as many right-hand patterns as left-hand ones (2), given 1");
  CHECK(error_of("(rule r (f ?x) <=> (g ?x) :let (?y 1))") ==
        "bad.rules:1:27: error: a <=> rule cannot have :let (the reverse would not bind it)");
  CHECK(error_of("(rule r (f [1 x]) => 1)") == "bad.rules:1:15: error: expected a number in a literal list, found 'x'");
  CHECK(error_of("(rule r (f ?x) => ?x").find("bad.rules:1:1: error: unclosed '('") == 0);
}

TEST_CASE("an operator checker rejects unknown ops and wrong arity at load time") {
  OpChecker check = [](const std::string& op, std::size_t arity) -> std::optional<std::string> {
    if (op == "relu" && arity != 1) return "'relu' takes 1 operand, given " + std::to_string(arity);
    if (op != "relu" && op != "x") return "unknown op '" + op + "'";
    return std::nullopt;
  };
  auto bad = parse_rules("(rule r (relu ?a ?b) => ?a)", "ops.rules", BuiltinRegistry::global(), check);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().to_string() == "ops.rules:1:10: error: 'relu' takes 1 operand, given 2");
  auto unknown = parse_rules("(rule r (relu (gelu ?a)) => ?a)", "ops.rules", BuiltinRegistry::global(), check);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().to_string() == "ops.rules:1:16: error: unknown op 'gelu'");
}

TEST_CASE("terms files") {
  auto t = parse_terms("; two terms\n(+ a (* b 2))\n(f [1 2] 3.5)\n", "t.terms");
  REQUIRE(t);
  REQUIRE(t->size() == 2);
  CHECK((*t)[0].to_string() == "(+ a (* b 2))");
  CHECK((*t)[1].to_string() == "(f [1 2] 3.5)");
  auto bad = parse_terms("(f ?x)", "t.terms");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().to_string() == "t.terms:1:4: error: terms cannot contain pattern variables such as ?x");
}
