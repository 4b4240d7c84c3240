#include "rules/expr.hpp"
#include "rules/sexpr_number.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "egraph/constant_folding.hpp"

namespace saturn::rules {

using egraph::Op;
using egraph::OpKind;

std::string Value::to_string() const {
  switch (kind) {
    case Kind::Bool:
      return boolean ? "true" : "false";
    case Kind::Number:
      return egraph::format_number(number);
    case Kind::List:
      return Op::list(list).name();
    case Kind::Symbol:
      return symbol.name();
    case Kind::Class:
      return std::string("e").append(std::to_string(cls.v));
  }
  return {};
}

std::optional<Value> EvalContext::resolve(const Value& v) const {
  if (v.kind != Value::Kind::Class) return v;
  if (auto lit = graph.literal(v.cls)) {
    if (lit->kind() == OpKind::List) return Value::of_list(lit->list_value());
    return Value::of_number(*lit->number());
  }
  if (auto* cf = graph.analysis<egraph::ConstantFolding>())
    if (auto n = cf->value(graph, v.cls)) return Value::of_number(*n);
  // A symbol leaf (e.g. a dtype name) stands for itself.
  for (egraph::NodeId n : graph.nodes(graph.find(v.cls)))
    if (graph.children(n).empty() && graph.op(n).kind() == OpKind::Symbol) return Value::of_symbol(graph.op(n));
  return std::nullopt;
}

std::optional<Number> EvalContext::as_number(const Value& v) const {
  auto r = resolve(v);
  if (!r || r->kind != Value::Kind::Number) return std::nullopt;
  return r->number;
}

std::optional<std::vector<Number>> EvalContext::as_list(const Value& v) const {
  auto r = resolve(v);
  if (!r || r->kind != Value::Kind::List) return std::nullopt;
  return r->list;
}

namespace {

using Args = std::span<const Value>;
using Result = std::optional<Value>;

std::optional<Number> arith(char op, const Number& a, const Number& b) {
  if (a.is_int() && b.is_int()) {
    std::int64_t x = a.as_int(), y = b.as_int(), r = 0;
    switch (op) {
      case '+':
        if (__builtin_add_overflow(x, y, &r)) return std::nullopt;
        return Number(r);
      case '-':
        if (__builtin_sub_overflow(x, y, &r)) return std::nullopt;
        return Number(r);
      case '*':
        if (__builtin_mul_overflow(x, y, &r)) return std::nullopt;
        return Number(r);
      case '/':
        if (y == 0 || (x == std::numeric_limits<std::int64_t>::min() && y == -1)) return std::nullopt;
        if (x % y == 0) return Number(x / y);
        return Number(static_cast<double>(x) / static_cast<double>(y));
      case '%':
        if (y == 0 || (x == std::numeric_limits<std::int64_t>::min() && y == -1)) return std::nullopt;
        return Number(((x % y) + y) % y);  // floor modulo: sign of the divisor
    }
    return std::nullopt;
  }
  double x = a.as_real(), y = b.as_real(), r = 0;
  switch (op) {
    case '+':
      r = x + y;
      break;
    case '-':
      r = x - y;
      break;
    case '*':
      r = x * y;
      break;
    case '/':
      if (y == 0) return std::nullopt;
      r = x / y;
      break;
    case '%':
      if (y == 0) return std::nullopt;
      r = x - y * std::floor(x / y);
      break;
    default:
      return std::nullopt;
  }
  if (!std::isfinite(r)) return std::nullopt;
  return Number(r);
}

int compare(const Number& a, const Number& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  double x = a.as_real(), y = b.as_real();
  return x < y ? -1 : (x > y ? 1 : 0);
}

// Structural equality after resolving classes; nullopt when not comparable.
std::optional<bool> equal(EvalContext& ctx, const Value& a, const Value& b) {
  if (a.kind == Value::Kind::Class && b.kind == Value::Kind::Class)
    return ctx.graph.find(a.cls) == ctx.graph.find(b.cls);
  auto x = ctx.resolve(a), y = ctx.resolve(b);
  if (!x || !y) return std::nullopt;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case Value::Kind::Bool:
      return x->boolean == y->boolean;
    case Value::Kind::Number:
      return x->number == y->number;
    case Value::Kind::List:
      return x->list == y->list;
    case Value::Kind::Symbol:
      return x->symbol == y->symbol;
    case Value::Kind::Class:
      return false;
  }
  return std::nullopt;
}

Builtin fold(const std::string& name, char op, Number identity, std::string doc) {
  return Builtin{name, 1, -1, std::move(doc), [op, identity](EvalContext& ctx, Args args) -> Result {
                   std::optional<Number> acc;
                   if (args.size() == 1 && (op == '-' || op == '/')) acc = identity;
                   for (const Value& a : args) {
                     auto n = ctx.as_number(a);
                     if (!n) return std::nullopt;
                     acc = acc ? arith(op, *acc, *n) : n;
                     if (!acc) return std::nullopt;
                   }
                   return Value::of_number(*acc);
                 }};
}

Builtin comparison(const std::string& name, std::function<bool(int)> holds) {
  return Builtin{name, 2, 2, "compare two numbers", [holds](EvalContext& ctx, Args args) -> Result {
                   auto a = ctx.as_number(args[0]), b = ctx.as_number(args[1]);
                   if (!a || !b) return std::nullopt;
                   return Value::of_bool(holds(compare(*a, *b)));
                 }};
}

void register_generic(BuiltinRegistry& r) {
  r.add(fold("+", '+', Number(std::int64_t{0}), "sum of numbers"));
  r.add(fold("-", '-', Number(std::int64_t{0}), "difference; (- x) negates"));
  r.add(fold("*", '*', Number(std::int64_t{1}), "product of numbers"));
  r.add(fold("/", '/', Number(std::int64_t{1}), "quotient (exact integers stay integers)"));
  r.add(Builtin{"mod", 2, 2, "floor modulo", [](EvalContext& ctx, Args a) -> Result {
                  auto x = ctx.as_number(a[0]), y = ctx.as_number(a[1]);
                  if (!x || !y) return std::nullopt;
                  auto m = arith('%', *x, *y);
                  if (!m) return std::nullopt;
                  return Value::of_number(*m);
                }});
  for (auto [name, pick_max] : {std::pair{"min", false}, std::pair{"max", true}})
    r.add(Builtin{name, 1, -1, "smallest/largest number (of the numbers given, or of a list's elements)",
                  [pick_max](EvalContext& ctx, Args a) -> Result {
                    std::optional<Number> best;
                    auto take = [&](const Number& n) {
                      if (!best || (pick_max ? compare(n, *best) > 0 : compare(n, *best) < 0)) best = n;
                    };
                    for (const Value& v : a) {
                      if (auto n = ctx.as_number(v)) {
                        take(*n);
                      } else if (auto l = ctx.as_list(v)) {
                        for (const Number& x : *l) take(x);
                      } else {
                        return std::nullopt;
                      }
                    }
                    if (!best) return std::nullopt;  // only empty lists
                    return Value::of_number(*best);
                  }});
  r.add(Builtin{"abs", 1, 1, "absolute value", [](EvalContext& ctx, Args a) -> Result {
                  auto n = ctx.as_number(a[0]);
                  if (!n) return std::nullopt;
                  if (n->is_int()) {
                    if (n->as_int() == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
                    return Value::of_number(Number(n->as_int() < 0 ? -n->as_int() : n->as_int()));
                  }
                  return Value::of_number(Number(std::fabs(n->as_real())));
                }});
  r.add(comparison("<", [](int c) { return c < 0; }));
  r.add(comparison("<=", [](int c) { return c <= 0; }));
  r.add(comparison(">", [](int c) { return c > 0; }));
  r.add(comparison(">=", [](int c) { return c >= 0; }));
  r.add(Builtin{"=", 2, 2, "equality: same class, or equal literal values", [](EvalContext& ctx, Args a) -> Result {
                  auto e = equal(ctx, a[0], a[1]);
                  if (!e) return std::nullopt;
                  return Value::of_bool(*e);
                }});
  r.add(Builtin{"!=", 2, 2, "negation of =", [](EvalContext& ctx, Args a) -> Result {
                  auto e = equal(ctx, a[0], a[1]);
                  if (!e) return std::nullopt;
                  return Value::of_bool(!*e);
                }});
  r.add(Builtin{"const?", 1, 1, "the argument has a known number value",
                [](EvalContext& ctx, Args a) -> Result { return Value::of_bool(ctx.as_number(a[0]).has_value()); }});
  r.add(Builtin{"symbol?", 1, 1, "the argument is (or its class holds) a plain symbol such as x",
                [](EvalContext& ctx, Args a) -> Result {
                  auto v = ctx.resolve(a[0]);
                  return Value::of_bool(v && v->kind == Value::Kind::Symbol);
                }});
  r.add(Builtin{"value", 1, 1, "the literal value of a class",
                [](EvalContext& ctx, Args a) -> Result { return ctx.resolve(a[0]); }});
  r.add(Builtin{"list", 0, -1, "a list of numbers", [](EvalContext& ctx, Args a) -> Result {
                  std::vector<Number> out;
                  for (const Value& v : a) {
                    auto n = ctx.as_number(v);
                    if (!n) return std::nullopt;
                    out.push_back(*n);
                  }
                  return Value::of_list(std::move(out));
                }});
  r.add(Builtin{"len", 1, 1, "length of a list", [](EvalContext& ctx, Args a) -> Result {
                  auto l = ctx.as_list(a[0]);
                  if (!l) return std::nullopt;
                  return Value::of_number(Number(static_cast<std::int64_t>(l->size())));
                }});
  r.add(
      Builtin{"nth", 2, 2, "element i (from 0; negative counts from the end)", [](EvalContext& ctx, Args a) -> Result {
                auto l = ctx.as_list(a[0]);
                auto i = ctx.as_number(a[1]);
                if (!l || !i || !i->is_int()) return std::nullopt;
                std::int64_t k = i->as_int(), n = static_cast<std::int64_t>(l->size());
                if (k < 0) k += n;
                if (k < 0 || k >= n) return std::nullopt;
                return Value::of_number((*l)[static_cast<std::size_t>(k)]);
              }});
  r.add(Builtin{"concat", 0, -1, "lists joined", [](EvalContext& ctx, Args a) -> Result {
                  std::vector<Number> out;
                  for (const Value& v : a) {
                    auto l = ctx.as_list(v);
                    if (!l || static_cast<std::int64_t>(out.size() + l->size()) > kMaxListLength) return std::nullopt;
                    out.insert(out.end(), l->begin(), l->end());
                  }
                  return Value::of_list(std::move(out));
                }});
  r.add(Builtin{"reverse", 1, 1, "list reversed", [](EvalContext& ctx, Args a) -> Result {
                  auto l = ctx.as_list(a[0]);
                  if (!l) return std::nullopt;
                  std::reverse(l->begin(), l->end());
                  return Value::of_list(std::move(*l));
                }});
  r.add(Builtin{"range", 1, 1, "[0 1 ... n-1]", [](EvalContext& ctx, Args a) -> Result {
                  auto n = ctx.as_number(a[0]);
                  if (!n || !n->is_int() || n->as_int() < 0 || n->as_int() > kMaxListLength) return std::nullopt;
                  std::vector<Number> out;
                  for (std::int64_t i = 0; i < n->as_int(); ++i) out.emplace_back(i);
                  return Value::of_list(std::move(out));
                }});
  r.add(Builtin{"zeros", 1, 1, "[0 0 ... 0] of length n", [](EvalContext& ctx, Args a) -> Result {
                  auto n = ctx.as_number(a[0]);
                  if (!n || !n->is_int() || n->as_int() < 0 || n->as_int() > kMaxListLength) return std::nullopt;
                  return Value::of_list(
                      std::vector<Number>(static_cast<std::size_t>(n->as_int()), Number(std::int64_t{0})));
                }});
  for (auto [name, is_sum] : {std::pair{"sum", true}, std::pair{"prod", false}})
    r.add(Builtin{name, 1, 1, "sum/product of a list's elements", [is_sum](EvalContext& ctx, Args a) -> Result {
                    auto l = ctx.as_list(a[0]);
                    if (!l) return std::nullopt;
                    std::optional<Number> acc = Number(std::int64_t{is_sum ? 0 : 1});
                    for (const Number& x : *l) {
                      acc = arith(is_sum ? '+' : '*', *acc, x);
                      if (!acc) return std::nullopt;
                    }
                    return Value::of_number(*acc);
                  }});
}

}  // namespace

BuiltinRegistry& BuiltinRegistry::global() {
  static BuiltinRegistry* r = [] {
    auto* reg = new BuiltinRegistry();  // NOLINT: process-lifetime singleton, never destroyed
    register_generic(*reg);
    return reg;
  }();
  return *r;
}

void BuiltinRegistry::add(Builtin b) {
  std::string name = b.name;
  table_[name] = std::make_unique<Builtin>(std::move(b));
}

const Builtin* BuiltinRegistry::find(const std::string& name) const {
  auto it = table_.find(name);
  return it == table_.end() ? nullptr : it->second.get();
}

Expr Expr::compile(const SExpr& e, const std::function<std::optional<egraph::VarId>(const std::string&)>& var_id,
                   const BuiltinRegistry& registry) {
  Expr x;
  switch (e.kind) {
    case SExpr::Kind::String:
      fail_at(e.loc, "expected an expression, found a string");
    case SExpr::Kind::Bracket: {
      std::vector<Number> items;
      for (const SExpr& item : e.items) {
        auto n = number_of(item);
        if (!n) fail_at(item.loc, "expected a number in a literal list, found '" + item.to_string() + "'");
        items.push_back(*n);
      }
      x.literal_ = Value::of_list(std::move(items));
      return x;
    }
    case SExpr::Kind::Atom: {
      if (e.is_var()) {
        auto v = var_id(e.text);
        if (!v)
          fail_at(e.loc,
                  "variable " + e.text + " is not bound here (bind it in the left-hand side or an earlier :let)");
        x.kind_ = Kind::Var;
        x.var_ = *v;
        return x;
      }
      if (auto n = number_of(e)) {
        x.literal_ = Value::of_number(*n);
        return x;
      }
      if (e.text == "true" || e.text == "false") {
        x.literal_ = Value::of_bool(e.text == "true");
        return x;
      }
      x.literal_ = Value::of_symbol(egraph::Op::symbol(e.text));
      return x;
    }
    case SExpr::Kind::List:
      break;
  }
  if (e.items.empty()) fail_at(e.loc, "expected a function call, found '()'");
  const SExpr& head = e.items[0];
  if (!head.is_atom() || head.is_var() || number_of(head))
    fail_at(head.loc, "expected a function name, found '" + head.to_string() + "'");
  const std::string& f = head.text;
  const std::size_t nargs = e.items.size() - 1;
  auto args = [&] {
    for (std::size_t i = 1; i < e.items.size(); ++i) x.args_.push_back(compile(e.items[i], var_id, registry));
  };
  if (f == "and" || f == "or") {
    x.kind_ = f == "and" ? Kind::And : Kind::Or;
    args();
    return x;
  }
  if (f == "not") {
    if (nargs != 1) fail_at(head.loc, "'not' takes 1 argument, given " + std::to_string(nargs));
    x.kind_ = Kind::Not;
    args();
    return x;
  }
  if (f == "if") {
    if (nargs != 3) fail_at(head.loc, "'if' takes 3 arguments (condition, then, else), given " + std::to_string(nargs));
    x.kind_ = Kind::If;
    args();
    return x;
  }
  const Builtin* b = registry.find(f);
  if (!b) fail_at(head.loc, "unknown function '" + f + "' in a guard or binding");
  if (static_cast<int>(nargs) < b->min_args || (b->max_args >= 0 && static_cast<int>(nargs) > b->max_args)) {
    std::string want = b->max_args < 0 ? "at least " + std::to_string(b->min_args)
                       : b->min_args == b->max_args
                           ? std::to_string(b->min_args)
                           : std::to_string(b->min_args) + " to " + std::to_string(b->max_args);
    fail_at(head.loc, "'" + f + "' takes " + want + " argument(s), given " + std::to_string(nargs));
  }
  x.kind_ = Kind::Call;
  x.fn_ = b;
  args();
  return x;
}

std::optional<Value> Expr::eval(EvalContext& ctx) const {
  switch (kind_) {
    case Kind::Literal:
      return literal_;
    case Kind::Var:
      return Value::of_class(ctx.bindings[var_]);
    case Kind::And:
    case Kind::Or: {
      const bool is_and = kind_ == Kind::And;
      for (const Expr& a : args_) {
        auto v = a.eval(ctx);
        if (!v || v->kind != Value::Kind::Bool) return std::nullopt;
        if (v->boolean != is_and) return Value::of_bool(!is_and);
      }
      return Value::of_bool(is_and);
    }
    case Kind::Not: {
      auto v = args_[0].eval(ctx);
      if (!v || v->kind != Value::Kind::Bool) return std::nullopt;
      return Value::of_bool(!v->boolean);
    }
    case Kind::If: {
      auto c = args_[0].eval(ctx);
      if (!c || c->kind != Value::Kind::Bool) return std::nullopt;
      return args_[c->boolean ? 1 : 2].eval(ctx);
    }
    case Kind::Call: {
      std::vector<Value> vals;
      vals.reserve(args_.size());
      for (const Expr& a : args_) {
        auto v = a.eval(ctx);
        if (!v) return std::nullopt;
        vals.push_back(std::move(*v));
      }
      return fn_->fn(ctx, vals);
    }
  }
  return std::nullopt;
}

void Expr::vars(std::vector<egraph::VarId>& out) const {
  if (kind_ == Kind::Var) out.push_back(var_);
  for (const Expr& a : args_) a.vars(out);
}

}  // namespace saturn::rules
