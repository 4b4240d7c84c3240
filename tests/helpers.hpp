// Small helpers shared by the tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/runner.hpp"
#include "egraph/term.hpp"
#include "rules/rule_file.hpp"

namespace saturn::test {

// Parses rules from text; fails the test with the diagnostic if they do not load.
inline std::vector<egraph::Rewrite> rules_from(const std::string& text) {
  auto f = rules::parse_rules(text, "test.rules");
  if (!f) FAIL(f.error().to_string());
  std::vector<egraph::Rewrite> out;
  for (auto& o : f->optimizers)
    for (auto& r : o.rewrites) out.push_back(std::move(r));
  return out;
}

inline egraph::Term term_from(const std::string& text) {
  auto t = rules::parse_terms(text, "test.terms");
  if (!t) FAIL(t.error().to_string());
  REQUIRE(t->size() == 1);
  return (*t)[0];
}

// (+ x1 (+ x2 (+ ... xn)))
inline std::string sum_of_vars(int n) {
  std::string t = "x" + std::to_string(n);
  for (int i = n - 1; i >= 1; --i) t = "(+ x" + std::to_string(i) + " " + t + ")";
  return t;
}

inline const char* kAssocComm = R"(
(rule comm (+ ?a ?b) => (+ ?b ?a))
(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))
)";

}  // namespace saturn::test
