// Constant folding as an e-class analysis: the first user of the plug-in.
//
// A class's fact is the number it is known to equal, if any. make() reads a
// numeric literal, or evaluates an operator over constant children with the
// Folder it was given; merge() keeps the known value. When two classes with
// different values are merged, a rule has equated unequal constants: the
// conflict is recorded (never silently dropped) and the first value is kept.
// Integer arithmetic is exact (overflow does not fold); reals fold in double,
// and values within a relative 1e-9 are not reported as conflicts, since
// reassociating float arithmetic legitimately rounds differently.
// modify() adds the literal to a class that has a value, so patterns that
// mention literals (x * 1, x + 0) see folded results.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "egraph/analysis.hpp"
#include "egraph/op.hpp"

namespace saturn::egraph {

// Evaluates `op` on constant arguments; nullopt when it cannot (unknown op,
// division by zero, overflow).
using Folder = std::function<std::optional<Number>(Op op, std::span<const Number> args)>;

// Folds + - * / (binary, and unary -), neg, pow, min, max, abs.
std::optional<Number> fold_arithmetic(Op op, std::span<const Number> args);

class ConstantFolding final : public TypedAnalysis<std::optional<Number>, ConstantFolding> {
 public:
  explicit ConstantFolding(Folder folder = fold_arithmetic) : folder_(std::move(folder)) {}

  std::optional<Number> make_data(const EGraph& g, NodeId node) const;
  DidMerge merge_data(std::optional<Number>& into, const std::optional<Number>& from);
  void modify(EGraph& g, EClassId id) override;

  // The value of a class (any id; canonicalized here).
  std::optional<Number> value(const EGraph& g, EClassId id) const;
  // Merges of unequal constants seen so far, as readable messages.
  const std::vector<std::string>& conflicts() const { return conflicts_; }

 private:
  Folder folder_;
  std::vector<std::string> conflicts_;
};

}  // namespace saturn::egraph
