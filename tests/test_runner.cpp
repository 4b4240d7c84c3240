// The runner: every stop reason, hooks, schedulers, statistics.
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <thread>

#include "egraph/runner.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;
using saturn::test::rules_from;
using saturn::test::term_from;

TEST_CASE("saturation is reported when nothing changes") {
  EGraph g;
  EClassId root = add_term(g, term_from("(* (+ a 0) 1)"));
  auto rules = rules_from("(rule add0 (+ ?x 0) => ?x) (rule mul1 (* ?x 1) => ?x)");
  Runner runner(RunnerLimits{}, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::Saturated);
  CHECK(g.find(root) == g.find(g.add(Op::symbol("a"))));
  // Iteration 1 applies both rules; iteration 2 finds nothing new.
  CHECK(r.iterations.size() == 2);
  CHECK(r.rules[0].changed == 1);
  CHECK(r.rules[1].changed == 1);
  CHECK(r.iterations.back().enodes == g.num_nodes());
}

TEST_CASE("iteration limit") {
  EGraph g;
  add_term(g, term_from("(f x)"));
  // f(x) = f(h(x)) = f(h(h(x))) = ...: a new h-node every iteration.
  auto rules = rules_from("(rule grow (f ?x) => (f (h ?x)))");
  Runner runner(RunnerLimits{3, 1000000, 60}, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::IterLimit);
  CHECK(r.iterations.size() == 3);
}

TEST_CASE("node limit") {
  EGraph g;
  add_term(g, term_from(saturn::test::sum_of_vars(8)));
  Runner runner(RunnerLimits{100, 500, 60}, std::make_unique<SimpleScheduler>());
  auto rules = rules_from(saturn::test::kAssocComm);
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::NodeLimit);
  CHECK(g.num_nodes() > 500);
  CHECK(g.num_nodes() < 6058);          // did not saturate
  CHECK(g.check_invariants().empty());  // rebuilt even when stopping mid-iteration
}

TEST_CASE("time limit") {
  EGraph g;
  add_term(g, term_from(saturn::test::sum_of_vars(10)));
  Runner runner(RunnerLimits{1000, 100000000, 0.02}, std::make_unique<SimpleScheduler>());
  auto rules = rules_from(saturn::test::kAssocComm);
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::TimeLimit);
  CHECK(r.total_ms < 5000);
}

TEST_CASE("a hook can stop the run") {
  EGraph g;
  add_term(g, term_from("(f x)"));
  auto rules = rules_from("(rule grow (f ?x) => (f (h ?x)))");
  Runner runner(RunnerLimits{100, 1000000, 60});
  runner.add_hook([](const EGraph&, const RunReport& rep) -> std::optional<std::string> {
    if (rep.iterations.size() == 2) return "enough";
    return std::nullopt;
  });
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::Other);
  CHECK(r.stop_message == "enough");
  CHECK(r.iterations.size() == 2);
}

TEST_CASE("backoff bans a rule that exceeds its match limit - then saturates anyway") {
  EGraph g;
  EClassId root = add_term(g, term_from(saturn::test::sum_of_vars(6)));
  auto rules = rules_from(saturn::test::kAssocComm);
  Runner runner(RunnerLimits{1000, 1000000, 60}, std::make_unique<BackoffScheduler>(8, 1));
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::Saturated);
  CHECK(r.rules[1].times_banned > 0);  // assoc has far more than 8 matches
  // Saturation is saturation: the same e-graph as with the simple scheduler.
  CHECK(g.num_nodes() == 3 * 3 * 3 * 3 * 3 * 3 - 128 + 1 + 6);
  CHECK(g.num_classes() == 63);
  (void)root;
}

TEST_CASE("statistics add up") {
  EGraph g;
  add_term(g, term_from(saturn::test::sum_of_vars(5)));
  auto rules = rules_from(saturn::test::kAssocComm);
  Runner runner(RunnerLimits{}, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  std::size_t matches = 0, applied = 0;
  for (auto& it : r.iterations) {
    matches += it.matches;
    applied += it.applied;
    CHECK(it.search_ms >= 0);
    CHECK(it.total_ms + 1e-9 >= it.search_ms + it.apply_ms + it.rebuild_ms - 1.0);
  }
  CHECK(matches == r.rules[0].matches + r.rules[1].matches);
  CHECK(applied == r.rules[0].applications + r.rules[1].applications);
  CHECK(r.total_ms >= r.search_ms());
}

TEST_CASE("semi-naive search changes nothing but the work done", "[property]") {
  // Every iteration must end with the same e-graph, incremental or not:
  // only applications that would change nothing are skipped.
  const char* ruleset = R"(
(rule comm (f ?a ?b) => (f ?b ?a))
(rule assoc (f ?a (f ?b ?c)) => (f (f ?a ?b) ?c))
(rule distribute (g (f ?a ?b)) => (f (g ?a) (g ?b)))
(rule unit (f ?a 0) => ?a)
(rule involution (g (g ?x)) => ?x)
(rule idempotent (f ?a ?a) => ?a)
(rule guarded (g ?x) => (h ?x) :if (!= ?x a))
(multirule pair ((h ?x) (g ?x)) => ((k ?x) (k ?x)))
)";
  std::mt19937 rng(GENERATE(41u, 42u, 43u, 44u, 45u, 46u, 47u, 48u));
  std::function<std::string(int)> random_term = [&](int depth) -> std::string {
    const char* leaves[] = {"a", "b", "c", "0"};
    if (depth == 0 || rng() % 4 == 0) return leaves[rng() % 4];
    if (rng() % 3 == 0) return "(g " + random_term(depth - 1) + ")";
    return "(f " + random_term(depth - 1) + " " + random_term(depth - 1) + ")";
  };
  std::string text = random_term(5);
  INFO(text);
  std::vector<std::pair<std::size_t, std::size_t>> sizes[2];
  std::size_t final_nodes[2], final_classes[2];
  for (int incremental = 0; incremental < 2; ++incremental) {
    EGraph g;
    add_term(g, term_from(text));
    auto rules = rules_from(ruleset);
    Runner runner(RunnerLimits{7, 200000, 60}, std::make_unique<SimpleScheduler>());
    runner.set_incremental(incremental == 1);
    RunReport r = runner.run(g, rules);
    REQUIRE(r.stop_reason != StopReason::NodeLimit);
    for (auto& it : r.iterations) sizes[incremental].emplace_back(it.enodes, it.eclasses);
    final_nodes[incremental] = g.num_nodes();
    final_classes[incremental] = g.num_classes();
    REQUIRE(g.check_invariants().empty());
  }
  CHECK(sizes[0] == sizes[1]);
  CHECK(final_nodes[0] == final_nodes[1]);
  CHECK(final_classes[0] == final_classes[1]);
}

TEST_CASE("semi-naive search skips old matches") {
  EGraph g;
  add_term(g, term_from(saturn::test::sum_of_vars(7)));
  auto rules = rules_from(saturn::test::kAssocComm);
  std::size_t total[2];
  for (int incremental = 0; incremental < 2; ++incremental) {
    EGraph h;
    add_term(h, term_from(saturn::test::sum_of_vars(7)));
    Runner runner(RunnerLimits{100, 1000000, 60}, std::make_unique<SimpleScheduler>());
    runner.set_incremental(incremental == 1);
    RunReport r = runner.run(h, rules);
    REQUIRE(r.stop_reason == StopReason::Saturated);
    total[incremental] = r.rules[0].matches + r.rules[1].matches;
  }
  // The last iteration of a full search re-finds every match; semi-naive
  // finds none there.
  CHECK(total[1] < total[0] * 3 / 4);
}

TEST_CASE("memory limit") {
  REQUIRE(resident_memory_mb() > 0);
  EGraph g;
  add_term(g, term_from(saturn::test::sum_of_vars(10)));
  auto rules = rules_from(saturn::test::kAssocComm);
  // A limit just above what the process holds now is passed within a few
  // iterations of the sum of 10 (which peaks near 90 MB).
  RunnerLimits limits{1000, 100000000, 600, resident_memory_mb() + 8};
  Runner runner(limits, std::make_unique<SimpleScheduler>());
  RunReport r = runner.run(g, rules);
  CHECK(r.stop_reason == StopReason::MemoryLimit);
  CHECK(std::string(to_string(r.stop_reason)) == "memory_limit");
  CHECK(g.num_nodes() < 57012);
}
