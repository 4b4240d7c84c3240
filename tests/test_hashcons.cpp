// Hash-cons: random insert/erase/find against std::map. 1,600 keys churned in
// a table kept at load <= 0.5 form clusters, some wrapping around the end,
// which exercises probing and backward-shift deletion.
#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "egraph/hashcons.hpp"

using namespace saturn::egraph;

TEST_CASE("hash-cons agrees with a map under random inserts and erases", "[property]") {
  std::mt19937 rng(GENERATE(11u, 12u, 13u));
  NodeStore store;
  HashCons hc;
  Op f = Op::symbol("f"), g = Op::symbol("g");
  // Distinct keys: (f i j) and (g i j k).
  std::vector<NodeId> nodes;
  for (std::uint32_t i = 0; i < 40; ++i)
    for (std::uint32_t j = 0; j < 20; ++j) {
      EClassId kids2[] = {EClassId(i), EClassId(j)};
      nodes.push_back(store.push(f, kids2));
      EClassId kids3[] = {EClassId(i), EClassId(j), EClassId(i + j)};
      nodes.push_back(store.push(g, kids3));
    }
  auto h = [&](NodeId n) { return store.hash(n); };
  std::map<std::uint32_t, bool> present;
  std::uniform_int_distribution<std::size_t> pick(0, nodes.size() - 1);
  for (int step = 0; step < 20000; ++step) {
    NodeId n = nodes[pick(rng)];
    bool in = present[n.v];
    if (rng() % 3 != 0) {
      if (!in) {
        hc.insert(store, n, store.op(n), store.children(n), h(n));
        present[n.v] = true;
      }
    } else {
      REQUIRE(hc.erase(store, n, h(n)) == in);
      present[n.v] = false;
    }
    // Probe a few keys.
    for (int q = 0; q < 5; ++q) {
      NodeId m = nodes[pick(rng)];
      auto found = hc.find(store, store.op(m), store.children(m), h(m));
      REQUIRE(found.has_value() == present[m.v]);
      if (found) REQUIRE(*found == m);
    }
  }
  std::size_t count = 0;
  for (auto& [_, p] : present) count += p;
  REQUIRE(hc.size() == count);
}

TEST_CASE("wide operators and arities compare through the node store") {
  NodeStore store;
  HashCons hc;
  std::vector<EClassId> many(300);
  for (std::uint32_t i = 0; i < 300; ++i) many[i] = EClassId(i);
  NodeId a = store.push(Op::symbol("concat"), many);
  many.back() = EClassId(999);
  NodeId b = store.push(Op::symbol("concat"), many);
  hc.insert(store, a, store.op(a), store.children(a), store.hash(a));
  // Same first two children and op, different tail: must not be found.
  REQUIRE_FALSE(hc.find(store, store.op(b), store.children(b), store.hash(b)).has_value());
  hc.insert(store, b, store.op(b), store.children(b), store.hash(b));
  REQUIRE(*hc.find(store, store.op(b), store.children(b), store.hash(b)) == b);
  REQUIRE(*hc.find(store, store.op(a), store.children(a), store.hash(a)) == a);
}
