// Numbers of the rule language: an s-expression atom read as an egraph literal.
#pragma once

#include <optional>

#include "egraph/op.hpp"
#include "ir/sexpr.hpp"

namespace saturn::rules {

inline std::optional<egraph::Number> number_of(const SExpr& e) {
  auto n = e.number();
  if (!n) return std::nullopt;
  egraph::Number out;
  out.v = *n;
  return out;
}

}  // namespace saturn::rules
