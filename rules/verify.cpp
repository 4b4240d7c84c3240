#include "rules/verify.hpp"

#include "rules/literal.hpp"

#include <z3++.h>
#include <memory>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace saturn::rules {

using ir::SymContext;
using ir::SymId;
using ir::SymOp;
using ir::SymTensor;

const char* status_name(VerifyStatus s) {
  switch (s) {
    case VerifyStatus::Proved:
      return "proved";
    case VerifyStatus::Refuted:
      return "refuted";
    case VerifyStatus::Unknown:
      return "unknown";
    case VerifyStatus::Unverified:
      return "unverified";
  }
  return "?";
}

std::string CounterexampleValue::text() const {
  if (is_bool()) return value != 0 ? "true" : "false";
  if (is_integer() && std::isfinite(value)) return std::to_string(std::llround(value));
  return egraph::format_number(egraph::Number(value));
}

namespace {

std::string index_text(std::size_t i, const std::vector<std::int64_t>& dims) {
  auto c = ir::unflatten(static_cast<std::int64_t>(i), dims);
  std::string s = "[";
  for (std::size_t k = 0; k < c.size(); ++k) {
    if (k) s += ',';
    s += std::to_string(c[k]);
  }
  return s + "]";
}

// Symbolic values of the classes of an instance e-graph (one node each).
class SymbolicEvaluator {
 public:
  SymbolicEvaluator(const RuleInstances& inst, SymContext& ctx) : inst_(inst), ctx_(ctx) {}

  // Throws ir::SymbolicUnsupported.
  const SymTensor& eval(EClassId c) {
    c = inst_.graph.find(c);
    if (auto it = memo_.find(c.v); it != memo_.end()) return it->second;
    SymTensor t = compute(c);
    // The conditions its own op added (its operands' were added before).
    const std::size_t before = required_count_;
    required_count_ = ctx_.requirements().size();
    for (std::size_t i = before; i < required_count_; ++i) requires_[c.v].push_back(ctx_.requirements()[i]);
    return memo_.emplace(c.v, std::move(t)).first->second;
  }

  // What the ops of the term at `root` require to be defined (evaluated).
  std::vector<SymId> requirements_below(EClassId root) const {
    std::vector<SymId> out;
    std::set<std::uint32_t> seen;
    std::vector<EClassId> todo{inst_.graph.find(root)};
    while (!todo.empty()) {
      const EClassId c = todo.back();
      todo.pop_back();
      if (!seen.insert(c.v).second) continue;
      if (auto it = requires_.find(c.v); it != requires_.end())
        out.insert(out.end(), it->second.begin(), it->second.end());
      for (EClassId ch : inst_.graph.children(inst_.graph.nodes(c)[0])) todo.push_back(inst_.graph.find(ch));
    }
    return out;
  }

 private:
  SymTensor compute(EClassId c) {
    const egraph::EGraph& g = inst_.graph;
    const egraph::NodeId n = g.nodes(c)[0];
    const TensorOps& lang = TensorOps::get();
    const TensorInfo& d = inst_.analysis->data(c);
    if (d.kind != TensorInfo::Kind::Tensor) throw ir::SymbolicUnsupported{"a class that is not a tensor"};
    if (g.op(n) == lang.input) {
      auto dims = ir::static_dims(d.type.shape);
      SymTensor t(ctx_, d.type.dtype, dims);
      std::string name = leaf_symbol(g, g.children(n)[0])->name();
      name = name.substr(0, name.find('['));
      input_types_[name] = d.type.dtype;
      for (std::size_t i = 0; i < t.numel(); ++i) {
        ir::Sym v = ctx_.var(name + index_text(i, dims), ir::is_integer(d.type.dtype));
        // A bool is 0 or 1: a real variable chooses which (nonzero is true).
        t.set(i, d.type.dtype == ir::DType::Bool ? ir::scalar::select(v, 1.0, 0.0) : v);
      }
      return t;
    }
    if (g.op(n) == lang.constant) {
      auto h = leaf_symbol(g, g.children(n)[0]);
      const ir::Tensor* v = h ? inst_.analysis->constants().find(*h) : nullptr;
      if (!v) throw ir::SymbolicUnsupported{"an unknown constant"};
      SymTensor t(ctx_, v->dtype(), v->dims());
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, v->at(i));
      return t;
    }
    std::string why;
    auto node = inst_.analysis->decode(g, n, &why);
    if (!node) throw ir::SymbolicUnsupported{why};
    const std::size_t n_ops = node->operands.size();
    if (n_ops == 0) {  // an op without operands (fill) computes a constant
      std::vector<ir::Tensor> vals;
      try {
        vals = node->def->eval(node->attrs, {}, {}, node->num_results);
      } catch (const ir::ShapeError& e) {
        throw ir::SymbolicUnsupported{node->def->name + ": " + e.message};
      }
      if (node->result >= vals.size()) throw ir::SymbolicUnsupported{node->def->name + ": missing result"};
      const ir::Tensor& v = vals[node->result];
      SymTensor t(ctx_, v.dtype(), v.dims());
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, v.at(i));
      return t;
    }
    std::vector<SymTensor> args;
    auto given = std::make_unique<bool[]>(n_ops + 1);  // std::vector<bool> has no span
    for (std::size_t i = 0; i < n_ops; ++i) {
      given[i] = node->operands[i].has_value();
      args.push_back(given[i] ? eval(*node->operands[i]) : SymTensor());
    }
    auto res =
        ir::apply_symbolic(*node->def, node->attrs, args, std::span<const bool>(given.get(), n_ops), node->num_results);
    if (node->result >= res.size()) throw ir::SymbolicUnsupported{node->def->name + ": missing result"};
    return std::move(res[node->result]);
  }

  const RuleInstances& inst_;
  SymContext& ctx_;
  std::unordered_map<std::uint32_t, SymTensor> memo_;
  std::map<std::string, ir::DType> input_types_;                    // by input name
  std::unordered_map<std::uint32_t, std::vector<SymId>> requires_;  // by class: its own op's requirements
  std::size_t required_count_ = 0;                                  // of ctx_.requirements() assigned to classes

 public:
  // The element type of the input whose element variable is `var` ("x[0,1]").
  ir::DType input_type(const std::string& var) const {
    auto it = input_types_.find(var.substr(0, var.find('[')));
    return it == input_types_.end() ? ir::DType::F32 : it->second;
  }
};

// 2^k as a decimal string (k >= 0).
std::string pow2(int k) {
  std::string d = "1";
  for (int i = 0; i < k; ++i) {
    int carry = 0;
    for (auto it = d.rbegin(); it != d.rend(); ++it) {
      int v = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + v % 10);
      carry = v / 10;
    }
    if (carry) d.insert(d.begin(), static_cast<char>('0' + carry));
  }
  return d;
}

// The exact value of a finite double: mant * 2^e with integer mant.
z3::expr exact_real(z3::context& z, double v) {
  if (v == 0) return z.real_val(0);
  int e = 0;
  const double m = std::frexp(v, &e);                        // v = m 2^e, 0.5 <= |m| < 1
  auto mant = static_cast<std::int64_t>(std::ldexp(m, 53));  // exact
  e -= 53;
  for (; mant % 2 == 0 && e < 0; mant /= 2) ++e;
  const std::string num = std::to_string(mant);
  if (e >= 0) return z.real_val(num.c_str()) * z.real_val(pow2(e).c_str());
  return z.real_val((num + "/" + pow2(-e)).c_str());
}

// A division whose divisor may be 0: the reals leave it undefined (Z3 lets
// it take any value), so a model that leans on one is not a counterexample.
bool is_division_by_term(const SymContext& s, SymId id) {
  double v = 0;
  return s.node(id).op == SymOp::Div && (!s.is_const(s.node(id).b, &v) || v == 0);
}

// Named constants whose reciprocals are named too.
constexpr std::pair<NamedConstant, NamedConstant> kNamedReciprocals[] = {
    {NamedConstant::Pi, NamedConstant::InvPi},         {NamedConstant::InvPi, NamedConstant::Pi},
    {NamedConstant::HalfPi, NamedConstant::TwoOverPi}, {NamedConstant::TwoOverPi, NamedConstant::HalfPi},
    {NamedConstant::Ln2, NamedConstant::Log2E},        {NamedConstant::Log2E, NamedConstant::Ln2},
    {NamedConstant::Ln10, NamedConstant::Log10E},      {NamedConstant::Log10E, NamedConstant::Ln10},
    {NamedConstant::Sqrt2, NamedConstant::InvSqrt2},   {NamedConstant::InvSqrt2, NamedConstant::Sqrt2},
};

// Sym DAG -> Z3 over the reals, or over float32 (RNE) with `fp`.
class Encoder {
 public:
  Encoder(z3::context& z, const SymContext& s, bool fp) : z_(z), s_(s), fp_(fp) {
    if (fp_) z_.set_rounding_mode(z3::RNE);
  }

  // Divisions by `d` become products with a fresh 1/d (with d * (1/d) = 1
  // among the facts): for divisors taken as nonzero, this leaves both sides
  // polynomials, which Z3 normalizes instead of searching.
  void invert(SymId d) { inverted_.insert(d); }

  z3::expr encode(SymId id) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    z3::expr e = build(id);
    memo_.emplace(id, e);
    return e;
  }

  // Facts about the DAG below `roots` that hold of the real (or float)
  // functions, and the variables met.
  void collect(const std::vector<SymId>& roots, z3::expr_vector& facts, std::set<std::size_t>& vars, bool& functions,
               bool& divisions) {
    for (SymId id : s_.reachable(roots)) {
      const ir::SymNode& n = s_.node(id);
      if (n.op == SymOp::Var) vars.insert(n.a);
      if (n.op == SymOp::Var || n.op == SymOp::Const) continue;
      if (ir::sym_op_is_function(n.op)) functions = true;
      if (is_division_by_term(s_, id)) divisions = true;
      if (!fp_) add_facts(id, facts);
    }
    for (const auto& f : inverse_facts_) facts.push_back(f);
    for (const auto& f : constant_facts_) facts.push_back(f);
    // The infinities bound every (finite) input.
    if (!fp_)
      for (std::size_t v : vars) {
        if (auto it = infinities_.find(false); it != infinities_.end()) facts.push_back(var(v) < it->second);
        if (auto it = infinities_.find(true); it != infinities_.end()) facts.push_back(it->second < var(v));
      }
    if (fp_)
      for (std::size_t v : vars) {
        z3::expr x = var(v);
        facts.push_back(!x.mk_is_nan() && !x.mk_is_inf());
      }
  }

  const std::string& var_name(std::size_t index) const { return s_.var_name(var_ids_.at(index)); }

  z3::expr var(std::size_t index) {
    auto it = vars_.find(index);
    if (it != vars_.end()) return it->second;
    const SymId id = var_ids_.at(index);
    const std::string& name = s_.var_name(id);
    // An integer tensor's element is an integer (integer division depends on it).
    z3::expr e = fp_                   ? z_.constant(name.c_str(), z_.fpa_sort<32>())
                 : s_.var_integral(id) ? z3::to_real(z_.int_const(name.c_str()))
                                       : z_.real_const(name.c_str());
    vars_.emplace(index, e);
    return e;
  }

 private:
  // A literal as rules/literal.hpp reads it; the infinities as two symbols
  // beyond every input (the reals have neither).
  z3::expr constant(double v) {
    if (fp_) return z_.fpa_val(static_cast<float>(v));
    if (std::isinf(v)) {
      auto [it, fresh] = infinities_.try_emplace(v < 0, z_.real_const(v < 0 ? "-inf" : "+inf"));
      (void)fresh;
      return it->second;
    }
    if (std::isnan(v)) return z_.real_const("nan");
    const LiteralReading r = read_literal(v);
    switch (r.kind) {
      case LiteralReading::Kind::Exact:
        break;
      case LiteralReading::Kind::Fraction:
        return z_.real_val((std::to_string(r.num) + "/" + std::to_string(r.den)).c_str());
      case LiteralReading::Kind::Named:
        return named(r.named);
    }
    return exact_real(z_, v);
  }

  // A symbol with the facts that pin it down: bounds, and the identity that
  // defines it (stated once, when the symbol is first met).
  z3::expr symbol(const char* name, const char* low, const char* high,
                  const std::function<z3::expr(const z3::expr&)>& defining) {
    auto it = symbols_.find(name);
    if (it != symbols_.end()) return it->second;
    z3::expr x = z_.real_const(name);
    symbols_.emplace(name, x);
    constant_facts_.push_back(z_.real_val(low) < x && x < z_.real_val(high));
    constant_facts_.push_back(defining(x));
    return x;
  }

  z3::expr named(NamedConstant c) {
    const z3::expr one = z_.real_val(1);
    auto exp = [&](const z3::expr& x) { return apply(SymOp::Exp, x); };
    auto pi = [&] {
      return symbol("pi", "3.14159265", "3.14159266", [&](const z3::expr&) { return z_.bool_val(true); });
    };
    auto inv_pi = [&] {
      return symbol("1/pi", "0.31830988", "0.31830989", [&](const z3::expr& x) { return x * pi() == one; });
    };
    auto ln2 = [&] {
      return symbol("ln2", "0.69314718", "0.69314719", [&](const z3::expr& x) { return exp(x) == z_.real_val(2); });
    };
    auto ln10 = [&] {
      return symbol("ln10", "2.30258509", "2.30258510", [&](const z3::expr& x) { return exp(x) == z_.real_val(10); });
    };
    auto sqrt2 = [&] {
      return symbol("sqrt2", "1.41421356", "1.41421357", [&](const z3::expr& x) { return x * x == z_.real_val(2); });
    };
    switch (c) {
      case NamedConstant::Pi:
        return pi();
      case NamedConstant::HalfPi:
        return pi() * z_.real_val(1, 2);
      case NamedConstant::QuarterPi:
        return pi() * z_.real_val(1, 4);
      case NamedConstant::TwoPi:
        return pi() * z_.real_val(2);
      case NamedConstant::InvPi:
        return inv_pi();
      case NamedConstant::TwoOverPi:
        return inv_pi() * z_.real_val(2);
      case NamedConstant::SqrtTwoOverPi:
        return symbol("sqrt(2/pi)", "0.79788456", "0.79788457",
                      [&](const z3::expr& x) { return x * x == inv_pi() * z_.real_val(2); });
      case NamedConstant::E:
        return symbol("e", "2.71828182", "2.71828183", [&](const z3::expr& x) { return exp(one) == x; });
      case NamedConstant::Ln2:
        return ln2();
      case NamedConstant::Ln10:
        return ln10();
      case NamedConstant::Log2E:
        return symbol("log2(e)", "1.44269504", "1.44269505", [&](const z3::expr& x) { return x * ln2() == one; });
      case NamedConstant::Log10E:
        return symbol("log10(e)", "0.43429448", "0.43429449", [&](const z3::expr& x) { return x * ln10() == one; });
      case NamedConstant::Sqrt2:
        return sqrt2();
      case NamedConstant::InvSqrt2:
        return sqrt2() * z_.real_val(1, 2);
    }
    return z_.real_val(0);
  }
  bool reads_as(SymId id, NamedConstant c) const {
    double v = 0;
    if (!s_.is_const(id, &v) || !std::isfinite(v)) return false;
    const LiteralReading r = read_literal(v);
    return r.kind == LiteralReading::Kind::Named && r.named == c;
  }
  z3::expr one() { return constant(1.0); }
  z3::expr zero() { return constant(0.0); }
  z3::expr bool_value(const z3::expr& b) { return z3::ite(b, one(), zero()); }

  // a / b rounded toward zero (integer division; b = 0 leaves it unknown,
  // as the real division it starts from).
  z3::expr truncated_quotient(const z3::expr& a, const z3::expr& b) {
    if (fp_) return z3::expr(z_, Z3_mk_fpa_round_to_integral(z_, Z3_mk_fpa_rtz(z_), a / b));
    z3::expr q = a / b;
    auto floor = [&](const z3::expr& x) { return z3::to_real(z3::expr(z_, Z3_mk_real2int(z_, x))); };
    return z3::ite(q >= zero(), floor(q), -floor(-q));
  }

  z3::expr apply(SymOp op, const z3::expr& a) {
    auto it = functions_.find(op);
    if (it == functions_.end()) {
      z3::sort s = fp_ ? z_.fpa_sort<32>() : z_.real_sort();
      it = functions_.emplace(op, z_.function(ir::sym_op_name(op), s, s)).first;
    }
    return it->second(a);
  }

  void add_facts(SymId id, z3::expr_vector& facts) {
    const ir::SymNode& n = s_.node(id);
    const ir::SymNode& arg = s_.node(n.a);
    z3::expr self = encode(id), x = encode(n.a);
    switch (n.op) {
      case SymOp::Exp:
      case SymOp::Exp2: {
        facts.push_back(self > zero());
        if (n.op == SymOp::Exp2) {  // 2^a = e^(a ln 2); 2^(y log2 e) = e^y
          facts.push_back(self == apply(SymOp::Exp, x * named(NamedConstant::Ln2)));
          if (arg.op == SymOp::Mul && reads_as(arg.b, NamedConstant::Log2E))
            facts.push_back(self == apply(SymOp::Exp, encode(arg.a)));
          if (arg.op == SymOp::Mul && reads_as(arg.a, NamedConstant::Log2E))
            facts.push_back(self == apply(SymOp::Exp, encode(arg.b)));
        }
        if (arg.op == SymOp::Add) facts.push_back(self == apply(n.op, encode(arg.a)) * apply(n.op, encode(arg.b)));
        if (arg.op == SymOp::Neg) facts.push_back(self * apply(n.op, encode(arg.a)) == one());
        SymOp inverse = n.op == SymOp::Exp ? SymOp::Log : SymOp::Log2;
        if (arg.op == inverse) facts.push_back(z3::implies(encode(arg.a) > zero(), self == encode(arg.a)));
        break;
      }
      case SymOp::Log:
      case SymOp::Log2: {
        SymOp inverse = n.op == SymOp::Log ? SymOp::Exp : SymOp::Exp2;
        if (arg.op == inverse) facts.push_back(self == encode(arg.a));
        if (n.op == SymOp::Log2)  // log2 a = ln a / ln 2
          facts.push_back(self * named(NamedConstant::Ln2) == apply(SymOp::Log, x));
        break;
      }
      case SymOp::Add: {
        // The shifted log-sum-exp: log(sum_k e^(y_k - t)) + t = log(sum_k
        // e^y_k), as log(P e^t) = log P + t (P > 0) and e^(y - t) e^t = e^y.
        // Stated where the DAG has it (reductions shift by their max), with
        // the plain sum built as the other side builds it.
        const bool left = s_.node(n.a).op == SymOp::Log, right = s_.node(n.b).op == SymOp::Log;
        if (!left && !right) break;
        const SymId t = left ? n.b : n.a;
        std::vector<SymId> terms, todo{s_.node(left ? n.a : n.b).a};
        while (!todo.empty()) {  // the sum's terms
          const SymId k = todo.back();
          todo.pop_back();
          if (s_.node(k).op == SymOp::Add) {
            todo.push_back(s_.node(k).b);
            todo.push_back(s_.node(k).a);
          } else {
            terms.push_back(k);
          }
        }
        std::optional<z3::expr> plain;
        for (SymId k : terms) {
          const ir::SymNode& e = s_.node(k);
          const ir::SymNode& sum = s_.node(e.a);
          if (e.op != SymOp::Exp || sum.op != SymOp::Add) return;
          auto shifted = [&](SymId neg) { return s_.node(neg).op == SymOp::Neg && s_.node(neg).a == t; };
          const std::optional<SymId> y = shifted(sum.b)   ? std::optional(sum.a)
                                         : shifted(sum.a) ? std::optional(sum.b)
                                                          : std::nullopt;
          if (!y) return;
          const z3::expr ey = apply(SymOp::Exp, encode(*y));
          plain = plain ? *plain + ey : ey;
        }
        if (plain) facts.push_back(self == apply(SymOp::Log, *plain));
        break;
      }
      case SymOp::Log1p:  // log1p a = log(1 + a)
        facts.push_back(self == apply(SymOp::Log, x + one()));
        break;
      case SymOp::Cos:  // cos a = sin(a + pi/2)
        facts.push_back(self == apply(SymOp::Sin, x + named(NamedConstant::HalfPi)));
        break;
      case SymOp::Sqrt:
        facts.push_back(self >= zero());
        facts.push_back(z3::implies(x >= zero(), self * self == x));
        break;
      case SymOp::Pow: {  // a^b = 2^(b log2 a) for a > 0; a^k a product for a small natural k
        facts.push_back(z3::implies(x > zero(), self == apply(SymOp::Exp2, encode(n.b) * apply(SymOp::Log2, x))));
        const ir::SymNode& e = s_.node(n.b);
        if (e.op == SymOp::Const && e.value >= 0 && e.value <= 4 && e.value == std::floor(e.value)) {
          z3::expr power = one();
          for (int k = 0; k < static_cast<int>(e.value); ++k) power = power * x;
          facts.push_back(self == power);
        }
        break;
      }
      case SymOp::Tanh: {  // tanh a = (1 - e^-2a) / (1 + e^-2a) = 2 sigmoid(2a) - 1
        facts.push_back(self > -one() && self < one());
        z3::expr e = apply(SymOp::Exp, -(x * constant(2.0)));
        facts.push_back(e > zero());
        facts.push_back(self * (one() + e) == one() - e);
        break;
      }
      case SymOp::Erf:
        facts.push_back(self > -one() && self < one());
        break;
      default:
        break;
    }
  }

  z3::expr build(SymId id) {
    const ir::SymNode& n = s_.node(id);
    auto A = [&] { return encode(n.a); };
    auto B = [&] { return encode(n.b); };
    switch (n.op) {
      case SymOp::Var:
        var_ids_[n.a] = id;
        return var(n.a);
      case SymOp::Const:
        return constant(n.value);
      case SymOp::Add:
        return A() + B();
      case SymOp::Mul:
        return A() * B();
      case SymOp::Div:
        // Dividing by a named constant multiplies by the named reciprocal,
        // so x / sqrt 2 and x (1/sqrt 2) are one term.
        if (!fp_)
          for (auto [c, inverse] : kNamedReciprocals)
            if (reads_as(n.b, c)) return A() * named(inverse);
        if (!fp_ && inverted_.count(n.b)) {
          auto [it, fresh] = inverses_.try_emplace(n.b, z_.real_const(("1/" + std::to_string(n.b)).c_str()));
          if (fresh) inverse_facts_.push_back(it->second * encode(n.b) == one());
          return A() * it->second;
        }
        return A() / B();
      case SymOp::Neg:
        return -A();
      case SymOp::Max:
        if (fp_) return z3::max(A(), B());
        return z3::ite(A() >= B(), A(), B());
      case SymOp::Min:
        if (fp_) return z3::min(A(), B());
        return z3::ite(A() <= B(), A(), B());
      case SymOp::Abs:
        if (fp_) return z3::abs(A());
        return z3::ite(A() >= zero(), A(), -A());
      case SymOp::Less:
        return bool_value(A() < B());
      case SymOp::LessEq:
        return bool_value(A() <= B());
      case SymOp::Equal:
        return bool_value(fp_ ? z3::fp_eq(A(), B()) : A() == B());
      case SymOp::Select: {
        z3::expr c = A();
        z3::expr nonzero = fp_ ? !z3::fp_eq(c, zero()) : c != zero();
        return z3::ite(nonzero, B(), encode(n.c));
      }
      case SymOp::Floor:
      case SymOp::Ceil: {
        z3::expr x = n.op == SymOp::Floor ? A() : -A();
        z3::expr f = fp_ ? z3::expr(z_, Z3_mk_fpa_round_to_integral(z_, Z3_mk_fpa_rtn(z_), x))
                         : z3::to_real(z3::expr(z_, Z3_mk_real2int(z_, x)));
        return n.op == SymOp::Floor ? f : -f;
      }
      case SymOp::Sqrt:
        if (fp_) return z3::sqrt(A(), z_.fpa_rounding_mode());
        return apply(n.op, A());
      case SymOp::IntDiv:
        return truncated_quotient(A(), B());
      case SymOp::IntRem:
        return A() - B() * truncated_quotient(A(), B());
      case SymOp::Pow:
      case SymOp::FMod:
      case SymOp::IntPow: {
        auto it = functions_.find(n.op);
        if (it == functions_.end()) {
          z3::sort s = fp_ ? z_.fpa_sort<32>() : z_.real_sort();
          it = functions_.emplace(n.op, z_.function(ir::sym_op_name(n.op), s, s, s)).first;
        }
        return it->second(A(), B());
      }
      default:
        return apply(n.op, A());
    }
  }

  z3::context& z_;
  const SymContext& s_;
  bool fp_;
  std::unordered_map<SymId, z3::expr> memo_;
  std::map<std::size_t, z3::expr> vars_;
  std::map<std::size_t, SymId> var_ids_;
  std::map<SymOp, z3::func_decl> functions_;
  std::set<SymId> inverted_;
  std::map<SymId, z3::expr> inverses_;
  std::vector<z3::expr> inverse_facts_;
  std::map<std::string, z3::expr> symbols_;  // named constants
  std::vector<z3::expr> constant_facts_;
  std::map<bool, z3::expr> infinities_;  // by sign (true: -inf)
};

double numeral(const z3::expr& e) {
  std::string s = e.is_numeral() || e.is_algebraic() ? e.get_decimal_string(17) : "0";
  if (!s.empty() && s.back() == '?') s.pop_back();
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

// One instance whose sides differ as expressions: the elements to prove.
struct Obligation {
  std::vector<std::size_t> elements;
  std::vector<SymId> lhs, rhs;
  std::vector<std::int64_t> dims;
  ir::DType dtype = ir::DType::F32;  // of the elements
  std::vector<SymId> premises;       // 0/1 conditions the left-hand side is defined under
};

enum class Outcome { Equal, Differ, Unknown };
struct QueryResult {
  Outcome outcome = Outcome::Equal;
  std::string why;  // unknown: the reason
  Counterexample cex;
};

// An element's equation lhs = rhs up to the names of its variables: the
// nodes reachable from both sides, in the order a walk from them visits
// them (fixed by the structure alone), each with its op, its constant's
// bits or its variable's number of first appearance, and its operands'
// positions. Two elements with the same key are one formula over renamed
// variables, and a formula's validity does not depend on its variables'
// names: a proof of one is a proof of the other. (Elementwise rules pose the
// same scalar equation at every element of every shape.)
std::string alpha_key(const SymContext& ctx, SymId lhs, SymId rhs) {
  const SymId roots[] = {lhs, rhs};
  const std::vector<SymId> order = ctx.reachable(roots);
  std::unordered_map<SymId, std::uint32_t> position;
  for (SymId id : order) position.emplace(id, static_cast<std::uint32_t>(position.size()));
  std::unordered_map<SymId, std::uint32_t> var_number;
  std::string key;
  auto put = [&key](const auto& x) {
    char bytes[sizeof x];
    std::memcpy(bytes, &x, sizeof x);
    key.append(bytes, sizeof x);
  };
  put(position.at(rhs));
  for (SymId id : order) {
    const ir::SymNode& n = ctx.node(id);
    put(static_cast<std::uint8_t>(n.op));
    if (n.op == SymOp::Const) {
      put(n.value);
    } else if (n.op == SymOp::Var) {
      put(var_number.emplace(n.a, static_cast<std::uint32_t>(var_number.size())).first->second);
      put(ctx.var_integral(id));
    }
    const SymId operands[] = {n.a, n.b, n.c};
    const int arity = ir::sym_op_arity(n.op);
    for (int k = 0; k < arity; ++k) put(position.at(operands[k]));
  }
  return key;
}

z3::solver solver_with_timeout(z3::context& z, unsigned timeout_ms) {
  z3::solver s(z);
  z3::params p(z);
  p.set("timeout", timeout_ms);
  s.set(p);
  return s;
}

// For each kept element of `ob`, the assignments of the bounded integer
// variables it reads (bounds from premises lo <= v and v < hi), every
// combination; empty when no premise bounds a variable, or when an element
// would need more than 64 cases (then one query decides them together).
std::vector<std::vector<std::vector<std::pair<std::size_t, int>>>> index_cases(const SymContext& ctx,
                                                                               const Obligation& ob,
                                                                               const std::vector<std::size_t>& kept) {
  std::map<std::size_t, std::pair<double, double>> bounds;  // variable -> [lo, hi)
  auto var_of = [&](SymId id) -> std::optional<std::size_t> {
    if (ctx.node(id).op != SymOp::Var || !ctx.var_integral(id)) return std::nullopt;
    return ctx.node(id).a;
  };
  for (SymId p : ob.premises) {
    const ir::SymNode& n = ctx.node(p);
    double c = 0;
    if (n.op == SymOp::LessEq && ctx.is_const(n.a, &c))
      if (auto v = var_of(n.b)) bounds.try_emplace(*v, c, HUGE_VAL).first->second.first = c;
    if (n.op == SymOp::Less && ctx.is_const(n.b, &c))
      if (auto v = var_of(n.a)) bounds.try_emplace(*v, -HUGE_VAL, c).first->second.second = c;
  }
  std::vector<std::vector<std::vector<std::pair<std::size_t, int>>>> out;
  if (bounds.empty()) return out;
  for (std::size_t k : kept) {
    const SymId roots[] = {ob.lhs[k], ob.rhs[k]};
    std::vector<std::pair<std::size_t, std::pair<int, int>>> ranges;
    double cases = 1;
    for (SymId id : ctx.reachable(roots))
      if (auto v = var_of(id); v && bounds.count(*v)) {
        const auto [lo, hi] = bounds.at(*v);
        if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo) return {};
        ranges.push_back({*v, {static_cast<int>(lo), static_cast<int>(hi)}});
        cases *= hi - lo;
      }
    if (cases > 64) return {};
    std::vector<std::vector<std::pair<std::size_t, int>>> all{{}};
    for (const auto& [v, range] : ranges) {
      std::vector<std::vector<std::pair<std::size_t, int>>> next;
      for (const auto& partial : all)
        for (int value = range.first; value < range.second; ++value) {
          next.push_back(partial);
          next.back().emplace_back(v, value);
        }
      all = std::move(next);
    }
    out.push_back(std::move(all));
  }
  return out;
}

// `proven`: the alpha_keys of the elements earlier queries of the rule
// proved. Elements whose key is there, or repeats one of this query's, are
// not asked again (only without premises: those bind the elements together).
// The keys this query proves are added.
QueryResult prove(z3::context& z, const SymContext& ctx, const Obligation& ob, unsigned timeout_ms,
                  std::unordered_set<std::string>& proven) {
  QueryResult r;
  std::vector<std::string> asked;
  auto proved = [&]() -> QueryResult {
    for (std::string& key : asked) proven.insert(std::move(key));
    return r;
  };
  Encoder enc(z, ctx, /*fp=*/false);
  z3::solver s = solver_with_timeout(z, timeout_ms);
  z3::expr_vector facts(z), differ(z);
  std::set<std::size_t> vars;
  bool functions = false, divisions = false;
  std::vector<SymId> roots;
  // A divisor both sides divide by may be taken as nonzero: where it is 0,
  // neither side is defined. One side alone dividing (x/x => 1) is not.
  auto divisors = [&](SymId root) {
    std::set<SymId> out;
    for (SymId id : ctx.reachable(std::span<const SymId>(&root, 1)))
      if (is_division_by_term(ctx, id)) out.insert(ctx.node(id).b);
    return out;
  };
  std::vector<std::vector<SymId>> common(ob.elements.size());
  for (std::size_t k = 0; k < ob.elements.size(); ++k) {
    auto dl = divisors(ob.lhs[k]), dr = divisors(ob.rhs[k]);
    for (SymId q : dl)
      if (dr.count(q)) {
        common[k].push_back(q);
        enc.invert(q);
      }
  }
  std::vector<std::size_t> kept;
  std::unordered_set<std::string> asked_here;
  for (std::size_t k = 0; k < ob.elements.size(); ++k) {
    if (ob.premises.empty()) {
      std::string key = alpha_key(ctx, ob.lhs[k], ob.rhs[k]);
      if (proven.count(key) || !asked_here.insert(key).second) continue;
      asked.push_back(std::move(key));
    }
    z3::expr l = enc.encode(ob.lhs[k]), rr = enc.encode(ob.rhs[k]);
    if (z3::eq(l, rr)) continue;  // the same Z3 term
    z3::expr d = l != rr;
    for (SymId q : common[k]) d = d && enc.encode(q) != z.real_val(0);
    differ.push_back(d);
    kept.push_back(k);
    roots.push_back(ob.lhs[k]);
    roots.push_back(ob.rhs[k]);
  }
  if (kept.empty()) return proved();
  for (SymId p : ob.premises) {
    s.add(enc.encode(p) != z.real_val(0));
    roots.push_back(p);
  }
  enc.collect(roots, facts, vars, functions, divisions);
  for (unsigned i = 0; i < facts.size(); ++i) s.add(facts[i]);
  std::optional<z3::model> found;
  auto check = [&](const z3::expr_vector& assumptions) {
    s.push();
    for (unsigned i = 0; i < assumptions.size(); ++i) s.add(assumptions[i]);
    const z3::check_result c = s.check();
    if (c == z3::sat) found = s.get_model();
    if (c == z3::unknown) r.why = "Z3 gave up (" + s.reason_unknown() + ")";
    s.pop();
    return c;
  };
  // Indices bounded by the premises (gathers by symbolic indices) are split
  // into cases, element by element: each case is a gather by a known index,
  // which Z3 settles at once, where the choice among all of them at once can
  // take it past its time limit.
  const auto splits = index_cases(ctx, ob, kept);
  if (splits.empty()) {
    z3::expr_vector a(z);
    a.push_back(z3::mk_or(differ));
    z3::check_result c = check(a);
    if (c == z3::unsat) return proved();
    // Undecided together, the elements may still be decided one at a time
    // (each query is smaller: tanh through sigmoid on 81 elements): proved
    // when every one is, refuted when one is, else undecided.
    if (c == z3::unknown && kept.size() > 1) {
      bool every_one = true;
      for (unsigned k = 0; k < differ.size() && c != z3::sat; ++k) {
        z3::expr_vector one(z);
        one.push_back(differ[static_cast<int>(k)]);
        const z3::check_result ck = check(one);
        if (ck == z3::sat) c = z3::sat;
        every_one &= ck == z3::unsat;
      }
      if (every_one) return proved();
    }
    if (c == z3::unknown) {
      r.outcome = Outcome::Unknown;
      return r;
    }
  } else {
    for (std::size_t j = 0; j < kept.size() && !found; ++j)
      for (const auto& values : splits[j]) {
        z3::expr_vector a(z);
        a.push_back(differ[static_cast<int>(j)]);
        for (const auto& [var, value] : values) a.push_back(enc.var(var) == z.real_val(value));
        const z3::check_result c = check(a);
        if (c == z3::unknown) {
          r.outcome = Outcome::Unknown;
          return r;
        }
        if (c == z3::sat) break;
      }
    if (!found) return r;
  }
  z3::model& m = *found;
  std::map<std::size_t, double> values;
  for (std::size_t v : vars) values[v] = numeral(m.eval(enc.var(v), true));
  for (const auto& [v, x] : values) r.cex.inputs.push_back({enc.var_name(v), CounterexampleValue{x}});
  auto value_of = [&](std::size_t v) {
    auto it = values.find(v);
    return it == values.end() ? 0.0 : it->second;
  };
  std::size_t at = kept[0];
  for (std::size_t k = 0; k < kept.size(); ++k)
    if (m.eval(differ[static_cast<int>(k)], true).is_true()) {
      at = kept[k];
      break;
    }
  double l = ctx.evaluate(ob.lhs[at], value_of), rr = ctx.evaluate(ob.rhs[at], value_of);
  r.cex.element = "result" + index_text(ob.elements[at], ob.dims);
  r.cex.lhs_value = CounterexampleValue{l, ob.dtype};
  r.cex.rhs_value = CounterexampleValue{rr, ob.dtype};
  const bool numerically_apart =
      std::isnan(l) != std::isnan(rr) || std::fabs(l - rr) > 1e-9 * std::max({1.0, std::fabs(l), std::fabs(rr)});
  if (numerically_apart || (!functions && !divisions)) {
    r.outcome = Outcome::Differ;
    r.cex.what = numerically_apart ? "the two sides differ at " + r.cex.element
                                   : "the two sides differ at " + r.cex.element +
                                         " over the reals (by less than double precision shows)";
    return r;
  }
  r.outcome = Outcome::Unknown;
  r.why = std::string("Z3 found a difference only by treating ") +
          (functions ? "exp/log/sqrt/... as uninterpreted functions" : "a division by zero as arbitrary") +
          "; in double arithmetic the sides agree there";
  return r;
}

// Whether the obligation also holds in float32 (finite inputs, RNE).
std::optional<bool> prove_fp32(const SymContext& ctx, const Obligation& ob, unsigned timeout_ms, std::string& note) {
  z3::context z;
  Encoder enc(z, ctx, /*fp=*/true);
  z3::solver s = solver_with_timeout(z, timeout_ms);
  z3::expr_vector facts(z), differ(z);
  std::set<std::size_t> vars;
  bool functions = false, divisions = false;
  std::vector<SymId> roots;
  for (std::size_t k = 0; k < ob.elements.size(); ++k) {
    z3::expr l = enc.encode(ob.lhs[k]), r = enc.encode(ob.rhs[k]);
    differ.push_back(!(z3::fp_eq(l, r) || (l.mk_is_nan() && r.mk_is_nan())));
    roots.push_back(ob.lhs[k]);
    roots.push_back(ob.rhs[k]);
  }
  for (SymId p : ob.premises) {
    s.add(!z3::fp_eq(enc.encode(p), z.fpa_val(0.0f)));
    roots.push_back(p);
  }
  enc.collect(roots, facts, vars, functions, divisions);
  for (unsigned i = 0; i < facts.size(); ++i) s.add(facts[i]);
  s.add(z3::mk_or(differ));
  switch (s.check()) {
    case z3::unsat:
      return true;
    case z3::unknown:
      note = "Z3 gave up on the float32 query (" + s.reason_unknown() + ")";
      return std::nullopt;
    case z3::sat:
      break;
  }
  if (functions) {
    note = "in float32 the sides can differ unless exp/log/... round alike on both sides";
    return std::nullopt;
  }
  z3::model m = s.get_model();
  note = "rounding differs in float32, e.g. at";
  int shown = 0;
  for (std::size_t v : vars) {
    if (shown++ == 4) {
      note += " ...";
      break;
    }
    z3::expr x = m.eval(enc.var(v), true);
    z3::expr as_real(z, Z3_mk_fpa_to_real(z, x));
    note += " " + enc.var_name(v) + "=" + std::to_string(numeral(m.eval(as_real, true)));
  }
  return false;
}

std::string shape_bounds(const InstanceOptions& o) {
  return "ranks 0.." + std::to_string(o.max_rank) + ", dims 1.." + std::to_string(o.max_dim);
}

}  // namespace

RuleVerdict verify_rule(const egraph::Rewrite& rule, const RuleInfo& info, const VerifyOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  RuleVerdict v;
  v.rule = info.name;
  v.file = info.loc.file;
  v.line = info.loc.line;
  auto finish = [&]() -> RuleVerdict {
    if (info.unverified && v.status != VerifyStatus::Proved) {
      std::string found = std::string(status_name(v.status)) + (v.reason.empty() ? "" : ": " + v.reason);
      v.status = VerifyStatus::Unverified;
      v.reason = *info.unverified + " (saturn verify: " + found + ")";
    }
    v.time_ms = elapsed_s() * 1000.0;
    return v;
  };

  InstanceOptions io = opt.instances;
  io.time_limit_s = std::min(io.time_limit_s, opt.rule_time_limit_s / 4);  // building instances gets a share
  io.where_rule_fires = true;  // a sampled instance the guards turn down proves nothing
  auto holder = std::unique_ptr<RuleInstances>(new RuleInstances(enumerate_instances(rule, info.source, io)));
  // No sampled instance the rule fires on (sampling keeps only those: its
  // guards want constants, one value per tensor, ...): sampled again,
  // broadly (InstanceOptions::broad), keeping the first sampling's when that
  // finds none either.
  if (!holder->exhaustive && holder->unsupported.empty() && holder->instances.empty()) {
    io.broad = true;
    auto broad = std::unique_ptr<RuleInstances>(new RuleInstances(enumerate_instances(rule, info.source, io)));
    if (!broad->instances.empty()) holder = std::move(broad);
  }
  RuleInstances& inst = *holder;
  inst.graph.rebuild();
  v.found = inst.found;
  v.instances = inst.instances.size();
  v.exhaustive = inst.exhaustive;
  if (!inst.unsupported.empty()) {
    v.status = VerifyStatus::Unknown;
    v.reason = "cannot instantiate the rule: " + inst.unsupported;
    return finish();
  }

  SymContext ctx;
  z3::context z;
  std::optional<Obligation> first_obligation;
  std::unordered_set<std::string> proven_elements;  // alpha_keys (prove)
  std::size_t rejected = 0, unknown = 0, structural = 0, empty_checked = 0;
  std::string unknown_why;
  bool timed_out = false;
  egraph::Matches matches;

  // Checks the rule on every instance of `in` (with empty_only, those that
  // bind an empty tensor); false when it settled the verdict (refuted, or
  // undecided for an :unverified rule).
  auto check = [&](RuleInstances& in, bool empty_only) {
    SymbolicEvaluator sym(in, ctx);
    const std::size_t nroots = rule.lhs().size();
    for (const auto& instance : in.instances) {
      if (elapsed_s() > opt.rule_time_limit_s) {
        timed_out = true;
        return true;
      }
      if (empty_only &&
          std::none_of(instance.begin() + static_cast<std::ptrdiff_t>(nroots), instance.end(), [&](EClassId c) {
            const TensorInfo& d = in.analysis->data(in.graph.find(c));
            return d.kind == TensorInfo::Kind::Tensor && ir::is_static(d.type.shape) &&
                   ir::numel(ir::static_dims(d.type.shape)) == 0;
          }))
        continue;
      std::span<const EClassId> roots(instance.data(), nroots);
      matches.data.clear();
      rule.search_at(in.graph, roots, matches);
      for (std::size_t m = 0; m < matches.size(); ++m) {
        auto rhs = rule.instantiate(in.graph, matches.bindings(m));
        in.graph.rebuild();
        if (!rhs) {
          ++rejected;
          continue;
        }
        // `cex` holds what the proof found (values); the instance is added here.
        auto refute = [&](std::string what, Counterexample cex = {}) {
          v.status = VerifyStatus::Refuted;
          auto names = rule.var_names();
          auto b = matches.bindings(m);
          for (std::size_t k = 0; k < b.size(); ++k) cex.bindings.emplace_back(names[k], describe_class(in, b[k]));
          for (std::size_t i = 0; i < nroots; ++i) {
            if (i) {
              cex.lhs_term += "  ";
              cex.rhs_term += "  ";
            }
            cex.lhs_term += term_of(in, roots[i]);
            cex.rhs_term += term_of(in, (*rhs)[i]);
          }
          cex.what = std::move(what);
          v.counterexample = std::move(cex);
        };
        for (std::size_t i = 0; i < nroots && v.status != VerifyStatus::Refuted; ++i) {
          const TensorInfo& l = in.analysis->data(in.graph.find(roots[i]));
          const TensorInfo& r = in.analysis->data(in.graph.find((*rhs)[i]));
          if (r.kind != TensorInfo::Kind::Tensor) {
            refute("the right-hand side does not type-check: " +
                   (r.kind == TensorInfo::Kind::Invalid ? r.error : std::string("it is not a tensor")));
          } else if (r.type.dtype != l.type.dtype || r.type.shape != l.type.shape) {
            refute(std::string("the sides have different types: ") + ir::dtype_name(l.type.dtype) +
                   ir::to_string(l.type.shape) + " => " + ir::dtype_name(r.type.dtype) + ir::to_string(r.type.shape));
          }
        }
        if (v.status == VerifyStatus::Refuted) return false;
        Obligation ob;
        for (std::size_t i = 0; i < nroots; ++i) {
          if (in.graph.find(roots[i]) == in.graph.find((*rhs)[i])) continue;  // the very same term
          const SymTensor& L = sym.eval(roots[i]);
          const SymTensor& R = sym.eval((*rhs)[i]);
          if (i == 0) ob.dims = L.dims();
          ob.dtype = L.dtype();
          ob.premises = sym.requirements_below(roots[i]);
          for (std::size_t e = 0; e < L.numel(); ++e)
            if (L.id(e) != R.id(e)) {
              ob.elements.push_back(e);
              ob.lhs.push_back(L.id(e));
              ob.rhs.push_back(R.id(e));
            }
          if (!ob.elements.empty()) break;  // one side at a time, so element indices read against its shape
        }
        ++v.shapes_checked;
        if (empty_only) ++empty_checked;
        if (ob.elements.empty()) {
          ++structural;
          continue;
        }
        if (!first_obligation || ob.elements.size() < first_obligation->elements.size()) {
          first_obligation = ob;  // the smallest, for the float32 question: one element of it
          first_obligation->elements.resize(1);
          first_obligation->lhs.resize(1);
          first_obligation->rhs.resize(1);
        }
        QueryResult q = prove(z, ctx, ob, opt.solver_timeout_ms, proven_elements);
        if (q.outcome == Outcome::Differ) {
          for (auto& [name, value] : q.cex.inputs) value.dtype = sym.input_type(name);
          std::string what = q.cex.what;  // (not read from q.cex in the same call that moves it)
          refute(std::move(what), std::move(q.cex));
          return false;
        }
        if (q.outcome == Outcome::Unknown) {
          ++unknown;
          if (unknown_why.empty()) unknown_why = q.why;
          if (info.unverified) return false;  // it says why it cannot be proved: one undecided instance settles it
        }
      }
    }
    return true;
  };
  try {
    bool go_on = check(inst, false);
    // Empty tensors (a dim of 0) are legal everywhere and break rules that
    // count elements (reshape's 0 and -1, a mean, a reduction's identity):
    // once the rule holds on the instances above, it is checked again on
    // instances that bind an empty tensor.
    if (go_on && !timed_out && !unknown && v.shapes_checked > 0) {
      InstanceOptions empty = io;
      empty.min_dim = 0;
      empty.max_instances = std::max<std::size_t>(io.max_instances / 4, 16);
      empty.time_limit_s = io.time_limit_s / 2;
      auto with_empty = enumerate_instances(rule, info.source, empty);
      if (with_empty.unsupported.empty()) {
        with_empty.graph.rebuild();
        check(with_empty, true);
      }
    }
  } catch (const ir::SymbolicUnsupported& e) {
    v.status = VerifyStatus::Unknown;
    v.reason = "no symbolic semantics: " + e.message;
    return finish();
  }
  if (v.status == VerifyStatus::Refuted) return finish();

  std::string tensors, attrs;
  for (const auto& t : inst.tensor_vars) tensors += (tensors.empty() ? "" : " ") + t;
  for (const auto& a : inst.attr_vars) attrs += (attrs.empty() ? "" : " ") + a;
  v.coverage = std::to_string(v.shapes_checked) + " instances checked (" + shape_bounds(opt.instances) +
               (tensors.empty() ? "" : " for " + tensors) + (attrs.empty() ? "" : "; attributes " + attrs) + "); " +
               std::to_string(v.instances) + " of " + std::to_string(v.found) + " well-typed instances " +
               (v.exhaustive       ? (v.instances < v.found ? "kept, evenly spread" : "(all of them)")
                : inst.over_budget ? "sampled where the rule fires (their combinations exceed the enumeration budget)"
                                   : "sampled where the rule fires (enumeration budget reached)") +
               (rejected ? ", " + std::to_string(rejected) + " turned down by the guard" : "") +
               (empty_checked ? ", " + std::to_string(empty_checked) + " more with an empty tensor" : "") +
               (timed_out ? ", stopped at the time limit" : "") +
               (inst.timed_out ? ", instance building stopped at its share of the time limit" : "");
  if (unknown) {
    v.status = VerifyStatus::Unknown;
    v.reason = std::to_string(unknown) + " instance(s) undecided: " + unknown_why;
  } else if (v.shapes_checked == 0) {
    v.status = VerifyStatus::Unknown;
    v.reason = v.found == 0 ? "no well-typed instance of the left-hand side within " + shape_bounds(opt.instances)
                            : "the rule fired on none of the " + std::to_string(v.instances) + " instances built";
  } else {
    v.status = VerifyStatus::Proved;
    v.reason = std::to_string(structural) + " of " + std::to_string(v.shapes_checked) +
               " instances equal as expressions, the rest by Z3" +
               (proven_elements.empty() ? std::string()
                                        : " (" + std::to_string(proven_elements.size()) +
                                              " distinct element equations up to variable names)");
  }
  if (opt.fp32 && v.status == VerifyStatus::Proved) {
    if (!first_obligation) {
      v.fp32_exact = true;
      v.fp32_note = "both sides perform the same operations";
    } else {
      v.fp32_exact = prove_fp32(ctx, *first_obligation, 5 * opt.solver_timeout_ms, v.fp32_note);
      if (v.fp32_exact == true) v.fp32_note = "exact in float32 at an element of the smallest instance that needed Z3";
    }
  }
  return finish();
}

}  // namespace saturn::rules
