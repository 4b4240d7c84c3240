// Explanations (egraph/explain.hpp): with a proof forest on, any two ids of
// one class are joined by a chain of rule applications, congruences and
// given unions, each of which replays against the final e-graph; without
// it, merges record nothing.
#include <catch2/catch.hpp>

#include <random>

#include "egraph/egraph.hpp"
#include "egraph/runner.hpp"
#include "egraph/term.hpp"
#include "helpers.hpp"
#include "rules/rule_file.hpp"

using namespace saturn;
using egraph::EClassId;
using egraph::Justification;

namespace {

EClassId add(egraph::EGraph& g, const std::string& term) { return egraph::add_term(g, test::term_from(term)); }

}  // namespace

TEST_CASE("a rewrite's explanation is the chain of rules that fired - each step replays") {
  egraph::EGraph g;
  g.enable_explanations();
  const EClassId root = add(g, "(* (+ a 0) 1)");
  const EClassId a = add(g, "a");
  g.rebuild();
  auto rules = test::rules_from(
      "(rule add-zero (+ ?x 0) => ?x) (rule mul-one (* ?x 1) => ?x) (rule comm (+ ?x ?y) => (+ ?y ?x))");
  egraph::Runner runner(egraph::RunnerLimits{10, 1000, 5.0, 0});
  runner.run(g, rules);
  REQUIRE(g.find(root) == g.find(a));
  auto chain = g.proofs()->path(root, a);
  REQUIRE(chain.size() == 2);
  CHECK(egraph::replay(g, chain, root, a).empty());
  // (* (+ a 0) 1) -> (+ a 0) by mul-one, then (+ a 0) -> a by add-zero.
  REQUIRE(chain[0].why->kind == Justification::Kind::Rule);
  CHECK(chain[0].why->rule->name() == "mul-one");
  CHECK(chain[0].forward);
  CHECK(chain[1].why->rule->name() == "add-zero");
  // Backwards, the same steps reversed.
  auto back = g.proofs()->path(a, root);
  REQUIRE(back.size() == 2);
  CHECK(back[0].why->rule->name() == "add-zero");
  CHECK_FALSE(back[0].forward);
  CHECK(egraph::replay(g, back, a, root).empty());
  // A chain that does not hold is caught.
  auto wrong = chain;
  std::swap(wrong[0], wrong[1]);
  CHECK_FALSE(egraph::replay(g, wrong, root, a).empty());
}

TEST_CASE("congruence is explained by its children's chain") {
  egraph::EGraph g;
  g.enable_explanations();
  const EClassId fa = add(g, "(f a)"), fb = add(g, "(f b)");
  const EClassId a = add(g, "a"), b = add(g, "b");
  g.rebuild();
  g.merge(a, b);  // given
  g.rebuild();
  REQUIRE(g.find(fa) == g.find(fb));
  auto chain = g.proofs()->path(fa, fb);
  REQUIRE(chain.size() == 1);
  REQUIRE(chain[0].why->kind == Justification::Kind::Congruence);
  CHECK(g.op(chain[0].why->left) == g.op(chain[0].why->right));
  auto kids = g.proofs()->path(a, b);
  REQUIRE(kids.size() == 1);
  CHECK(kids[0].why->kind == Justification::Kind::Given);
  CHECK(egraph::replay(g, chain, fa, fb).empty());
}

TEST_CASE("the proof forest's trees are the classes - under random merges") {
  egraph::EGraph g;
  g.enable_explanations();
  std::vector<EClassId> ids;
  for (int i = 0; i < 60; ++i)
    ids.push_back(add(g, "(f " + test::numbered("x", i % 12) + " " + test::numbered("y", i) + ")"));
  g.rebuild();
  std::mt19937 rng(7);
  for (int k = 0; k < 40; ++k) {
    g.merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
    if (k % 5 == 0) g.rebuild();
  }
  g.rebuild();
  for (int k = 0; k < 200; ++k) {
    const EClassId x(static_cast<std::uint32_t>(rng() % g.num_ids())),
        y(static_cast<std::uint32_t>(rng() % g.num_ids()));
    if (g.find(x) == g.find(y)) {
      auto chain = g.proofs()->path(x, y);
      CHECK(egraph::replay(g, chain, x, y).empty());
    } else {
      CHECK_THROWS(g.proofs()->path(x, y));
    }
  }
}

TEST_CASE("without explanations merges record nothing - and turning them on late is refused") {
  egraph::EGraph g;
  CHECK_FALSE(g.explaining());
  CHECK(g.proofs() == nullptr);
  add(g, "(f a)");
  CHECK_THROWS_AS(g.enable_explanations(), std::logic_error);
}

TEST_CASE("explanations hold up under a saturating rule set - every id's chain to its class replays") {
  egraph::EGraph g;
  g.enable_explanations();
  const EClassId root = add(g, "(* (+ a 0) 1)");
  g.rebuild();
  auto file = rules::load_rules(test::source_dir() + "/docs/examples/math.rules");
  REQUIRE(file);
  std::vector<egraph::Rewrite> rules;
  for (auto& o : file->optimizers)
    for (auto& r : o.rewrites) rules.push_back(std::move(r));
  egraph::Runner runner(egraph::RunnerLimits{10, 5000, 5.0, 0});
  runner.run(g, rules);
  const EClassId a = add(g, "a");
  g.rebuild();
  REQUIRE(g.find(root) == g.find(a));
  auto chain = g.proofs()->path(root, a);
  CHECK_FALSE(chain.empty());
  CHECK(egraph::replay(g, chain, root, a).empty());
  for (std::uint32_t id = 0; id < g.num_ids(); id += 7) {
    const EClassId x(id), c = g.find(x);
    INFO("id " << id);
    CHECK(egraph::replay(g, g.proofs()->path(x, c), x, c).empty());
  }
}
