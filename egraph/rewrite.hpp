// Rewrites: one or more left-hand patterns, as many right-hand patterns, and
// an optional hook that guards a match and computes extra bindings.
//
// Variables [0, num_lhs_vars) are bound by matching the left-hand sides;
// variables [num_lhs_vars, var_names.size()) are filled by `prepare` (the
// rule language's :let). A match merges the class of LHS i with the
// instantiation of RHS i, for every i.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/ematch.hpp"
#include "egraph/pattern.hpp"

namespace saturn::egraph {

// Flat list of matches: each is the LHS root classes followed by the bindings
// of the LHS variables.
struct Matches {
  std::size_t roots_per_match = 1;
  std::size_t stride = 1;
  std::vector<EClassId> data;

  std::size_t size() const { return stride ? data.size() / stride : 0; }
  std::span<const EClassId> roots(std::size_t i) const { return {data.data() + i * stride, roots_per_match}; }
  std::span<const EClassId> bindings(std::size_t i) const {
    return {data.data() + i * stride + roots_per_match, stride - roots_per_match};
  }
};

struct ApplyStats {
  std::size_t applied = 0;   // matches whose guard held and were instantiated
  std::size_t changed = 0;   // of those, the ones whose merge changed the e-graph
  std::size_t rejected = 0;  // matches the guard turned down
  bool over_budget = false;  // stopped early: the e-graph outgrew the node budget
};

class Rewrite {
 public:
  using Prepare = std::function<bool(EGraph&, std::span<EClassId> bindings)>;

  // Returns an empty string on success, else what is wrong (an RHS variable
  // that nothing binds, a count mismatch between the two sides).
  static std::string make(Rewrite& out, std::string name, std::vector<Pattern> lhs, std::vector<Pattern> rhs,
                          std::vector<std::string> var_names, VarId num_lhs_vars, Prepare prepare = {});

  const std::string& name() const { return name_; }
  std::span<const Pattern> lhs() const { return lhs_; }
  std::span<const Pattern> rhs() const { return rhs_; }
  const std::vector<std::string>& var_names() const { return var_names_; }
  VarId num_lhs_vars() const { return num_lhs_vars_; }
  std::string to_string() const;

  // Appends matches to `out` (on a rebuilt e-graph); stops once more than
  // `limit` are found, so a caller can tell "over the limit" from "at it".
  // With `since` > 0 (semi-naive search), only matches that traverse an
  // e-node stamped after epoch `since` are reported: the caller promises every
  // match of the e-graph as it was at `since` has been applied, so the others
  // would change nothing. Rules that are not incremental() ignore `since`.
  void search(const EGraph& g, Matches& out, std::size_t limit = static_cast<std::size_t>(-1),
              std::uint32_t since = 0) const;
  // Appends the matches whose LHS i is rooted at class roots[i] (one root per
  // LHS): how `saturn verify` asks whether a rule fires on a given term.
  void search_at(const EGraph& g, std::span<const EClassId> roots, Matches& out) const;
  // Runs the guard and :let hook on a match's bindings, then adds each RHS
  // to the e-graph without merging it with its LHS; nullopt when the guard
  // turns the match down.
  std::optional<std::vector<EClassId>> instantiate(EGraph& g, std::span<const EClassId> lhs_bindings) const;
  // Whether skipping old matches is exact for this rule: not when a guard
  // could accept later a match it once rejected, nor when a pattern's root is
  // an unbound variable (new classes would match without a new node).
  bool incremental() const { return incremental_; }
  // Applies matches in order; stops early once the e-graph holds more than
  // `node_budget` e-nodes (so one rule cannot overshoot a node limit).
  ApplyStats apply(EGraph& g, const Matches& matches, std::size_t node_budget = static_cast<std::size_t>(-1)) const;

 private:
  std::string name_;
  std::vector<Pattern> lhs_, rhs_;
  std::vector<std::string> var_names_;
  VarId num_lhs_vars_ = 0;
  Prepare prepare_;
  std::vector<Matcher> matchers_;
  bool incremental_ = false;
  // Per RHS, the first node with only variable children: apply() prefetches
  // its hash-cons slot a few matches ahead of use.
  struct PrefetchPlan {
    std::uint32_t near = kNoVar;
  };
  std::vector<PrefetchPlan> prefetch_;
  void prefetch_near(const EGraph& g, std::span<const EClassId> bindings) const;
  void search_impl(const EGraph& g, Matches& out, std::size_t limit, std::uint32_t since,
                   std::span<const EClassId> at) const;
};

}  // namespace saturn::egraph
