// E-class analyses, through constant folding.
#include <catch2/catch.hpp>
#include <limits>

#include "egraph/constant_folding.hpp"
#include "egraph/egraph.hpp"
#include "egraph/term.hpp"
#include "helpers.hpp"

using namespace saturn::egraph;

TEST_CASE("make folds constant subterms and modify adds the literal") {
  EGraph g;
  auto& cf = g.add_analysis<ConstantFolding>();
  EClassId e = add_term(g, saturn::test::term_from("(* (+ 1 2) 4)"));
  g.rebuild();
  REQUIRE(cf.value(g, e).has_value());
  CHECK(cf.value(g, e)->as_int() == 12);
  CHECK(g.find(e) == g.find(g.add(Op::integer(12))));
  CHECK(g.literal(e) == Op::integer(12));
}

TEST_CASE("merging a variable with a constant re-derives its parents") {
  EGraph g;
  auto& cf = g.add_analysis<ConstantFolding>();
  EClassId e = add_term(g, saturn::test::term_from("(+ (* x 2) 1)"));
  EClassId x = g.add(Op::symbol("x"));
  g.rebuild();
  CHECK_FALSE(cf.value(g, e).has_value());
  g.merge(x, g.add(Op::integer(5)));
  g.rebuild();
  REQUIRE(cf.value(g, e).has_value());
  CHECK(cf.value(g, e)->as_int() == 11);
  CHECK(g.find(e) == g.find(g.add(Op::integer(11))));
  CHECK(g.check_invariants().empty());
  CHECK(cf.conflicts().empty());
}

TEST_CASE("merge reports which side changed") {
  ConstantFolding cf;
  std::optional<Number> none, three = Number(std::int64_t{3});
  auto a = none;
  DidMerge d = cf.merge_data(a, three);
  CHECK(d.into_changed);
  CHECK_FALSE(d.from_changed);
  auto b = three;
  d = cf.merge_data(b, none);
  CHECK_FALSE(d.into_changed);
  CHECK(d.from_changed);
  auto c = three;
  d = cf.merge_data(c, three);
  CHECK_FALSE(d.into_changed);
  CHECK_FALSE(d.from_changed);
}

TEST_CASE("equating different constants is recorded as a conflict") {
  EGraph g;
  auto& cf = g.add_analysis<ConstantFolding>();
  g.merge(g.add(Op::integer(1)), g.add(Op::integer(2)));
  g.rebuild();
  REQUIRE(cf.conflicts().size() == 1);
  CHECK(cf.conflicts()[0].find("1 and 2") != std::string::npos);
}

TEST_CASE("folding refuses what it cannot do exactly") {
  Number big = std::int64_t{1} << 62;
  Number two = std::int64_t{2}, zero = std::int64_t{0};
  CHECK_FALSE(fold_arithmetic(Op::symbol("*"), std::vector<Number>{big, two}).has_value());  // 2^63 overflows
  CHECK_FALSE(fold_arithmetic(Op::symbol("*"), std::vector<Number>{big, Number(std::int64_t{4})}).has_value());
  CHECK_FALSE(fold_arithmetic(Op::symbol("/"), std::vector<Number>{two, zero}).has_value());
  CHECK(fold_arithmetic(Op::symbol("/"), std::vector<Number>{Number(std::int64_t{7}), two})->as_real() == 3.5);
  CHECK(fold_arithmetic(Op::symbol("pow"), std::vector<Number>{two, Number(std::int64_t{10})})->as_int() == 1024);
  CHECK_FALSE(fold_arithmetic(Op::symbol("unknown"), std::vector<Number>{two, two}).has_value());
  // INT64_MIN / -1 is 2^63: not folded (and the remainder test must not trap).
  const Number lowest = std::numeric_limits<std::int64_t>::min(), minus_one = std::int64_t{-1};
  CHECK_FALSE(fold_arithmetic(Op::symbol("/"), std::vector<Number>{lowest, minus_one}).has_value());
  CHECK(fold_arithmetic(Op::symbol("/"), std::vector<Number>{Number(std::int64_t{-7}), minus_one})->as_int() == 7);
}
