#include "rules/decompose_builtins.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "ir/einsum.hpp"
#include "ir/resize.hpp"
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

// A constant of the e-graph's pool, as the handle (const ?h) takes. Named
// after its content, so that every application of a rule gets the same
// handle however large the tensor: a new handle each time would be a new
// e-node each time, and saturation would never be reached.
Result constant(EvalContext& ctx, ir::Tensor t) {
  auto* an = ctx.graph.analysis<TensorAnalysis>();
  if (!an) return std::nullopt;
  const std::string_view bytes(reinterpret_cast<const char*>(t.bytes()), t.nbytes());
  std::string name = t.summary();
  name.append("#").append(std::to_string(std::hash<std::string_view>{}(bytes)));
  return Value::of_symbol(an->constants().intern(std::move(t), name));
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
  } else if (*part == "strides") {
    out = geo.strides;
  } else if (*part == "dilations") {
    out = geo.dilations;
  } else if (*part == "spatial-pads") {
    out = geo.pads_begin;
    out.insert(out.end(), geo.pads_end.begin(), geo.pads_end.end());
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
  if (!ir::is_float(x->type.dtype)) return std::nullopt;
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
  return constant(ctx, std::move(counts));
}

std::optional<std::int64_t> int_of(EvalContext& ctx, const Value& v) {
  auto n = ctx.as_number(v);
  if (!n || !n->is_int()) return std::nullopt;
  return n->as_int();
}

std::optional<std::size_t> axis_of(EvalContext& ctx, const Value& v, std::size_t rank) {
  auto a = int_of(ctx, v);
  const auto r = static_cast<std::int64_t>(rank);
  if (!a || *a < -r || *a >= r) return std::nullopt;
  return static_cast<std::size_t>(*a < 0 ? *a + r : *a);
}

// The most negative value of a dtype: max's identity.
std::optional<double> lowest(ir::DType t) {
  if (ir::is_float(t)) return -std::numeric_limits<double>::infinity();
  switch (t) {
    case ir::DType::I64:
      return static_cast<double>(std::numeric_limits<std::int64_t>::min());
    case ir::DType::I32:
      return static_cast<double>(std::numeric_limits<std::int32_t>::min());
    default:
      return std::nullopt;
  }
}

// (lowest ?x) and (highest ?x): the extreme values of x's dtype (-inf and
// inf for floating types): max's and min's identities.
Result extreme(EvalContext& ctx, Args a, bool high) {
  const TensorInfo* x = tensor_of(ctx, a[0]);
  if (!x) return std::nullopt;
  if (ir::is_float(x->type.dtype))
    return Value::of_number(Number((high ? 1 : -1) * std::numeric_limits<double>::infinity()));
  if (high) {
    if (x->type.dtype == ir::DType::I64) return Value::of_number(Number(std::numeric_limits<std::int64_t>::max()));
    if (x->type.dtype == ir::DType::I32)
      return Value::of_number(Number(std::int64_t{std::numeric_limits<std::int32_t>::max()}));
    return std::nullopt;
  }
  auto low = lowest(x->type.dtype);
  if (!low) return std::nullopt;
  return Value::of_number(Number(*low));
}

// (lrn-plan PART ?x ?size): LRN's sum of squares over a channel window, as
// windows over the channel axis moved last: PART is perm, unperm or pads
// ((size-1)/2 channels before, size/2 after, as the op's window).
Result lrn_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto dims = static_dims_of(ctx, a[1]);
  auto size = int_of(ctx, a[2]);
  if (!part || !dims || !size || *size <= 0 || dims->size() < 2) return std::nullopt;
  const auto rank = static_cast<std::int64_t>(dims->size());
  if (*part == "perm" || *part == "unperm") {
    Ints perm{0};
    for (std::int64_t i = 2; i < rank; ++i) perm.push_back(i);
    perm.push_back(1);
    if (*part == "unperm") {
      Ints inv(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i)
        inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
      perm = inv;
    }
    return list_of(perm);
  }
  if (*part != "pads") return std::nullopt;
  Ints pads(2 * dims->size(), 0);
  pads[dims->size() - 1] = (*size - 1) / 2;
  pads.back() = *size / 2;
  return list_of(pads);
}

// (concat-plan PART ?a ?b ?axis): concat(a, b) as a choice between a padded
// after and b padded before: PART is pads-a, pads-b or mask (a constant,
// true on a's part of the axis, 1 on every other axis).
Result concat_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto ad = static_dims_of(ctx, a[1]), bd = static_dims_of(ctx, a[2]);
  if (!part || !ad || !bd || ad->size() != bd->size() || ad->empty()) return std::nullopt;
  auto axis = axis_of(ctx, a[3], ad->size());
  if (!axis) return std::nullopt;
  const std::size_t rank = ad->size();
  const std::int64_t la = (*ad)[*axis], lb = (*bd)[*axis];
  Ints pads(2 * rank, 0);
  if (*part == "pads-a") {
    pads[rank + *axis] = lb;
    return list_of(pads);
  }
  if (*part == "pads-b") {
    pads[*axis] = la;
    return list_of(pads);
  }
  if (*part != "mask") return std::nullopt;
  Ints md(rank, 1);
  md[*axis] = la + lb;
  ir::Tensor mask(ir::DType::Bool, md);
  for (std::int64_t i = 0; i < la; ++i) mask.set_int(static_cast<std::size_t>(i), 1);
  return constant(ctx, std::move(mask));
}

// (split-plan PART ?x ?axis ?split ?result ?count): result `result` of the
// split as one slice: PART is starts, ends or axes (the op's part sizes:
// `split`, or equal parts, the last one smaller).
Result split_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto dims = static_dims_of(ctx, a[1]);
  auto sizes = ints_of(ctx, a[3]);
  auto result = int_of(ctx, a[4]), count = int_of(ctx, a[5]);
  if (!part || !dims || dims->empty() || !sizes || !result || !count || *count <= 0 || *result < 0 || *result >= *count)
    return std::nullopt;
  auto axis = axis_of(ctx, a[2], dims->size());
  if (!axis) return std::nullopt;
  const std::int64_t n = (*dims)[*axis];
  if (sizes->empty()) {
    const std::int64_t each = (n + *count - 1) / *count;
    for (std::int64_t k = 0; k < *count; ++k) sizes->push_back(std::min(each, n - each * k));
  }
  if (static_cast<std::int64_t>(sizes->size()) != *count) return std::nullopt;
  std::int64_t start = 0;
  for (std::int64_t k = 0; k < *result; ++k) start += (*sizes)[static_cast<std::size_t>(k)];
  if (*part == "starts") return list_of({start});
  if (*part == "ends") return list_of({start + (*sizes)[static_cast<std::size_t>(*result)]});
  if (*part == "axes") return list_of({static_cast<std::int64_t>(*axis)});
  return std::nullopt;
}

// (tile-plan PART ?x ?repeats): tile as a broadcast: each axis d gets a new
// axis of `repeats` copies before it (spread: [1 d]..., repeat: [r d]...),
// then each pair is flattened (flat: [r*d]...).
Result tile_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto dims = static_dims_of(ctx, a[1]);
  auto reps = ints_of(ctx, a[2]);
  if (!part || !dims || !reps || reps->size() != dims->size()) return std::nullopt;
  Ints out;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    const std::int64_t d = (*dims)[i], r = (*reps)[i];
    if (r < 0) return std::nullopt;
    if (*part == "spread")
      out.insert(out.end(), {1, d});
    else if (*part == "repeat")
      out.insert(out.end(), {r, d});
    else if (*part == "flat")
      out.push_back(r * d);
    else
      return std::nullopt;
  }
  return list_of(out);
}

// (shape-const ?x ?start ?end): the i64 constant shape(x) computes, for a
// static shape; (numel-const ?x): the i64 scalar size(x) computes.
Result shape_const(EvalContext& ctx, Args a) {
  auto dims = static_dims_of(ctx, a[0]);
  if (!dims) return std::nullopt;
  const auto rank = static_cast<std::int64_t>(dims->size());
  auto s = int_of(ctx, a[1]);
  auto e = a.size() > 2 ? int_of(ctx, a[2]) : std::optional<std::int64_t>(rank);
  auto r = ctx.resolve(a[2]);
  if (!e && r && r->kind == Value::Kind::Symbol && r->symbol.name() == "none") e = rank;  // absent: to the end
  if (!s || !e) return std::nullopt;
  std::int64_t from = std::clamp<std::int64_t>(*s < 0 ? *s + rank : *s, 0, rank);
  std::int64_t to = std::max(from, std::clamp<std::int64_t>(*e < 0 ? *e + rank : *e, 0, rank));
  Ints v(dims->begin() + from, dims->begin() + to);
  return constant(ctx, ir::Tensor::of_ints(ir::DType::I64, {to - from}, v));
}

Result numel_const(EvalContext& ctx, Args a) {
  auto dims = static_dims_of(ctx, a[0]);
  if (!dims) return std::nullopt;
  return constant(ctx, ir::Tensor::of_ints(ir::DType::I64, {}, {ir::numel(*dims)}));
}

// (range-iota ?start ?limit ?delta): [0 1 ... n-1] in start's dtype, n the
// length of range(start, limit, delta) (constant operands only).
Result range_iota(EvalContext& ctx, Args a) {
  const TensorInfo *s = tensor_of(ctx, a[0]), *l = tensor_of(ctx, a[1]), *d = tensor_of(ctx, a[2]);
  if (!s || !l || !d || !s->value || !l->value || !d->value || s->value->numel() != 1 || l->value->numel() != 1 ||
      d->value->numel() != 1 || d->value->at(0) == 0)
    return std::nullopt;
  const auto n = std::max<std::int64_t>(
      0, static_cast<std::int64_t>(std::ceil((l->value->at(0) - s->value->at(0)) / d->value->at(0))));
  if (n > (std::int64_t{1} << 24)) return std::nullopt;
  Ints v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  return constant(ctx, ir::Tensor::of_ints(s->type.dtype, {n}, v));
}

// (trilu-mask ?x ?upper ?k): a bool constant [rows cols], true where trilu
// keeps the element (col - row >= k for the upper triangle, <= k lower).
Result trilu_mask(EvalContext& ctx, Args a) {
  auto dims = static_dims_of(ctx, a[0]);
  auto upper = int_of(ctx, a[1]), k = int_of(ctx, a[2]);
  if (!dims || dims->size() < 2 || !upper || !k) return std::nullopt;
  const std::int64_t rows = (*dims)[dims->size() - 2], cols = dims->back();
  ir::Tensor mask(ir::DType::Bool, {rows, cols});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      mask.set_int(static_cast<std::size_t>(r * cols + c), *upper ? c - r >= *k : c - r <= *k);
  return constant(ctx, std::move(mask));
}

// (gather-plan PART ?x ?i ?axis): gather as a one-hot selection. With x
// [pre n post] and indices i [q]: x viewed [pre 1(q) n post] (data-shape),
// i viewed [1(pre) q 1 1(post)] (index-shape), compared with the constant
// [0 .. n-1] along the n axis (iota, i's dtype); the matches are kept and the
// rest set to max's identity (lowest), and a max over the n axis (axis)
// leaves the one match. count is n as i's dtype, for negative indices.
Result gather_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  const TensorInfo* x = tensor_of(ctx, a[1]);
  const TensorInfo* idx = tensor_of(ctx, a[2]);
  auto xd = static_dims_of(ctx, a[1]), id = static_dims_of(ctx, a[2]);
  if (!part || !x || !idx || !xd || !id || xd->empty()) return std::nullopt;
  auto axis = axis_of(ctx, a[3], xd->size());
  if (!axis) return std::nullopt;
  const std::size_t pre = *axis, post = xd->size() - *axis - 1, q = id->size();
  const std::int64_t n = (*xd)[*axis];
  if (*part == "data-shape") {
    Ints out(xd->begin(), xd->begin() + static_cast<std::ptrdiff_t>(pre));
    out.insert(out.end(), q, 1);
    out.insert(out.end(), xd->begin() + static_cast<std::ptrdiff_t>(pre), xd->end());
    return list_of(out);
  }
  if (*part == "index-shape") {
    Ints out(pre, 1);
    out.insert(out.end(), id->begin(), id->end());
    out.insert(out.end(), 1 + post, 1);
    return list_of(out);
  }
  if (*part == "axis") return Value::of_number(Number(static_cast<std::int64_t>(pre + q)));
  if (*part == "count") return constant(ctx, ir::Tensor::of_ints(idx->type.dtype, {}, {n}));
  if (*part != "iota") return std::nullopt;
  Ints od(pre + q, 1), v;
  od.push_back(n);
  od.insert(od.end(), post, 1);
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  return constant(ctx, ir::Tensor::of_ints(idx->type.dtype, od, v));
}

// (gather-elements-plan PART ?x ?i ?axis): gather_elements as a one-hot
// selection over a new last axis. x (rank r, n along the axis) is cut to
// i's extent off the axis (starts, ends, axes), its axis moved last (perm)
// and a 1 put in its place (data-shape); i is viewed with a last axis of 1
// (index-shape) and compared with the constant [0 .. n-1] there (iota, i's
// dtype); a max over the last axis (axis) leaves the match. count is n as
// i's dtype, for negative indices.
Result gather_elements_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  const TensorInfo* idx = tensor_of(ctx, a[2]);
  auto xd = static_dims_of(ctx, a[1]), id = static_dims_of(ctx, a[2]);
  if (!part || !idx || !xd || !id || xd->empty() || id->size() != xd->size()) return std::nullopt;
  auto axis = axis_of(ctx, a[3], xd->size());
  if (!axis) return std::nullopt;
  const std::size_t r = xd->size();
  const std::int64_t n = (*xd)[*axis];
  const std::string& p = *part;
  Ints out;
  if (p == "starts") {
    out.assign(r, 0);
  } else if (p == "ends") {
    out = *id;
    out[*axis] = n;
  } else if (p == "axes") {
    out = iota(0, static_cast<std::int64_t>(r));
  } else if (p == "perm") {
    for (std::size_t k = 0; k < r; ++k)
      if (k != *axis) out.push_back(static_cast<std::int64_t>(k));
    out.push_back(static_cast<std::int64_t>(*axis));
  } else if (p == "data-shape") {
    out = *id;
    out[*axis] = 1;
    out.push_back(n);
  } else if (p == "index-shape") {
    out = *id;
    out.push_back(1);
  } else if (p == "axis") {
    return Value::of_number(Number(static_cast<std::int64_t>(r)));
  } else if (p == "count") {
    return constant(ctx, ir::Tensor::of_ints(idx->type.dtype, {}, {n}));
  } else if (p == "iota") {
    Ints od(r, 1);
    od.push_back(n);
    return constant(ctx, ir::Tensor::of_ints(idx->type.dtype, od, iota(0, n)));
  } else {
    return std::nullopt;
  }
  return list_of(out);
}

// (resize-plan PART x sizes scales roi mode transform nearest a exclude
// extrapolation antialias): one pass of resize (ir/resize.hpp), the last
// axis that changes, as a product with a constant [out in] matrix (each
// tap's weight added at its edge-clamped index) summed over the input axis,
// plus a constant [out] holding the extrapolation value where a result
// index falls outside the input. The axis is moved last (perm), given a 1
// before it (shape), summed (axis) and moved back (inverse); the resize
// that remains has that axis's scale 1 and roi [0 1] (scales, roi), so it
// leaves the axis as it is. done: no axis changes. Float operands, and
// nearest resizing of any type (the matrix is 0/1).
constexpr double kMaxResizeMatrix = 1 << 22;

Result resize_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  const TensorInfo* x = tensor_of(ctx, a[1]);
  auto xd = static_dims_of(ctx, a[1]);
  auto* an = ctx.graph.analysis<TensorAnalysis>();
  if (!part || !x || !xd || !an) return std::nullopt;
  // The attributes as the op reads them from its children.
  std::vector<EClassId> classes;
  for (const Value& v : a.subspan(2)) {
    if (v.kind != Value::Kind::Class) return std::nullopt;
    classes.push_back(v.cls);
  }
  auto attrs = an->attrs_of(ctx.graph, *ir::OpRegistry::get().find("resize"), classes);
  if (!attrs) return std::nullopt;
  std::vector<ir::ResizePass> passes;
  ir::ResizeSpec spec;
  try {
    spec = ir::resize_spec(*attrs, *xd);
    // A dense [out in] matrix past 2^22 elements is no program to extract,
    // and building it (per :let) is what would take the time and memory.
    for (std::size_t k = 0; k < xd->size(); ++k)
      if (spec.sizes[k] != (*xd)[k] &&
          static_cast<double>(spec.sizes[k]) * static_cast<double>((*xd)[k]) > kMaxResizeMatrix)
        return std::nullopt;
    passes = ir::resize_passes(spec, *xd);
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  if (*part == "done") return Value::of_bool(passes.empty());
  const ir::DType t = x->type.dtype;
  if (passes.empty() || (!ir::is_float(t) && spec.mode != "nearest")) return std::nullopt;
  const ir::ResizePass& pass = passes.front();
  const std::size_t r = xd->size(), axis = pass.axis;
  const ir::ResizeAxis& taps = pass.taps;
  Ints perm, inverse(r);
  for (std::size_t k = 0; k < r; ++k)
    if (k != axis) perm.push_back(static_cast<std::int64_t>(k));
  perm.push_back(static_cast<std::int64_t>(axis));
  for (std::size_t k = 0; k < r; ++k) inverse[static_cast<std::size_t>(perm[k])] = static_cast<std::int64_t>(k);
  const std::string& p = *part;
  if (p == "perm") return list_of(perm);
  if (p == "inverse") return list_of(inverse);
  if (p == "axis") return list_of({static_cast<std::int64_t>(r)});
  if (p == "shape") {
    Ints shape;
    for (std::int64_t k : perm) shape.push_back((*xd)[static_cast<std::size_t>(k)]);
    shape.insert(shape.end() - 1, 1);
    return list_of(shape);
  }
  if (p == "scales" || p == "roi") {
    std::vector<double> next = p == "scales" ? spec.scales : spec.roi;
    if (p == "scales") {
      next[axis] = 1.0;
    } else {
      next[axis] = 0.0;
      next[r + axis] = 1.0;
    }
    return Value::of_list(std::vector<Number>(next.begin(), next.end()));
  }
  if (p == "weights") {
    if (static_cast<double>(taps.out) * static_cast<double>(taps.in) > kMaxResizeMatrix) return std::nullopt;
    ir::Tensor w(t, {taps.out, taps.in});
    std::vector<double> m(static_cast<std::size_t>(taps.out * taps.in), 0.0);
    const auto n = static_cast<std::size_t>(taps.taps);
    for (std::size_t j = 0; j < static_cast<std::size_t>(taps.out); ++j)
      if (!taps.outside[j])
        for (std::size_t k = 0; k < n; ++k)
          m[j * static_cast<std::size_t>(taps.in) + static_cast<std::size_t>(taps.index[j * n + k])] +=
              taps.weight[j * n + k];
    for (std::size_t i = 0; i < m.size(); ++i) w.set(i, m[i]);
    return constant(ctx, std::move(w));
  }
  if (p == "fill") {
    ir::Tensor e(t, {taps.out});
    for (std::size_t j = 0; j < static_cast<std::size_t>(taps.out); ++j)
      e.set(j, taps.outside[j] ? spec.extrapolation : 0.0);
    return constant(ctx, std::move(e));
  }
  return std::nullopt;
}

// (einsum-plan PART k equation x0 x1 ...): einsum as a product summed.
// Every letter gets an axis, the output's first (in order), then the
// others sorted, then one more axis of size 1 so the sum is never over no
// axis (reduce_sum over [] would sum everything). Operand k is transposed
// to that order (perm) and reshaped with 1s for the letters it lacks
// (shape); the product of all of them is summed over axes. Equations with
// a letter repeated within one operand (diagonals) are not decomposed.
Result einsum_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto k = int_of(ctx, a[1]);
  auto eq = symbol_of(ctx, a[2]);
  if (!part || !k || !eq) return std::nullopt;
  std::vector<Ints> shapes;
  for (std::size_t i = 3; i < a.size(); ++i) {
    auto d = static_dims_of(ctx, a[i]);
    if (!d) return std::nullopt;
    shapes.push_back(*d);
  }
  if (*k < 0 || static_cast<std::size_t>(*k) >= shapes.size()) return std::nullopt;
  ir::EinsumPlan plan;
  try {
    plan = ir::einsum_plan(*eq, shapes);
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  std::string order = plan.out;
  for (const auto& [letter, n] : plan.size)
    if (order.find(letter) == std::string::npos) order.push_back(letter);
  for (const std::string& t : plan.terms)
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.find(t[i], i + 1) != std::string::npos) return std::nullopt;  // a diagonal
  const std::string& term = plan.terms[static_cast<std::size_t>(*k)];
  const Ints& dims = shapes[static_cast<std::size_t>(*k)];
  if (*part == "perm") {
    Ints perm;
    for (char letter : order)
      if (auto at = term.find(letter); at != std::string::npos) perm.push_back(static_cast<std::int64_t>(at));
    return list_of(perm);
  }
  if (*part == "shape") {
    Ints shape;
    for (char letter : order) {
      auto at = term.find(letter);
      shape.push_back(at == std::string::npos ? 1 : dims[at]);
    }
    shape.push_back(1);
    return list_of(shape);
  }
  if (*part == "axes")
    return list_of(iota(static_cast<std::int64_t>(plan.out.size()), static_cast<std::int64_t>(order.size() + 1)));
  return std::nullopt;
}

// (einsum-matmul PART equation a b): a two-operand einsum as one (batched)
// matrix product. Letters in both operands and the output are batch axes,
// in both but not the output contracted (K), in one and the output free
// (M from a, N from b). a is transposed to [batch, M letters, K letters]
// (perm-a) and viewed [batch..., M, K] (shape-a), b to [batch, K letters,
// N letters] and [batch..., K, N]; the product [batch..., M, N] is viewed
// with each letter an axis again (shape-y) and transposed to the output's
// order (perm-y). Not for diagonals, a letter summed within one operand,
// or a batch letter that broadcasts (size 1 in one operand only).
Result einsum_matmul(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto eq = symbol_of(ctx, a[1]);
  auto da = static_dims_of(ctx, a[2]), db = static_dims_of(ctx, a[3]);
  if (!part || !eq || !da || !db) return std::nullopt;
  ir::EinsumPlan plan;
  try {
    plan = ir::einsum_plan(*eq, {*da, *db});
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  const std::string &ta = plan.terms[0], &tb = plan.terms[1], &out = plan.out;
  const auto in = [](const std::string& t, char letter) { return t.find(letter) != std::string::npos; };
  for (const std::string& t : {ta, tb, out})
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.find(t[i], i + 1) != std::string::npos) return std::nullopt;  // a diagonal
  std::string batch, free_a, free_b, summed;
  for (char letter : out) (in(ta, letter) && in(tb, letter) ? batch : in(ta, letter) ? free_a : free_b) += letter;
  for (char letter : ta) {
    if (in(out, letter)) continue;
    if (!in(tb, letter)) return std::nullopt;  // summed within a alone
    summed += letter;
  }
  for (char letter : tb)
    if (!in(out, letter) && !in(ta, letter)) return std::nullopt;
  const auto size_in = [](const std::string& t, const Ints& d, char letter) { return d[t.find(letter)]; };
  for (char letter : batch + summed)
    if (size_in(ta, *da, letter) != size_in(tb, *db, letter)) return std::nullopt;  // broadcast
  const auto perm_of = [](const std::string& t, const std::string& order) {
    Ints perm;
    for (char letter : order) perm.push_back(static_cast<std::int64_t>(t.find(letter)));
    return perm;
  };
  const auto size_of = [&](const std::string& letters) {
    std::int64_t n = 1;
    for (char letter : letters) n *= plan.size.at(letter);
    return n;
  };
  Ints lead;
  for (char letter : batch) lead.push_back(plan.size.at(letter));
  const auto with = [&](std::initializer_list<std::int64_t> tail) {
    Ints dims = lead;
    dims.insert(dims.end(), tail);
    return dims;
  };
  if (*part == "perm-a") return list_of(perm_of(ta, batch + free_a + summed));
  if (*part == "shape-a") return list_of(with({size_of(free_a), size_of(summed)}));
  if (*part == "perm-b") return list_of(perm_of(tb, batch + summed + free_b));
  if (*part == "shape-b") return list_of(with({size_of(summed), size_of(free_b)}));
  if (*part == "shape-y") {
    Ints dims = lead;
    for (char letter : free_a + free_b) dims.push_back(plan.size.at(letter));
    return list_of(dims);
  }
  if (*part == "perm-y") return list_of(perm_of(batch + free_a + free_b, out));
  return std::nullopt;
}

// (convt-plan PART x w kernel strides pads dilations group auto_pad
// output_padding output_shape): conv_transpose as a convolution. x is
// spread by the stride (each element followed by s-1 zeros: spread,
// up-pads, up-shape), then padded so that every output reads its taps
// (pads; negative cuts), and convolved with stride 1 and the same
// dilation by w regrouped to [M C/G k...] (w-groups, w-perm, w-shape) and
// flipped along every spatial axis (flip-starts, flip-ends, flip-axes,
// flip-steps). kernel, dilations and bias-shape are the conv's.
//
// The gemm-* parts exist only where the windows tile the result (stride =
// kernel, no padding or cropping, group 1): each input position then
// writes its own M x k1 x ... block, so the op is one matrix product
// [N P C] x [C M K] (P positions, K taps) whose result, viewed [N s1.. M
// k1..], is transposed to [N M s1 k1 s2 k2 ..] (gemm-x-shape,
// gemm-w-shape, gemm-y-shape, gemm-perm, gemm-out).
Result convt_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto xd = static_dims_of(ctx, a[1]), wd = static_dims_of(ctx, a[2]);
  auto g = int_of(ctx, a[7]);
  if (!part || !xd || !wd || !g || *g <= 0 || xd->size() < 3 || wd->size() != xd->size()) return std::nullopt;
  auto attrs = window_attrs(ctx, a[4], a[5], a[6], a[8]);
  auto k = ints_of(ctx, a[3]), opad = ints_of(ctx, a[9]), oshape = ints_of(ctx, a[10]);
  if (!attrs || !k || !opad || !oshape) return std::nullopt;
  if (!k->empty()) attrs->set("kernel_shape", *k);
  if (!opad->empty()) attrs->set("output_padding", *opad);
  if (!oshape->empty()) attrs->set("output_shape", *oshape);
  const std::int64_t N = (*xd)[0], C = (*xd)[1], G = *g, mpg = (*wd)[1];
  if (C % G != 0 || (*wd)[0] != C) return std::nullopt;
  const std::size_t n = xd->size() - 2;
  ir::ConvTransposeGeometry geo;
  try {
    geo = ir::conv_transpose_geometry(*attrs, *xd, *wd);
  } catch (const ir::ShapeError&) {
    return std::nullopt;
  }
  Ints out;
  const std::string& p = *part;
  if (p.rfind("gemm-", 0) == 0) {
    if (G != 1) return std::nullopt;
    std::int64_t positions = 1, taps = 1;
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t k = geo.kernel[j];
      if (geo.strides[j] != k || (k > 1 && geo.dilations[j] != 1) || geo.begin[j] != 0 ||
          geo.out[j] != (*xd)[2 + j] * k)
        return std::nullopt;
      positions *= (*xd)[2 + j];
      taps *= k;
    }
    if (p == "gemm-x-shape") {
      out = {N, C, positions};
    } else if (p == "gemm-w-shape") {
      out = {C, mpg * taps};
    } else if (p == "gemm-y-shape") {
      out = {N};
      out.insert(out.end(), xd->begin() + 2, xd->end());
      out.push_back(mpg);
      out.insert(out.end(), geo.kernel.begin(), geo.kernel.end());
    } else if (p == "gemm-perm") {
      out = {0, static_cast<std::int64_t>(n + 1)};
      for (std::size_t j = 0; j < n; ++j)
        out.insert(out.end(), {static_cast<std::int64_t>(1 + j), static_cast<std::int64_t>(n + 2 + j)});
    } else if (p == "gemm-out") {
      out = {N, mpg};
      out.insert(out.end(), geo.out.begin(), geo.out.end());
    } else {
      return std::nullopt;
    }
    return list_of(out);
  }
  if (p == "spread" || p == "up-shape") {
    out = {N, C};
    for (std::size_t j = 0; j < n; ++j) {
      if (p == "spread")
        out.insert(out.end(), {(*xd)[2 + j], 1});
      else
        out.push_back((*xd)[2 + j] * geo.strides[j]);
    }
  } else if (p == "up-pads") {
    out.assign(2 * (2 + 2 * n), 0);
    for (std::size_t j = 0; j < n; ++j) out[(2 + 2 * n) + 2 + 2 * j + 1] = geo.strides[j] - 1;
  } else if (p == "pads") {
    Ints begin, end;
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t reach = (geo.kernel[j] - 1) * geo.dilations[j];
      begin.push_back(reach - geo.begin[j]);
      end.push_back(geo.out[j] + reach - (*xd)[2 + j] * geo.strides[j] - begin.back());
    }
    out = spatial_pads(begin, end);
  } else if (p == "w-groups") {
    out = {G, C / G, mpg};
    out.insert(out.end(), wd->begin() + 2, wd->end());
  } else if (p == "w-perm") {
    out = {0, 2, 1};
    Ints rest = iota(3, static_cast<std::int64_t>(3 + n));
    out.insert(out.end(), rest.begin(), rest.end());
  } else if (p == "w-shape") {
    out = {G * mpg, C / G};
    out.insert(out.end(), wd->begin() + 2, wd->end());
  } else if (p == "flip-starts" || p == "flip-steps") {
    out.assign(n, -1);
  } else if (p == "flip-ends") {
    for (std::size_t j = 0; j < n; ++j) out.push_back(-((*wd)[2 + j] + 1));
  } else if (p == "flip-axes") {
    out = iota(2, static_cast<std::int64_t>(2 + n));
  } else if (p == "kernel") {
    out = geo.kernel;
  } else if (p == "dilations") {
    out = geo.dilations;
  } else if (p == "bias-shape") {
    out = {G * mpg};
    out.insert(out.end(), n, 1);
  } else {
    return std::nullopt;
  }
  return list_of(out);
}

// (axis-iota ?x ?axis): the i64 constant [0 .. n-1] along x's axis (size
// 1 on the others), n = x's size there: which position each element holds.
Result axis_iota(EvalContext& ctx, Args a) {
  auto dims = static_dims_of(ctx, a[0]);
  if (!dims || dims->empty()) return std::nullopt;
  auto axis = axis_of(ctx, a[1], dims->size());
  if (!axis) return std::nullopt;
  Ints shape(dims->size(), 1);
  shape[*axis] = (*dims)[*axis];
  return constant(ctx, ir::Tensor::of_ints(ir::DType::I64, shape, iota(0, (*dims)[*axis])));
}

// (cumsum-plan PART ?x ?axis ?exclusive ?reverse): cumsum as a masked sum.
// x viewed with a 1 after the axis (spread), so that its axis j meets the
// result's position i on the next one; mask, a bool constant [n n] at those
// two axes (1 elsewhere), says which j each i sums (j <= i; j < i when
// exclusive; >= and > when reversed); axis, the summed one. nullopt past n
// = 1024 (a mask of a million elements).
Result cumsum_plan(EvalContext& ctx, Args a) {
  auto part = symbol_of(ctx, a[0]);
  auto dims = static_dims_of(ctx, a[1]);
  auto exclusive = int_of(ctx, a[3]), reverse = int_of(ctx, a[4]);
  if (!part || !dims || dims->empty() || !exclusive || !reverse) return std::nullopt;
  auto axis = axis_of(ctx, a[2], dims->size());
  if (!axis) return std::nullopt;
  const std::int64_t n = (*dims)[*axis];
  if (n > 1024) return std::nullopt;
  if (*part == "spread") {
    Ints out(*dims);
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(*axis) + 1, 1);
    return list_of(out);
  }
  if (*part == "axis") return list_of(Ints{static_cast<std::int64_t>(*axis)});
  if (*part != "mask") return std::nullopt;
  Ints shape(dims->size() + 1, 1);
  shape[*axis] = shape[*axis + 1] = n;
  ir::Tensor mask(ir::DType::Bool, shape);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const bool sums = *reverse ? (*exclusive ? j > i : j >= i) : (*exclusive ? j < i : j <= i);
      mask.set_int(static_cast<std::size_t>(j * n + i), sums);
    }
  return constant(ctx, std::move(mask));
}

}  // namespace

void register_decompose_builtins(BuiltinRegistry& r) {
  r.add(Builtin{"window-plan", 5, 5,
                "(window-plan PART x kernel strides dilations): shapes, slice bounds and perm of windows(x) as "
                "movement ops; PART is spread, repeat, flat, zeros, cut, spatial-axes, rows, taps, row-axes, steps "
                "or perm",
                window_plan});
  r.add(
      Builtin{"conv-plan", 9, 9,
              "(conv-plan PART x w kernel strides pads dilations group auto_pad): conv(x, w) as a product with "
              "windows; PART is kernel, pads, x-shape, w-shape, axes, y-shape or bias-shape; or the window's strides, "
              "dilations or spatial-pads (the spatial dims' begin pads, then their end pads)",
              conv_plan});
  r.add(Builtin{"pool-plan", 9, 9,
                "(pool-plan PART x kernel strides pads dilations auto_pad ceil_mode count_include_pad): pooling as a "
                "reduction over windows; PART is pads, axes or counts (average's divisors, a constant)",
                pool_plan});
  r.add(Builtin{"lowest", 1, 1, "the most negative value of the tensor's dtype (-inf for floating types)",
                [](EvalContext& ctx, Args a) { return extreme(ctx, a, false); }});
  r.add(Builtin{"highest", 1, 1, "the largest value of the tensor's dtype (inf for floating types)",
                [](EvalContext& ctx, Args a) { return extreme(ctx, a, true); }});
  r.add(
      Builtin{"einsum-plan", 4, -1,
              "(einsum-plan PART k equation x0 x1 ...): perm and shape of operand k, or the summed axes, of einsum as "
              "a product summed (no diagonals)",
              einsum_plan});
  r.add(Builtin{"einsum-matmul", 4, 4,
                "(einsum-matmul PART equation a b): perm-a, shape-a, perm-b, shape-b, shape-y or perm-y of a "
                "two-operand einsum as one batched matrix product (no diagonals, no letter summed in one operand, no "
                "broadcast batch letter)",
                einsum_matmul});
  r.add(
      Builtin{"convt-plan", 11, 11,
              "(convt-plan PART x w kernel strides pads dilations group auto_pad output_padding output_shape): "
              "conv_transpose as a convolution of x spread by the stride, with w regrouped and flipped; gemm-x-shape, "
              "gemm-w-shape, gemm-y-shape, gemm-perm and gemm-out: as one matrix product where the windows tile "
              "the result",
              convt_plan});
  r.add(Builtin{"nan", 0, 0, "a quiet NaN", [](EvalContext&, Args) -> Result {
                  return Value::of_number(Number(std::numeric_limits<double>::quiet_NaN()));
                }});
  r.add(Builtin{"axis-iota", 2, 2, "(axis-iota x axis): the i64 constant [0 .. n-1] along x's axis", axis_iota});
  r.add(Builtin{"lrn-plan", 3, 3, "(lrn-plan PART x size): perm, unperm or pads of LRN's channel window", lrn_plan});
  r.add(Builtin{"concat-plan", 4, 4,
                "(concat-plan PART a b axis): pads-a, pads-b or mask (a constant) of concat(a, b) as a where",
                concat_plan});
  r.add(Builtin{"split-plan", 6, 6,
                "(split-plan PART x axis split result count): starts, ends or axes of one split result as a slice",
                split_plan});
  r.add(Builtin{"tile-plan", 3, 3, "(tile-plan PART x repeats): spread, repeat or flat shapes of tile as expand",
                tile_plan});
  r.add(Builtin{"shape-const", 3, 3, "(shape-const x start end): the i64 constant shape(x) gives (static shapes)",
                shape_const});
  r.add(Builtin{"numel-const", 1, 1, "the i64 scalar constant size(x) gives (static shapes)", numel_const});
  r.add(Builtin{"range-iota", 3, 3,
                "(range-iota start limit delta): the constant [0 .. n-1] in start's dtype, n = len(range(...))",
                range_iota});
  r.add(Builtin{"cumsum-plan", 5, 5,
                "(cumsum-plan PART x axis exclusive reverse): spread (x's shape with a 1 after the axis), mask (a "
                "bool constant: which elements each position sums) or axis of cumsum as a masked sum",
                cumsum_plan});
  r.add(Builtin{"trilu-mask", 3, 3, "(trilu-mask x upper k): the bool constant [rows cols] of what trilu keeps",
                trilu_mask});
  r.add(
      Builtin{"gather-plan", 4, 4,
              "(gather-plan PART x indices axis): data-shape, index-shape, iota, count or axis of gather as a one-hot "
              "selection",
              gather_plan});
  r.add(Builtin{"resize-plan", 12, 12,
                "(resize-plan PART x sizes scales roi mode transform nearest a exclude extrapolation antialias): "
                "done, perm, shape, axis, weights, fill, inverse, scales or roi of one resize pass as a product",
                resize_plan});
  r.add(Builtin{"gather-elements-plan", 4, 4,
                "(gather-elements-plan PART x indices axis): starts, ends, axes, perm, data-shape, index-shape, iota, "
                "count or axis of gather_elements as a one-hot selection",
                gather_elements_plan});
}

}  // namespace saturn::rules
