// The expression language of (defgrad ...) forms (docs/training.md): one
// form applied to one forward node, its expressions evaluated into nodes of
// the graph being built.
//
// Invariant: an expression evaluates to a value of the language (a tensor
// of the graph, a list of them, or a static number, list, string or bool);
// op applications become nodes through the GraphBuilder (type-checked by
// the op's own rule), built-ins read the forward node's attributes and the
// operands' types; anything that does not fit is a DiagnosticError at the
// innermost expression that failed. `let` bindings are evaluated when
// first read, once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.hpp"
#include "ir/sexpr.hpp"
#include "pipeline/graph_builder.hpp"
#include "rules/grad_rules.hpp"

namespace saturn::pipeline {

struct NoneValue {};
using GradValue = std::variant<NoneValue, bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                               std::vector<double>, TensorRef, std::vector<TensorRef>>;

// For messages: "the tensor 'x' f32[2 3]", "[1 0]", "none".
std::string show(const GradValue& v);

class GradInstance {
 public:
  GradInstance(const rules::GradDef& def, const ir::Node& node, GraphBuilder& b);
  ~GradInstance();
  void bind(const std::string& var, GradValue v);
  GradValue eval(const SExpr& e);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace saturn::pipeline
