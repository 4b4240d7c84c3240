// Built-ins that compute the attribute lists and constants of the
// decompositions in rulesets/decompose.rules whose shapes depend on the
// operands: sliding windows (window-plan), convolution (conv-plan) and
// pooling (pool-plan). Each takes the part it computes as its first
// argument, a symbol, so one rule's bindings read as a plan:
//   :let (?spread (window-plan spread ?x ?k ?s ?d))
// The geometry is ir/window.hpp's, the same the ops' shape rules use.
#pragma once

#include "rules/expr.hpp"

namespace saturn::rules {

void register_decompose_builtins(BuiltinRegistry& r);

}  // namespace saturn::rules
