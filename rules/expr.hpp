// The expression language of :if guards and :let bindings.
//
// An expression is a literal (number, [list], symbol, true/false), a bound
// ?variable, or a call (f args...) of a built-in. Built-ins live in one
// registry, so the tensor IR registers shape/dtype/rank and friends through
// the same door the generic ones use; a call's name and argument count are
// checked when the rule is loaded. A variable evaluates to its e-class; a
// built-in that needs a number or list reads the class's literal (or the
// constant-folding analysis's value). An expression that cannot be evaluated
// for a match (a class with no constant, a type mismatch, division by zero)
// makes its guard false and its binding fail: the rule does not fire there.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/pattern.hpp"
#include "ir/sexpr.hpp"

namespace saturn::rules {

using egraph::EClassId;
using egraph::Number;

struct Value {
  enum class Kind { Bool, Number, List, Symbol, Class };
  Kind kind = Kind::Bool;
  bool boolean = false;
  Number number;
  std::vector<Number> list;
  egraph::Op symbol;
  EClassId cls;

  static Value of_bool(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.boolean = b;
    return v;
  }
  static Value of_number(Number n) {
    Value v;
    v.kind = Kind::Number;
    v.number = n;
    return v;
  }
  static Value of_list(std::vector<Number> l) {
    Value v;
    v.kind = Kind::List;
    v.list = std::move(l);
    return v;
  }
  static Value of_symbol(egraph::Op s) {
    Value v;
    v.kind = Kind::Symbol;
    v.symbol = s;
    return v;
  }
  static Value of_class(EClassId c) {
    Value v;
    v.kind = Kind::Class;
    v.cls = c;
    return v;
  }
  std::string to_string() const;
};

// What a built-in sees: the e-graph and the match's bindings.
struct EvalContext {
  egraph::EGraph& graph;
  std::span<const EClassId> bindings;

  // A Class value resolved to the literal it holds (number, list or symbol
  // literal) or to its constant-folded value; other values unchanged.
  std::optional<Value> resolve(const Value& v) const;
  std::optional<Number> as_number(const Value& v) const;
  std::optional<std::vector<Number>> as_list(const Value& v) const;
};

// The longest list a built-in makes (range, concat, perm-of, ...): a rule
// whose binding would be longer does not fire, so a binding that feeds
// itself through saturation (:let (?l (concat ?l ?l))) stops growing there
// instead of exhausting memory.
constexpr std::int64_t kMaxListLength = 1 << 20;

struct Builtin {
  std::string name;
  int min_args = 0;
  int max_args = -1;  // -1: any number
  std::string doc;
  std::function<std::optional<Value>(EvalContext&, std::span<const Value>)> fn;
};

class BuiltinRegistry {
 public:
  // The registry every rule file uses; holds the generic built-ins.
  static BuiltinRegistry& global();
  // Adds or replaces a built-in.
  void add(Builtin b);
  const Builtin* find(const std::string& name) const;

 private:
  std::unordered_map<std::string, std::unique_ptr<Builtin>> table_;
};

class Expr {
 public:
  enum class Kind { Literal, Var, Call, And, Or, Not, If };

  // Compiles `e`; `var_id` maps a ?name to its variable (nullopt: unbound).
  // Throws DiagnosticError naming the place of the first problem.
  static Expr compile(const SExpr& e, const std::function<std::optional<egraph::VarId>(const std::string&)>& var_id,
                      const BuiltinRegistry& registry);

  std::optional<Value> eval(EvalContext& ctx) const;
  // Variables the expression reads.
  void vars(std::vector<egraph::VarId>& out) const;

 private:
  Kind kind_ = Kind::Literal;
  Value literal_;
  egraph::VarId var_ = egraph::kNoVar;
  const Builtin* fn_ = nullptr;
  std::vector<Expr> args_;
};

}  // namespace saturn::rules
