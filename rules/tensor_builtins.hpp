// Tensor built-ins for :if guards and :let bindings (shape, rank, dtype, dim,
// numel, permutation algebra, broadcast tests, constant-value tests, new
// scalar constants), registered through the same door as the generic ones.
// Each reads the TensorAnalysis of the e-graph it runs on; with none (a
// plain `saturn eqsat` e-graph) it fails, so the rule does not fire.
#pragma once

#include "rules/expr.hpp"

namespace saturn::rules {

void register_tensor_builtins(BuiltinRegistry& r);

}  // namespace saturn::rules
