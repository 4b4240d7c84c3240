// Exact saturation sizes: the sum of n distinct variables under
// associativity + commutativity of + saturates at 3^n - 2^(n+1) + 1 + n
// e-nodes and 2^n - 1 e-classes (egg gives the same numbers).
#include <catch2/catch.hpp>
#include <cmath>

#include "egraph/runner.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;

TEST_CASE("sum of n variables under AC saturates at the closed-form size") {
  const int n = GENERATE(2, 3, 4, 5, 6, 7, 8);
  EGraph g;
  add_term(g, saturn::test::term_from(saturn::test::sum_of_vars(n)));
  auto rules = saturn::test::rules_from(saturn::test::kAssocComm);
  Runner runner(RunnerLimits{100, 1000000, 60}, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  INFO("n = " << n);
  REQUIRE(r.stop_reason == StopReason::Saturated);
  const auto p3 = static_cast<std::size_t>(std::pow(3, n)), p2 = std::size_t{1} << n;
  CHECK(g.num_nodes() == p3 - 2 * p2 + 1 + static_cast<std::size_t>(n));
  CHECK(g.num_classes() == p2 - 1);
  CHECK(g.check_invariants().empty());
}

TEST_CASE("n = 8 gives 6 -058 e-nodes and 255 e-classes") {
  EGraph g;
  add_term(g, saturn::test::term_from(saturn::test::sum_of_vars(8)));
  auto rules = saturn::test::rules_from(saturn::test::kAssocComm);
  Runner runner(RunnerLimits{100, 1000000, 60}, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::Saturated);
  CHECK(g.num_nodes() == 6058);
  CHECK(g.num_classes() == 255);
}
