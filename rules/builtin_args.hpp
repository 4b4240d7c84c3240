// Reading built-in arguments: the tensor an e-class holds (from the
// TensorAnalysis), integer lists, and lists as results. Shared by the tensor
// built-ins and the decomposition built-ins.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rules/expr.hpp"
#include "rules/tensor_egraph.hpp"

namespace saturn::rules {

// The tensor a Class value holds; null for attributes, omitted operands and
// e-graphs without a TensorAnalysis.
inline const TensorInfo* tensor_of(EvalContext& ctx, const Value& v) {
  if (v.kind != Value::Kind::Class) return nullptr;
  auto* an = ctx.graph.analysis<TensorAnalysis>();
  if (!an) return nullptr;
  const TensorInfo& info = an->data(ctx.graph.find(v.cls));
  return info.kind == TensorInfo::Kind::Tensor ? &info : nullptr;
}

inline std::optional<std::vector<std::int64_t>> ints_of(EvalContext& ctx, const Value& v) {
  auto l = ctx.as_list(v);
  if (!l) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const Number& n : *l) {
    if (!n.is_int()) return std::nullopt;
    out.push_back(n.as_int());
  }
  return out;
}

inline Value list_of(const std::vector<std::int64_t>& v) {
  std::vector<Number> out(v.begin(), v.end());
  return Value::of_list(std::move(out));
}

}  // namespace saturn::rules
