// Gradients as data: the (defgrad ...) and (nograd ...) forms of
// rulesets/grad/, read and checked here, instantiated by pipeline/autodiff.
//
// Invariant: a GradRules holds at most one definition per op, every op it
// names is in the registry, every operand a `d` form differentiates is one
// of its pattern's variables, and every ?variable an expression reads is
// bound (an operand, a result, an incoming gradient or a `let`). Errors name
// file:line:col; nothing is loaded from a file that has one.
//
//   (defgrad (mul ?a ?b) (?y) (?dy)          ; pattern, results, incoming gradients
//     "d(a b) = b da + a db"                 ; optional doc
//     (let ?t EXPR)                          ; shared subexpressions (lazy)
//     (d ?a (sum-to (mul ?dy ?b) ?a))        ; the vector-Jacobian product per operand
//     (d ?b (sum-to (mul ?dy ?a) ?b)))
//   (nograd (argmax argmin equal) "integer or boolean results")
//   (zerograd (floor round) "piecewise constant")
//
// A variable written `?xs...` (last in the pattern or the results) binds the
// rest as a list; an op applied to it takes every element as an operand.
// The expression language is docs/training.md's.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/sexpr.hpp"

namespace saturn::rules {

struct GradDef {
  std::string op;
  std::string doc;
  SourceLoc loc;
  std::vector<std::string> operands;  // pattern variables, in operand order
  bool variadic_operands = false;     // the last one is `?xs...`
  std::vector<std::string> results;
  bool variadic_results = false;
  std::vector<std::string> incoming;  // one per result (or one list)
  std::vector<std::pair<std::string, SExpr>> lets;
  std::vector<std::pair<std::string, SExpr>> grads;  // operand variable, its gradient
};

struct NoGrad {
  std::string op;
  std::string reason;
  SourceLoc loc;
};

struct GradRules {
  std::map<std::string, GradDef> defs;
  std::map<std::string, NoGrad> nograd;    // no gradient: a path through one is an error
  std::map<std::string, NoGrad> zerograd;  // zero almost everywhere (floor, round): passes none
  std::vector<std::string> files;
  // The definition for `op`, else for the op whose semantics it has (a
  // library call takes its composite's gradient); null when neither.
  const GradDef* find(const std::string& op) const;
  const NoGrad* find_nograd(const std::string& op) const;
  const NoGrad* find_zerograd(const std::string& op) const;
};

// Names the built-ins a gradient expression may call (besides the ops of
// the registry); the reader rejects any other call.
bool is_grad_builtin(std::string_view name);

Expected<GradRules> parse_grad_rules(std::string_view text, const std::string& path, GradRules into = {});
// Every .rules file of a folder (sorted), or the files given.
Expected<GradRules> load_grad_rules(const std::vector<std::string>& files_or_dirs);
// rulesets/grad/ of the shipped rulesets.
std::string shipped_grad_dir(const std::string& rulesets_dir);

}  // namespace saturn::rules
