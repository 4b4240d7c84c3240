// Elementwise ops: unary, binary with numpy broadcasting, comparisons,
// logic, where, cast, clip. Floating types compute in double and round to
// the result type; integer types compute in int64.
#include <cmath>
#include <limits>

#include "ir/op.hpp"

namespace saturn::ir {

namespace {

using Args = std::span<const Tensor>;
using Given = std::span<const bool>;
using Inputs = std::span<const TypedInput>;

// Offsets of each operand for every output element, numpy-broadcast.
class Broadcaster {
 public:
  Broadcaster(const std::vector<std::int64_t>& out, std::vector<const Tensor*> ins) : out_(out) {
    const std::size_t r = out.size();
    for (const Tensor* t : ins) {
      std::vector<std::int64_t> s(r, 0);
      auto st = t->strides();
      std::size_t off = r - t->rank();
      for (std::size_t d = 0; d < t->rank(); ++d) s[off + d] = t->dims()[d] == 1 ? 0 : st[d];
      strides_.push_back(std::move(s));
    }
    out_strides_.assign(r, 1);
    for (std::size_t d = r; d-- > 1;) out_strides_[d - 1] = out_strides_[d] * out[d];
  }
  std::int64_t offset(std::size_t operand, std::int64_t i) const {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < out_.size(); ++d) off += ((i / out_strides_[d]) % out_[d]) * strides_[operand][d];
    return off;
  }

 private:
  std::vector<std::int64_t> out_, out_strides_;
  std::vector<std::vector<std::int64_t>> strides_;
};

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

std::vector<std::int64_t> broadcast_dims(Args a) {
  Shape s = shape_of(a[0].dims());
  for (std::size_t k = 1; k < a.size(); ++k) s = *broadcast(s, shape_of(a[k].dims()));
  return static_dims(s);
}

void same_dtype(Inputs in, const char* op) {
  for (const TypedInput& t : in)
    if (t.type.dtype != in[0].type.dtype)
      shape_error(std::string(op) + ": operand types differ (" + dtype_name(in[0].type.dtype) + " and " +
                  dtype_name(t.type.dtype) + ")");
}

enum class Accepts { Float, Numeric, Any, Bool };

void check_accepts(Accepts acc, DType t, const char* op) {
  bool ok = acc == Accepts::Any || (acc == Accepts::Float && is_float(t)) ||
            (acc == Accepts::Numeric && t != DType::Bool) || (acc == Accepts::Bool && t == DType::Bool);
  if (!ok) shape_error(std::string(op) + " does not take " + dtype_name(t) + " operands");
}

// A unary op computing in double (and, when given, in int64 for integers).
void unary(OpRegistry& r, const char* name, OpKind kind, Accepts acc, std::function<double(double, const Attrs&)> f,
           std::function<std::int64_t(std::int64_t)> fi = {}, const char* doc = "") {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.doc = *doc ? std::string(doc)
               : std::string("elementwise ") + name + "(x)" + (acc == Accepts::Float ? " on floating types" : "");
  d.infer = [name, acc](const Attrs&, Inputs in, std::size_t) {
    check_accepts(acc, in[0].type.dtype, name);
    return std::vector<ValueType>{in[0].type};
  };
  d.eval = [f, fi](const Attrs& at, Args a, Given, std::size_t) {
    Tensor out(a[0].dtype(), a[0].dims());
    for (std::size_t i = 0; i < out.numel(); ++i) {
      if (fi && !is_float(a[0].dtype()))
        out.set_int(i, fi(a[0].at_int(i)));
      else
        out.set(i, f(a[0].at(i), at));
    }
    return std::vector<Tensor>{std::move(out)};
  };
  r.add(std::move(d));
}

// A binary op with broadcasting; `result` fixes the result dtype (nullopt:
// the operands' dtype).
void binary(OpRegistry& r, const char* name, OpKind kind, Accepts acc, std::optional<DType> result,
            std::function<double(double, double, const Attrs&)> f,
            std::function<std::optional<std::int64_t>(std::int64_t, std::int64_t, const Attrs&)> fi,
            bool mixed_types = false) {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.min_inputs = d.max_inputs = 2;
  d.doc = std::string("elementwise ") + name + "(a, b) with numpy broadcasting" +
          (result == DType::Bool ? ", giving bool" : "");
  d.infer = [name, acc, result, mixed_types](const Attrs&, Inputs in, std::size_t) {
    if (!mixed_types) same_dtype(in, name);
    check_accepts(acc, in[0].type.dtype, name);
    return std::vector<ValueType>{{result.value_or(in[0].type.dtype), broadcast_all(in, name)}};
  };
  d.eval = [f, fi, result](const Attrs& at, Args a, Given, std::size_t) {
    auto dims = broadcast_dims(a);
    Tensor out(result.value_or(a[0].dtype()), dims);
    Broadcaster b(dims, {&a[0], &a[1]});
    const bool integral = !is_float(a[0].dtype()) && fi;
    for (std::size_t i = 0; i < out.numel(); ++i) {
      auto ia = b.offset(0, static_cast<std::int64_t>(i)), ib = b.offset(1, static_cast<std::int64_t>(i));
      if (integral) {
        auto v = fi(a[0].at_int(static_cast<std::size_t>(ia)), a[1].at_int(static_cast<std::size_t>(ib)), at);
        if (!v) shape_error("integer division by zero");
        out.set_int(i, *v);
      } else {
        out.set(i, f(a[0].at(static_cast<std::size_t>(ia)), a[1].at(static_cast<std::size_t>(ib)), at));
      }
    }
    return std::vector<Tensor>{std::move(out)};
  };
  r.add(std::move(d));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  std::int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  using K = OpKind;
  using A = Accepts;
  auto none = [](double x, const Attrs&) { return x; };
  // Primitives (DESIGN.md): neg recip sqrt exp2 log2 sin, and the others as composites.
  unary(
      r, "neg", K::Primitive, A::Numeric, [](double x, const Attrs&) { return -x; }, [](std::int64_t x) { return -x; });
  unary(r, "recip", K::Primitive, A::Float, [](double x, const Attrs&) { return 1.0 / x; });
  unary(r, "sqrt", K::Primitive, A::Float, [](double x, const Attrs&) { return std::sqrt(x); });
  unary(r, "exp2", K::Primitive, A::Float, [](double x, const Attrs&) { return std::exp2(x); });
  unary(r, "log2", K::Primitive, A::Float, [](double x, const Attrs&) { return std::log2(x); });
  unary(r, "sin", K::Primitive, A::Float, [](double x, const Attrs&) { return std::sin(x); });
  unary(r, "cos", K::Composite, A::Float, [](double x, const Attrs&) { return std::cos(x); });
  unary(r, "exp", K::Composite, A::Float, [](double x, const Attrs&) { return std::exp(x); });
  unary(r, "log", K::Composite, A::Float, [](double x, const Attrs&) { return std::log(x); });
  unary(r, "tanh", K::Composite, A::Float, [](double x, const Attrs&) { return std::tanh(x); });
  unary(r, "erf", K::Composite, A::Float, [](double x, const Attrs&) { return std::erf(x); });
  unary(
      r, "abs", K::Composite, A::Numeric, [](double x, const Attrs&) { return std::fabs(x); },
      [](std::int64_t x) { return x < 0 ? -x : x; });
  unary(
      r, "sign", K::Composite, A::Numeric,
      [](double x, const Attrs&) { return static_cast<double>((x > 0) - (x < 0)); },
      [](std::int64_t x) { return static_cast<std::int64_t>((x > 0) - (x < 0)); });
  unary(r, "ceil", K::Composite, A::Float, [](double x, const Attrs&) { return std::ceil(x); });
  unary(r, "floor", K::Composite, A::Float, [](double x, const Attrs&) { return std::floor(x); });
  unary(r, "sigmoid", K::Composite, A::Float, [](double x, const Attrs&) { return sigmoid(x); });
  unary(
      r, "relu", K::Composite, A::Numeric, [](double x, const Attrs&) { return x > 0 ? x : 0.0; },
      [](std::int64_t x) { return x > 0 ? x : 0; });
  unary(r, "leaky_relu", K::Composite, A::Float,
        [](double x, const Attrs& a) { return x >= 0 ? x : a.f("alpha", 0.01) * x; });
  unary(r, "elu", K::Composite, A::Float,
        [](double x, const Attrs& a) { return x >= 0 ? x : a.f("alpha", 1.0) * (std::exp(x) - 1); });
  unary(r, "selu", K::Composite, A::Float, [](double x, const Attrs& a) {
    double alpha = a.f("alpha", 1.67326319217681884765625), gamma = a.f("gamma", 1.05070102214813232421875);
    return gamma * (x > 0 ? x : alpha * (std::exp(x) - 1));
  });
  unary(r, "hard_sigmoid", K::Composite, A::Float, [](double x, const Attrs& a) {
    return std::max(0.0, std::min(1.0, a.f("alpha", 0.2) * x + a.f("beta", 0.5)));
  });
  unary(r, "hard_swish", K::Composite, A::Float,
        [](double x, const Attrs&) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  unary(r, "softplus", K::Composite, A::Float,
        [](double x, const Attrs&) { return x > 30 ? x : std::log1p(std::exp(x)); });
  unary(r, "gelu", K::Composite, A::Float, [](double x, const Attrs& a) {
    if (a.s("approximate", "none") == "tanh")
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  });
  unary(r, "identity", K::Composite, A::Any, none, [](std::int64_t x) { return x; });
  unary(
      r, "not", K::Composite, A::Bool, [](double x, const Attrs&) { return x == 0 ? 1.0 : 0.0; },
      [](std::int64_t x) { return static_cast<std::int64_t>(x == 0); });

  auto div0 = [](std::int64_t, std::int64_t b) { return b == 0; };
  binary(
      r, "add", K::Primitive, A::Numeric, std::nullopt, [](double x, double y, const Attrs&) { return x + y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y));
      });
  binary(
      r, "sub", K::Composite, A::Numeric, std::nullopt, [](double x, double y, const Attrs&) { return x - y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y));
      });
  binary(
      r, "mul", K::Primitive, A::Numeric, std::nullopt, [](double x, double y, const Attrs&) { return x * y; },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y));
      });
  binary(
      r, "div", K::Primitive, A::Numeric, std::nullopt, [](double x, double y, const Attrs&) { return x / y; },
      [div0](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
        if (div0(x, y)) return std::nullopt;
        return x / y;  // truncation toward zero, as ONNX's integer Div
      });
  binary(
      r, "mod", K::Primitive, A::Numeric, std::nullopt,
      [](double x, double y, const Attrs& a) { return a.i("fmod", 0) ? std::fmod(x, y) : x - y * std::floor(x / y); },
      [div0](std::int64_t x, std::int64_t y, const Attrs& a) -> std::optional<std::int64_t> {
        if (div0(x, y)) return std::nullopt;
        return a.i("fmod", 0) ? x % y : floor_mod(x, y);
      });
  binary(
      r, "pow", K::Composite, A::Numeric, std::nullopt, [](double x, double y, const Attrs&) { return std::pow(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
        return static_cast<std::int64_t>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      },
      /*mixed_types=*/true);
  binary(
      r, "max", K::Primitive, A::Numeric, std::nullopt,
      [](double x, double y, const Attrs&) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return std::max(x, y); });
  binary(
      r, "min", K::Composite, A::Numeric, std::nullopt,
      [](double x, double y, const Attrs&) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); },
      [](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return std::min(x, y); });
  binary(
      r, "prelu", K::Composite, A::Numeric, std::nullopt,
      [](double x, double s, const Attrs&) { return x < 0 ? s * x : x; },
      [](std::int64_t x, std::int64_t s, const Attrs&) -> std::optional<std::int64_t> { return x < 0 ? s * x : x; });

  auto cmp = [&](const char* name, OpKind kind, auto op) {
    binary(
        r, name, kind, Accepts::Any, DType::Bool,
        [op](double x, double y, const Attrs&) { return op(x, y) ? 1.0 : 0.0; },
        [op](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> { return op(x, y); });
  };
  cmp("equal", K::Composite, [](auto x, auto y) { return x == y; });
  cmp("less", K::Primitive, [](auto x, auto y) { return x < y; });  // DESIGN's cmplt
  cmp("less_equal", K::Composite, [](auto x, auto y) { return x <= y; });
  cmp("greater", K::Composite, [](auto x, auto y) { return x > y; });
  cmp("greater_equal", K::Composite, [](auto x, auto y) { return x >= y; });
  auto logic = [&](const char* name, auto op) {
    binary(
        r, name, K::Composite, Accepts::Bool, DType::Bool,
        [op](double x, double y, const Attrs&) { return op(x != 0, y != 0) ? 1.0 : 0.0; },
        [op](std::int64_t x, std::int64_t y, const Attrs&) -> std::optional<std::int64_t> {
          return op(x != 0, y != 0);
        });
  };
  logic("and", [](bool x, bool y) { return x && y; });
  logic("or", [](bool x, bool y) { return x || y; });
  logic("xor", [](bool x, bool y) { return x != y; });

  {
    OpDef d;
    d.name = "where";
    d.kind = OpKind::Primitive;
    d.doc = "where(cond, x, y): x where cond holds, else y (broadcast)";
    d.min_inputs = d.max_inputs = 3;
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      if (in[0].type.dtype != DType::Bool) shape_error("where: the condition must be bool");
      if (in[1].type.dtype != in[2].type.dtype) shape_error("where: the two branches have different types");
      return std::vector<ValueType>{{in[1].type.dtype, broadcast_all(in, "where")}};
    };
    d.eval = [](const Attrs&, Args a, Given, std::size_t) {
      auto dims = broadcast_dims(a);
      Tensor out(a[1].dtype(), dims);
      Broadcaster b(dims, {&a[0], &a[1], &a[2]});
      const bool fl = is_float(a[1].dtype());
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto I = static_cast<std::int64_t>(i);
        const Tensor& src = a[0].at_int(static_cast<std::size_t>(b.offset(0, I))) ? a[1] : a[2];
        auto off = static_cast<std::size_t>(b.offset(&src == &a[1] ? 1 : 2, I));
        if (fl)
          out.set(i, src.at(off));
        else
          out.set_int(i, src.at_int(off));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d;
    d.name = "cast";
    d.kind = OpKind::Primitive;
    d.doc = "cast(x) to the dtype named by attribute `to`";
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto t = dtype_from_name(a.s("to", ""));
      if (!t) shape_error("cast: unknown target type '" + a.s("to", "") + "'");
      return std::vector<ValueType>{{*t, in[0].type.shape}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      DType to = *dtype_from_name(a.s("to", ""));
      Tensor out(to, x[0].dims());
      for (std::size_t i = 0; i < out.numel(); ++i) {
        if (is_float(x[0].dtype()))
          out.set(i, x[0].at(i));
        else
          out.set_int(i, x[0].at_int(i));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d;
    d.name = "clip";
    d.doc = "clip(x) to [min, max] (attributes; either may be absent)";
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      check_accepts(Accepts::Numeric, in[0].type.dtype, "clip");
      return std::vector<ValueType>{in[0].type};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      Tensor out(x[0].dtype(), x[0].dims());
      double lo = a.f("min", -std::numeric_limits<double>::infinity());
      double hi = a.f("max", std::numeric_limits<double>::infinity());
      for (std::size_t i = 0; i < out.numel(); ++i) {
        if (is_float(x[0].dtype())) {
          double v = x[0].at(i);
          out.set(i, std::isnan(v) ? v : std::min(std::max(v, lo), hi));
        } else {
          std::int64_t v = x[0].at_int(i);
          if (a.has("min")) v = std::max(v, a.i("min", 0));
          if (a.has("max")) v = std::min(v, a.i("max", 0));
          out.set_int(i, v);
        }
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }

  // Attributes, in e-graph order.
  r.declare_attrs("leaky_relu", {attr_real("alpha", 0.01)});
  r.declare_attrs("elu", {attr_real("alpha", 1.0)});
  r.declare_attrs("selu",
                  {attr_real("alpha", 1.67326319217681884765625), attr_real("gamma", 1.05070102214813232421875)});
  r.declare_attrs("hard_sigmoid", {attr_real("alpha", 0.2), attr_real("beta", 0.5)});
  r.declare_attrs("gelu", {attr_string("approximate", "none")});
  r.declare_attrs("mod", {attr_int("fmod", 0)});
  r.declare_attrs("cast", {attr_string("to")});
  r.declare_attrs("clip", {attr_real("min"), attr_real("max")});
}

}  // namespace saturn::ir
