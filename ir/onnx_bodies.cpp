// ONNX ops imported as their definitions in the registry's ops, none of
// which needs a kernel of its own: GroupNormalization, Hardmax,
// LpNormalization, LpPool, MeanVarianceNormalization, RotaryEmbedding and
// Swish (their function bodies), OneHot (a comparison with the classes), EyeLike (a constant:
// only x's shape is read), ScatterElements and the older Scatter
// (scatter_nd with every position's full index), GatherND
// (gather_elements over the indexed dimensions flattened into one).
//
// Invariant: every index an op reads is wrapped (negative counts from the
// end) before a registry op sees it, and one still out of range is the
// registry op's run-time error (gather_elements, scatter_nd), never a
// silent read elsewhere; OneHot's out-of-range indices give rows of `off`,
// as its definition says.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx_importer.hpp"

namespace saturn::ir::onnx_detail {

namespace {

std::vector<std::int64_t> static_dims_of(Importer& im, const std::string& v, const char* what) {
  const Shape& s = im.type_of(v).shape;
  if (!is_static(s)) im.unsupported(std::string(what) + " (operand '" + v + "') needs a static shape");
  return static_dims(s);
}

std::int64_t normalized_axis(Importer& im, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank)
    im.unsupported("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// 0, 1, ..., n-1 along `axis` of a shape of `rank` ones elsewhere (i64).
Tensor iota_along(std::int64_t n, std::int64_t axis, std::int64_t rank) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank), 1);
  dims[static_cast<std::size_t>(axis)] = n;
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return Tensor::of_ints(DType::I64, dims, v);
}

// `idx` (i64) with negative entries counted from the end of `size`.
std::string wrapped(Importer& im, const std::string& base, const std::string& idx, const std::string& size) {
  const std::string zero = im.add_fresh_const(base, "zero", Tensor::scalar(DType::I64, 0));
  return im.emit_fresh(base, "where",
                       {im.emit_fresh(base, "less", {idx, zero}), im.emit_fresh(base, "add", {idx, size}), idx});
}

std::string as_i64(Importer& im, const std::string& base, const std::string& v) {
  if (im.type_of(v).dtype == DType::I64) return v;
  Attrs to;
  to.set("to", std::string("i64"));
  return im.emit_fresh(base, "cast", {v}, std::move(to));
}

void hardmax(Importer& im) {
  const std::string x = im.in(0), base = im.out(0);
  const std::vector<std::int64_t> d = static_dims_of(im, x, "x");
  const auto rank = static_cast<std::int64_t>(d.size());
  // Before opset 13 the axis splits x into rows [d0..axis) and columns.
  const bool coerced = im.opset() < 13;
  std::int64_t axis = normalized_axis(im, im.ai("axis", coerced ? 1 : -1), rank);
  std::string v = x;
  std::int64_t n = d[static_cast<std::size_t>(axis)], r = rank;
  if (coerced) {
    std::int64_t rows = 1, cols = 1;
    for (std::int64_t i = 0; i < rank; ++i) (i < axis ? rows : cols) *= d[static_cast<std::size_t>(i)];
    v = im.emit_fresh(base, "reshape", {x}, list_attr("shape", {rows, cols}));
    axis = 1;
    n = cols;
    r = 2;
  }
  Attrs am = int_attr("axis", axis);
  am.set("keepdims", std::int64_t{1});
  const std::string first = im.emit_fresh(base, "argmax", {v}, std::move(am));  // the first maximum
  const std::string classes = im.add_fresh_const(base, "classes", iota_along(n, axis, r));
  Attrs to;
  to.set("to", std::string(dtype_name(im.type_of(x).dtype)));
  const std::string hot = im.emit_fresh(base, "equal", {first, classes});
  if (!coerced) {
    im.emit("cast", {hot}, {im.out(0)}, std::move(to));
    return;
  }
  im.emit("reshape", {im.emit_fresh(base, "cast", {hot}, std::move(to))}, {im.out(0)}, list_attr("shape", d));
}

void lp_normalization(Importer& im) {
  const std::string x = im.in(0);
  const auto rank = static_cast<std::int64_t>(im.type_of(x).shape.size());
  const std::int64_t axis = normalized_axis(im, im.ai("axis", -1), rank), p = im.ai("p", 2);
  if (p != 1 && p != 2) im.unsupported("p " + std::to_string(p) + " is not 1 or 2");
  Attrs r = list_attr("axes", {axis});
  r.set("keepdims", std::int64_t{1});
  const std::string base = im.out(0), norm = im.emit_fresh(base, p == 1 ? "reduce_l1" : "reduce_l2", {x}, std::move(r));
  // A norm of 0 (every element 0) gives 0s, as ONNX's reference does, not 0/0.
  const DType t = im.type_of(x).dtype;
  const std::string zero = im.add_fresh_const(base, "zero", Tensor::scalar(t, 0.0)),
                    one = im.add_fresh_const(base, "one", Tensor::scalar(t, 1.0));
  im.emit("div", {x, im.emit_fresh(base, "where", {im.emit_fresh(base, "equal", {norm, zero}), one, norm})},
          {im.out(0)});
}

// The function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
void mean_variance_normalization(Importer& im) {
  const std::string x = im.in(0), base = im.out(0);
  std::vector<std::int64_t> axes = im.has_attr("axes") ? im.aints("axes") : std::vector<std::int64_t>{0, 2, 3};
  Attrs r = list_attr("axes", axes);
  r.set("keepdims", std::int64_t{1});
  const std::string mean = im.emit_fresh(base, "reduce_mean", {x}, r);
  const std::string mean_sq = im.emit_fresh(base, "reduce_mean", {im.emit_fresh(base, "mul", {x, x})}, r);
  const std::string var = im.emit_fresh(base, "sub", {mean_sq, im.emit_fresh(base, "mul", {mean, mean})});
  const std::string eps = im.add_fresh_const(base, "epsilon", Tensor::scalar(im.type_of(x).dtype, 1e-9));
  const std::string sd = im.emit_fresh(base, "add", {im.emit_fresh(base, "sqrt", {var}), eps});
  im.emit("div", {im.emit_fresh(base, "sub", {x, mean}), sd}, {im.out(0)});
}

// The function body: x [N C ...] as [N G rest], each group normalized
// by its mean and variance, then scaled and shifted per channel (opset
// 21: scale and bias of C values) or per group (opset 18: of G values,
// applied before the groups are merged back). A half-precision x is
// normalized in float32 (stash_type 1, the default), as the body casts.
void group_normalization(Importer& im) {
  const std::string x = im.in(0), base = im.out(0);
  const std::vector<std::int64_t> d = static_dims_of(im, x, "x");
  const std::int64_t groups = im.ai("num_groups", 0);
  if (d.size() < 2) im.unsupported("x must have a channel axis, it is " + to_string(im.type_of(x).shape));
  if (groups < 1 || d[1] % groups != 0)
    im.unsupported("num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(d[1]) +
                   " channels");
  const std::vector<std::int64_t> scale_dims = static_dims_of(im, im.in(1), "scale"),
                                  bias_dims = static_dims_of(im, im.in(2), "bias");
  const std::int64_t width = scale_dims.size() == 1 ? scale_dims[0] : -1;
  if (bias_dims != scale_dims || (width != d[1] && width != groups))
    im.unsupported("scale and bias must hold one value per channel (" + std::to_string(d[1]) + ") or per group (" +
                   std::to_string(groups) + ")");
  const DType t = im.type_of(x).dtype;
  const bool stash = (t == DType::F16 || t == DType::BF16) && im.ai("stash_type", 1) == 1;
  auto cast = [&](const std::string& v, const char* to) {
    return im.emit_fresh(base, "cast", {v}, text_attr("to", to));
  };
  const std::string xs = stash ? cast(x, "f32") : x;
  const DType ct = stash ? DType::F32 : t;
  const std::string grouped = im.emit_fresh(base, "reshape", {xs}, list_attr("shape", {d[0], groups, -1}));
  Attrs r = list_attr("axes", {2});
  r.set("keepdims", std::int64_t{1});
  const std::string centered = im.emit_fresh(base, "sub", {grouped, im.emit_fresh(base, "reduce_mean", {grouped}, r)});
  const std::string var = im.emit_fresh(base, "reduce_mean", {im.emit_fresh(base, "mul", {centered, centered})}, r);
  const std::string eps = im.add_fresh_const(base, "epsilon", Tensor::scalar(ct, im.af("epsilon", 1e-5)));
  std::string y =
      im.emit_fresh(base, "div", {centered, im.emit_fresh(base, "sqrt", {im.emit_fresh(base, "add", {var, eps})})});
  // scale and bias as [width 1 ...]: against the groups' [N G rest] when
  // per group, the channels' [N C ...] when per channel.
  const bool per_group = width == groups;
  std::vector<std::int64_t> param_dims{width};
  param_dims.insert(param_dims.end(), per_group ? 1 : d.size() - 2, 1);
  auto param = [&](const std::string& v) {
    const std::string p = stash ? cast(v, "f32") : v;
    return im.emit_fresh(base, "reshape", {p}, list_attr("shape", param_dims));
  };
  const std::string scale = param(im.in(1)), bias = param(im.in(2));
  // The last op writes the result, or its float32 value cast back.
  auto last = [&](const std::string& op, std::vector<std::string> in, Attrs a) {
    if (!stash) return im.emit(op, std::move(in), {im.out(0)}, std::move(a));
    im.emit("cast", {im.emit_fresh(base, op, std::move(in), std::move(a))}, {im.out(0)},
            text_attr("to", t == DType::F16 ? "f16" : "bf16"));
  };
  if (per_group) {
    y = im.emit_fresh(base, "add", {im.emit_fresh(base, "mul", {y, scale}), bias});
    last("reshape", {y}, list_attr("shape", d));
  } else {
    y = im.emit_fresh(base, "reshape", {y}, list_attr("shape", d));
    last("add", {im.emit_fresh(base, "mul", {y, scale}), bias}, {});
  }
}

void one_hot(Importer& im) {
  const std::string base = im.out(0);
  const Tensor& depth_t = im.const_tensor(1, "depth");
  if (depth_t.numel() != 1) im.unsupported("depth must hold one value");
  const auto depth = static_cast<std::int64_t>(depth_t.at(0));  // (a float depth is truncated, as ONNX Runtime does)
  if (depth < 1) im.unsupported("depth " + std::to_string(depth) + " is not positive");
  const std::string values = im.in(2);
  if (static_dims_of(im, values, "values") != std::vector<std::int64_t>{2})
    im.unsupported("values must hold two elements, [off, on]");
  const auto rank = static_cast<std::int64_t>(im.type_of(im.in(0)).shape.size()) + 1;
  const std::int64_t axis = normalized_axis(im, im.ai("axis", -1), rank);
  const std::string size = im.add_fresh_const(base, "depth", Tensor::scalar(DType::I64, static_cast<double>(depth)));
  const std::string idx = wrapped(im, base, as_i64(im, base, im.in(0)), size);
  const std::string hot = im.emit_fresh(base, "equal",
                                        {im.emit_fresh(base, "unsqueeze", {idx}, list_attr("axes", {axis})),
                                         im.add_fresh_const(base, "classes", iota_along(depth, axis, rank))});
  auto value = [&](std::int64_t k) {
    Attrs s = list_attr("starts", {k});
    s.set("ends", std::vector<std::int64_t>{k + 1});
    return im.emit_fresh(base, "reshape", {im.emit_fresh(base, "slice", {values}, std::move(s))},
                         list_attr("shape", std::vector<std::int64_t>{}));
  };
  im.emit("where", {hot, value(1), value(0)}, {im.out(0)});
}

void eye_like(Importer& im) {
  const std::vector<std::int64_t> d = static_dims_of(im, im.in(0), "x");
  if (d.size() != 2) im.unsupported("x must be 2-D, it is " + to_string(im.type_of(im.in(0)).shape));
  DType t = im.type_of(im.in(0)).dtype;
  if (im.has_attr("dtype")) {
    const std::int64_t code = im.ai("dtype", 1);
    auto dt = dtype_from_onnx(static_cast<int>(code));
    if (!dt) im.unsupported("dtype " + onnx_type_name(static_cast<int>(code)) + " is not supported");
    t = *dt;
  }
  const std::int64_t k = im.ai("k", 0);
  Tensor eye(t, d);
  for (std::int64_t i = 0; i < d[0]; ++i)
    if (i + k >= 0 && i + k < d[1]) eye.set(static_cast<std::size_t>(i * d[1] + i + k), 1.0);
  im.add_const(im.out(0), std::move(eye));
}

void swish(Importer& im) {
  const std::string x = im.in(0), base = im.out(0);
  const std::string alpha = im.add_fresh_const(base, "alpha", Tensor::scalar(im.type_of(x).dtype, im.af("alpha", 1.0)));
  im.emit("mul", {x, im.emit_fresh(base, "sigmoid", {im.emit_fresh(base, "mul", {x, alpha})})}, {im.out(0)});
}

// ScatterElements: position p of `indices` writes updates[p] at p with its
// `axis` coordinate replaced by indices[p]; that full coordinate for every
// p is what scatter_nd reads.
void scatter_elements(Importer& im) {
  const std::string data = im.in(0), base = im.out(0);
  const std::vector<std::int64_t> dd = static_dims_of(im, data, "data");
  const std::vector<std::int64_t> id = static_dims_of(im, im.in(1), "indices");
  const auto rank = static_cast<std::int64_t>(dd.size());
  if (static_cast<std::int64_t>(id.size()) != rank)
    im.unsupported("indices must have data's rank, " + std::to_string(rank));
  if (static_dims_of(im, im.in(2), "updates") != id) im.unsupported("updates must have the indices' shape");
  const std::int64_t axis = normalized_axis(im, im.ai("axis", 0), rank);
  const std::string reduction = im.as("reduction", "none");
  const std::string size = im.add_fresh_const(base, "size", Tensor::scalar(DType::I64, static_cast<double>(dd[axis])));
  std::vector<std::string> coords;
  std::vector<std::int64_t> column = id;
  column.push_back(1);
  for (std::int64_t k = 0; k < rank; ++k) {
    std::string c;
    if (k == axis) {
      c = wrapped(im, base, as_i64(im, base, im.in(1)), size);
    } else {  // this axis's own coordinate, at every position
      Attrs e = list_attr("shape", id);
      c = im.emit_fresh(base, "expand", {im.add_fresh_const(base, "coordinate", iota_along(id[k], k, rank))},
                        std::move(e));
    }
    coords.push_back(im.emit_fresh(base, "reshape", {c}, list_attr("shape", column)));
  }
  const std::string full = im.emit_fresh(base, "concat", coords, int_attr("axis", rank));
  Attrs r;
  r.set("reduction", reduction);
  im.emit("scatter_nd", {data, full, im.in(2)}, {im.out(0)}, std::move(r));
}

// GatherND: the indexed dimensions of data flattened into one, each index
// tuple its offset there, then gather_elements along that dimension for
// every batch row and every element after it.
void gather_nd(Importer& im) {
  const std::string data = im.in(0), base = im.out(0);
  const std::vector<std::int64_t> dd = static_dims_of(im, data, "data");
  const std::vector<std::int64_t> id = static_dims_of(im, im.in(1), "indices");
  const auto b = static_cast<std::size_t>(im.ai("batch_dims", 0));
  if (id.empty()) im.unsupported("indices must have rank 1 or more");
  const auto k = static_cast<std::size_t>(id.back());
  if (b >= id.size() || b + k > dd.size() || k < 1)
    im.unsupported("indices " + to_string(shape_of(id)) + " with batch_dims " + std::to_string(b) +
                   " do not index data " + to_string(shape_of(dd)));
  for (std::size_t i = 0; i < b; ++i)
    if (id[i] != dd[i]) im.unsupported("the batch dimensions of data and indices differ");
  std::int64_t batch = 1, indexed = 1, rest = 1, tuples = 1;
  for (std::size_t i = 0; i < dd.size(); ++i) (i < b ? batch : i < b + k ? indexed : rest) *= dd[i];
  for (std::size_t i = b; i + 1 < id.size(); ++i) tuples *= id[i];
  const std::string idx = as_i64(im, base, im.in(1));
  std::string offset, outside;
  std::int64_t stride = indexed;
  for (std::size_t j = 0; j < k; ++j) {
    const std::int64_t dim = dd[b + j];
    stride /= dim;
    Attrs s = list_attr("starts", {static_cast<std::int64_t>(j)});
    s.set("ends", std::vector<std::int64_t>{static_cast<std::int64_t>(j) + 1});
    s.set("axes", std::vector<std::int64_t>{-1});
    const std::string size = im.add_fresh_const(base, "dim", Tensor::scalar(DType::I64, static_cast<double>(dim)));
    const std::string column = wrapped(im, base, im.emit_fresh(base, "slice", {idx}, std::move(s)), size);
    // A coordinate out of its own range could land inside the flattened
    // dimension: such a tuple is sent past its end, where gather_elements
    // refuses it.
    const std::string zero = im.add_fresh_const(base, "zero", Tensor::scalar(DType::I64, 0));
    const std::string bad = im.emit_fresh(
        base, "or",
        {im.emit_fresh(base, "less", {column, zero}), im.emit_fresh(base, "greater_equal", {column, size})});
    outside = outside.empty() ? bad : im.emit_fresh(base, "or", {outside, bad});
    const std::string term =
        im.emit_fresh(base, "mul", {column, im.add_fresh_const(base, "stride", Tensor::scalar(DType::I64, stride))});
    offset = offset.empty() ? term : im.emit_fresh(base, "add", {offset, term});
  }
  offset = im.emit_fresh(
      base, "where",
      {outside, im.add_fresh_const(base, "past", Tensor::scalar(DType::I64, static_cast<double>(indexed))), offset});
  const std::string rows = im.emit_fresh(base, "reshape", {data}, list_attr("shape", {batch, indexed, rest}));
  const std::string at =
      im.emit_fresh(base, "expand", {im.emit_fresh(base, "reshape", {offset}, list_attr("shape", {batch, tuples, 1}))},
                    list_attr("shape", {batch, tuples, rest}));
  const std::string got = im.emit_fresh(base, "gather_elements", {rows, at}, int_attr("axis", 1));
  std::vector<std::int64_t> out(id.begin(), id.end() - 1);
  out.insert(out.end(), dd.begin() + static_cast<std::ptrdiff_t>(b + k), dd.end());
  im.emit("reshape", {got}, {im.out(0)}, list_attr("shape", out));
}

// RotaryEmbedding (opset 23), its function body: x as [batch, seq, heads,
// head] (4-D input transposed from [batch, heads, seq, head], 3-D split
// into num_heads), its first rotary_embedding_dim features rotated in
// pairs, halves (x1 = first half, x2 = second) or interleaved (even and
// odd features), by the cos and sin at each position: x1 cos - x2 sin and
// x1 sin + x2 cos; the features past it pass unchanged.
void rotary_embedding(Importer& im) {
  const std::string base = im.out(0);
  const std::vector<std::int64_t> xd = static_dims_of(im, im.in(0), "input");
  auto op = [&](const char* name, std::vector<std::string> ins, Attrs a = {}) {
    return im.emit_fresh(base, name, std::move(ins), std::move(a));
  };
  auto slice = [&](const std::string& v, std::int64_t begin, std::int64_t end, std::int64_t step = 1) {
    Attrs s = list_attr("starts", {begin});
    s.set("ends", std::vector<std::int64_t>{end});
    s.set("axes", std::vector<std::int64_t>{-1});
    s.set("steps", std::vector<std::int64_t>{step});
    return op("slice", {v}, std::move(s));
  };
  std::string x;
  std::int64_t batch = 0, seq = 0, heads = 0, head = 0;
  if (xd.size() == 4) {
    batch = xd[0], heads = xd[1], seq = xd[2], head = xd[3];
    x = op("transpose", {im.in(0)}, list_attr("perm", {0, 2, 1, 3}));
  } else if (xd.size() == 3) {
    heads = im.ai("num_heads", 0);
    if (heads <= 0 || xd[2] % heads != 0) im.unsupported("a 3-D input needs num_heads that divides its hidden size");
    batch = xd[0], seq = xd[1], head = xd[2] / heads;
    x = op("reshape", {im.in(0)}, list_attr("shape", {batch, seq, heads, head}));
  } else {
    im.unsupported("the input must be 3-D or 4-D, it is " + to_string(im.type_of(im.in(0)).shape));
  }
  std::int64_t rotary = im.ai("rotary_embedding_dim", 0);
  if (rotary == 0) rotary = head;
  if (rotary < 0 || rotary > head || rotary % 2 != 0)
    im.unsupported("rotary_embedding_dim " + std::to_string(rotary) + " is not even and at most the head size " +
                   std::to_string(head));
  if (xd.size() == 4 && im.has_attr("num_heads") && im.ai("num_heads", 0) != heads)
    im.unsupported("num_heads differs from the input's heads");
  const bool interleaved = im.ai("interleaved", 0) != 0;
  // cos and sin [batch, seq, rotary / 2] at each position, then across the heads.
  auto table = [&](int k) {
    std::string c = im.in(k);
    if (im.has_in(3)) c = op("gather", {im.in(k), as_i64(im, base, im.in(3))}, int_attr("axis", 0));
    return op("unsqueeze", {slice(c, 0, rotary / 2)}, list_attr("axes", {2}));
  };
  const std::string cos = table(1), sin = table(2);
  const std::string rotated_part = slice(x, 0, rotary);
  const std::string x1 = interleaved ? slice(rotated_part, 0, rotary, 2) : slice(rotated_part, 0, rotary / 2);
  const std::string x2 = interleaved ? slice(rotated_part, 1, rotary, 2) : slice(rotated_part, rotary / 2, rotary);
  const std::string real = op("sub", {op("mul", {cos, x1}), op("mul", {sin, x2})});
  const std::string imaginary = op("add", {op("mul", {sin, x1}), op("mul", {cos, x2})});
  std::string rotated;
  if (interleaved)
    rotated = op(
        "reshape",
        {op("concat",
            {op("unsqueeze", {real}, list_attr("axes", {-1})), op("unsqueeze", {imaginary}, list_attr("axes", {-1}))},
            int_attr("axis", -1))},
        list_attr("shape", {batch, seq, heads, rotary}));
  else
    rotated = op("concat", {real, imaginary}, int_attr("axis", -1));
  const std::string y =
      rotary == head ? rotated : op("concat", {rotated, slice(x, rotary, head)}, int_attr("axis", -1));
  if (xd.size() == 4)
    im.emit("transpose", {y}, {im.out(0)}, list_attr("perm", {0, 2, 1, 3}));
  else
    im.emit("reshape", {y}, {im.out(0)}, list_attr("shape", xd));
}

// LpPool: (sum over the window of |x|^p)^(1/p), the sum an average with
// the padding counted (zeros) times the window's size.
void lp_pool(Importer& im) {
  const std::string x = im.in(0), base = im.out(0);
  const DType t = im.type_of(x).dtype;
  if (!is_float(t)) im.unsupported("x must be of a floating type");
  const std::int64_t p = im.ai("p", 2);
  if (p < 1) im.unsupported("p " + std::to_string(p) + " is not positive");
  // (A window past the end under ceil_mode would be divided by less than
  // its size: not what the sum needs.)
  if (im.ai("ceil_mode", 0) != 0) im.unsupported("ceil_mode 1 is not supported");
  Attrs pool = im.copy({"auto_pad", "dilations", "kernel_shape", "pads", "strides"});
  pool.set("count_include_pad", std::int64_t{1});
  std::int64_t window = 1;
  for (std::int64_t k : im.aints("kernel_shape")) window *= k;
  auto scalar = [&](const char* what, double v) { return im.add_fresh_const(base, what, Tensor::scalar(t, v)); };
  const std::string magnitude = im.emit_fresh(base, "abs", {x});
  const std::string powered =
      p == 1 ? magnitude : im.emit_fresh(base, "pow", {magnitude, scalar("p", static_cast<double>(p))});
  const std::string sum = im.emit_fresh(
      base, "mul", {im.emit_fresh(base, "avg_pool", {powered}, std::move(pool)), scalar("window", window)});
  if (p == 1)
    im.emit("identity", {sum}, {im.out(0)});
  else
    im.emit("pow", {sum, scalar("root", 1.0 / static_cast<double>(p))}, {im.out(0)});
}

}  // namespace

void import_bodies(ImportTable& t) {
  t["LpPool"] = lp_pool;
  t["RotaryEmbedding"] = rotary_embedding;
  t["Hardmax"] = hardmax;
  t["LpNormalization"] = lp_normalization;
  t["MeanVarianceNormalization"] = mean_variance_normalization;
  t["GroupNormalization"] = group_normalization;
  t["OneHot"] = one_hot;
  t["EyeLike"] = eye_like;
  t["Swish"] = swish;
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;  // (deprecated at opset 11: the same op)
  t["GatherND"] = gather_nd;
}

}  // namespace saturn::ir::onnx_detail
