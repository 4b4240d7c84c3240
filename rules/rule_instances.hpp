// Concrete instances of a rule's left-hand side, for `saturn verify`.
//
// A rule is checked on terms: its LHS with every tensor variable bound to a
// graph input (or, where a guard looks at values, a constant) of a concrete
// shape, and every attribute variable bound to a literal drawn from that
// attribute's domain. Shapes range over ranks 0..max_rank and dims
// 1..max_dim; attribute domains depend on the operands already chosen (a
// perm for the operand's rank, axes within it, ...). The instances are built
// in one tensor e-graph, bottom-up, and a branch whose node does not
// type-check (the registry's own shape rules) is cut at once.
//
// Invariant: nothing is ever merged in that e-graph, so every class holds
// one node and reads back as exactly one term.
//
// Enumeration is exhaustive while it stays within a step budget; past it,
// instances are drawn at random (seeded, so runs repeat). Either way at most
// max_instances are kept, evenly spread over what was found.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "egraph/rewrite.hpp"
#include "rules/tensor_egraph.hpp"

namespace saturn::rules {

struct InstanceOptions {
  int min_dim = 1;  // 0: empty tensors too (verify's second pass)
  int max_dim = 3;
  int max_rank = 4;
  std::size_t max_instances = 256;
  std::size_t step_budget = 200000;  // exhaustive enumeration steps before sampling
  std::uint64_t seed = 1;
  double time_limit_s = 5;  // enumeration and sampling stop here with what they found
  // Sampling also draws the shapes that broadcast to the operands bound
  // before (a scalar, one value per element of an axis: scales and zero
  // points) and mostly constants for the variables a guard wants constant.
  bool broad = false;
  // Sampling keeps only the instances the rule fires on (its guards hold),
  // and mends a path that fails (rule_instances.cpp, Enumerator::repair).
  bool where_rule_fires = false;
};

struct RuleInstances {
  egraph::EGraph graph;
  TensorAnalysis* analysis = nullptr;
  // Each instance: the class of every LHS root, then the class bound to
  // every LHS variable (the rewrite's variable order).
  std::vector<std::vector<EClassId>> instances;
  std::size_t found = 0;     // well-typed instances found (all of them when exhaustive)
  bool exhaustive = true;    // false: the budget ran out and instances were sampled
  bool over_budget = false;  // known before enumerating: sampled from the start
  bool timed_out = false;    // the time limit cut enumeration short
  std::string unsupported;   // non-empty: why no instance can be built
  std::vector<std::string> tensor_vars, attr_vars;
};

// `source` is the rule as written: guards that look at values (is-zero,
// is-one, is-const, splat, weight?) make their variables range over
// constants too.
RuleInstances enumerate_instances(const egraph::Rewrite& rule, const std::string& source, const InstanceOptions& opt);

// A class of an instance as the user reads it: "f32[2 3]" for an input,
// "const f32[3] = [0 0 0]", a literal as written.
std::string describe_class(const RuleInstances& inst, EClassId c);
// The term of a class of an instance (inputs by shape).
std::string term_of(const RuleInstances& inst, EClassId c);

}  // namespace saturn::rules
