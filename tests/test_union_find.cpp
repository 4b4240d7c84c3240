// Union-find: random unions checked against a naive partition.
#include <catch2/catch.hpp>
#include <random>

#include "egraph/union_find.hpp"

using saturn::egraph::EClassId;
using saturn::egraph::UnionFind;

TEST_CASE("make_set gives fresh singleton roots") {
  UnionFind uf;
  for (std::uint32_t i = 0; i < 10; ++i) {
    EClassId id = uf.make_set();
    CHECK(id.v == i);
    CHECK(uf.find(id) == id);
    CHECK(uf.is_root(id));
  }
}

TEST_CASE("random unions agree with a naive partition", "[property]") {
  std::mt19937 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
  const std::uint32_t n = 300;
  UnionFind uf;
  std::vector<int> label(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    uf.make_set();
    label[i] = static_cast<int>(i);
  }
  std::uniform_int_distribution<std::uint32_t> pick(0, n - 1);
  for (int step = 0; step < 400; ++step) {
    EClassId a = uf.find_mut(EClassId(pick(rng))), b = uf.find_mut(EClassId(pick(rng)));
    if (a != b) {
      uf.union_into(a, b);
      int from = label[b.v], to = label[a.v];
      for (int& l : label)
        if (l == from) l = to;
    }
    // Invariant: same label <=> same representative.
    for (int q = 0; q < 20; ++q) {
      std::uint32_t x = pick(rng), y = pick(rng);
      REQUIRE((label[x] == label[y]) == (uf.find(EClassId(x)) == uf.find(EClassId(y))));
    }
  }
  // Every representative is a root, and find_mut agrees with find.
  for (std::uint32_t i = 0; i < n; ++i) {
    EClassId r = uf.find(EClassId(i));
    REQUIRE(uf.is_root(r));
    REQUIRE(uf.find_mut(EClassId(i)) == r);
  }
}
