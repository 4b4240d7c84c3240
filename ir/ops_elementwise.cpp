// Elementwise ops: unary, binary with numpy broadcasting, comparisons,
// logic, where, cast, clip. Floating types compute in double and round to
// the result type; integer types compute in int64.
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "ir/op.hpp"

namespace saturn::ir {

namespace {

using Args = std::span<const Tensor>;
using Given = std::span<const bool>;
using Inputs = std::span<const TypedInput>;

// Offsets of each operand for every output element, numpy-broadcast.
class Broadcaster {
 public:
  Broadcaster(const std::vector<std::int64_t>& out, const std::vector<std::vector<std::int64_t>>& ins) : out_(out) {
    const std::size_t r = out.size();
    for (const auto& dims : ins) {
      std::vector<std::int64_t> s(r, 0);
      std::vector<std::int64_t> st(dims.size(), 1);
      for (std::size_t d = dims.size(); d-- > 1;) st[d - 1] = st[d] * dims[d];
      std::size_t off = r - dims.size();
      for (std::size_t d = 0; d < dims.size(); ++d) s[off + d] = dims[d] == 1 ? 0 : st[d];
      strides_.push_back(std::move(s));
    }
    out_strides_.assign(r, 1);
    for (std::size_t d = r; d-- > 1;) out_strides_[d - 1] = out_strides_[d] * out[d];
  }
  std::size_t offset(std::size_t operand, std::size_t i) const {
    std::int64_t off = 0, I = static_cast<std::int64_t>(i);
    for (std::size_t d = 0; d < out_.size(); ++d) off += ((I / out_strides_[d]) % out_[d]) * strides_[operand][d];
    return static_cast<std::size_t>(off);
  }

 private:
  std::vector<std::int64_t> out_, out_strides_;
  std::vector<std::vector<std::int64_t>> strides_;
};

// Whether every operand's shape broadcasts with the others' (what
// broadcast_all below asks), without throwing.
bool broadcastable(Inputs in) {
  std::optional<Shape> s = in[0].type.shape;
  for (std::size_t k = 1; k < in.size() && s; ++k) s = broadcast(*s, in[k].type.shape);
  return s.has_value();
}

Shape broadcast_all(Inputs in, const char* op) {
  Shape s = in[0].type.shape;
  for (std::size_t k = 1; k < in.size(); ++k) {
    auto b = broadcast(s, in[k].type.shape);
    if (!b)
      shape_error(std::string(op) + ": shapes " + to_string(s) + " and " + to_string(in[k].type.shape) +
                  " do not broadcast");
    s = *b;
  }
  return s;
}

template <class Args>
std::vector<std::int64_t> broadcast_dims(Args a) {
  std::vector<std::int64_t> d = a[0].dims();
  for (std::size_t k = 1; k < a.size(); ++k) d = ir::broadcast_dims(d, a[k].dims(), "operands");
  return d;
}

void same_dtype(Inputs in, const char* op) {
  for (const TypedInput& t : in)
    if (t.type.dtype != in[0].type.dtype)
      shape_error(std::string(op) + ": operand types differ (" + dtype_name(in[0].type.dtype) + " and " +
                  dtype_name(t.type.dtype) + ")");
}

enum class Accepts { Float, Numeric, Any, Bool };

bool accepts(Accepts acc, DType t) {
  return acc == Accepts::Any || (acc == Accepts::Float && is_float(t)) ||
         (acc == Accepts::Numeric && t != DType::Bool) || (acc == Accepts::Bool && t == DType::Bool);
}

void check_accepts(Accepts acc, DType t, const char* op) {
  if (!accepts(acc, t)) shape_error(std::string(op) + " does not take " + dtype_name(t) + " operands");
}

// A unary op over floating values (in double, or symbolically: f is written
// once over the scalar type) and, when given, over int64 for integers.
// A u64 is held as its bits in an int64 (Tensor::at_int): the ops whose
// meaning depends on the sign are given an unsigned variant.
using UnsignedUnary = std::function<std::uint64_t(std::uint64_t)>;
using UnsignedBinary = std::function<std::optional<std::uint64_t>(std::uint64_t, std::uint64_t)>;

std::uint64_t as_unsigned(std::int64_t v) { return std::bit_cast<std::uint64_t>(v); }
std::int64_t as_signed(std::uint64_t v) { return std::bit_cast<std::int64_t>(v); }

template <class F>
void unary(OpRegistry& r, const char* name, OpKind kind, Accepts acc, F f,
           std::function<std::int64_t(std::int64_t)> fi = {}, UnsignedUnary fu = {}, const char* doc = "") {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.elementwise = true;
  d.doc = *doc ? std::string(doc)
               : std::string("elementwise ") + name + "(x)" + (acc == Accepts::Float ? " on floating types" : "");
  d.infer = [name, acc](const Attrs&, Inputs in, std::size_t) {
    check_accepts(acc, in[0].type.dtype, name);
    return std::vector<ValueType>{in[0].type};
  };
  set_kernel(d, [f, fi, fu](const Attrs& at, auto a, Given, std::size_t) {
    auto out = like(a[0], a[0].dtype(), a[0].dims());
    // Symbolic integers and bools take the generic path: the ops given an
    // integer variant (abs, sign, relu, not, identity) mean the same on them.
    constexpr bool symbolic = !std::is_same_v<decltype(a[0].at(0)), double>;
    for (std::size_t i = 0; i < out.numel(); ++i) {
      if (fu && a[0].dtype() == DType::U64 && !symbolic)
        out.set_int(i, as_signed(fu(as_unsigned(a[0].at_int(i)))));
      else if (fi && !is_float(a[0].dtype()) && !symbolic)
        out.set_int(i, fi(a[0].at_int(i)));
      else
        out.set(i, f(a[0].at(i), at));
    }
    return std::vector<decltype(out)>{std::move(out)};
  });
  r.add(std::move(d));
}

using IntSym = std::function<Sym(const Sym&, const Sym&, const Attrs&)>;

// A binary op with broadcasting; `result` fixes the result dtype (nullopt:
// the operands' dtype). f is written over the scalar type, as for unary;
// fi computes on int64 values (nullopt: a division by zero), and `fs`, when
// given, is its form over symbolic integers (the ops whose int64 meaning
// the reals do not have: truncating division, remainder, power).
template <class F>
void binary(OpRegistry& r, const char* name, OpKind kind, Accepts acc, std::optional<DType> result, F f,
            std::function<std::optional<std::int64_t>(std::int64_t, std::int64_t, const Attrs&)> fi, IntSym fs = {},
            bool mixed_types = false, UnsignedBinary fu = {}) {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.elementwise = true;
  d.min_inputs = d.max_inputs = 2;
  d.moves_values = result == DType::Bool && acc == Accepts::Any;  // comparisons
  d.doc = std::string("elementwise ") + name + "(a, b) with numpy broadcasting" +
          (result == DType::Bool ? ", giving bool" : "");
  d.infer = [name, acc, result, mixed_types](const Attrs&, Inputs in, std::size_t) {
    if (!mixed_types) same_dtype(in, name);
    check_accepts(acc, in[0].type.dtype, name);
    return std::vector<ValueType>{{result.value_or(in[0].type.dtype), broadcast_all(in, name)}};
  };
  d.admits = [acc, mixed_types](const Attrs&, Inputs in) {
    return (mixed_types || in[0].type.dtype == in[1].type.dtype) && accepts(acc, in[0].type.dtype) && broadcastable(in);
  };
  set_kernel(d, [f, fi, fs, fu, result, name](const Attrs& at, auto a, Given, std::size_t) {
    auto dims = broadcast_dims(a);
    auto out = like(a[0], result.value_or(a[0].dtype()), dims);
    Broadcaster b(dims, {a[0].dims(), a[1].dims()});
    // Symbolic integers and bools are held as reals: exact for comparisons,
    // logic, add, sub, mul, max, min and prelu (a select of a product), but not for truncating division,
    // floor modulo or integer pow, which keep needing known values.
    constexpr bool symbolic = !std::is_same_v<decltype(a[0].at(0)), double>;
    const std::string_view op = name;
    const bool as_reals = symbolic && (result == DType::Bool || op == "add" || op == "sub" || op == "mul" ||
                                       op == "max" || op == "min" || op == "prelu");
    // (An integer raised to a float power is computed in double.)
    const bool integral = !is_float(a[0].dtype()) && !is_float(a[1].dtype()) && fi && !as_reals;
    for (std::size_t i = 0; i < out.numel(); ++i) {
      auto ia = b.offset(0, i), ib = b.offset(1, i);
      if constexpr (symbolic) {
        const SymContext& c = a[0].context();
        if (integral && fs && !(c.is_const(a[0].id(ia)) && c.is_const(a[1].id(ib)))) {
          out.set(i, fs(a[0].at(ia), a[1].at(ib), at));
          continue;
        }
      }
      if (integral) {
        const bool u64 = fu && a[0].dtype() == DType::U64 && a[1].dtype() == DType::U64;
        std::optional<std::int64_t> v;
        if (!u64)
          v = fi(a[0].at_int(ia), a[1].at_int(ib), at);
        else if (auto u = fu(as_unsigned(a[0].at_int(ia)), as_unsigned(a[1].at_int(ib))))
          v = as_signed(*u);
        if (!v) shape_error(op == "pow" ? "integer 0 to a negative power" : "integer division by zero");
        out.set_int(i, *v);
      } else {
        auto x = a[0].at(ia), y = a[1].at(ib);
        if constexpr (std::is_invocable_v<F, decltype(x), decltype(y), const Attrs&>)
          out.set(i, f(x, y, at));
        else
          throw SymbolicUnsupported{std::string(name) + " has no symbolic form yet"};
      }
    }
    return std::vector<decltype(out)>{std::move(out)};
  });
  r.add(std::move(d));
}

// x rounded to the nearest integer, a half to the even one (ONNX Round,
// numpy.rint, QuantizeLinear's rounding), written with floor so that one
// definition serves double and the symbolic reals (a NaN or an infinity
// stays itself).
template <class T>
T round_half_even(const T& x) {
  namespace S = scalar;
  const T f = S::floor(x);
  const auto d = x - f;
  return S::select(d < 0.5, f,
                   S::select(d > 0.5, f + 1.0, S::select(S::eq(f - 2.0 * S::floor(f * 0.5), 0.0), f, f + 1.0)));
}

// A double rounded to the floating type t, as an operation of that type
// rounds its exact result.
double round_to(DType t, double v) {
  switch (t) {
    case DType::F32:
      return static_cast<double>(static_cast<float>(v));
    case DType::F16:
      return static_cast<double>(half_to_float(float_to_half(static_cast<float>(v))));
    case DType::BF16:
      return static_cast<double>(bf16_to_float(float_to_bf16(static_cast<float>(v))));
    default:
      return v;
  }
}

// The scale and zero point of QuantizeLinear / DequantizeLinear broadcast
// to x's shape (the importer reshapes a per-axis or blocked scale so: see
// docs/onnx.md), the zero point being of the quantized type.
Shape quant_operands(Inputs in, const char* op, DType quantized) {
  const DType scale = in[1].type.dtype;
  if (scale != DType::F32 && scale != DType::F16 && scale != DType::BF16)
    shape_error(std::string(op) + ": the scale must be f32, f16 or bf16, got " + dtype_name(in[1].type.dtype));
  if (in[2].type.dtype != quantized)
    shape_error(std::string(op) + ": the zero point is " + dtype_name(in[2].type.dtype) + ", the quantized value " +
                dtype_name(quantized));
  const Shape s = broadcast_all(in, op);
  if (s != in[0].type.shape)
    shape_error(std::string(op) + ": the scale " + to_string(in[1].type.shape) + " and zero point " +
                to_string(in[2].type.shape) + " must broadcast to x's shape " + to_string(in[0].type.shape));
  return s;
}

bool quantized_type(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 || t == DType::I4 || t == DType::U4 ||
         t == DType::I2 || t == DType::U2 || t == DType::I32 || (is_minifloat(t));
}

// The smallest and largest value of an integer type.
std::pair<double, double> integer_range(DType t) {
  const int bits = integer_bits(t);
  if (is_unsigned(t)) return {0.0, std::ldexp(1.0, bits) - 1};
  return {-std::ldexp(1.0, bits - 1), std::ldexp(1.0, bits - 1) - 1};
}

void register_quantization(OpRegistry& r) {
  {
    OpDef d;
    d.name = "dequantize_linear";
    d.kind = OpKind::Composite;
    d.elementwise = true;
    d.moves_values = true;  // (x may be of a type that only stores values: f8, int4)
    d.min_inputs = d.max_inputs = 3;
    d.doc =
        "dequantize_linear(x, scale, zero_point) = (x - zero_point) * scale, in the scale's type; scale and "
        "zero point broadcast to x (ONNX DequantizeLinear)";
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      if (!quantized_type(in[0].type.dtype))
        shape_error(std::string("dequantize_linear: ") + dtype_name(in[0].type.dtype) + " is not a quantized type");
      return std::vector<ValueType>{{in[1].type.dtype, quant_operands(in, "dequantize_linear", in[0].type.dtype)}};
    };
    set_kernel(d, [](const Attrs&, auto a, Given, std::size_t) {
      const auto& dims = a[0].dims();
      auto out = like(a[0], a[1].dtype(), dims);
      Broadcaster b(dims, {a[0].dims(), a[1].dims(), a[2].dims()});
      constexpr bool symbolic = !std::is_same_v<decltype(a[0].at(0)), double>;
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto v = (a[0].at(b.offset(0, i)) - a[2].at(b.offset(2, i))) * a[1].at(b.offset(1, i));
        // ONNX's reference computes in f32 and then rounds to the scale's
        // type (f16 twice rounded).
        if constexpr (!symbolic) v = round_to(DType::F32, v);
        out.set(i, v);
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    OpDef d;
    d.name = "quantize_linear";
    d.kind = OpKind::Composite;
    d.elementwise = true;
    d.moves_values = true;  // (the result may be of a type that only stores values)
    d.min_inputs = d.max_inputs = 3;
    d.doc =
        "quantize_linear(x, scale, zero_point) = saturate(round(x / scale) + zero_point) in the zero point's "
        "type, halves to even; scale and zero point broadcast to x (ONNX QuantizeLinear; a minifloat result is "
        "x / scale converted, `saturate` 0 letting it overflow)";
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      const DType to = in[2].type.dtype;
      if (!quantized_type(to) || to == DType::I32)
        shape_error(std::string("quantize_linear: ") + dtype_name(to) + " is not a quantized type");
      if (is_minifloat(in[0].type.dtype) || stores_only(in[0].type.dtype))
        shape_error(std::string("quantize_linear: x is ") + dtype_name(in[0].type.dtype) +
                    ", a type that only stores values");
      return std::vector<ValueType>{{to, quant_operands(in, "quantize_linear", to)}};
    };
    set_kernel(d, [](const Attrs& at, auto a, Given, std::size_t) {
      const auto& dims = a[0].dims();
      const DType to = a[2].dtype(), xt = a[0].dtype(), st = a[1].dtype();
      auto out = like(a[0], to, dims);
      Broadcaster b(dims, {a[0].dims(), a[1].dims(), a[2].dims()});
      constexpr bool symbolic = !std::is_same_v<decltype(a[0].at(0)), double>;
      // The quotient in the operands' type (numpy's promotion: an integer
      // x over a float scale in f64).
      const DType qt = !is_float(xt) ? DType::F64 : dtype_size(xt) >= dtype_size(st) ? xt : st;
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto q = a[0].at(b.offset(0, i)) / a[1].at(b.offset(1, i));
        if constexpr (!symbolic) {
          q = round_to(qt, q);
          if (is_minifloat(to)) {  // converted as Cast converts (FLOAT4E2M1 adds its zero point)
            if (to == DType::F4E2M1) q = round_to(qt, q + a[2].at(b.offset(2, i)));
            if (at.i("saturate", 1) || to == DType::F4E2M1)
              out.set(i, q);
            else
              out.set_unsaturated(i, q);
            continue;
          }
        } else {
          if (is_minifloat(to))
            throw SymbolicUnsupported{std::string("quantize_linear to ") + dtype_name(to) +
                                      " rounds to 2-4 bits: no symbolic form"};
          // A scale of 0 quantizes nothing (ONNX's reference divides by it):
          // rules hold for the others.
          const auto s = a[1].at(b.offset(1, i));
          a[1].context().require(scalar::select(scalar::eq(s, 0.0), 0.0, 1.0));
        }
        // Saturated as clip does, then converted as cast does (the value is
        // an integer already: written so, the decomposition in
        // rulesets/decompose.rules is this very expression).
        const auto [lo, hi] = integer_range(to);
        const auto r = scalar::min(scalar::max(round_half_even(q) + a[2].at(b.offset(2, i)), lo), hi);
        out.set(i, scalar::select(r < 0.0, scalar::ceil(r), scalar::floor(r)));
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
    r.declare_attrs("quantize_linear", {attr_int("saturate", 1)});
    r.declare_unit_work("quantize_linear", 6);
  }
}

// asinh and acosh are log(2|x|) past 2^26 (the ops "sinh" ... below).
constexpr double kLn2 = 0.6931471805599453, kHyperbolicHuge = 67108864.0;

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  using K = OpKind;
  using A = Accepts;
  namespace S = scalar;
  // The floating functors are generic (auto x): one definition serves the
  // interpreter (double) and `saturn verify` (Sym).
  auto none = [](auto x, const Attrs&) { return x; };
  // Primitives (docs/design.md): neg recip sqrt exp2 log2 sin, and the others as composites.
  unary(
      r, "neg", K::Primitive, A::Numeric, [](auto x, const Attrs&) { return -x; },
      [](std::int64_t x) { return wrapping_neg(x); });
  unary(r, "recip", K::Primitive, A::Float, [](auto x, const Attrs&) { return 1.0 / x; });
  unary(r, "sqrt", K::Primitive, A::Float, [](auto x, const Attrs&) { return S::sqrt(x); });
  unary(r, "exp2", K::Primitive, A::Float, [](auto x, const Attrs&) { return S::exp2(x); });
  unary(r, "log2", K::Primitive, A::Float, [](auto x, const Attrs&) { return S::log2(x); });
  unary(r, "sin", K::Primitive, A::Float, [](auto x, const Attrs&) { return S::sin(x); });
  unary(r, "cos", K::Composite, A::Float, [](auto x, const Attrs&) { return S::cos(x); });
  unary(r, "exp", K::Composite, A::Float, [](auto x, const Attrs&) { return S::exp(x); });
  unary(r, "log", K::Composite, A::Float, [](auto x, const Attrs&) { return S::log(x); });
  unary(r, "tanh", K::Composite, A::Float, [](auto x, const Attrs&) { return S::tanh(x); });
  unary(r, "erf", K::Composite, A::Float, [](auto x, const Attrs&) { return S::erf(x); });
  unary(
      r, "abs", K::Composite, A::Numeric, [](auto x, const Attrs&) { return S::abs(x); },
      [](std::int64_t x) { return x < 0 ? wrapping_neg(x) : x; }, [](std::uint64_t x) { return x; });
  unary(
      r, "sign", K::Composite, A::Numeric,
      [](auto x, const Attrs&) { return S::select(x > 0.0, 1.0, S::select(x < 0.0, -1.0, 0.0)); },
      [](std::int64_t x) { return static_cast<std::int64_t>((x > 0) - (x < 0)); },
      [](std::uint64_t x) { return std::uint64_t{x != 0}; });
  unary(r, "ceil", K::Composite, A::Float, [](auto x, const Attrs&) { return S::ceil(x); });
  unary(r, "floor", K::Composite, A::Float, [](auto x, const Attrs&) { return S::floor(x); });
  unary(
      r, "round", K::Composite, A::Float, [](auto x, const Attrs&) { return round_half_even(x); }, {}, {},
      "elementwise round(x) to the nearest integer, halves to the even one (ONNX Round, numpy.rint)");
  unary(r, "sigmoid", K::Composite, A::Float, [](auto x, const Attrs&) { return 1.0 / (1.0 + S::exp(-x)); });
  unary(
      // max(x, 0), NaN-propagating as ONNX's reference (numpy.maximum),
      // PyTorch, oneDNN's and cuDNN's ReLU: a NaN stays NaN.
      r, "relu", K::Composite, A::Numeric, [](auto x, const Attrs&) { return S::max(x, 0.0); },
      [](std::int64_t x) { return x > 0 ? x : 0; }, [](std::uint64_t x) { return x; });
  unary(r, "leaky_relu", K::Composite, A::Float,
        [](auto x, const Attrs& a) { return S::select(x >= 0.0, x, a.f("alpha", 0.01) * x); });
  unary(r, "elu", K::Composite, A::Float,
        [](auto x, const Attrs& a) { return S::select(x >= 0.0, x, a.f("alpha", 1.0) * (S::exp(x) - 1.0)); });
  unary(r, "selu", K::Composite, A::Float, [](auto x, const Attrs& a) {
    double alpha = a.f("alpha", 1.67326319217681884765625), gamma = a.f("gamma", 1.05070102214813232421875);
    return gamma * S::select(x > 0.0, x, alpha * (S::exp(x) - 1.0));
  });
  // ONNX's Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)).
  unary(r, "celu", K::Composite, A::Float, [](auto x, const Attrs& a) {
    const double alpha = a.f("alpha", 1.0);
    return S::max(0.0, x) + S::min(0.0, alpha * (S::exp(x / alpha) - 1.0));
  });
  unary(r, "softsign", K::Composite, A::Float, [](auto x, const Attrs&) { return x / (1.0 + S::abs(x)); });
  unary(r, "thresholded_relu", K::Composite, A::Float,
        [](auto x, const Attrs& a) { return S::select(x > a.f("alpha", 1.0), x, 0.0); });
  // ONNX's Shrink: x + bias below -lambd, x - bias above lambd, else 0
  // (torch's hardshrink and softshrink).
  unary(r, "shrink", K::Composite, A::Float, [](auto x, const Attrs& a) {
    const double bias = a.f("bias", 0.0), lambd = a.f("lambd", 0.5);
    return S::select(x < -lambd, x + bias, S::select(x > lambd, x - bias, 0.0));
  });
  unary(r, "tan", K::Composite, A::Float, [](auto x, const Attrs&) { return S::sin(x) / S::cos(x); });
  // The hyperbolic functions and their inverses (ONNX Sinh, Cosh, Asinh,
  // Acosh, Atanh) from exp, log and log1p, in forms that keep float32's
  // precision where the textbook ones lose it: sinh's difference of
  // exponentials cancels near 0, where its Taylor series to x^7 is exact to
  // float64's rounding (|x| < 1/8); the inverses take log1p of what log
  // would add to 1 (asinh(1e-4) is 1e-4, not log(1.0001) rounded); past
  // 2^26, where x^2 overflows float32 first, asinh and acosh are
  // log(2|x|), which they equal there to float64's rounding.
  unary(r, "sinh", K::Composite, A::Float, [](auto x, const Attrs&) {
    auto x2 = x * x;
    return S::select(S::abs(x) < 0.125, x * (1.0 + x2 * (1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 / 5040.0))),
                     (S::exp(x) - S::exp(-x)) * 0.5);
  });
  unary(r, "cosh", K::Composite, A::Float, [](auto x, const Attrs&) { return (S::exp(x) + S::exp(-x)) * 0.5; });
  unary(r, "asinh", K::Composite, A::Float, [](auto x, const Attrs&) {
    auto s = S::abs(x);
    auto m = S::select(s > kHyperbolicHuge, S::log(s) + kLn2, S::log1p(s + s * s / (1.0 + S::sqrt(1.0 + s * s))));
    return S::select(x < 0.0, -m, m);
  });
  unary(r, "acosh", K::Composite, A::Float, [](auto x, const Attrs&) {
    auto t = x - 1.0;
    return S::select(x > kHyperbolicHuge, S::log(x) + kLn2, S::log1p(t + S::sqrt(t * (t + 2.0))));
  });
  unary(r, "atanh", K::Composite, A::Float, [](auto x, const Attrs&) { return S::log1p(2.0 * x / (1.0 - x)) * 0.5; });
  // Predicates on floating values, giving bools (ONNX IsNaN, IsInf).
  auto predicate = [&](const char* name, const char* doc, auto f) {
    OpDef d;
    d.name = name;
    d.kind = K::Composite;
    d.elementwise = true;
    d.doc = doc;
    d.infer = [name](const Attrs&, Inputs in, std::size_t) {
      check_accepts(A::Float, in[0].type.dtype, name);
      return std::vector<ValueType>{{DType::Bool, in[0].type.shape}};
    };
    set_kernel(d, [f](const Attrs& at, auto a, Given, std::size_t) {
      auto out = like(a[0], DType::Bool, a[0].dims());
      for (std::size_t i = 0; i < out.numel(); ++i) out.set(i, f(a[0].at(i), at));
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  };
  predicate("is_nan", "elementwise: whether x is NaN, on floating types (bool)",
            [](auto x, const Attrs&) { return S::select(S::eq(x, x), 0.0, 1.0); });
  predicate("is_inf",
            "elementwise: whether x is an infinity, on floating types (bool): +inf when `detect_positive`, -inf when "
            "`detect_negative`",
            [](auto x, const Attrs& a) {
              const double inf = std::numeric_limits<double>::infinity();
              const double pos = a.i("detect_positive", 1) != 0 ? 1.0 : 0.0;
              const double neg = a.i("detect_negative", 1) != 0 ? 1.0 : 0.0;
              return S::select(S::eq(x, inf), pos, S::select(S::eq(x, -inf), neg, 0.0));
            });
  // x tanh(softplus(x)), softplus as the op computes it.
  unary(r, "mish", K::Composite, A::Float,
        [](auto x, const Attrs&) { return x * S::tanh(S::select(x > 30.0, x, S::log1p(S::exp(x)))); });
  unary(r, "hard_sigmoid", K::Composite, A::Float,
        [](auto x, const Attrs& a) { return S::max(0.0, S::min(1.0, a.f("alpha", 0.2) * x + a.f("beta", 0.5))); });
  unary(r, "hard_swish", K::Composite, A::Float,
        [](auto x, const Attrs&) { return x * S::max(0.0, S::min(1.0, (1.0 / 6.0) * x + 0.5)); });
  // Above 30, log1p(exp(x)) is x in double: the reference says so directly.
  unary(r, "softplus", K::Composite, A::Float,
        [](auto x, const Attrs&) { return S::select(x > 30.0, x, S::log1p(S::exp(x))); });
  unary(r, "gelu", K::Composite, A::Float, [](auto x, const Attrs& a) {
    if (a.s("approximate", "none") == "tanh")
      return 0.5 * x * (1.0 + S::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + S::erf(x / std::sqrt(2.0)));
  });
  unary(r, "identity", K::Composite, A::Any, none, [](std::int64_t x) { return x; });
  r.declare_view("identity");
  // A scheduling primitive (tinygrad's CONTIGUOUS): its value is x, written
  // to memory where it is made, so that the kernels reading it read it
  // instead of each computing it again. The extractor places it
  // (rulesets/fusion.rules); the lowering only follows.
  unary(
      r, "materialize", K::Primitive, A::Any, none, [](std::int64_t x) { return x; }, {},
      "x, stored where it is made: the kernels that read it read memory instead of each computing x again "
      "(a fusion boundary the extractor chooses)");
  r.declare_unit_work("materialize", 0);  // (the kernel of the chain it stores does the work)
  unary(
      r, "not", K::Composite, A::Bool, [](auto x, const Attrs&) { return S::select(S::eq(x, 0.0), 1.0, 0.0); },
      [](std::int64_t x) { return static_cast<std::int64_t>(x == 0); });

  binary(
      r, "add", K::Primitive, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return x + y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return wrapping_add(x, y); });
  binary(
      r, "sub", K::Composite, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return x - y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return wrapping_sub(x, y); });
  binary(
      r, "mul", K::Primitive, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return x * y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return wrapping_mul(x, y); });
  binary(
      r, "div", K::Primitive, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return x / y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) { return int_quotient(x, y); },  // ONNX's: truncating
      [](const Sym& x, const Sym& y, const Attrs&) { return S::int_div(x, y); }, false,
      [](std::uint64_t x, std::uint64_t y) -> std::optional<std::uint64_t> {
        if (y == 0) return std::nullopt;
        return x / y;
      });
  // Integer modulo: ONNX's fmod=1 is C's remainder (the dividend's sign),
  // fmod=0 the floor modulo (the divisor's sign).
  binary(
      r, "mod", K::Primitive, A::Numeric, std::nullopt,
      [](auto x, auto y, const Attrs& a) {
        if (a.i("fmod", 0)) return S::fmod(x, y);
        return x - y * S::floor(x / y);
      },
      [](std::int64_t x, std::int64_t y, const Attrs& a) -> std::optional<std::int64_t> {
        const std::optional<std::int64_t> m = int_remainder(x, y);
        if (!m || a.i("fmod", 0) || *m == 0 || (*m < 0) == (y < 0)) return m;
        return wrapping_add(*m, y);
      },
      [](const Sym& x, const Sym& y, const Attrs& a) {
        const Sym m = S::int_rem(x, y);
        if (a.i("fmod", 0)) return m;
        // + y where m is nonzero and its sign is not y's
        return m + S::select(S::eq(m, 0.0), 0.0,
                             S::select(m < 0.0, S::select(y < 0.0, 0.0, y), S::select(y < 0.0, y, 0.0)));
      },
      false, [](std::uint64_t x, std::uint64_t y) -> std::optional<std::uint64_t> {  // both moduli agree
        if (y == 0) return std::nullopt;
        return x % y;
      });
  binary(
      r, "pow", K::Composite, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return S::pow(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) { return int_power(x, y); },
      [](const Sym& x, const Sym& y, const Attrs&) { return S::int_pow(x, y); },
      /*mixed_types=*/true);
  binary(
      r, "max", K::Primitive, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return S::max(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return std::max(x, y); }, {},
      false, [](std::uint64_t x, std::uint64_t y) -> std::optional<std::uint64_t> { return std::max(x, y); });
  binary(
      r, "min", K::Composite, A::Numeric, std::nullopt, [](auto x, auto y, const Attrs&) { return S::min(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return std::min(x, y); }, {},
      false, [](std::uint64_t x, std::uint64_t y) -> std::optional<std::uint64_t> { return std::min(x, y); });
  binary(
      r, "prelu", K::Composite, A::Numeric, std::nullopt,
      [](auto x, auto s, const Attrs&) { return S::select(x < 0.0, s * x, x); },
      [](std::int64_t x, std::int64_t s, const Attrs&) -> std::optional<std::int64_t> {
        return x < 0 ? wrapping_mul(s, x) : x;
      });

  auto cmp = [&](const char* name, OpKind kind, auto op, auto unsigned_op) {
    binary(
        r, name, kind, Accepts::Any, DType::Bool,
        [op](auto x, auto y, const Attrs&) { return S::select(op(x, y), 1.0, 0.0); },
        [op](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
          return static_cast<std::int64_t>(op(x, y));
        },
        {}, false,
        [unsigned_op](std::uint64_t x, std::uint64_t y) -> std::optional<std::uint64_t> {
          return unsigned_op(x, y) ? 1 : 0;
        });
  };
  cmp(
      "equal", K::Composite, [](auto x, auto y) { return S::eq(x, y); }, std::equal_to<>{});
  cmp(
      "less", K::Primitive, [](auto x, auto y) { return x < y; }, std::less<>{});  // DESIGN's cmplt
  cmp(
      "less_equal", K::Composite, [](auto x, auto y) { return x <= y; }, std::less_equal<>{});
  cmp(
      "greater", K::Composite, [](auto x, auto y) { return x > y; }, std::greater<>{});
  cmp(
      "greater_equal", K::Composite, [](auto x, auto y) { return x >= y; }, std::greater_equal<>{});
  auto logic = [&](const char* name, auto op) {
    binary(
        r, name, K::Composite, Accepts::Bool, DType::Bool, [op](auto x, auto y, const Attrs&) { return op(x, y); },
        [op](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
          return op(static_cast<double>(x != 0), static_cast<double>(y != 0)) != 0;
        });
  };
  // Written with select so that one definition serves bools held as doubles
  // (nonzero is true) and as symbols; the integer variant gets 0/1 values.
  logic("and", [](auto x, auto y) { return S::select(x, S::select(y, 1.0, 0.0), 0.0); });
  logic("or", [](auto x, auto y) { return S::select(x, 1.0, S::select(y, 1.0, 0.0)); });
  logic("xor", [](auto x, auto y) { return S::select(x, S::select(y, 0.0, 1.0), S::select(y, 1.0, 0.0)); });

  {
    OpDef d;
    d.name = "where";
    d.moves_values = true;
    d.elementwise = true;
    d.kind = OpKind::Primitive;
    d.doc = "where(cond, x, y): x where cond holds, else y (broadcast)";
    d.min_inputs = d.max_inputs = 3;
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      if (in[0].type.dtype != DType::Bool) shape_error("where: the condition must be bool");
      if (in[1].type.dtype != in[2].type.dtype) shape_error("where: the two branches have different types");
      return std::vector<ValueType>{{in[1].type.dtype, broadcast_all(in, "where")}};
    };
    d.admits = [](const Attrs&, Inputs in) {
      return in[0].type.dtype == DType::Bool && in[1].type.dtype == in[2].type.dtype && broadcastable(in);
    };
    set_kernel(d, [](const Attrs&, auto a, Given, std::size_t) {
      auto dims = broadcast_dims(a);
      auto out = like(a[1], a[1].dtype(), dims);
      Broadcaster b(dims, {a[0].dims(), a[1].dims(), a[2].dims()});
      // Symbolic branches of any type are chosen with select: where moves values.
      const bool fl = is_float(a[1].dtype()) || !std::is_same_v<decltype(a[1].at(0)), double>;
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = b.offset(0, i), x = b.offset(1, i), y = b.offset(2, i);
        if (fl)
          out.set(i, scalar::select(a[0].at(c), a[1].at(x), a[2].at(y)));
        else
          out.set_int(i, a[0].at_int(c) ? a[1].at_int(x) : a[2].at_int(y));
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  // cast, and cast_unsaturated: Cast with `saturate = 0`, whose result
  // overflows a minifloat to infinity or NaN (ir/minifloat.hpp).
  auto cast = [&](const char* name, bool saturate) {
    OpDef d;
    d.name = name;
    // (cast_unsaturated's results are minifloats, which loop kernels do not
    // compute: it is not a fusable elementwise op.)
    d.elementwise = saturate;
    d.moves_values = true;
    d.kind = saturate ? OpKind::Primitive : OpKind::Composite;
    d.doc = saturate ? "cast(x) to the dtype named by attribute `to`"
                     : "cast(x) to the dtype named by attribute `to`; a minifloat overflows to infinity or NaN "
                       "instead of saturating (ONNX Cast saturate = 0)";
    d.infer = [name, saturate](const Attrs& a, Inputs in, std::size_t) {
      auto t = dtype_from_name(a.s("to", ""));
      if (!t) shape_error(std::string(name) + ": unknown target type '" + a.s("to", "") + "'");
      if (!saturate && !is_minifloat(*t))
        shape_error(std::string(name) + ": the target " + dtype_name(*t) +
                    " is not a minifloat (only those saturate; cast converts to the others)");
      return std::vector<ValueType>{{*t, in[0].type.shape}};
    };
    d.eval = [saturate](const Attrs& a, Args x, Given, std::size_t) {
      const DType to = *dtype_from_name(a.s("to", "")), from = x[0].dtype();
      Tensor out(to, x[0].dims());
      for (std::size_t i = 0; i < out.numel(); ++i) {
        if (!saturate)
          out.set_unsaturated(i, x[0].at(i));
        else if (is_float(from) || (from == DType::U64 && !is_integer(to)))  // a u64 by value, else its bits
          out.set(i, x[0].at(i));
        else
          out.set_int(i, x[0].at_int(i));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    if (!saturate) {
      r.add(std::move(d));
      return;
    }
    // Over the reals a conversion to a floating type, or between equal
    // types, or from bool, is the value itself (as every float op is exact
    // there); to bool it is `x != 0`, NaN true as Tensor::set stores it.
    // So is a widening integer conversion (every value of the source type
    // is one of the target's). A float to an integer is truncated toward
    // zero (integers being unbounded there, as for add). Wrapping to a
    // narrower integer has no symbolic form. The CPU and CUDA kernels fuse
    // casts through this (lower/lower_elementwise.cpp), storing an integer
    // result as Tensor::set does (saturated, wrapped).
    d.symbolic = [](const Attrs& a, std::span<const SymTensor> x, Given, std::size_t) {
      const DType to = *dtype_from_name(a.s("to", ""));
      const DType from = x[0].dtype();
      const bool widening = integer_type_contains(to, from);
      const bool truncating = is_float(from) && is_integer(to);
      if (to != DType::Bool && !is_float(to) && from != to && from != DType::Bool && !widening && !truncating)
        throw SymbolicUnsupported{std::string("cast from ") + dtype_name(from) + " to " + dtype_name(to) +
                                  " wraps: no symbolic form"};
      // A minifloat keeps 2 or 3 significant bits: no rounding of the reals.
      if (is_minifloat(to) && from != to)
        throw SymbolicUnsupported{std::string("cast to ") + dtype_name(to) + " rounds to 2-4 bits: no symbolic form"};
      SymTensor out = like(x[0], to, x[0].dims());
      for (std::size_t i = 0; i < out.numel(); ++i) {
        const Sym v = x[0].at(i);
        out.set(i, to == DType::Bool ? scalar::select(scalar::eq(v, 0.0), 0.0, 1.0)
                   : truncating      ? scalar::select(v < 0.0, scalar::ceil(v), scalar::floor(v))
                                     : v);
      }
      return std::vector<SymTensor>{std::move(out)};
    };
    r.add(std::move(d));
  };
  cast("cast", true);
  cast("cast_unsaturated", false);
  {
    OpDef d;
    d.name = "clip";
    d.elementwise = true;
    d.doc = "clip(x) to [min, max] (attributes; either may be absent)";
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      check_accepts(Accepts::Numeric, in[0].type.dtype, "clip");
      return std::vector<ValueType>{in[0].type};
    };
    set_kernel(d, [](const Attrs& a, auto x, Given, std::size_t) {
      auto out = like(x[0], x[0].dtype(), x[0].dims());
      // Symbolic integers are held as reals, exact for max and min with the
      // integer bounds.
      constexpr bool symbolic = !std::is_same_v<decltype(x[0].at(0)), double>;
      for (std::size_t i = 0; i < out.numel(); ++i) {
        if (is_float(x[0].dtype())) {
          auto v = x[0].at(i);  // max and min keep a NaN
          if (a.has("min")) v = scalar::max(v, a.f("min", 0.0));
          if (a.has("max")) v = scalar::min(v, a.f("max", 0.0));
          out.set(i, v);
        } else if constexpr (symbolic) {
          auto v = x[0].at(i);
          if (a.has("min")) v = scalar::max(v, static_cast<double>(a.i("min", 0)));
          if (a.has("max")) v = scalar::min(v, static_cast<double>(a.i("max", 0)));
          out.set(i, v);
        } else {
          std::int64_t v = x[0].at_int(i);
          if (a.has("min")) v = std::max(v, a.i("min", 0));
          if (a.has("max")) v = std::min(v, a.i("max", 0));
          out.set_int(i, v);
        }
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }

  register_quantization(r);

  // Attributes, in e-graph order.
  r.declare_attrs("leaky_relu", {attr_real("alpha", 0.01)});
  r.declare_attrs("elu", {attr_real("alpha", 1.0)});
  r.declare_attrs("selu",
                  {attr_real("alpha", 1.67326319217681884765625), attr_real("gamma", 1.05070102214813232421875)});
  r.declare_attrs("hard_sigmoid", {attr_real("alpha", 0.2), attr_real("beta", 0.5)});
  r.declare_attrs("celu", {attr_real("alpha", 1.0)});
  r.declare_attrs("thresholded_relu", {attr_real("alpha", 1.0)});
  r.declare_attrs("shrink", {attr_real("bias", 0.0), attr_real("lambd", 0.5)});
  r.declare_attrs("is_inf", {attr_int("detect_negative", 1), attr_int("detect_positive", 1)});
  r.declare_attrs("gelu", {attr_choice("approximate", "none", {"none", "tanh"})});
  r.declare_attrs("mod", {attr_int("fmod", 0)});
  r.declare_attrs("cast", {attr_string("to")});
  r.declare_attrs("cast_unsaturated", {attr_string("to")});
  r.declare_attrs("clip", {attr_real("min"), attr_real("max")});

  // Operations per element, for the cost models (extract/cost_model.cpp;
  // the others count one). log, log2, exp2 and softplus: from the CPU
  // target's inline forms over 1 M floats, 2 threads (0.26 ms for log and
  // log2, 0.15 for exp and exp2, 0.65 for softplus).
  for (const auto& [op, ops] : std::initializer_list<std::pair<const char*, double>>{
           {"exp", 8},        {"log", 14},         {"exp2", 8},      {"log2", 14},    {"tanh", 10},  {"erf", 10},
           {"sigmoid", 10},   {"gelu", 20},        {"softplus", 36}, {"sin", 10},     {"cos", 10},   {"pow", 20},
           {"sqrt", 4},       {"div", 4},          {"recip", 4},     {"elu", 10},     {"selu", 10},  {"mod", 4},
           {"hard_swish", 4}, {"hard_sigmoid", 3}, {"celu", 10},     {"softsign", 5}, {"tan", 24},   {"mish", 50},
           {"shrink", 3},     {"sinh", 24},        {"cosh", 18},     {"asinh", 30},   {"acosh", 30}, {"atanh", 20}})
    r.declare_unit_work(op, ops);
}

}  // namespace saturn::ir
