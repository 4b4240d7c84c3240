// Symbolic tensors: what `saturn verify` evaluates ops on.
//
// A Sym is a node of a hash-consed expression DAG over the reals (SymContext):
// variables, constants, + * / max min, comparisons (0/1), select, and named
// functions (exp, log, sqrt, erf, ...) that a prover treats as uninterpreted
// with axioms. A SymTensor is a dense grid of Syms with Tensor's interface, so
// one kernel, written once as a template over the tensor type, is both an op's
// reference semantics (instantiated with Tensor and doubles) and its symbolic
// semantics (instantiated with SymTensor): "one op, one place" (docs/design.md).
//
// Invariant: the DAG only applies rewrites that hold exactly over the reals
// and in IEEE arithmetic alike (x+0 = x, x*1 = x, x-y = x+(-y), sorting the
// operands of commutative ops), so two structurally equal Syms are equal
// values in both models, and anything else is left to the prover.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/int_arith.hpp"

namespace saturn::ir {

enum class SymOp : std::uint8_t {
  Var,
  Const,
  Add,
  Mul,
  Div,
  Neg,
  Max,
  Min,
  Abs,
  Less,    // 1 when a < b, else 0
  LessEq,  // 1 when a <= b, else 0
  Equal,   // 1 when a == b, else 0
  Select,  // c != 0 ? a : b
  IntDiv,  // integers: a / b truncated toward zero (b != 0)
  IntRem,  // integers: a - b * IntDiv(a, b), the sign of a (b != 0)
  Floor,
  Ceil,
  Exp,
  Log,
  Exp2,
  Log2,
  Sqrt,
  Erf,
  Tanh,
  Sin,
  Cos,
  Log1p,
  Pow,
  FMod,    // a - b * trunc(a / b) on floats, as C's fmod
  IntPow,  // integers: int_power(a, b)
};
const char* sym_op_name(SymOp op);
// How many operands (a, b, c in order) a node of `op` reads.
int sym_op_arity(SymOp op);
// Functions a prover sees as uninterpreted (with axioms).
bool sym_op_is_function(SymOp op);
// Integer division, remainder and power: undefined for a zero divisor (or 0
// to a negative power), which a kernel computing them must report.
inline bool sym_op_divides(SymOp op) { return op == SymOp::IntDiv || op == SymOp::IntRem || op == SymOp::IntPow; }

using SymId = std::uint32_t;

struct SymNode {
  SymOp op = SymOp::Const;
  double value = 0;  // Const
  SymId a = 0, b = 0, c = 0;
  friend bool operator==(const SymNode&, const SymNode&) = default;
};

// Raised when an op has no symbolic semantics for what it was given (an
// unsupported op, a symbolic integer where a concrete one is needed).
struct SymbolicUnsupported {
  std::string message;
};

class Sym;

class SymContext {
 public:
  SymContext();
  SymContext(const SymContext&) = delete;
  SymContext& operator=(const SymContext&) = delete;

  // `integral`: the variable only takes integer values (an element of an
  // integer tensor), which a prover may use.
  Sym var(const std::string& name, bool integral = false);
  Sym constant(double v);
  Sym make(SymOp op, SymId a, SymId b = 0, SymId c = 0);

  const SymNode& node(SymId id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  const std::string& var_name(SymId id) const { return names_[nodes_[id].a]; }
  bool var_integral(SymId id) const { return integral_[nodes_[id].a]; }
  std::size_t num_vars() const { return names_.size(); }
  // Whether `id` is a constant, and its value.
  bool is_const(SymId id, double* v = nullptr) const;
  // Evaluates in double; `var_value` gives each variable by its index
  // (node(id).a). Memoized per call.
  double evaluate(SymId id, const std::function<double(std::size_t)>& var_value) const;
  // Every node reachable from `roots`, each once (roots first, then below).
  std::vector<SymId> reachable(std::span<const SymId> roots) const;
  // The nodes reachable from `root` that `done` does not hold, operands
  // before their users (depth first, operands in order), each added to it.
  std::vector<SymId> post_order(SymId root, std::set<SymId>& done) const;
  std::string to_string(SymId id) const;

  // Conditions (0/1 Syms) under which the ops evaluated so far are defined,
  // in order: a gather by a symbolic index requires it to lie in range. A
  // prover assumes those of a rule's left-hand side (where the op the rule
  // rewrites fails, any replacement will do).
  void require(const Sym& condition);
  const std::vector<SymId>& requirements() const { return requirements_; }

 private:
  struct NodeHash {
    std::size_t operator()(const SymNode& n) const;
  };
  std::vector<SymNode> nodes_;
  std::vector<std::string> names_;
  std::vector<bool> integral_;  // per variable
  std::unordered_map<SymNode, SymId, NodeHash> memo_;
  std::vector<SymId> requirements_;
};

class Sym {
 public:
  Sym() = default;
  Sym(SymContext* ctx, SymId id) : ctx_(ctx), id_(id) {}
  SymId id() const { return id_; }
  SymContext& ctx() const { return *ctx_; }
  Sym with(SymOp op) const { return ctx_->make(op, id_); }
  Sym with(SymOp op, const Sym& b) const { return ctx_->make(op, id_, b.id_); }
  Sym lift(double v) const { return ctx_->constant(v); }

  Sym& operator+=(const Sym& o) { return *this = with(SymOp::Add, o); }
  Sym& operator-=(const Sym& o) { return *this = with(SymOp::Add, o.with(SymOp::Neg)); }
  Sym& operator*=(const Sym& o) { return *this = with(SymOp::Mul, o); }
  Sym& operator/=(const Sym& o) { return *this = with(SymOp::Div, o); }
  Sym& operator+=(double o) { return *this += lift(o); }
  Sym& operator*=(double o) { return *this *= lift(o); }
  Sym& operator/=(double o) { return *this /= lift(o); }

 private:
  SymContext* ctx_ = nullptr;
  SymId id_ = 0;
};

inline Sym operator+(Sym a, const Sym& b) { return a += b; }
inline Sym operator-(Sym a, const Sym& b) { return a -= b; }
inline Sym operator*(Sym a, const Sym& b) { return a *= b; }
inline Sym operator/(Sym a, const Sym& b) { return a /= b; }
inline Sym operator-(const Sym& a) { return a.with(SymOp::Neg); }
inline Sym operator+(const Sym& a, double b) { return a + a.lift(b); }
inline Sym operator+(double a, const Sym& b) { return b.lift(a) + b; }
inline Sym operator-(const Sym& a, double b) { return a - a.lift(b); }
inline Sym operator-(double a, const Sym& b) { return b.lift(a) - b; }
inline Sym operator*(const Sym& a, double b) { return a * a.lift(b); }
inline Sym operator*(double a, const Sym& b) { return b.lift(a) * b; }
inline Sym operator/(const Sym& a, double b) { return a / a.lift(b); }
inline Sym operator/(double a, const Sym& b) { return b.lift(a) / b; }
// Comparisons give 0/1 values; use scalar::select to branch on them.
inline Sym operator<(const Sym& a, const Sym& b) { return a.with(SymOp::Less, b); }
inline Sym operator<=(const Sym& a, const Sym& b) { return a.with(SymOp::LessEq, b); }
inline Sym operator>(const Sym& a, const Sym& b) { return b.with(SymOp::Less, a); }
inline Sym operator>=(const Sym& a, const Sym& b) { return b.with(SymOp::LessEq, a); }
inline Sym operator<(const Sym& a, double b) { return a < a.lift(b); }
inline Sym operator<=(const Sym& a, double b) { return a <= a.lift(b); }
inline Sym operator>(const Sym& a, double b) { return a > a.lift(b); }
inline Sym operator>=(const Sym& a, double b) { return a >= a.lift(b); }

// Scalar functions with one spelling for double and Sym, so that kernels are
// written once. Over doubles they are the C library's (max and min propagate
// NaN); over Syms they build nodes.
namespace scalar {
inline double select(bool c, double a, double b) { return c ? a : b; }
inline Sym select(const Sym& c, const Sym& a, const Sym& b) {
  return c.ctx().make(SymOp::Select, c.id(), a.id(), b.id());
}
inline Sym select(const Sym& c, const Sym& a, double b) { return select(c, a, c.lift(b)); }
inline Sym select(const Sym& c, double a, const Sym& b) { return select(c, c.lift(a), b); }
inline Sym select(const Sym& c, double a, double b) { return select(c, c.lift(a), c.lift(b)); }
inline double max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? b : a); }
inline double min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a); }
inline Sym max(const Sym& a, const Sym& b) { return a.with(SymOp::Max, b); }
inline Sym min(const Sym& a, const Sym& b) { return a.with(SymOp::Min, b); }
inline Sym max(const Sym& a, double b) { return max(a, a.lift(b)); }
inline Sym min(const Sym& a, double b) { return min(a, a.lift(b)); }
inline Sym max(double a, const Sym& b) { return max(b.lift(a), b); }
inline Sym min(double a, const Sym& b) { return min(b.lift(a), b); }
// a == b: a bool for numbers, a 0/1 Sym for Syms.
inline bool eq(double a, double b) { return a == b; }
inline bool eq(std::int64_t a, std::int64_t b) { return a == b; }
inline Sym eq(const Sym& a, const Sym& b) { return a.with(SymOp::Equal, b); }
inline Sym eq(const Sym& a, double b) { return eq(a, a.lift(b)); }
// The reals have no NaN and no infinity.
inline bool isnan(double x) { return std::isnan(x); }
inline bool isnan(const Sym&) { return false; }
inline bool isinf(double x) { return std::isinf(x); }
inline bool isinf(const Sym&) { return false; }
inline double pow(double a, double b) { return std::pow(a, b); }
inline Sym pow(const Sym& a, const Sym& b) { return a.with(SymOp::Pow, b); }
inline double fmod(double a, double b) { return std::fmod(a, b); }
inline Sym fmod(const Sym& a, const Sym& b) { return a.with(SymOp::FMod, b); }
// Integer division truncating toward zero and its remainder, over integers
// held as Syms (the reference kernels divide known int64 values).
inline Sym int_div(const Sym& a, const Sym& b) { return a.with(SymOp::IntDiv, b); }
inline Sym int_rem(const Sym& a, const Sym& b) { return a.with(SymOp::IntRem, b); }
inline Sym int_pow(const Sym& a, const Sym& b) { return a.with(SymOp::IntPow, b); }

#define SATURN_SCALAR_FN(NAME, STD, OP)                \
  inline double NAME(double x) { return std::STD(x); } \
  inline Sym NAME(const Sym& x) { return x.with(SymOp::OP); }
SATURN_SCALAR_FN(abs, fabs, Abs)
SATURN_SCALAR_FN(floor, floor, Floor)
SATURN_SCALAR_FN(ceil, ceil, Ceil)
SATURN_SCALAR_FN(exp, exp, Exp)
SATURN_SCALAR_FN(log, log, Log)
SATURN_SCALAR_FN(exp2, exp2, Exp2)
SATURN_SCALAR_FN(log2, log2, Log2)
SATURN_SCALAR_FN(sqrt, sqrt, Sqrt)
SATURN_SCALAR_FN(erf, erf, Erf)
SATURN_SCALAR_FN(tanh, tanh, Tanh)
SATURN_SCALAR_FN(sin, sin, Sin)
SATURN_SCALAR_FN(cos, cos, Cos)
SATURN_SCALAR_FN(log1p, log1p, Log1p)
#undef SATURN_SCALAR_FN
}  // namespace scalar

// A dense row-major grid of Syms with the interface kernels use on Tensor.
// Integer and bool elements are constants (a symbolic integer cannot index
// or count anything), read with at_int.
class SymTensor {
 public:
  SymTensor() = default;
  SymTensor(SymContext& ctx, DType t, std::vector<std::int64_t> dims);  // zero-filled

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::size_t rank() const { return dims_.size(); }
  std::size_t numel() const { return elems_.size(); }
  std::vector<std::int64_t> strides() const;
  SymContext& context() const { return *ctx_; }

  Sym at(std::size_t i) const { return Sym(ctx_, elems_[i]); }
  std::int64_t at_int(std::size_t i) const;  // throws SymbolicUnsupported unless constant
  void set(std::size_t i, const Sym& v) { elems_[i] = v.id(); }
  void set(std::size_t i, double v) { elems_[i] = ctx_->constant(v).id(); }
  void set_int(std::size_t i, std::int64_t v) { set(i, static_cast<double>(v)); }
  SymTensor reshaped(std::vector<std::int64_t> dims) const;
  SymId id(std::size_t i) const { return elems_[i]; }

 private:
  SymContext* ctx_ = nullptr;
  DType dtype_ = DType::F32;
  std::vector<std::int64_t> dims_;
  std::vector<SymId> elems_;
};

// The element at the position `index` selects among n (negative indices
// count from the end, as ONNX's gathers do): element(k) for a known index
// (one out of range throws SymbolicUnsupported naming `op`), and for a
// symbolic one a choice among all n, with -n <= index < n required.
Sym select_by_index(const Sym& index, std::int64_t n, const std::function<Sym(std::int64_t)>& element,
                    const std::string& op);

class Tensor;
// Generic kernels make results and constants "like" an operand: a Tensor
// and doubles, or a SymTensor and Syms of the same context.
Tensor like(const Tensor& t, DType dtype, std::vector<std::int64_t> dims);
SymTensor like(const SymTensor& t, DType dtype, std::vector<std::int64_t> dims);
inline double lit(const Tensor&, double v) { return v; }
inline Sym lit(const SymTensor& t, double v) { return t.context().constant(v); }

}  // namespace saturn::ir
