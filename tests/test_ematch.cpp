// E-matching: the compiled matcher checked against a naive matcher on random
// e-graphs, plus ground terms, repeated variables and multi-patterns.
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <set>

#include "egraph/ematch.hpp"
#include "egraph/rewrite.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;

namespace {

using Binding = std::vector<std::uint32_t>;  // root, then one class per variable

// Naive matcher: tries every node of every class, recursively, with no
// compilation, index or pruning.
void naive(const EGraph& g, const Pattern& p, std::uint32_t node, EClassId cls, std::vector<EClassId>& subst,
           std::vector<bool>& bound, const std::function<void()>& k) {
  const PatternNode& pn = p.nodes[node];
  if (pn.is_var()) {
    if (bound[pn.var]) {
      if (g.find(subst[pn.var]) == g.find(cls)) k();
      return;
    }
    bound[pn.var] = true;
    subst[pn.var] = g.find(cls);
    k();
    bound[pn.var] = false;
    return;
  }
  for (NodeId n : g.nodes(g.find(cls))) {
    if (g.op(n) != pn.op || g.children(n).size() != pn.children.size()) continue;
    std::function<void(std::size_t)> kid = [&](std::size_t i) {
      if (i == pn.children.size()) return k();
      naive(g, p, pn.children[i], g.children(n)[i], subst, bound, [&] { kid(i + 1); });
    };
    kid(0);
  }
}

std::set<Binding> naive_all(const EGraph& g, const Pattern& p, std::size_t nvars) {
  std::set<Binding> out;
  std::vector<EClassId> subst(nvars);
  std::vector<bool> bound(nvars, false);
  for (EClassId c : g.class_ids())
    naive(g, p, p.root(), c, subst, bound, [&] {
      Binding b{c.v};
      for (auto s : subst) b.push_back(s.v);
      out.insert(b);
    });
  return out;
}

std::set<Binding> compiled_all(const EGraph& g, const Rewrite& rw) {
  Matches m;
  rw.search(g, m);
  std::set<Binding> out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    Binding b{m.roots(i)[0].v};
    for (auto s : m.bindings(i)) b.push_back(s.v);
    // The compiled matcher may report a match once per matching node; the
    // naive one dedups through the set too.
    out.insert(b);
  }
  return out;
}

EGraph random_egraph(std::mt19937& rng) {
  EGraph g;
  std::vector<EClassId> ids;
  Op f = Op::symbol("f"), h = Op::symbol("h");
  for (int i = 0; i < 4; ++i) ids.push_back(g.add(Op::symbol(saturn::test::numbered("v", i))));
  ids.push_back(g.add(Op::integer(0)));
  for (int i = 0; i < 60; ++i) {
    if (rng() % 2)
      ids.push_back(g.add(f, {ids[rng() % ids.size()], ids[rng() % ids.size()]}));
    else
      ids.push_back(g.add(h, {ids[rng() % ids.size()]}));
  }
  for (int i = 0; i < 12; ++i) g.merge(ids[rng() % ids.size()], ids[rng() % ids.size()]);
  g.rebuild();
  return g;
}

}  // namespace

TEST_CASE("compiled matcher finds exactly what a naive matcher finds", "[property]") {
  const char* patterns[] = {
      "(rule p (f ?a ?b) => ?a)",
      "(rule p (f ?a ?a) => ?a)",
      "(rule p (f (h ?a) ?b) => ?a)",
      "(rule p (f ?a (f ?b ?c)) => ?a)",
      "(rule p (f ?a 0) => ?a)",
      "(rule p (h (h ?x)) => ?x)",
      "(rule p (f (h ?a) (h ?a)) => ?a)",
      "(rule p (f (f ?a ?b) (f ?b ?a)) => ?a)",
      "(rule p (h v0) => v0)",
      "(rule p (f ?a (h 0)) => ?a)",
  };
  std::mt19937 rng(GENERATE(31u, 32u, 33u, 34u, 35u, 36u));
  EGraph g = random_egraph(rng);
  for (const char* text : patterns) {
    auto rules = saturn::test::rules_from(text);
    const Rewrite& rw = rules[0];
    INFO(text);
    auto expect = naive_all(g, rw.lhs()[0], rw.num_lhs_vars());
    auto got = compiled_all(g, rw);
    REQUIRE(got == expect);
  }
}

TEST_CASE("the match limit stops the search just past the limit") {
  std::mt19937 rng(7);
  EGraph g = random_egraph(rng);
  auto rules = saturn::test::rules_from("(rule p (f ?a ?b) => ?a)");
  Matches all, limited;
  rules[0].search(g, all);
  REQUIRE(all.size() > 5);
  rules[0].search(g, limited, 5);
  CHECK(limited.size() == 6);
}

TEST_CASE("a ground pattern absent from the e-graph matches nothing") {
  EGraph g;
  saturn::egraph::add_term(g, saturn::test::term_from("(f x 1)"));
  g.rebuild();
  auto rules = saturn::test::rules_from("(rule p (f ?a 2) => ?a)");
  Matches m;
  rules[0].search(g, m);
  CHECK(m.size() == 0);
  auto rules1 = saturn::test::rules_from("(rule p (f ?a 1) => ?a)");
  rules1[0].search(g, m);
  CHECK(m.size() == 1);
}

TEST_CASE("multi-patterns join on shared variables") {
  EGraph g;
  for (const char* t : {"(mm x w1)", "(mm x w2)", "(mm y w3)", "(other x w4)"})
    saturn::egraph::add_term(g, saturn::test::term_from(t));
  g.rebuild();
  auto rules = saturn::test::rules_from(
      "(multirule share ((mm ?x ?a) (mm ?x ?b)) => ((first ?x ?a ?b) (second ?x ?a ?b)) :if (!= ?a ?b))");
  Matches m;
  rules[0].search(g, m);
  // Ordered pairs of mm nodes sharing ?x: (w1,w1) (w1,w2) (w2,w1) (w2,w2) (w3,w3).
  CHECK(m.size() == 5);
  ApplyStats s = rules[0].apply(g, m);
  CHECK(s.applied == 2);
  CHECK(s.rejected == 3);
  g.rebuild();
  auto x = g.add(Op::symbol("x")), w1 = g.add(Op::symbol("w1")), w2 = g.add(Op::symbol("w2"));
  auto mm1 = g.add(Op::symbol("mm"), {x, w1});
  auto first = g.lookup(Op::symbol("first"), std::vector<EClassId>{x, w1, w2});
  REQUIRE(first.has_value());
  CHECK(*first == g.find(mm1));
}

TEST_CASE("multi-pattern with an unanchored second pattern") {
  EGraph g;
  for (const char* t : {"(a p)", "(b q)", "(b r)"}) saturn::egraph::add_term(g, saturn::test::term_from(t));
  g.rebuild();
  auto rules = saturn::test::rules_from("(multirule cross ((a ?x) (b ?y)) => ((c ?x ?y) (c ?x ?y)))");
  Matches m;
  rules[0].search(g, m);
  CHECK(m.size() == 2);
}
