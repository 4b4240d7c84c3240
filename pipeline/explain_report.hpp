// `saturn opt --explain VALUE`: why a value of the model as written is
// computed as the optimized program computes it. The chain of equalities
// (egraph/explain.hpp) from the e-node the import made for the value to the
// e-node the extractor chose for its class: each rule application with the
// rule, its direction and its two sides instantiated (a variable shown as
// the model's value its class holds, a literal, or %ID), each congruence
// with the chains of the operands that differ. Every chain is replayed
// against the saturated e-graph before it is reported ("replayed").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "rules/tensor_egraph.hpp"

namespace saturn::pipeline {

// The explanation as JSON: value, written (op), optimized (op), replayed,
// steps (kind rule: rule, at, direction, from, to; congruence: op, operands
// [{operand, from, to, steps}]; given; analysis), truncated.
nlohmann::json explain_value(const rules::TensorEGraph& t, const std::string& value, egraph::NodeId written,
                             egraph::NodeId chosen, const nlohmann::json& rules_report);

// The same as indented lines, as `saturn opt --explain` prints it.
std::string explanation_text(const nlohmann::json& e);

}  // namespace saturn::pipeline
