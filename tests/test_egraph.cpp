// The e-graph core: hash-consing, merging, congruence closure, invariants.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "egraph/egraph.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;

TEST_CASE("adding an equal node returns the existing class") {
  EGraph g;
  EClassId a = g.add(Op::symbol("a"));
  EClassId b = g.add(Op::symbol("b"));
  EClassId f1 = g.add(Op::symbol("f"), {a, b});
  EClassId f2 = g.add(Op::symbol("f"), {a, b});
  CHECK(f1 == f2);
  CHECK(g.add(Op::symbol("f"), {b, a}) != f1);
  CHECK(g.num_nodes() == 4);
  CHECK(g.num_classes() == 4);
  CHECK(g.lookup(Op::symbol("f"), std::vector<EClassId>{a, b}) == f1);
  CHECK_FALSE(g.lookup(Op::symbol("g"), std::vector<EClassId>{a}).has_value());
}

TEST_CASE("literals are interned: equal values share an e-node") {
  EGraph g;
  CHECK(g.add(Op::integer(3)) == g.add(Op::integer(3)));
  CHECK(g.add(Op::integer(3)) != g.add(Op::real(3.0)));  // 3 and 3.0 are different literals
  Number l1[] = {std::int64_t{1}, std::int64_t{0}}, l2[] = {std::int64_t{1}, std::int64_t{0}};
  CHECK(g.add(Op::list(l1)) == g.add(Op::list(l2)));
  CHECK(Op::list(l1).name() == "[1 0]");
  CHECK(Op::real(2.0).name() == "2.0");
  CHECK(Op::real(0.1).name() == "0.1");
}

TEST_CASE("ops interned from several threads at once read back their kind and value") {
  // Each thread interns symbols, integers, reals and lists, half of them the
  // same as another thread's, and reads every kind back while the others
  // are still adding.
  constexpr int kThreads = 4, kEach = 3000;
  std::vector<std::string> wrong(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < kEach; ++i) {
        const int v = (i % 2) ? i : t * kEach + i;
        const Number list[] = {std::int64_t{v}, 0.5};
        const Op ops[] = {Op::symbol("sym" + std::to_string(v)), Op::integer(v), Op::real(v + 0.25), Op::list(list)};
        const OpKind kinds[] = {OpKind::Symbol, OpKind::Int, OpKind::Real, OpKind::List};
        for (int k = 0; k < 4; ++k)
          if (ops[k].kind() != kinds[k] || ops[k].is_literal() != (k > 0))
            wrong[static_cast<std::size_t>(t)] = ops[k].name();
        if (ops[0].name() != "sym" + std::to_string(v) || ops[1].number()->as_int() != v ||
            ops[2].number()->as_real() != v + 0.25 || ops[3].list_value().size() != 2)
          wrong[static_cast<std::size_t>(t)] = "the entry of " + ops[0].name();
      }
    });
  for (auto& th : threads) th.join();
  for (const std::string& w : wrong) CHECK(w.empty());
  CHECK(Op::integer(kEach - 1) == Op::integer(kEach - 1));
  CHECK(Op::integer(7).number()->as_int() == 7);
  CHECK(Op::symbol("sym7").kind() == OpKind::Symbol);
}

TEST_CASE("merge then rebuild restores congruence") {
  EGraph g;
  auto a = g.add(Op::symbol("a")), b = g.add(Op::symbol("b"));
  Op f = Op::symbol("f");
  auto fa = g.add(f, {a}), fb = g.add(f, {b});
  auto ffa = g.add(f, {fa}), ffb = g.add(f, {fb});
  REQUIRE(g.find(fa) != g.find(fb));
  CHECK(g.merge(a, b));
  CHECK_FALSE(g.merge(a, b));
  CHECK_FALSE(g.clean());
  std::size_t unions = g.rebuild();
  CHECK(unions == 2);  // f(a)=f(b), then f(f(a))=f(f(b))
  CHECK(g.find(fa) == g.find(fb));
  CHECK(g.find(ffa) == g.find(ffb));
  CHECK(g.num_classes() == 3);
  CHECK(g.num_nodes() == 4);  // a, b, f(a), f(f(a)): the duplicates retired
  CHECK(g.check_invariants().empty());
}

TEST_CASE("congruence through a cycle") {
  // f(a) = a, then f(f(a)) = a too.
  EGraph g;
  auto a = g.add(Op::symbol("a"));
  Op f = Op::symbol("f");
  auto fa = g.add(f, {a});
  auto ffa = g.add(f, {fa});
  g.merge(fa, a);
  g.rebuild();
  CHECK(g.find(ffa) == g.find(a));
  CHECK(g.num_classes() == 1);
  CHECK(g.num_nodes() == 2);  // a and f(class)
  CHECK(g.check_invariants().empty());
}

TEST_CASE("nodes of a class are sorted - and nodes_with_op finds a run") {
  EGraph g;
  auto x = g.add(Op::symbol("x"));
  std::vector<EClassId> ids;
  for (const char* op : {"q", "a", "m", "a", "z"})
    ids.push_back(g.add(Op::symbol(op), {x, g.add(Op::integer(static_cast<std::int64_t>(ids.size())))}));
  for (auto id : ids) g.merge(ids[0], id);
  g.rebuild();
  REQUIRE(g.check_invariants().empty());
  auto cls = g.find(ids[0]);
  CHECK(g.nodes(cls).size() == 5);
  CHECK(g.nodes_with_op(cls, Op::symbol("a")).size() == 2);
  CHECK(g.nodes_with_op(cls, Op::symbol("z")).size() == 1);
  CHECK(g.nodes_with_op(cls, Op::symbol("nope")).empty());
  auto with_a = g.classes_with_op(Op::symbol("a"));
  REQUIRE(with_a.size() == 1);
  CHECK(with_a[0] == cls);
}

TEST_CASE("random merges keep every invariant", "[property]") {
  std::mt19937 rng(GENERATE(21u, 22u, 23u, 24u));
  EGraph g;
  std::vector<EClassId> ids;
  Op ops[] = {Op::symbol("f"), Op::symbol("g"), Op::symbol("h")};
  for (int i = 0; i < 6; ++i) ids.push_back(g.add(Op::symbol(saturn::test::numbered("v", i))));
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 15; ++i) {
      Op op = ops[rng() % 3];
      std::vector<EClassId> kids;
      for (std::size_t k = 0, n = 1 + rng() % 2; k < n; ++k) kids.push_back(ids[rng() % ids.size()]);
      ids.push_back(g.add(op, kids));
    }
    for (int i = 0; i < 3; ++i) g.merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
    g.rebuild();
    INFO("round " << round);
    REQUIRE(g.check_invariants().empty());
  }
  // Congruence closure: any two live nodes with equal canonical keys share a
  // class (check_invariants asserts no duplicates; re-adding finds the class).
  for (EClassId c : g.class_ids())
    for (NodeId n : g.nodes(c)) {
      std::vector<EClassId> kids(g.children(n).begin(), g.children(n).end());
      REQUIRE(g.lookup(g.op(n), kids) == c);
    }
}
