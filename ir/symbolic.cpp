#include "ir/symbolic.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "ir/op.hpp"

namespace saturn::ir {

const char* sym_op_name(SymOp op) {
  switch (op) {
    case SymOp::Var:
      return "var";
    case SymOp::Const:
      return "const";
    case SymOp::Add:
      return "+";
    case SymOp::Mul:
      return "*";
    case SymOp::Div:
      return "/";
    case SymOp::Neg:
      return "neg";
    case SymOp::Max:
      return "max";
    case SymOp::Min:
      return "min";
    case SymOp::Abs:
      return "abs";
    case SymOp::Less:
      return "<";
    case SymOp::LessEq:
      return "<=";
    case SymOp::Equal:
      return "==";
    case SymOp::Select:
      return "select";
    case SymOp::IntDiv:
      return "int_div";
    case SymOp::IntRem:
      return "int_rem";
    case SymOp::Floor:
      return "floor";
    case SymOp::Ceil:
      return "ceil";
    case SymOp::Exp:
      return "exp";
    case SymOp::Log:
      return "log";
    case SymOp::Exp2:
      return "exp2";
    case SymOp::Log2:
      return "log2";
    case SymOp::Sqrt:
      return "sqrt";
    case SymOp::Erf:
      return "erf";
    case SymOp::Tanh:
      return "tanh";
    case SymOp::Sin:
      return "sin";
    case SymOp::Cos:
      return "cos";
    case SymOp::Log1p:
      return "log1p";
    case SymOp::Pow:
      return "pow";
    case SymOp::FMod:
      return "fmod";
    case SymOp::IntPow:
      return "int_pow";
  }
  return "?";
}

bool sym_op_is_function(SymOp op) { return op >= SymOp::Exp; }

namespace {
// IntDiv, IntRem and IntPow of integers held as doubles; NaN where the
// int64 operation fails or an operand is no int64.
double int_op(SymOp op, double a, double b) {
  auto integral = [](double v) { return v == std::trunc(v) && std::abs(v) <= 9.2e18; };
  if (!integral(a) || !integral(b)) return std::numeric_limits<double>::quiet_NaN();
  const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
  const std::optional<std::int64_t> r = op == SymOp::IntDiv   ? int_quotient(x, y)
                                        : op == SymOp::IntRem ? int_remainder(x, y)
                                                              : int_power(x, y);
  return r ? static_cast<double>(*r) : std::numeric_limits<double>::quiet_NaN();
}
bool commutative(SymOp op) {
  return op == SymOp::Add || op == SymOp::Mul || op == SymOp::Max || op == SymOp::Min || op == SymOp::Equal;
}
int arity(SymOp op) {
  switch (op) {
    case SymOp::Var:
    case SymOp::Const:
      return 0;
    case SymOp::Select:
      return 3;
    case SymOp::Add:
    case SymOp::Mul:
    case SymOp::Div:
    case SymOp::Max:
    case SymOp::Min:
    case SymOp::Less:
    case SymOp::LessEq:
    case SymOp::Equal:
    case SymOp::IntDiv:
    case SymOp::IntRem:
    case SymOp::Pow:
    case SymOp::FMod:
    case SymOp::IntPow:
      return 2;
    default:
      return 1;
  }
}
}  // namespace

int sym_op_arity(SymOp op) { return arity(op); }

std::size_t SymContext::NodeHash::operator()(const SymNode& n) const {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &n.value, sizeof bits);
  std::uint64_t h = static_cast<std::uint64_t>(n.op) * 0x9E3779B97F4A7C15ULL;
  for (std::uint64_t v : {bits, std::uint64_t{n.a}, std::uint64_t{n.b}, std::uint64_t{n.c}})
    h = (h ^ v) * 0x100000001B3ULL + (h >> 29);
  return static_cast<std::size_t>(h);
}

SymContext::SymContext() { constant(0.0); }

Sym SymContext::var(const std::string& name, bool integral) {
  SymNode n{SymOp::Var, 0, static_cast<SymId>(names_.size()), 0, 0};
  names_.push_back(name);
  integral_.push_back(integral);
  nodes_.push_back(n);
  return Sym(this, static_cast<SymId>(nodes_.size() - 1));
}

Sym SymContext::constant(double v) {
  if (v == 0) v = 0.0;  // one zero: -0 and +0 are equal values
  SymNode n{SymOp::Const, v, 0, 0, 0};
  auto [it, fresh] = memo_.try_emplace(n, static_cast<SymId>(nodes_.size()));
  if (fresh) nodes_.push_back(n);
  return Sym(this, it->second);
}

void SymContext::require(const Sym& condition) {
  double v = 0;
  if (is_const(condition.id(), &v) && v != 0) return;  // holds
  requirements_.push_back(condition.id());
}

Sym select_by_index(const Sym& index, std::int64_t n, const std::function<Sym(std::int64_t)>& element,
                    const std::string& op) {
  SymContext& ctx = index.ctx();
  double known = 0;
  if (ctx.is_const(index.id(), &known)) {
    const auto i = static_cast<std::int64_t>(known);
    if (i < -n || i >= n)
      throw SymbolicUnsupported{op + ": index " + std::to_string(i) + " out of range for axis of size " +
                                std::to_string(n)};
    return element(i < 0 ? i + n : i);
  }
  if (n == 0) {  // no index is in range: no input reaches this element
    ctx.require(ctx.constant(0));
    return ctx.constant(0);
  }
  const double size = static_cast<double>(n);
  ctx.require(index >= -size);
  ctx.require(index < size);
  // Position n - 1 (index n - 1 or -1) is what is left once the others are not.
  Sym picked = element(n - 1);
  for (std::int64_t k = n - 2; k >= 0; --k) {
    const auto at = static_cast<double>(k);
    picked = scalar::select(scalar::eq(index, at), element(k),
                            scalar::select(scalar::eq(index, at - size), element(k), picked));
  }
  return picked;
}

bool SymContext::is_const(SymId id, double* v) const {
  if (nodes_[id].op != SymOp::Const) return false;
  if (v) *v = nodes_[id].value;
  return true;
}

Sym SymContext::make(SymOp op, SymId a, SymId b, SymId c) {
  double x = 0, y = 0;
  const bool ca = is_const(a, &x), cb = arity(op) >= 2 && is_const(b, &y);
  switch (op) {
    case SymOp::Add:
      if (ca && x == 0) return Sym(this, b);
      if (cb && y == 0) return Sym(this, a);
      break;
    case SymOp::Mul:
      if (ca && x == 1) return Sym(this, b);
      if (cb && y == 1) return Sym(this, a);
      break;
    case SymOp::Div:
      if (cb && y == 1) return Sym(this, a);
      break;
    case SymOp::Max:  // -inf is max's identity, NaN included (it propagates NaN)
      if (ca && x == -std::numeric_limits<double>::infinity()) return Sym(this, b);
      if (cb && y == -std::numeric_limits<double>::infinity()) return Sym(this, a);
      break;
    case SymOp::Log:  // log 0 = -inf exactly (a reduction over nothing: log of the empty sum)
    case SymOp::Log2:
      if (ca && x == 0) return constant(-std::numeric_limits<double>::infinity());
      break;
    case SymOp::Neg:
      if (ca) return constant(-x);
      if (nodes_[a].op == SymOp::Neg) return Sym(this, nodes_[a].a);
      break;
    case SymOp::Less:
      if (ca && cb) return constant(x < y ? 1.0 : 0.0);
      break;
    case SymOp::LessEq:
      if (ca && cb) return constant(x <= y ? 1.0 : 0.0);
      break;
    case SymOp::Equal:  // (x == x is not folded to true: NaN is not equal to itself)
      if (ca && cb) return constant(x == y ? 1.0 : 0.0);
      break;
    case SymOp::Select:
      if (ca) return Sym(this, x != 0 ? b : c);
      if (b == c) return Sym(this, b);
      break;
    default:
      break;
  }
  if (commutative(op) && b < a) std::swap(a, b);
  SymNode n{op, 0, a, arity(op) >= 2 ? b : 0, arity(op) >= 3 ? c : 0};
  auto [it, fresh] = memo_.try_emplace(n, static_cast<SymId>(nodes_.size()));
  if (fresh) nodes_.push_back(n);
  return Sym(this, it->second);
}

double SymContext::evaluate(SymId root, const std::function<double(std::size_t)>& var_value) const {
  std::unordered_map<SymId, double> memo;
  auto go = [&](auto& self, SymId id) -> double {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const SymNode& n = nodes_[id];
    auto A = [&] { return self(self, n.a); };
    auto B = [&] { return self(self, n.b); };
    double r = 0;
    switch (n.op) {
      case SymOp::Var:
        r = var_value(n.a);
        break;
      case SymOp::Const:
        r = n.value;
        break;
      case SymOp::Add:
        r = A() + B();
        break;
      case SymOp::Mul:
        r = A() * B();
        break;
      case SymOp::Div:
        r = A() / B();
        break;
      case SymOp::Neg:
        r = -A();
        break;
      case SymOp::Max:
        r = scalar::max(A(), B());
        break;
      case SymOp::Min:
        r = scalar::min(A(), B());
        break;
      case SymOp::Abs:
        r = std::fabs(A());
        break;
      case SymOp::Less:
        r = A() < B() ? 1 : 0;
        break;
      case SymOp::LessEq:
        r = A() <= B() ? 1 : 0;
        break;
      case SymOp::Equal:
        r = A() == B() ? 1 : 0;
        break;
      case SymOp::Select:
        r = A() != 0 ? B() : self(self, n.c);
        break;
      case SymOp::Floor:
        r = std::floor(A());
        break;
      case SymOp::Ceil:
        r = std::ceil(A());
        break;
      case SymOp::Exp:
        r = std::exp(A());
        break;
      case SymOp::Log:
        r = std::log(A());
        break;
      case SymOp::Exp2:
        r = std::exp2(A());
        break;
      case SymOp::Log2:
        r = std::log2(A());
        break;
      case SymOp::Sqrt:
        r = std::sqrt(A());
        break;
      case SymOp::Erf:
        r = std::erf(A());
        break;
      case SymOp::Tanh:
        r = std::tanh(A());
        break;
      case SymOp::Sin:
        r = std::sin(A());
        break;
      case SymOp::Cos:
        r = std::cos(A());
        break;
      case SymOp::Log1p:
        r = std::log1p(A());
        break;
      case SymOp::Pow:
        r = std::pow(A(), B());
        break;
      case SymOp::IntDiv:
      case SymOp::IntRem:
      case SymOp::IntPow:
        r = int_op(n.op, A(), B());
        break;
      case SymOp::FMod:
        r = std::fmod(A(), B());
        break;
    }
    memo.emplace(id, r);
    return r;
  };
  return go(go, root);
}

std::vector<SymId> SymContext::reachable(std::span<const SymId> roots) const {
  std::vector<SymId> out;
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<SymId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    SymId id = stack.back();
    stack.pop_back();
    if (seen[id]) continue;
    seen[id] = true;
    out.push_back(id);
    const int n = arity(nodes_[id].op);
    if (n >= 1) stack.push_back(nodes_[id].a);
    if (n >= 2) stack.push_back(nodes_[id].b);
    if (n >= 3) stack.push_back(nodes_[id].c);
  }
  return out;
}

std::vector<SymId> SymContext::post_order(SymId root, std::set<SymId>& done) const {
  std::vector<SymId> out;
  std::vector<std::pair<SymId, bool>> todo{{root, false}};  // (node, operands done)
  while (!todo.empty()) {
    auto [id, operands_done] = todo.back();
    todo.pop_back();
    if (done.count(id)) continue;
    if (operands_done) {
      done.insert(id);
      out.push_back(id);
      continue;
    }
    todo.push_back({id, true});
    const SymNode& n = nodes_[id];
    const SymId kids[] = {n.a, n.b, n.c};
    for (int i = arity(n.op); i-- > 0;)
      if (!done.count(kids[i])) todo.push_back({kids[i], false});
  }
  return out;
}

std::string SymContext::to_string(SymId id) const {
  const SymNode& n = nodes_[id];
  if (n.op == SymOp::Var) return names_[n.a];
  if (n.op == SymOp::Const) {
    std::ostringstream s;
    s.precision(17);
    s << n.value;
    return s.str();
  }
  std::string s = std::string("(") + sym_op_name(n.op) + " " + to_string(n.a);
  if (arity(n.op) >= 2) s += " " + to_string(n.b);
  if (arity(n.op) >= 3) s += " " + to_string(n.c);
  return s + ")";
}

// ---------------------------------------------------------------- tensors

SymTensor::SymTensor(SymContext& ctx, DType t, std::vector<std::int64_t> dims)
    : ctx_(&ctx), dtype_(t), dims_(std::move(dims)) {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  elems_.assign(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), ctx.constant(0.0).id());
}

std::vector<std::int64_t> SymTensor::strides() const { return row_major_strides(dims_); }

std::int64_t SymTensor::at_int(std::size_t i) const {
  double v = 0;
  if (!ctx_->is_const(elems_[i], &v))
    throw SymbolicUnsupported{"a symbolic " + std::string(dtype_name(dtype_)) +
                              " element is used where a known integer is needed"};
  return static_cast<std::int64_t>(v);
}

SymTensor SymTensor::reshaped(std::vector<std::int64_t> dims) const {
  SymTensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor like(const Tensor&, DType dtype, std::vector<std::int64_t> dims) { return Tensor(dtype, std::move(dims)); }
SymTensor like(const SymTensor& t, DType dtype, std::vector<std::int64_t> dims) {
  return SymTensor(t.context(), dtype, std::move(dims));
}

// ---------------------------------------------------------------- applying ops

namespace {

// Traces an op that only copies elements: every float operand element gets
// a distinct tag (run twice, tags shifted by 1/2), so a result element that
// follows the shift copies that operand element and one that does not move
// is a constant of the op. Integer operands are read as they are when known
// (indices, shapes); an integer operand with symbolic elements (argmax's
// positions, moved by a reshape) is tagged with integers instead, shifted
// by 2^32 on the second run, which no index or count survives.
std::vector<SymTensor> trace(const OpDef& d, const Attrs& a, std::span<const SymTensor> x, std::span<const bool> given,
                             std::size_t num_outputs) {
  struct Origin {
    std::size_t operand, index;
  };
  constexpr double kIntShift = 4294967296.0;
  std::vector<Origin> origin;
  auto symbolic_ints = [&](std::size_t k) {
    if (x[k].dtype() != DType::I64) return false;
    for (std::size_t i = 0; i < x[k].numel(); ++i)
      if (!x[k].context().is_const(x[k].id(i))) return true;
    return false;
  };
  auto tagged = [&](bool second) {
    std::vector<Tensor> args;
    origin.clear();
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (!given[k]) {
        args.emplace_back();
        continue;
      }
      Tensor t(x[k].dtype(), x[k].dims());
      const bool fl = x[k].dtype() == DType::F32 || x[k].dtype() == DType::F64;
      if (!fl && is_float(x[k].dtype()))
        throw SymbolicUnsupported{d.name + ": cannot trace " + dtype_name(x[k].dtype()) + " operands"};
      const bool ints = !fl && symbolic_ints(k);
      for (std::size_t i = 0; i < t.numel(); ++i) {
        if (fl || ints) {
          const double shift = second ? (fl ? 0.5 : kIntShift) : 0.0;
          t.set(i, static_cast<double>(origin.size() + 1) + shift);
          origin.push_back({k, i});
        } else {
          t.set_int(i, x[k].at_int(i));
        }
      }
      args.push_back(std::move(t));
    }
    if (origin.size() > (1u << 20)) throw SymbolicUnsupported{d.name + ": too many elements to trace"};
    try {
      return d.eval(a, args, given, num_outputs);
    } catch (const ShapeError& e) {
      throw SymbolicUnsupported{d.name + ": " + e.message};
    }
  };
  auto first = tagged(false), second = tagged(true);
  std::vector<SymTensor> out;
  SymContext& ctx = x.empty() ? throw SymbolicUnsupported{d.name + ": no operand to trace"} : x[0].context();
  for (std::size_t r = 0; r < first.size(); ++r) {
    SymTensor t(ctx, first[r].dtype(), first[r].dims());
    for (std::size_t i = 0; i < t.numel(); ++i) {
      double u = first[r].at(i), v = second[r].at(i);
      if (u == v) {
        t.set(i, u);
        continue;
      }
      auto tag = static_cast<std::int64_t>(u);
      const double shift = is_float(first[r].dtype()) ? 0.5 : kIntShift;
      if (v != u + shift || static_cast<double>(tag) != u || tag < 1 || static_cast<std::size_t>(tag) > origin.size())
        throw SymbolicUnsupported{d.name + ": not a pure data movement (result element " + std::to_string(i) +
                                  " is computed, not copied)"};
      const Origin& o = origin[static_cast<std::size_t>(tag - 1)];
      t.set(i, x[o.operand].at(o.index));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::vector<SymTensor> apply_symbolic(const OpDef& d, const Attrs& a, std::span<const SymTensor> x,
                                      std::span<const bool> given, std::size_t num_outputs) {
  try {
    if (d.symbolic) return d.symbolic(a, x, given, num_outputs);
  } catch (const ShapeError& e) {
    throw SymbolicUnsupported{d.name + ": " + e.message};
  }
  if (d.traceable) return trace(d, a, x, given, num_outputs);
  throw SymbolicUnsupported{"op '" + d.name + "' has no symbolic semantics yet"};
}

}  // namespace saturn::ir
