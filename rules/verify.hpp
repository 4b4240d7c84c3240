// Proving rules with Z3: what `saturn verify` runs (docs/verify.md).
//
// A rule is checked on every instance rule_instances.hpp builds (or a
// sample, past its budget): the engine's own matcher and guard decide
// whether the rule fires on the instance, the right-hand side is built the
// way the engine builds it, and both sides are evaluated symbolically with
// the registry's op semantics (ir/symbolic.hpp). Elements that are the same
// expression are equal; the others go to Z3 over the reals, with exp, log,
// sqrt, erf, ... uninterpreted plus true facts about them instantiated on
// the terms at hand. A model Z3 finds is a counterexample only when it holds
// in double arithmetic too (a model can lean on an uninterpreted function).
//
// Verdicts: proved (for the instances checked, listed by count and bounds),
// refuted (with the instance, the input values and the element that
// differs), unknown (no instance fired, an op without symbolic semantics,
// a solver timeout), or unverified (the rule says why it cannot be proved,
// and it was not).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rules/rule_file.hpp"
#include "rules/rule_instances.hpp"

namespace saturn::rules {

struct VerifyOptions {
  InstanceOptions instances;
  bool fp32 = false;                  // also ask whether proved rules are exact in float32
  unsigned solver_timeout_ms = 2000;  // per Z3 query
  double rule_time_limit_s = 10;      // per rule; the instances checked by then count
};

enum class VerifyStatus { Proved, Refuted, Unknown, Unverified };
const char* status_name(VerifyStatus s);

// A value of a counterexample, read as its tensor's element type: a bool
// input is a real variable that is true when nonzero, an integer one an
// integer, so each prints as the user wrote such values.
struct CounterexampleValue {
  double value = 0;
  ir::DType dtype = ir::DType::F32;
  bool is_bool() const { return dtype == ir::DType::Bool; }
  bool is_integer() const { return !is_bool() && !ir::is_float(dtype); }
  // "true" / "false", an integer, or the number.
  std::string text() const;
};

struct Counterexample {
  std::vector<std::pair<std::string, std::string>> bindings;        // ?var -> what it was bound to
  std::vector<std::pair<std::string, CounterexampleValue>> inputs;  // input element -> value
  std::string lhs_term, rhs_term;                                   // the instance
  std::string element;                                              // which result element differs
  std::optional<CounterexampleValue> lhs_value, rhs_value;
  std::string what;  // one line: why this is a counterexample
};

struct RuleVerdict {
  std::string rule, file;
  int line = 0;
  VerifyStatus status = VerifyStatus::Unknown;
  std::string reason;              // for unknown and unverified; a note otherwise
  std::size_t shapes_checked = 0;  // instances on which the rule fired and was checked
  std::size_t instances = 0;       // instances built (the guard may turn some down)
  std::size_t found = 0;           // well-typed instances found before keeping at most max_instances
  bool exhaustive = true;
  std::string coverage;  // which shapes and attribute values, in words
  std::optional<bool> fp32_exact;
  std::string fp32_note;
  std::optional<Counterexample> counterexample;
  double time_ms = 0;
};

RuleVerdict verify_rule(const egraph::Rewrite& rule, const RuleInfo& info, const VerifyOptions& opt);

}  // namespace saturn::rules
