#include "rules/decompose_builtins.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "ir/window.hpp"
#include "rules/builtin_args.hpp"

namespace saturn::rules {

namespace {

using Args = std::span<const Value>;
using Result = std::optional<Value>;
using Ints = std::vector<std::int64_t>;

std::optional<std::string> symbol_of(EvalContext& ctx, const Value& v) {
  auto r = ctx.resolve(v);
  if (!r || r->kind != Value::Kind::Symbol) return std::nullopt;
  return r->symbol.name();
}

// An integer-list attribute; [] (absent) becomes `fallback`.
std::optional<Ints> ints_or(EvalContext& ctx, const Value& v, const Ints& fallback) {
  auto l = ints_of(ctx, v);
  if (!l) return std::nullopt;
  return l->empty() ? fallback : *l;
}

std::optional<Ints> static_dims_of(EvalContext& ctx, const Value& v) {
  const TensorInfo* t = tensor_of(ctx, v);
  if (!t || !ir::is_static(t->type.shape)) return std::nullopt;
  return ir::static_dims(t->type.shape);
}

Ints iota(std::int64_t from, std::int64_t to) {
  Ints out;
  for (std::int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

// (window-plan PART ?x ?k ?s ?d): the movement ops that make windows(x).
// The spatial axes are repeated (expand), flattened and cut into rows of
// i + d elements, k of them: row kk then starts at element kk*d of x, since
// (kk (i+d) + t) mod i = kk d + t for every in-range tap. Taking every s-th
// element of the rows gives [k, o]; a transpose puts the k axes last.
Result window_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto dims = static_dims_of(ctx, a[1]);
  auto k = ints_of(ctx, a[2]);
  if (!part || !dims || !k || k->empty() || k->size() > dims->size()) return std::nullopt;
  const std::size_t n = k->size(), lead = dims->size() - n;
  auto s = ints_or(ctx, a[3], Ints(n, 1)), d = ints_or(ctx, a[4], Ints(n, 1));
  if (!s || !d || s->size() != n || d->size() != n) return std::nullopt;
  Ints out(dims->begin(), dims->begin() + static_cast<std::ptrdiff_t>(lead)), other;
  for (std::size_t j = 0; j < n; ++j) {
    const std::int64_t i = (*dims)[lead + j], kj = (*k)[j], sj = (*s)[j], dj = (*d)[j];
    if (kj <= 0 || sj <= 0 || dj <= 0 || i < (kj - 1) * dj + 1) return std::nullopt;
    const std::int64_t o = (i - (kj - 1) * dj - 1) / sj + 1, row = i + dj;
    const std::int64_t repeat = (kj * row + i - 1) / i;  // copies of x covering k rows
    if (*part == "spread") {
      out.insert(out.end(), {1, i});
    } else if (*part == "repeat") {
      out.insert(out.end(), {repeat, i});
    } else if (*part == "flat") {
      out.push_back(repeat * i);
    } else if (*part == "cut") {
      other.push_back(kj * row);
    } else if (*part == "rows") {
      out.insert(out.end(), {kj, row});
    } else if (*part == "taps") {
      other.push_back((o - 1) * sj + 1);
    } else if (*part == "steps") {
      other.push_back(sj);
    } else if (*part == "zeros") {
      other.push_back(0);
    } else if (*part == "spatial-axes") {
      other.push_back(static_cast<std::int64_t>(lead + j));
    } else if (*part == "row-axes") {
      other.push_back(static_cast<std::int64_t>(lead + 2 * j + 1));
    } else if (*part != "perm") {
      return std::nullopt;
    }
  }
  if (*part == "perm") {
    Ints perm = iota(0, static_cast<std::int64_t>(lead));
    for (std::size_t j = 0; j < n; ++j) perm.push_back(static_cast<std::int64_t>(lead + 2 * j + 1));
    for (std::size_t j = 0; j < n; ++j) perm.push_back(static_cast<std::int64_t>(lead + 2 * j));
    return list_of(perm);
  }
  return list_of(other.empty() ? out : other);
}

// The geometry attributes of a conv or pool as the op's shape rule reads them.
std::optional<ir::Attrs> window_attrs(EvalContext& ctx, const Value& s, const Value& p, const Value& d,
                                      const Value& autopad) {
  auto sl = ints_of(ctx, s), pl = ints_of(ctx, p), dl = ints_of(ctx, d);
  auto ap = symbol_of(ctx, autopad);
  if (!sl || !pl || !dl || !ap) return std::nullopt;
  ir::Attrs attrs;
  if (!sl->empty()) attrs.set("strides", *sl);
  if (!pl->empty()) attrs.set("pads", *pl);
  if (!dl->empty()) attrs.set("dilations", *dl);
  attrs.set("auto_pad", *ap);
  return attrs;
}

// pad's list for [N C spatial...]: nothing on N and C.
Ints spatial_pads(const Ints& begin, const Ints& end) {
  Ints out{0, 0};
  out.insert(out.end(), begin.begin(), begin.end());
  out.insert(out.end(), {0, 0});
  out.insert(out.end(), end.begin(), end.end());
  return out;
}

// (conv-plan PART ?x ?w ?k ?s ?p ?d ?g ?auto): conv(x, w) as windows of the
// padded x, viewed [N G 1 Cg o... k...], times w viewed [1 G Mg Cg 1... k...],
// summed over Cg and the taps.
Result conv_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto xd = static_dims_of(ctx, a[1]), wd = static_dims_of(ctx, a[2]);
  auto g = ctx.as_number(a[7]);
  if (!part || !xd || !wd || !g || !g->is_int() || xd->size() < 3 || wd->size() != xd->size()) return std::nullopt;
  const std::size_t n = xd->size() - 2;
  auto k = ints_or(ctx, a[3], Ints(wd->begin() + 2, wd->end()));
  auto attrs = window_attrs(ctx, a[4], a[5], a[6], a[8]);
  const std::int64_t G = g->as_int(), N = (*xd)[0], C = (*xd)[1], M = (*wd)[0];
  if (!k || !attrs || G <= 0 || C % G != 0 || M % G != 0 || (*wd)[1] != C / G) return std::nullopt;
  ir::WindowGeometry geo;
  try {
    geo = ir::window_geometry(*attrs, Ints(xd->begin() + 2, xd->end()), *k, false);
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  Ints out;
  if (*part == "kernel") {
    out = *k;
  } else if (*part == "pads") {
    out = spatial_pads(geo.pads_begin, geo.pads_end);
  } else if (*part == "x-shape") {
    out = {N, G, 1, C / G};
    out.insert(out.end(), geo.out.begin(), geo.out.end());
    out.insert(out.end(), k->begin(), k->end());
  } else if (*part == "w-shape") {
    out = {1, G, M / G, C / G};
    out.insert(out.end(), n, 1);
    out.insert(out.end(), k->begin(), k->end());
  } else if (*part == "axes") {
    out = {3};
    Ints taps = iota(static_cast<std::int64_t>(4 + n), static_cast<std::int64_t>(4 + 2 * n));
    out.insert(out.end(), taps.begin(), taps.end());
  } else if (*part == "y-shape") {
    out = {N, M};
    out.insert(out.end(), geo.out.begin(), geo.out.end());
  } else if (*part == "bias-shape") {
    out = {M};
    out.insert(out.end(), n, 1);
  } else {
    return std::nullopt;
  }
  return list_of(out);
}

// (pool-plan PART ?x ?k ?s ?p ?d ?auto ?ceil ?cip): pooling as a reduction
// over windows of the padded x. The end padding is set so the padded input
// holds exactly the windows the op takes: ceil_mode's extra windows pad
// further, and a tail no window reaches is cut (a negative pad).
Result pool_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  const TensorInfo* x = tensor_of(ctx, a[1]);
  auto xd = static_dims_of(ctx, a[1]);
  auto k = ints_of(ctx, a[2]);
  auto attrs = window_attrs(ctx, a[3], a[4], a[5], a[6]);
  auto ceil = ctx.as_number(a[7]), cip = ctx.as_number(a[8]);
  if (!part || !x || !xd || !k || !attrs || !ceil || !cip || xd->size() < 3 || k->size() != xd->size() - 2)
    return std::nullopt;
  const std::size_t n = k->size();
  const Ints spatial(xd->begin() + 2, xd->end());
  ir::WindowGeometry geo;
  try {
    geo = ir::window_geometry(*attrs, spatial, *k, ceil->as_real() != 0);
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  if (*part == "lowest") {  // max's identity, the pad value of max pooling
    if (!ir::is_float(x->type.dtype)) return std::nullopt;
    return Value::of_number(Number(-std::numeric_limits<double>::infinity()));
  }
  if (*part == "pads") {
    Ints end;
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t needed = (geo.out[j] - 1) * geo.strides[j] + (geo.kernel[j] - 1) * geo.dilations[j] + 1;
      end.push_back(needed - spatial[j] - geo.pads_begin[j]);
    }
    return list_of(spatial_pads(geo.pads_begin, end));
  }
  if (*part == "axes") return list_of(iota(static_cast<std::int64_t>(2 + n), static_cast<std::int64_t>(2 + 2 * n)));
  if (*part != "counts") return std::nullopt;
  // Average pooling's divisor per output position, [1 1 o...]: the taps
  // inside the input, plus those in the explicit padding when
  // count_include_pad (never ceil_mode's extra ones). A window with none
  // sums only padding zeros: its divisor is 1, so its average is 0 as in the op.
  auto* an = ctx.graph.analysis<TensorAnalysis>();
  if (!an || !ir::is_float(x->type.dtype)) return std::nullopt;
  Ints od{1, 1};
  od.insert(od.end(), geo.out.begin(), geo.out.end());
  ir::Tensor counts(x->type.dtype, od);
  const std::int64_t taps = ir::numel(geo.kernel);
  for (std::size_t e = 0; e < counts.numel(); ++e) {
    const Ints o = ir::unflatten(static_cast<std::int64_t>(e), geo.out);
    std::int64_t count = 0;
    for (std::int64_t t = 0; t < taps; ++t) {
      const Ints kc = ir::unflatten(t, geo.kernel);
      bool inside = true, padded = true;
      for (std::size_t j = 0; j < n; ++j) {
        const std::int64_t pos = o[j] * geo.strides[j] - geo.pads_begin[j] + kc[j] * geo.dilations[j];
        inside = inside && pos >= 0 && pos < spatial[j];
        padded = padded && pos >= -geo.pads_begin[j] && pos < spatial[j] + geo.pads_end[j];
      }
      count += inside || (cip->as_real() != 0 && padded) ? 1 : 0;
    }
    counts.set(e, static_cast<double>(count == 0 ? 1 : count));
  }
  return Value::of_symbol(an->constants().intern(std::move(counts)));
}

}  // namespace

void register_decompose_builtins(BuiltinRegistry& r) {
  r.add(Builtin{"window-plan", 5, 5,
                "(window-plan PART x kernel strides dilations): shapes, slice bounds and perm of windows(x) as "
                "movement ops; PART is spread, repeat, flat, zeros, cut, spatial-axes, rows, taps, row-axes, steps "
                "or perm",
                window_plan});
  r.add(Builtin{"conv-plan", 9, 9,
                "(conv-plan PART x w kernel strides pads dilations group auto_pad): conv(x, w) as a product with "
                "windows; PART is kernel, pads, x-shape, w-shape, axes, y-shape or bias-shape",
                conv_plan});
  r.add(Builtin{"pool-plan", 9, 9,
                "(pool-plan PART x kernel strides pads dilations auto_pad ceil_mode count_include_pad): pooling as a "
                "reduction over windows; PART is pads, axes, lowest (max's pad value) or counts (average's "
                "divisors, a constant)",
                pool_plan});
}

}  // namespace saturn::rules
