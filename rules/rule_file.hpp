// Reading .rules files: defoptimizer groups of rule / multirule forms.
//
// Grammar (docs/design.md, "Rule language"):
//   file       := form*
//   form       := (defoptimizer NAME ["doc"] [:phase N N*] rule*) | rule
//   rule       := (rule NAME LHS => RHS clause*) | (rule NAME LHS <=> RHS clause*)
//              |  (multirule NAME (LHS...) => (RHS...) clause*)
//   clause     := :if EXPR | :let (?v EXPR) | :unverified "reason"
// Rules outside any defoptimizer form one anonymous optimizer named after the
// file (phase 0). An optimizer may join several phases (`:phase 1 2`): its
// rules then run in each, e.g. view merging after the expansions too. Clauses run in the order written, so a guard can
// protect a later :let (e.g. test a divisor before dividing). `A <=> B` yields two rewrites, NAME and NAME-rev; both
// sides must use the same variables and it takes no :let. Every problem is reported as file:line:col with what was
// expected, and nothing is loaded from a file that has one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egraph/rewrite.hpp"
#include "egraph/term.hpp"
#include "ir/diagnostic.hpp"
#include "ir/sexpr.hpp"
#include "rules/expr.hpp"

namespace saturn::rules {

struct RuleInfo {
  std::string name;  // of the rewrite (NAME-rev for the reverse of <=>)
  SourceLoc loc;
  std::string source;                     // the rule as written
  std::optional<std::string> unverified;  // the reason given with :unverified
};

struct Optimizer {
  std::string name;
  std::string doc;
  std::vector<int> phases = {0};  // the phases it joins, in the order written
  SourceLoc loc;
  std::vector<egraph::Rewrite> rewrites;
  std::vector<RuleInfo> info;  // parallel to rewrites
};

struct RuleFile {
  std::string path;
  std::vector<Optimizer> optimizers;
};

// Operators may be checked against a signature table: given an operator name
// and arity as used in a pattern, return an error message or nullopt.
using OpChecker = std::function<std::optional<std::string>(const std::string& op, std::size_t arity)>;

Expected<RuleFile> parse_rules(std::string_view text, const std::string& path,
                               const BuiltinRegistry& registry = BuiltinRegistry::global(),
                               const OpChecker& check_op = {});
// The .rules files directly in `dir` (not its subfolders, so rulesets/grad/
// is apart from rulesets/), sorted: the one listing every reader of rule
// folders uses (saturn opt, saturn verify, the gradient rules).
std::vector<std::string> rule_files_in(const std::string& dir);

Expected<RuleFile> load_rules(const std::string& path, const BuiltinRegistry& registry = BuiltinRegistry::global(),
                              const OpChecker& check_op = {});

// All rewrites of several files, grouped by phase in increasing order.
// Duplicate rule names across files are an error; an optimizer in several
// phases has its rules in each.
struct Phase {
  int phase = 0;
  std::vector<std::string> optimizers;
  std::vector<egraph::Rewrite> rewrites;
  std::vector<RuleInfo> info;
};
Expected<std::vector<Phase>> group_phases(std::vector<RuleFile> files);

// Terms files: one term per top-level s-expression (normally one per line).
Expected<std::vector<egraph::Term>> parse_terms(std::string_view text, const std::string& path);
Expected<std::vector<egraph::Term>> load_terms(const std::string& path);

}  // namespace saturn::rules
