// DagPricer (extract/dag_pricer.hpp): one pricer prices any sequence of
// choices as a fresh one prices each, and its sums are those of a naive
// walk over the chosen classes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <set>

#include "extract/dag_pricer.hpp"
#include "extraction_problems.hpp"

using namespace saturn::extract;

namespace {

// Classes 0..n-1, each with 1-3 nodes over higher classes (acyclic) and,
// now and then, a node over a lower class (a cycle when chosen with it);
// elementwise, reduction and unfused roles mixed so fused chains form.
ExtractionProblem random_problem(std::uint32_t seed, std::uint32_t classes) {
  std::mt19937 rng(seed);
  auto pick = [&](std::uint32_t lo, std::uint32_t hi) {
    return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
  };
  std::vector<std::tuple<std::uint32_t, double, std::vector<std::uint32_t>>> nodes;
  for (std::uint32_t c = 0; c < classes; ++c)
    for (std::uint32_t k = pick(1, 3); k > 0; --k) {
      std::vector<std::uint32_t> kids;
      if (c + 1 < classes)
        for (std::uint32_t i = pick(0, 2); i > 0; --i) kids.push_back(pick(c + 1, classes - 1));
      if (c > 0 && pick(0, 9) == 0) kids.push_back(pick(0, c - 1));
      nodes.emplace_back(c, pick(1, 20), kids);
    }
  auto p = saturn::test::make_problem(classes, nodes, {0, pick(0, classes - 1)});
  for (auto& n : p.nodes) {
    const std::uint32_t role = pick(0, 2);
    n.fused.role = role == 0 ? FuseRole::None : role == 1 ? FuseRole::Elementwise : FuseRole::Reduction;
    p.fusion |= role != 0;
    n.fused.compute_us = pick(0, 10);
    n.fused.write_us = pick(0, 5);
    n.fused.overhead_us = 1;
    n.fused.out_elems = pick(1, 2);
    n.fused.operand_passes = static_cast<int>(pick(1, 3));
    n.fused.boundary = pick(0, 7) == 0;
    for (std::size_t i = 0; i < n.children.size(); ++i) n.fused.read_us.push_back(pick(0, 4));
  }
  return p;
}

// Every node elementwise: 1 us of work, 1 of overhead, 1 read per child.
void all_elementwise(ExtractionProblem& p) {
  p.fusion = true;
  for (auto& n : p.nodes) {
    n.fused.role = FuseRole::Elementwise;
    n.fused.compute_us = 1;
    n.fused.overhead_us = 1;
    n.fused.out_elems = 1;
    n.fused.read_us.assign(n.children.size(), 1);
  }
}

}  // namespace

TEST_CASE("one pricer prices a sequence of choices as fresh ones do - cycles and missing choices between them") {
  int finite = 0, infinite = 0;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    const ExtractionProblem p = random_problem(seed, 40);
    DagPricer reused(p);
    std::mt19937 rng(seed);
    for (int trial = 0; trial < 50; ++trial) {
      INFO("seed " << seed << " trial " << trial);
      std::vector<std::int32_t> choice(p.classes.size());
      for (std::size_t c = 0; c < choice.size(); ++c) {
        const auto& nodes = p.classes[c];
        choice[c] = trial % 7 == 6 && c % 5 == 3
                        ? -1
                        : static_cast<std::int32_t>(
                              nodes[std::uniform_int_distribution<std::size_t>(0, nodes.size() - 1)(rng)]);
      }
      // A naive walk: the needed classes, or a cycle or a missing choice.
      std::set<std::uint32_t> needed;
      std::set<std::uint32_t> open;
      bool ok = true;
      std::function<void(std::uint32_t)> visit = [&](std::uint32_t c) {
        if (!ok || needed.count(c)) return;
        if (choice[c] < 0 || !open.insert(c).second) {
          ok = false;
          return;
        }
        for (std::uint32_t k : p.nodes[static_cast<std::size_t>(choice[c])].children) visit(k);
        open.erase(c);
        needed.insert(c);
      };
      for (std::uint32_t r : p.roots) visit(r);
      double unfused = 0;
      for (std::uint32_t c : needed) unfused += p.nodes[static_cast<std::size_t>(choice[c])].cost;

      std::vector<char> marked;
      const double cost = reused.dag_cost(choice, &marked);
      CHECK(cost == DagPricer(p).dag_cost(choice));
      CHECK(reused.tree_cost(choice) == DagPricer(p).tree_cost(choice));
      if (!ok) {
        ++infinite;
        CHECK(cost == kInfinity);
        CHECK(reused.unfused_dag_cost(choice) == kInfinity);
        CHECK(std::count(marked.begin(), marked.end(), 1) == 0);
        continue;
      }
      ++finite;
      CHECK(reused.unfused_dag_cost(choice) == Approx(unfused));
      for (std::size_t c = 0; c < marked.size(); ++c) CHECK(static_cast<bool>(marked[c]) == (needed.count(c) > 0));
    }
  }
  CHECK(finite > 100);
  CHECK(infinite > 100);
}

TEST_CASE("under fusion a chosen node of infinite cost makes the program infinite - its fused figures do not hide it") {
  // Root 0 = a(1), both elementwise; class 1's node costs infinity but has
  // finite fusion figures, as a node the target cannot run may.
  auto p = saturn::test::make_problem(2, {{0, 1, {1}}, {1, kInfinity, {}}}, {0});
  all_elementwise(p);
  DagPricer price(p);
  std::vector<char> needed;
  CHECK(price.dag_cost({0, 1}, &needed) == kInfinity);
  CHECK(std::count(needed.begin(), needed.end(), 1) == 0);
  p.nodes[1].cost = 3;
  CHECK(DagPricer(p).dag_cost({0, 1}) < kInfinity);
}

TEST_CASE("a fusing node priced by its producer's layout is a kernel of its own - nothing joins it") {
  // Root 0 = r(1): a reduction whose layout price (50) applies when class
  // 1 is node 1 (as a reduce_max of windows is priced as the pooling
  // loop); class 1 = e(2) elementwise, used once; class 2 a leaf.
  auto p = saturn::test::make_problem(3, {{0, 1, {1}}, {1, 1, {2}}, {1, 1, {2}}, {2, 0, {}}}, {0});
  all_elementwise(p);
  p.nodes[0].fused.role = FuseRole::Reduction;
  p.nodes[3].fused.role = FuseRole::None;
  p.nodes[0].layout.after = {1};
  p.nodes[0].layout.cost = 50;
  DagPricer price(p);
  // Laid out: r at 50, e its own kernel (max(1, 1 + 0 write) + 1 = 2), the leaf 0.
  CHECK(price.dag_cost({0, 1, 3}) == Approx(50 + 2));
  // With node 2 for class 1 the layout does not apply: e joins r's kernel,
  // max(1 + 1, 1) + 1 = 3.
  CHECK(price.dag_cost({0, 2, 3}) == Approx(3));
}
