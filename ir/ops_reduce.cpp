// Reductions over a set of axes (attribute `axes`, empty = all; `keepdims`,
// default 1), arg-reductions and softmax-style normalizations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/arg_reduce.hpp"
#include "ir/op.hpp"

namespace saturn::ir {

namespace {

using Args = std::span<const Tensor>;
using Given = std::span<const bool>;
using Inputs = std::span<const TypedInput>;

std::vector<bool> reduced_axes(const Attrs& a, std::size_t rank) {
  std::vector<bool> red(rank, false);
  auto axes = a.ints("axes");
  if (axes.empty()) std::fill(red.begin(), red.end(), true);
  for (auto ax : axes) red[static_cast<std::size_t>(normalize_axis(ax, static_cast<std::int64_t>(rank)))] = true;
  return red;
}

Shape reduced_shape(const Shape& in, const std::vector<bool>& red, bool keep) {
  Shape out;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (!red[d])
      out.push_back(in[d]);
    else if (keep)
      out.push_back(Dim::of(1));
  }
  return out;
}

// For every input element, the flat index of the output element it feeds.
std::vector<std::size_t> output_index(const std::vector<std::int64_t>& dims, const std::vector<bool>& red) {
  std::vector<std::int64_t> out_strides(dims.size(), 0);
  std::int64_t s = 1;
  for (std::size_t d = dims.size(); d-- > 0;)
    if (!red[d]) {
      out_strides[d] = s;
      s *= dims[d];
    }
  const std::vector<std::int64_t> in_strides = row_major_strides(dims);
  std::vector<std::size_t> map(static_cast<std::size_t>(numel(dims)));
  for (std::size_t i = 0; i < map.size(); ++i) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < dims.size(); ++d)
      o += ((static_cast<std::int64_t>(i) / in_strides[d]) % dims[d]) * out_strides[d];
    map[i] = static_cast<std::size_t>(o);
  }
  return map;
}

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

void reduction(OpRegistry& r, const char* name, OpKind kind, Red how) {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.doc = "reduce over `axes` (all when empty), keeping reduced axes as 1 when keepdims";
  d.infer = [name, how](const Attrs& a, Inputs in, std::size_t) {
    if (in[0].type.dtype == DType::Bool && how != Red::Max && how != Red::Min)
      shape_error(std::string(name) + " does not take bool operands");
    auto red = reduced_axes(a, in[0].type.shape.size());
    return std::vector<ValueType>{{in[0].type.dtype, reduced_shape(in[0].type.shape, red, a.i("keepdims", 1) != 0)}};
  };
  // One kernel over the tensor type: the interpreter's and `saturn verify`'s.
  set_kernel(d, [how](const Attrs& a, auto x, Given, std::size_t) {
    namespace S = scalar;
    auto red = reduced_axes(a, x[0].rank());
    auto out_shape = static_dims(reduced_shape(shape_of(x[0].dims()), red, a.i("keepdims", 1) != 0));
    auto out = like(x[0], x[0].dtype(), out_shape);
    using Result = std::vector<decltype(out)>;
    const std::size_t n = out.numel();
    auto map = output_index(x[0].dims(), red);
    std::size_t count = n ? x[0].numel() / n : 0;
    const bool integral = !is_float(x[0].dtype());  // bool too: max is "any", min is "all"
    // Symbolic integers (argmax's positions) reduce as the reals below do:
    // sums do not wrap there, as in the elementwise ops' symbolic integers.
    bool known = true;
    if constexpr (!std::is_same_v<decltype(x[0].at(0)), double>)
      for (std::size_t i = 0; i < x[0].numel() && known; ++i) known = x[0].context().is_const(x[0].id(i));
    if (integral && known && (how == Red::Sum || how == Red::Max || how == Red::Min || how == Red::Prod)) {
      std::vector<std::int64_t> acc(n, how == Red::Prod  ? 1
                                       : how == Red::Max ? std::numeric_limits<std::int64_t>::min()
                                       : how == Red::Min ? std::numeric_limits<std::int64_t>::max()
                                                         : 0);
      for (std::size_t i = 0; i < x[0].numel(); ++i) {
        std::int64_t v = x[0].at_int(i);
        std::int64_t& t = acc[map[i]];
        if (how == Red::Sum)
          t = wrapping_add(t, v);
        else if (how == Red::Prod)
          t = wrapping_mul(t, v);
        else if (how == Red::Max)
          t = std::max(t, v);
        else
          t = std::min(t, v);
      }
      for (std::size_t o = 0; o < n; ++o) out.set_int(o, acc[o]);
      return Result{std::move(out)};
    }
    using E = decltype(x[0].at(0));
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<E> acc(n, lit(x[0], how == Red::Prod ? 1.0 : 0.0)), top(n, lit(x[0], 0.0));
    std::vector<bool> seen(n, false);
    if (how == Red::LogSumExp) {
      for (std::size_t i = 0; i < x[0].numel(); ++i) {
        E v = x[0].at(i);
        top[map[i]] = seen[map[i]] ? S::max(top[map[i]], v) : v;
        seen[map[i]] = true;
      }
      std::fill(seen.begin(), seen.end(), false);
    }
    for (std::size_t i = 0; i < x[0].numel(); ++i) {
      E v = x[0].at(i);
      E& t = acc[map[i]];
      const bool first = !seen[map[i]];
      seen[map[i]] = true;
      switch (how) {
        case Red::Sum:
        case Red::Mean:
        case Red::LogSum:
          t += v;
          break;
        case Red::Max:
          t = first ? v : S::max(t, v);
          break;
        case Red::Min:
          t = first ? v : S::min(t, v);
          break;
        case Red::Prod:
          t *= v;
          break;
        case Red::L1:
          t += S::abs(v);
          break;
        case Red::L2:
        case Red::SumSquare:
          t += v * v;
          break;
        case Red::LogSumExp:
          t += S::exp(v - top[map[i]]);
          break;
      }
    }
    for (std::size_t o = 0; o < n; ++o) {
      E v = acc[o];
      if (!seen[o] && how == Red::Max) v = lit(x[0], -inf);
      if (!seen[o] && how == Red::Min) v = lit(x[0], inf);
      if (how == Red::Mean) v /= static_cast<double>(count);
      if (how == Red::L2) v = S::sqrt(v);
      if (how == Red::LogSum) v = S::log(v);
      if (how == Red::LogSumExp) v = !seen[o] ? lit(x[0], -inf) : S::log(v) + top[o];
      out.set(o, v);
    }
    return Result{std::move(out)};
  });
  r.add(std::move(d));
}

void arg_reduction(OpRegistry& r, const char* name, bool is_max) {
  OpDef d;
  d.name = name;
  d.doc = "index of the largest/smallest element along `axis` (first one, or last with select_last_index)";
  d.infer = [name](const Attrs& a, Inputs in, std::size_t) {
    auto rank = static_cast<std::int64_t>(in[0].type.shape.size());
    std::vector<bool> red(in[0].type.shape.size(), false);
    // (ONNX gives a scalar no axis: its kernel would have none to walk.)
    const auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), rank));
    red[axis] = true;
    Shape out = reduced_shape(in[0].type.shape, red, a.i("keepdims", 1) != 0);
    // An empty axis has no index to give (ONNX Runtime refuses it too),
    // unless the result has no element to give one for.
    if (in[0].type.shape[axis].is_static() && in[0].type.shape[axis].value() == 0 &&
        !(is_static(out) && numel(static_dims(out)) == 0))
      shape_error(std::string(name) + " over an empty axis (dim 0) has no index to give");
    return std::vector<ValueType>{{DType::I64, std::move(out)}};
  };
  d.eval = [is_max](const Attrs& a, Args x, Given, std::size_t) {
    auto rank = static_cast<std::int64_t>(x[0].rank());
    auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), rank));
    std::vector<bool> red(x[0].rank(), false);
    red[axis] = true;
    auto out_shape = static_dims(reduced_shape(shape_of(x[0].dims()), red, a.i("keepdims", 1) != 0));
    Tensor out(DType::I64, out_shape);
    const ArgReduce g = arg_reduce_geometry(x[0].dims(), axis, is_max, a.i("select_last_index", 0) != 0);
    auto* idx = reinterpret_cast<std::int64_t*>(out.bytes());
    if (x[0].dtype() == DType::I64) {  // (exact beyond 2^53, where doubles are not)
      arg_reduce(
          g, [&](std::size_t i) { return x[0].at_int(i); }, idx, 0, g.outer);
    } else {
      arg_reduce(
          g, [&](std::size_t i) { return x[0].at(i); }, idx, 0, g.outer);
    }
    return std::vector<Tensor>{std::move(out)};
  };
  // The same walk as ir/arg_reduce.hpp's, over the reals (which have no
  // NaN): a later element replaces the best when greater (smaller), or
  // equal too with select_last_index; its position is chosen alongside.
  d.symbolic = [is_max](const Attrs& a, std::span<const SymTensor> x, std::span<const bool>, std::size_t) {
    namespace S = scalar;
    auto rank = static_cast<std::int64_t>(x[0].rank());
    auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), rank));
    std::vector<bool> red(x[0].rank(), false);
    red[axis] = true;
    auto out_shape = static_dims(reduced_shape(shape_of(x[0].dims()), red, a.i("keepdims", 1) != 0));
    SymTensor out(x[0].context(), DType::I64, out_shape);
    const ArgReduce g = arg_reduce_geometry(x[0].dims(), axis, is_max, a.i("select_last_index", 0) != 0);
    for (std::size_t o = 0; o < g.outer && g.count; ++o)
      for (std::size_t j = 0; j < g.inner; ++j) {
        auto at = [&](std::size_t k) { return x[0].at((o * g.count + k) * g.inner + j); };
        Sym best = at(0), index = lit(x[0], 0.0);
        for (std::size_t k = 1; k < g.count; ++k) {
          const Sym v = at(k);
          const Sym take = g.last ? (is_max ? v >= best : v <= best) : (is_max ? v > best : v < best);
          best = S::select(take, v, best);
          index = S::select(take, static_cast<double>(k), index);
        }
        out.set(o * g.inner + j, index);
      }
    return std::vector<SymTensor>{std::move(out)};
  };
  r.add(std::move(d));
}

void softmax_like(OpRegistry& r, const char* name, bool log) {
  OpDef d;
  d.name = name;
  d.doc = "softmax along `axis` (default -1)";
  d.infer = [name](const Attrs& a, Inputs in, std::size_t) {
    if (!is_float(in[0].type.dtype)) shape_error(std::string(name) + " needs a floating operand");
    normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(in[0].type.shape.size()));
    return std::vector<ValueType>{in[0].type};
  };
  set_kernel(d, [log](const Attrs& a, auto x, Given, std::size_t) {
    namespace S = scalar;
    auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(x[0].rank())));
    std::vector<bool> red(x[0].rank(), false);
    red[axis] = true;
    auto map = output_index(x[0].dims(), red);
    std::size_t groups = x[0].numel() ? x[0].numel() / static_cast<std::size_t>(x[0].dims()[axis]) : 0;
    using E = decltype(x[0].at(0));
    std::vector<E> top(groups, lit(x[0], 0.0)), sum(groups, lit(x[0], 0.0));
    std::vector<bool> seen(groups, false);
    for (std::size_t i = 0; i < x[0].numel(); ++i) {
      top[map[i]] = seen[map[i]] ? S::max(top[map[i]], x[0].at(i)) : x[0].at(i);
      seen[map[i]] = true;
    }
    for (std::size_t i = 0; i < x[0].numel(); ++i) sum[map[i]] += S::exp(x[0].at(i) - top[map[i]]);
    auto out = like(x[0], x[0].dtype(), x[0].dims());
    for (std::size_t i = 0; i < x[0].numel(); ++i) {
      E z = x[0].at(i) - top[map[i]];
      out.set(i, log ? z - S::log(sum[map[i]]) : S::exp(z) / sum[map[i]]);
    }
    return std::vector<decltype(out)>{std::move(out)};
  });
  r.add(std::move(d));
}

// The k largest (or smallest) elements along `axis` and their indices
// (ONNX TopK), in order: largest first (smallest first), equal values by
// index, NaN after every number (as numpy's sort, which ONNX's reference
// uses). `sorted` 0 lets ONNX give them in any order; they come sorted all
// the same. No decomposition: every target runs this kernel.
void top_k(OpRegistry& r) {
  OpDef d;
  d.name = "top_k";
  d.kind = OpKind::Composite;
  d.num_outputs = 2;
  d.doc = "the `k` largest elements along `axis` (smallest with `largest` 0), sorted, and their indices (i64)";
  d.infer = [](const Attrs& a, Inputs in, std::size_t) {
    const Shape& s = in[0].type.shape;
    if (in[0].type.dtype == DType::Bool) shape_error("top_k does not take bool operands");
    if (s.empty()) shape_error("top_k: operand has rank 0");
    const auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(s.size())));
    const std::int64_t k = a.i("k", 1);
    if (k < 0) shape_error("top_k: k " + std::to_string(k) + " is negative");
    if (s[axis].is_static() && k > s[axis].value())
      shape_error("top_k: k " + std::to_string(k) + " is more than the " + std::to_string(s[axis].value()) +
                  " elements along axis " + std::to_string(axis));
    Shape out = s;
    out[axis] = Dim::of(k);
    return std::vector<ValueType>{{in[0].type.dtype, out}, {DType::I64, out}};
  };
  d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
    const auto& dims = x[0].dims();
    const auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(dims.size())));
    const auto k = static_cast<std::size_t>(a.i("k", 1));
    const bool largest = a.i("largest", 1) != 0, integral = !is_float(x[0].dtype()),
               unsigned_64 = x[0].dtype() == DType::U64;
    std::vector<std::int64_t> out_dims = dims;
    out_dims[axis] = static_cast<std::int64_t>(k);
    Tensor values(x[0].dtype(), out_dims), indices(DType::I64, out_dims);
    std::size_t pre = 1, post = 1;
    for (std::size_t d = 0; d < axis; ++d) pre *= static_cast<std::size_t>(dims[d]);
    for (std::size_t d = axis + 1; d < dims.size(); ++d) post *= static_cast<std::size_t>(dims[d]);
    const auto n = static_cast<std::size_t>(dims[axis]);
    std::vector<std::size_t> order(n);
    for (std::size_t p = 0; p < pre; ++p)
      for (std::size_t q = 0; q < post; ++q) {
        auto at = [&](std::size_t i) { return (p * n + i) * post + q; };
        for (std::size_t i = 0; i < n; ++i) order[i] = i;
        // (integers compared exactly, beyond 2^53 too)
        auto before = [&](std::size_t i, std::size_t j) {
          if (unsigned_64) {  // (stored as int64 bits: past 2^63 they read negative)
            const auto u = static_cast<std::uint64_t>(x[0].at_int(at(i))),
                       v = static_cast<std::uint64_t>(x[0].at_int(at(j)));
            return largest ? u > v : u < v;
          }
          if (integral) {
            const std::int64_t u = x[0].at_int(at(i)), v = x[0].at_int(at(j));
            return largest ? u > v : u < v;
          }
          const double u = x[0].at(at(i)), v = x[0].at(at(j));
          if (std::isnan(u) || std::isnan(v)) return !std::isnan(u) && std::isnan(v);
          return largest ? u > v : u < v;
        };
        std::stable_sort(order.begin(), order.end(), before);
        for (std::size_t i = 0; i < k; ++i) {
          const std::size_t o = (p * k + i) * post + q;
          if (integral)
            values.set_int(o, x[0].at_int(at(order[i])));
          else
            values.set(o, x[0].at(at(order[i])));
          indices.set_int(o, static_cast<std::int64_t>(order[i]));
        }
      }
    return std::vector<Tensor>{std::move(values), std::move(indices)};
  };
  r.add(std::move(d));
}

// Running sums (ONNX CumSum) or products (CumProd) along `axis`:
// `exclusive` leaves each element out of its own sum (product), `reverse`
// runs from the end. Integers wrap as reduce_sum's and reduce_prod's do.
void running(OpRegistry& r, const char* name, bool product) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Composite;
  d.doc = product ? "running products along attribute `axis` (`exclusive`: without the element itself; `reverse`: "
                    "from the end)"
                  : "running sums along attribute `axis` (`exclusive`: without the element itself; `reverse`: from "
                    "the end)";
  d.infer = [name = std::string(name)](const Attrs& a, Inputs in, std::size_t) {
    if (in[0].type.dtype == DType::Bool) shape_error(name + " does not take bool operands");
    if (in[0].type.shape.empty()) shape_error(name + ": operand has rank 0");
    normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(in[0].type.shape.size()));
    return std::vector<ValueType>{in[0].type};
  };
  set_kernel(d, [product](const Attrs& a, auto x, Given, std::size_t) {
    const auto& dims = x[0].dims();
    const auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(dims.size())));
    const bool exclusive = a.i("exclusive", 0) != 0, reverse = a.i("reverse", 0) != 0;
    auto out = like(x[0], x[0].dtype(), dims);
    std::size_t pre = 1, post = 1;
    for (std::size_t k = 0; k < axis; ++k) pre *= static_cast<std::size_t>(dims[k]);
    for (std::size_t k = axis + 1; k < dims.size(); ++k) post *= static_cast<std::size_t>(dims[k]);
    const auto n = static_cast<std::size_t>(dims[axis]);
    constexpr bool symbolic = !std::is_same_v<decltype(x[0].at(0)), double>;
    const bool integral = !symbolic && !is_float(x[0].dtype());
    for (std::size_t p = 0; p < pre; ++p)
      for (std::size_t q = 0; q < post; ++q) {
        std::int64_t whole = product ? 1 : 0;
        auto run = lit(x[0], product ? 1.0 : 0.0);
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t at = (p * n + (reverse ? n - 1 - k : k)) * post + q;
          if (integral) {
            const std::int64_t before = whole;
            whole = product ? wrapping_mul(whole, x[0].at_int(at)) : wrapping_add(whole, x[0].at_int(at));
            out.set_int(at, exclusive ? before : whole);
          } else {
            const auto before = run;
            run = product ? run * x[0].at(at) : run + x[0].at(at);
            out.set(at, exclusive ? before : run);
          }
        }
      }
    return std::vector<decltype(out)>{std::move(out)};
  });
  r.add(std::move(d));
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  reduction(r, "reduce_sum", OpKind::Primitive, Red::Sum);
  reduction(r, "reduce_max", OpKind::Primitive, Red::Max);
  reduction(r, "reduce_mean", OpKind::Composite, Red::Mean);
  reduction(r, "reduce_min", OpKind::Composite, Red::Min);
  reduction(r, "reduce_prod", OpKind::Composite, Red::Prod);
  reduction(r, "reduce_l1", OpKind::Composite, Red::L1);
  reduction(r, "reduce_l2", OpKind::Composite, Red::L2);
  reduction(r, "reduce_log_sum", OpKind::Composite, Red::LogSum);
  reduction(r, "reduce_log_sum_exp", OpKind::Composite, Red::LogSumExp);
  reduction(r, "reduce_sum_square", OpKind::Composite, Red::SumSquare);
  arg_reduction(r, "argmax", true);
  arg_reduction(r, "argmin", false);
  softmax_like(r, "softmax", false);
  softmax_like(r, "log_softmax", true);
  running(r, "cumsum", false);
  running(r, "cumprod", true);
  top_k(r);

  // Attributes, in e-graph order.
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_l1",
                        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"})
    r.declare_attrs(n, {attr_ints("axes"), attr_int("keepdims", 1)});
  for (const char* n : {"argmax", "argmin"})
    r.declare_attrs(n, {attr_int("axis", 0), attr_int("keepdims", 1), attr_int("select_last_index", 0)});
  for (const char* n : {"softmax", "log_softmax"}) r.declare_attrs(n, {attr_int("axis", -1)});
  for (const char* n : {"cumsum", "cumprod"})
    r.declare_attrs(n, {attr_int("axis", 0), attr_int("exclusive", 0), attr_int("reverse", 0)});
  r.declare_attrs("top_k", {attr_int("k", 1), attr_int("axis", -1), attr_int("largest", 1), attr_int("sorted", 1)});
  r.declare_unit_work("reduce_log_sum_exp", 10);
  r.declare_unit_work("reduce_l2", 2);
  // exp, max, sum, subtract and divide per element.
  for (const char* n : {"softmax", "log_softmax"})
    r.declare_work(n, [](const Attrs&, std::span<const ValueType> in, std::span<const ValueType>) {
      return 5.0 * static_cast<double>(numel(static_dims(in[0].shape)));
    });
}

}  // namespace saturn::ir
