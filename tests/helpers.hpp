// Small helpers shared by the tests.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/runner.hpp"
#include "egraph/term.hpp"
#include "rules/rule_file.hpp"

namespace saturn::test {

// The source tree and the `saturn` binary (environment overrides build defaults).
inline std::string source_dir() {
  const char* env = std::getenv("SATURN_SOURCE_DIR");
  return env ? env : SATURN_SOURCE_DIR_DEFAULT;
}
inline std::string saturn_bin() {
  const char* env = std::getenv("SATURN_BIN");
  return env ? env : SATURN_BIN_DEFAULT;
}

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

// "v3" from ("v", 3). (Built by append: GCC 12 warns falsely on "v" + s.)
inline std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

// (+ x1 (+ x2 (+ ... xn)))
inline std::string sum_of_vars(int n) {
  std::string t = numbered("x", n);
  for (int i = n - 1; i >= 1; --i) {
    std::string outer = "(+ ";
    outer.append(numbered("x", i)).append(" ").append(t).append(")");
    t = std::move(outer);
  }
  return t;
}

inline const char* kAssocComm = R"(
(rule comm (+ ?a ?b) => (+ ?b ?a))
(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))
)";

}  // namespace saturn::test
