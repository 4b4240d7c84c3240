// Reverse-mode differentiation of an ir::Graph, from the (defgrad ...) forms
// of rulesets/grad/ (rules/grad_rules.hpp).
//
// Invariant: the nodes appended compute, for every value of `wrt`, the
// gradient of the scalar `loss` with respect to it, and only the ops of the
// registry are used (the backward pass is an ordinary graph that `saturn
// opt` optimizes like any other). Contributions to a value used several
// times are summed; nodes that do not lead from `wrt` to `loss` are not
// differentiated. A path through an op without a gradient is an error
// naming the node; a (zerograd ...) op (floor, round, sign) passes none.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "pipeline/decompose_node.hpp"
#include "rules/grad_rules.hpp"

namespace saturn::pipeline {

struct Gradients {
  std::map<std::string, std::string> of;  // value -> the value holding d loss / d value
  std::size_t nodes_added = 0;
  std::vector<std::string> unreached;   // values of wrt the loss does not depend on (their gradient is zero)
  std::vector<std::string> decomposed;  // nodes replaced by their primitive form ("node 'n' (lrn)")
};

struct GradientOptions {
  std::string prefix = "grad/";            // of the nodes and values appended
  const Decomposer* decomposer = nullptr;  // null: a composite without a gradient is an error
};

// Appends the backward pass to `g` (static shapes only; `loss` holds one
// element).
Expected<Gradients> append_gradients(ir::Graph& g, const rules::GradRules& rules, const std::string& loss,
                                     const std::vector<std::string>& wrt, const GradientOptions& o = {});

}  // namespace saturn::pipeline
