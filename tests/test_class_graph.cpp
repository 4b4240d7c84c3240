// The class graph's algorithms (Boost.Graph): strongly connected components,
// reachability, children-first order, and the cycles a choice closes.
#include <catch2/catch.hpp>

#include "extract/class_graph.hpp"
#include "extraction_problems.hpp"

using namespace saturn::extract;
using saturn::test::make_problem;

namespace {
const NodeFilter kAll = [](std::uint32_t) { return true; };
}

TEST_CASE("strongly connected components group the classes on a common cycle") {
  // 0 -> 1 -> 2 -> 1, 0 -> 3: {1, 2} is one component, 0 and 3 their own.
  auto p = make_problem(4, {{0, 1, {1, 3}}, {1, 1, {2}}, {2, 1, {1}}, {2, 1, {}}, {3, 1, {}}}, {0});
  const Components scc = strong_components(p, kAll);
  CHECK(scc.of[1] == scc.of[2]);
  CHECK(scc.size[scc.of[1]] == 2);
  CHECK(scc.of[0] != scc.of[1]);
  CHECK(scc.size[scc.of[0]] == 1);
  CHECK(scc.size[scc.of[3]] == 1);
  // Without 2's cyclic node the cycle is gone.
  const Components acyclic = strong_components(p, [](std::uint32_t n) { return n != 2; });
  CHECK(acyclic.of[1] != acyclic.of[2]);
}

TEST_CASE("reachability from the roots goes through kept nodes only") {
  auto p = make_problem(4, {{0, 1, {1}}, {0, 1, {2}}, {1, 1, {}}, {2, 1, {}}, {3, 1, {}}}, {0});
  const auto all = reachable_from_roots(p, kAll);
  CHECK(all == std::vector<char>{1, 1, 1, 0});
  const auto first = reachable_from_roots(p, [](std::uint32_t n) { return n != 1; });
  CHECK(first == std::vector<char>{1, 1, 0, 0});
}

TEST_CASE("children-first order of a choice, and none for a cyclic or incomplete one") {
  auto p = make_problem(3, {{0, 1, {1, 2}}, {1, 1, {2}}, {1, 1, {0}}, {2, 1, {}}}, {0});
  const auto order = children_first(p, {0, 1, 3});
  REQUIRE(order);
  CHECK(*order == std::vector<std::uint32_t>{2, 1, 0});
  CHECK_FALSE(children_first(p, {0, 2, 3}));   // 1 -> 0 closes a cycle
  CHECK_FALSE(children_first(p, {0, 1, -1}));  // 2 is needed but not chosen
}

TEST_CASE("shortest cycles through each class, up to a length") {
  // A 2-cycle 0 <-> 1 and a 3-cycle 1 -> 2 -> 3 -> 1.
  auto p = make_problem(4, {{0, 1, {1}}, {1, 1, {0}}, {1, 1, {2}}, {2, 1, {3}}, {3, 1, {1}}}, {0});
  const auto all = shortest_cycles(p, kAll, {0, 1, 2, 3}, 10);
  CHECK(all == std::vector<std::vector<std::uint32_t>>{{0, 1}, {1, 2, 3}});
  const auto short_ones = shortest_cycles(p, kAll, {0, 1, 2, 3}, 2);
  CHECK(short_ones == std::vector<std::vector<std::uint32_t>>{{0, 1}});
  CHECK(shortest_cycles(p, kAll, {0, 1}, 10) == std::vector<std::vector<std::uint32_t>>{{0, 1}, {1, 2, 3}});
}

TEST_CASE("the cycles a choice closes: its components and their shortest cycles") {
  // Chosen: 0 -> 1 -> 2 -> 3 -> 1 and 2 -> 4 -> 2; 5 <-> 6 is a cycle too,
  // but the roots do not reach it.
  auto p = make_problem(
      7, {{0, 0, {1}}, {1, 0, {2}}, {2, 0, {3, 4}}, {3, 0, {1}}, {4, 0, {2}}, {5, 0, {6}}, {6, 0, {5}}, {3, 1, {}}},
      {0});
  const std::vector<std::int32_t> cyclic{0, 1, 2, 3, 4, 5, 6};
  const auto cycles = choice_cycles(p, cyclic);
  CHECK(cycles == std::vector<std::vector<std::uint32_t>>{{1, 2, 3}, {1, 2, 3, 4}, {2, 4}});
  const std::vector<std::int32_t> acyclic{0, 1, 2, 7, 4, -1, -1};  // 3 takes its leaf; 4 -> 2 still cycles
  CHECK(choice_cycles(p, acyclic) == std::vector<std::vector<std::uint32_t>>{{2, 4}});
  auto q = make_problem(2, {{0, 0, {1}}, {1, 0, {}}}, {0});
  CHECK(choice_cycles(q, {0, 1}).empty());
}
