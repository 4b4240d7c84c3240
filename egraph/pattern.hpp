// Patterns: terms whose leaves may be variables.
//
// Stored flat in post-order like Term; the last node is the root. Variables
// are small integers indexing the owning rule's variable table, so several
// patterns of one rule (multi-patterns, the right-hand side) share bindings.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "egraph/op.hpp"

namespace saturn::egraph {

using VarId = std::uint32_t;
inline constexpr VarId kNoVar = std::numeric_limits<VarId>::max();

struct PatternNode {
  Op op;                                // unused for variables
  VarId var = kNoVar;                   // set for a variable leaf
  std::vector<std::uint32_t> children;  // indices of earlier nodes
  bool is_var() const { return var != kNoVar; }
};

struct Pattern {
  std::vector<PatternNode> nodes;

  std::uint32_t push_var(VarId v) {
    nodes.push_back(PatternNode{Op{}, v, {}});
    return static_cast<std::uint32_t>(nodes.size() - 1);
  }
  std::uint32_t push(Op op, std::vector<std::uint32_t> children = {}) {
    nodes.push_back(PatternNode{op, kNoVar, std::move(children)});
    return static_cast<std::uint32_t>(nodes.size() - 1);
  }
  std::uint32_t root() const { return static_cast<std::uint32_t>(nodes.size() - 1); }
  const PatternNode& root_node() const { return nodes.back(); }
  // Variables in order of first occurrence (left to right, depth first).
  std::vector<VarId> vars() const;
  // Whether the subpattern at `i` contains no variable.
  bool is_ground(std::uint32_t i) const;
  std::string to_string(const std::vector<std::string>& var_names) const;
};

}  // namespace saturn::egraph
