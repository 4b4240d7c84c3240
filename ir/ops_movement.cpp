// Movement and shape ops. Shape-like operands of ONNX (Reshape's shape,
// Slice's starts, ...) are attributes here: the importer folds them to
// constants, and a graph whose shapes are computed at run time is rejected
// at import with the node named.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/concat.hpp"
#include "ir/gather.hpp"
#include "ir/gather_elements.hpp"
#include "ir/op.hpp"
#include "ir/pad.hpp"
#include "ir/slice.hpp"
#include "ir/trilu.hpp"

namespace saturn::ir {

namespace {

using Args = std::span<const Tensor>;
using Given = std::span<const bool>;
using Inputs = std::span<const TypedInput>;

std::int64_t flat(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& strides) {
  std::int64_t o = 0;
  for (std::size_t d = 0; d < c.size(); ++d) o += c[d] * strides[d];
  return o;
}
void copy_elem(Tensor& out, std::size_t o, const Tensor& in, std::size_t i) {
  if (is_float(in.dtype()))
    out.set(o, in.at(i));
  else
    out.set_int(o, in.at_int(i));
}

// A pixel shuffle's operand dims (NCHW) and block size, checked.
std::pair<std::vector<std::int64_t>, std::int64_t> shuffle_operand(const char* op, const Attrs& a, Inputs in) {
  auto dims = static_shape(in[0], op);
  const std::int64_t b = a.i("blocksize", 0);
  if (dims.size() != 4) shape_error(std::string(op) + ": operand has rank " + std::to_string(dims.size()) + ", not 4");
  if (b < 1 || b > (1 << 20)) shape_error(std::string(op) + ": blocksize " + std::to_string(b) + " is not in 1..2^20");
  return {std::move(dims), b};
}

OpDef make(const char* name, OpKind kind, int min_in, int max_in, const char* doc) {
  OpDef d;
  d.name = name;
  d.kind = kind;
  d.min_inputs = min_in;
  d.max_inputs = max_in;
  d.doc = doc;
  d.traceable = true;  // ops here copy elements: `saturn verify` traces them through eval
  d.moves_values = true;
  return d;
}

Shape reshape_shape(const Shape& in, const std::vector<std::int64_t>& spec, bool allowzero) {
  Shape out;
  std::int64_t infer_at = -1, known = 1;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    std::int64_t s = spec[i];
    if (s == -1) {
      if (infer_at >= 0) shape_error("reshape: more than one -1 in the target shape");
      infer_at = static_cast<std::int64_t>(i);
      out.push_back(Dim::of(1));
    } else if (s == 0 && !allowzero) {
      if (i >= in.size())
        shape_error("reshape: 0 at position " + std::to_string(i) + " has no input dimension to copy");
      out.push_back(in[i]);
      if (in[i].is_static()) known *= in[i].k;
    } else if (s < -1) {
      shape_error("reshape: invalid target dimension " + std::to_string(s));
    } else {
      out.push_back(Dim::of(s));
      known *= s;
    }
  }
  if (is_static(in)) {
    std::int64_t total = numel(static_dims(in));
    if (infer_at >= 0) {
      if (known == 0 || total % known != 0)
        shape_error("reshape: cannot reshape " + to_string(in) + " to " + to_string(out) + " (-1 does not divide)");
      out[static_cast<std::size_t>(infer_at)] = Dim::of(total / known);
    } else if (is_static(out) && numel(static_dims(out)) != total) {
      shape_error("reshape: " + to_string(in) + " has " + std::to_string(total) + " elements, target " +
                  to_string(out) + " has " + std::to_string(numel(static_dims(out))));
    }
  } else if (infer_at >= 0) {
    shape_error("reshape: -1 with a symbolic input shape " + to_string(in) + " is not supported");
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> transpose_perm(const Attrs& a, std::size_t rank) {
  auto p = a.ints("perm");
  if (p.empty())
    for (std::size_t i = rank; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
  if (p.size() != rank)
    shape_error("transpose: perm has " + std::to_string(p.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (auto& v : p) {
    v = normalize_axis(v, static_cast<std::int64_t>(rank), "perm entry");
    if (seen[static_cast<std::size_t>(v)]) shape_error("transpose: perm repeats axis " + std::to_string(v));
    seen[static_cast<std::size_t>(v)] = true;
  }
  return p;
}

SliceSpec slice_spec(const Attrs& a, const std::vector<std::int64_t>& dims) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  auto starts = a.ints("starts"), ends = a.ints("ends"), axes = a.ints("axes"), steps = a.ints("steps");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || starts.size() != axes.size() || starts.size() != steps.size())
    shape_error("slice: starts, ends, axes and steps differ in length");
  if (rank == 0 && !starts.empty()) shape_error("slice: a rank-0 tensor has no axis to slice");
  SliceSpec s;
  s.start.assign(dims.size(), 0);
  s.step.assign(dims.size(), 1);
  s.count = dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    auto ax = static_cast<std::size_t>(normalize_axis(axes[k], rank));
    std::int64_t n = dims[ax], st = steps[k];
    if (st == 0) shape_error("slice: step 0");
    std::int64_t b = starts[k], e = ends[k];
    if (b < 0) b += n;
    if (e < 0) e += n;
    if (st > 0) {
      b = std::clamp<std::int64_t>(b, 0, n);
      e = std::clamp<std::int64_t>(e, 0, n);
      // Without overflow for any step (e - b + st - 1 overflows for huge ones).
      s.count[ax] = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      b = std::clamp<std::int64_t>(b, -1, n - 1);
      e = std::clamp<std::int64_t>(e, -1, n - 1);
      // (e - b + 1) / st is (b - e - 1) / -st without negating st, which
      // overflows for INT64_MIN.
      s.count[ax] = b > e ? (e - b + 1) / st + 1 : 0;
    }
    s.start[ax] = s.count[ax] ? b : 0;
    s.step[ax] = st;
  }
  return s;
}

ConcatBlocks concat_blocks(const std::vector<std::vector<std::int64_t>>& dims, std::size_t axis,
                           std::size_t element_bytes) {
  ConcatBlocks g;
  for (std::size_t d = 0; d < axis; ++d) g.outer *= static_cast<std::size_t>(dims.at(0).at(d));
  for (const auto& od : dims) {
    std::size_t block = element_bytes;
    for (std::size_t d = axis; d < od.size(); ++d) block *= static_cast<std::size_t>(od[d]);
    g.block.push_back(block);
    g.at.push_back(g.out_block);
    g.out_block += block;
  }
  return g;
}

void register_movement_ops(OpRegistry& r) {
  {
    OpDef d = make("reshape", OpKind::Primitive, 1, 1, "reshape to attribute `shape` (0 copies, -1 infers)");
    d.view = true;
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      return std::vector<ValueType>{
          {in[0].type.dtype, reshape_shape(in[0].type.shape, a.ints("shape"), a.i("allowzero", 0) != 0)}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto s = reshape_shape(shape_of(x[0].dims()), a.ints("shape"), a.i("allowzero", 0) != 0);
      return std::vector<Tensor>{x[0].reshaped(static_dims(s))};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("transpose", OpKind::Primitive, 1, 1, "permute axes by attribute `perm` (default: reverse)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto p = transpose_perm(a, in[0].type.shape.size());
      Shape out;
      for (auto v : p) out.push_back(in[0].type.shape[static_cast<std::size_t>(v)]);
      return std::vector<ValueType>{{in[0].type.dtype, out}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto p = transpose_perm(a, x[0].rank());
      std::vector<std::int64_t> od;
      for (auto v : p) od.push_back(x[0].dims()[static_cast<std::size_t>(v)]);
      Tensor out = Tensor::uninitialized(x[0].dtype(), od);
      auto is = x[0].strides();
      std::vector<std::int64_t> os;
      for (auto v : p) os.push_back(is[static_cast<std::size_t>(v)]);
      copy_strided(x[0].bytes(), dtype_size(x[0].dtype()), od, os, 0, out.bytes());
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  // Ops that only change the shape, as reshape does: flatten, squeeze, unsqueeze.
  auto view_op = [&](const char* name, const char* doc, std::function<Shape(const Attrs&, const Shape&)> f) {
    OpDef d = make(name, OpKind::Composite, 1, 1, doc);
    d.view = true;
    d.infer = [f](const Attrs& a, Inputs in, std::size_t) {
      return std::vector<ValueType>{{in[0].type.dtype, f(a, in[0].type.shape)}};
    };
    d.eval = [f](const Attrs& a, Args x, Given, std::size_t) {
      return std::vector<Tensor>{x[0].reshaped(static_dims(f(a, shape_of(x[0].dims()))))};
    };
    r.add(std::move(d));
  };
  view_op("flatten", "flatten to 2-D around attribute `axis` (default 1)", [](const Attrs& a, const Shape& s) {
    auto rank = static_cast<std::int64_t>(s.size());
    std::int64_t axis = a.i("axis", 1);
    if (axis < -rank || axis > rank)
      shape_error("flatten: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    if (!is_static(s)) shape_error("flatten needs a static shape, got " + to_string(s));
    auto dims = static_dims(s);
    std::int64_t lo = 1, hi = 1;
    for (std::int64_t i = 0; i < rank; ++i) (i < axis ? lo : hi) *= dims[static_cast<std::size_t>(i)];
    return Shape{Dim::of(lo), Dim::of(hi)};
  });
  view_op("squeeze", "remove size-1 axes listed in `axes` (all size-1 axes when empty)",
          [](const Attrs& a, const Shape& s) {
            auto axes = a.ints("axes");
            std::vector<bool> drop(s.size(), false);
            if (axes.empty()) {
              for (std::size_t i = 0; i < s.size(); ++i) drop[i] = s[i].is_static() && s[i].k == 1;
            }
            for (auto ax : axes) {
              auto i = static_cast<std::size_t>(normalize_axis(ax, static_cast<std::int64_t>(s.size())));
              if (!(s[i].is_static() && s[i].k == 1))
                shape_error("squeeze: axis " + std::to_string(ax) + " has size " + s[i].to_string() + ", not 1");
              drop[i] = true;
            }
            Shape out;
            for (std::size_t i = 0; i < s.size(); ++i)
              if (!drop[i]) out.push_back(s[i]);
            return out;
          });
  view_op("unsqueeze", "insert size-1 axes at the positions `axes` of the result", [](const Attrs& a, const Shape& s) {
    auto axes = a.ints("axes");
    auto rank = static_cast<std::int64_t>(s.size() + axes.size());
    std::vector<bool> ins(static_cast<std::size_t>(rank), false);
    for (auto ax : axes) {
      auto i = static_cast<std::size_t>(normalize_axis(ax, rank));
      if (ins[i]) shape_error("unsqueeze: axis " + std::to_string(ax) + " given twice");
      ins[i] = true;
    }
    Shape out;
    std::size_t k = 0;
    for (std::size_t i = 0; i < ins.size(); ++i) out.push_back(ins[i] ? Dim::of(1) : s[k++]);
    return out;
  });
  {
    OpDef d = make("concat", OpKind::Composite, 1, -1, "concatenate along attribute `axis`");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      Shape out = in[0].type.shape;
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(out.size())));
      for (std::size_t k = 1; k < in.size(); ++k) {
        const Shape& s = in[k].type.shape;
        if (in[k].type.dtype != in[0].type.dtype) shape_error("concat: operand types differ");
        if (s.size() != out.size())
          shape_error("concat: operand " + std::to_string(k) + " has rank " + std::to_string(s.size()) + ", expected " +
                      std::to_string(out.size()));
        for (std::size_t d = 0; d < s.size(); ++d) {
          if (d == axis) continue;
          if (!(s[d] == out[d]))
            shape_error("concat: operand " + std::to_string(k) + " has shape " + to_string(s) +
                        ", which differs from " + to_string(out) + " outside axis " + std::to_string(axis));
        }
        if (out[axis].is_static() && s[axis].is_static())
          out[axis].k += s[axis].k;
        else if (out[axis].sym == s[axis].sym || s[axis].is_static() || out[axis].is_static()) {
          Dim sum = out[axis];
          if (!s[axis].is_static() && sum.is_static()) {
            sum.sym = s[axis].sym;
            sum.c = s[axis].c;
          } else if (!s[axis].is_static())
            sum.c += s[axis].c;
          sum.k += s[axis].k;
          out[axis] = sum;
        } else
          shape_error("concat: cannot add symbolic dimensions " + out[axis].to_string() + " and " +
                      s[axis].to_string());
      }
      return std::vector<ValueType>{{in[0].type.dtype, out}};
    };
    d.admits = [](const Attrs& a, Inputs in) {
      const Shape& first = in[0].type.shape;
      const auto rank = static_cast<std::int64_t>(first.size());
      const std::int64_t axis = a.i("axis", 0);
      if (axis < -rank || axis >= rank) return false;
      const auto along = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      for (const TypedInput& t : in.subspan(1)) {
        if (t.type.dtype != in[0].type.dtype || t.type.shape.size() != first.size()) return false;
        for (std::size_t d = 0; d < first.size(); ++d)
          if (d != along && !(t.type.shape[d] == first[d])) return false;
      }
      return true;
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      auto od = x[0].dims();
      od[axis] = 0;
      for (const Tensor& t : x) od[axis] += t.dims()[axis];
      Tensor out(x[0].dtype(), od);
      std::vector<std::vector<std::int64_t>> dims;
      for (const Tensor& t : x) dims.push_back(t.dims());
      const ConcatBlocks g = concat_blocks(dims, axis, dtype_size(out.dtype()));
      for (std::size_t k = 0; k < x.size(); ++k)
        for (std::size_t o = 0; o < g.outer && g.block[k]; ++o)
          std::memcpy(out.bytes() + o * g.out_block + g.at[k], x[k].bytes() + o * g.block[k], g.block[k]);
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("split", OpKind::Composite, 1, 1,
                   "split along `axis` into parts of sizes `split` (equal parts when empty)");
    d.num_outputs = -1;
    auto sizes_of = [](const Attrs& a, std::int64_t n, std::size_t outs) {
      auto sizes = a.ints("split");
      if (sizes.empty()) {
        std::int64_t each = (n + static_cast<std::int64_t>(outs) - 1) / static_cast<std::int64_t>(outs);
        for (std::size_t k = 0; k < outs; ++k) sizes.push_back(std::min(each, n - each * static_cast<std::int64_t>(k)));
      }
      if (sizes.size() != outs)
        shape_error("split: " + std::to_string(sizes.size()) + " sizes for " + std::to_string(outs) + " outputs");
      if (std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != n)
        shape_error("split: sizes do not add up to " + std::to_string(n));
      return sizes;
    };
    d.infer = [sizes_of](const Attrs& a, Inputs in, std::size_t outs) {
      auto dims = static_shape(in[0], "split");
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(dims.size())));
      std::vector<ValueType> res;
      for (auto s : sizes_of(a, dims[axis], outs)) {
        auto od = dims;
        od[axis] = s;
        res.push_back({in[0].type.dtype, shape_of(od)});
      }
      return res;
    };
    d.eval = [sizes_of](const Attrs& a, Args x, Given, std::size_t outs) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      std::vector<Tensor> res;
      std::int64_t base = 0;
      auto is = x[0].strides();
      for (auto s : sizes_of(a, x[0].dims()[axis], outs)) {
        auto od = x[0].dims();
        od[axis] = s;
        Tensor out = Tensor::uninitialized(x[0].dtype(), od);
        copy_strided(x[0].bytes(), dtype_size(x[0].dtype()), od, is, base * is[axis], out.bytes());
        base += s;
        res.push_back(std::move(out));
      }
      return res;
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("slice", OpKind::Primitive, 1, 1, "slice by attributes starts, ends, axes, steps (ONNX semantics)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto s = slice_spec(a, static_shape(in[0], "slice"));
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(s.count)}};
    };
    d.admits = [](const Attrs& a, Inputs in) {  // slice_spec's first checks: attributes that agree
      const std::size_t n = a.ints("starts").size(), axes = a.ints("axes").size(), steps = a.ints("steps").size();
      return a.ints("ends").size() == n && (axes == 0 || axes == n) && (steps == 0 || steps == n) &&
             (n == 0 || !in[0].type.shape.empty());
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto s = slice_spec(a, x[0].dims());
      Tensor out(x[0].dtype(), s.count);
      auto is = x[0].strides();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = unflatten(static_cast<std::int64_t>(i), s.count);
        for (std::size_t d2 = 0; d2 < c.size(); ++d2) c[d2] = s.start[d2] + c[d2] * s.step[d2];
        copy_elem(out, i, x[0], static_cast<std::size_t>(flat(c, is)));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("expand", OpKind::Primitive, 1, 1, "broadcast to attribute `shape` (numpy rules, both ways)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto b = broadcast(in[0].type.shape, shape_of(a.ints("shape")));
      if (!b)
        shape_error("expand: " + to_string(in[0].type.shape) + " does not broadcast to " +
                    to_string(shape_of(a.ints("shape"))));
      return std::vector<ValueType>{{in[0].type.dtype, *b}};
    };
    d.admits = [](const Attrs& a, Inputs in) {
      return !a.has("shape") || broadcast(in[0].type.shape, shape_of(a.ints("shape"))).has_value();
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto od = broadcast_dims(x[0].dims(), a.ints("shape"), "expand");
      Tensor out(x[0].dtype(), od);
      auto is = x[0].strides();
      std::size_t off = od.size() - x[0].rank();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = unflatten(static_cast<std::int64_t>(i), od);
        std::int64_t o = 0;
        for (std::size_t d2 = 0; d2 < x[0].rank(); ++d2) o += (x[0].dims()[d2] == 1 ? 0 : c[off + d2]) * is[d2];
        copy_elem(out, i, x[0], static_cast<std::size_t>(o));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("tile", OpKind::Composite, 1, 1, "repeat along each axis by attribute `repeats`");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto dims = static_shape(in[0], "tile");
      auto rep = a.ints("repeats");
      if (rep.size() != dims.size())
        shape_error("tile: repeats has " + std::to_string(rep.size()) + " entries for rank " +
                    std::to_string(dims.size()));
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (rep[i] < 0) shape_error("tile: repeats holds a negative count " + std::to_string(rep[i]));
        if (__builtin_mul_overflow(dims[i], rep[i], &dims[i]) || dims[i] > kMaxElements)
          shape_error("tile: axis " + std::to_string(i) + " would have more than 2^48 elements");
      }
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(dims)}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto rep = a.ints("repeats");
      auto od = x[0].dims();
      for (std::size_t i = 0; i < od.size(); ++i) od[i] *= rep[i];
      Tensor out(x[0].dtype(), od);
      auto is = x[0].strides();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = unflatten(static_cast<std::int64_t>(i), od);
        for (std::size_t d2 = 0; d2 < c.size(); ++d2) c[d2] %= x[0].dims()[d2];
        copy_elem(out, i, x[0], static_cast<std::size_t>(flat(c, is)));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  // Pixel shuffles (ONNX DepthToSpace, SpaceToDepth): blocks of b x b
  // pixels to and from channels, of an NCHW value. depth_to_space's `mode`
  // orders a block's channels depth-column-row (DCR, ONNX's default: block
  // position first) or column-row-depth (CRD: torch's PixelShuffle).
  {
    OpDef d = make("depth_to_space", OpKind::Composite, 1, 1,
                   "NCHW: channels into b x b blocks of pixels, b = attribute `blocksize` (mode DCR or CRD)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const auto [dims, b] = shuffle_operand("depth_to_space", a, in);
      if (dims[1] % (b * b) != 0)
        shape_error("depth_to_space: " + std::to_string(dims[1]) +
                    " channels are not a multiple of blocksize^2 = " + std::to_string(b * b));
      std::int64_t h = 0, w = 0;
      if (__builtin_mul_overflow(dims[2], b, &h) || __builtin_mul_overflow(dims[3], b, &w) || h > kMaxElements ||
          w > kMaxElements)
        shape_error("depth_to_space: the result would have more than 2^48 elements along an axis");
      return std::vector<ValueType>{{in[0].type.dtype, shape_of({dims[0], dims[1] / (b * b), h, w})}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      const std::int64_t b = a.i("blocksize", 0);
      const bool crd = a.s("mode", "DCR") == "CRD";
      const auto& in = x[0].dims();
      const std::int64_t c = in[1] / (b * b);
      Tensor out(x[0].dtype(), {in[0], c, in[2] * b, in[3] * b});
      const auto is = x[0].strides();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto o = unflatten(static_cast<std::int64_t>(i), out.dims());  // n, c, h b + bi, w b + bj
        const std::int64_t bi = o[2] % b, bj = o[3] % b;
        const std::int64_t ch = crd ? o[1] * b * b + bi * b + bj : (bi * b + bj) * c + o[1];
        copy_elem(out, i, x[0], static_cast<std::size_t>(flat({o[0], ch, o[2] / b, o[3] / b}, is)));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d =
        make("space_to_depth", OpKind::Composite, 1, 1,
             "NCHW: b x b blocks of pixels into channels, b = attribute `blocksize` (depth_to_space's DCR inverse)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const auto [dims, b] = shuffle_operand("space_to_depth", a, in);
      if (dims[2] % b != 0 || dims[3] % b != 0)
        shape_error("space_to_depth: height " + std::to_string(dims[2]) + " and width " + std::to_string(dims[3]) +
                    " are not multiples of blocksize " + std::to_string(b));
      std::int64_t ch = 0;
      if (__builtin_mul_overflow(dims[1], b * b, &ch) || ch > kMaxElements)
        shape_error("space_to_depth: the result would have more than 2^48 channels");
      return std::vector<ValueType>{{in[0].type.dtype, shape_of({dims[0], ch, dims[2] / b, dims[3] / b})}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      const std::int64_t b = a.i("blocksize", 0);
      const auto& in = x[0].dims();
      Tensor out(x[0].dtype(), {in[0], in[1] * b * b, in[2] / b, in[3] / b});
      const auto is = x[0].strides();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto o = unflatten(static_cast<std::int64_t>(i), out.dims());  // n, (bi b + bj) C + c, h, w
        const std::int64_t c = o[1] % in[1], block = o[1] / in[1];
        copy_elem(out, i, x[0],
                  static_cast<std::size_t>(flat({o[0], c, o[2] * b + block / b, o[3] * b + block % b}, is)));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    // The sliding windows of convolution and pooling as one strided view:
    // conv and pools are defined from it (rulesets/decompose.rules), and it
    // from reshape/expand/slice/transpose.
    OpDef d =
        make("windows", OpKind::Composite, 1, 1,
             "sliding windows over the trailing len(`kernel_shape`) axes: [lead..., i...] to [lead..., o..., "
             "k...], o = (i - (k-1) dilation - 1) / stride + 1, or 0 where no window fits (no padding: pad first)");
    struct Geometry {
      std::vector<std::int64_t> kernel, strides, dilations, out;
      std::size_t lead = 0;
    };
    auto geometry = [](const Attrs& a, const std::vector<std::int64_t>& dims) {
      Geometry g;
      g.kernel = a.ints("kernel_shape");
      const std::size_t n = g.kernel.size();
      if (n == 0 || n > dims.size()) shape_error("windows: kernel_shape must have 1 to rank entries");
      g.lead = dims.size() - n;
      g.strides = a.ints("strides", std::vector<std::int64_t>(n, 1));
      g.dilations = a.ints("dilations", std::vector<std::int64_t>(n, 1));
      if (g.strides.size() != n || g.dilations.size() != n)
        shape_error("windows: strides and dilations must have one entry per kernel axis");
      for (std::size_t j = 0; j < n; ++j) {
        if (g.kernel[j] <= 0 || g.strides[j] <= 0 || g.dilations[j] <= 0)
          shape_error("windows: kernel, strides and dilations must be positive");
        std::int64_t ext = (g.kernel[j] - 1) * g.dilations[j] + 1, i = dims[g.lead + j];
        // As many windows as fit: none in an axis shorter than one (an empty
        // axis, whose convolution or pooling has an empty result too).
        g.out.push_back(i < ext ? 0 : (i - ext) / g.strides[j] + 1);
      }
      return g;
    };
    auto out_dims = [](const Geometry& g, const std::vector<std::int64_t>& dims) {
      std::vector<std::int64_t> od(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(g.lead));
      od.insert(od.end(), g.out.begin(), g.out.end());
      od.insert(od.end(), g.kernel.begin(), g.kernel.end());
      return od;
    };
    d.infer = [geometry, out_dims](const Attrs& a, Inputs in, std::size_t) {
      auto dims = static_shape(in[0], "windows");
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(out_dims(geometry(a, dims), dims))}};
    };
    d.eval = [geometry, out_dims](const Attrs& a, Args x, Given, std::size_t) {
      const auto& dims = x[0].dims();
      Geometry g = geometry(a, dims);
      auto od = out_dims(g, dims);
      Tensor out(x[0].dtype(), od);
      auto is = x[0].strides();
      const std::size_t n = g.kernel.size();
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = unflatten(static_cast<std::int64_t>(i), od);
        std::vector<std::int64_t> src(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(g.lead));
        for (std::size_t j = 0; j < n; ++j)
          src.push_back(c[g.lead + j] * g.strides[j] + c[g.lead + n + j] * g.dilations[j]);
        copy_elem(out, i, x[0], static_cast<std::size_t>(flat(src, is)));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("gather", OpKind::Composite, 2, 2, "gather(data, indices) along attribute `axis`");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const Shape& ds = in[0].type.shape;
      if (in[1].type.dtype != DType::I64 && in[1].type.dtype != DType::I32)
        shape_error("gather: indices must be i32 or i64");
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(ds.size())));
      return std::vector<ValueType>{{in[0].type.dtype, gather_result_dims(ds, axis, in[1].type.shape)}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      const auto& dd = x[0].dims();
      Tensor out(x[0].dtype(), gather_result_dims(dd, axis, x[1].dims()));
      // Whole rows (ir/gather.hpp), as the lowering copies them.
      const GatherRows g = gather_rows(dd, axis, x[1].numel(), dtype_size(x[0].dtype()));
      gather_copy(
          g, x[0].bytes(), [&](std::size_t j) { return x[1].at_int(j); }, out.bytes(), 0, g.result_rows());
      return std::vector<Tensor>{std::move(out)};
    };
    // Symbolic indices choose among the rows (tracing needs known ones).
    d.symbolic = [](const Attrs& a, std::span<const SymTensor> x, std::span<const bool>, std::size_t) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      const auto& dd = x[0].dims();
      SymTensor out(x[0].context(), x[0].dtype(), gather_result_dims(dd, axis, x[1].dims()));
      const GatherRows g = gather_rows(dd, axis, x[1].numel(), 1);  // row_bytes: elements per row
      for (std::size_t t = 0; t < g.result_rows(); ++t) {
        const std::size_t o = t / g.count;
        for (std::size_t e = 0; e < g.row_bytes; ++e)
          out.set(
              t * g.row_bytes + e,
              select_by_index(
                  x[1].at(t % g.count), static_cast<std::int64_t>(g.rows),
                  [&](std::int64_t k) { return x[0].at((o * g.rows + static_cast<std::size_t>(k)) * g.row_bytes + e); },
                  "gather"));
      }
      return std::vector<SymTensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("gather_elements", OpKind::Composite, 2, 2,
                   "gather_elements(data, indices) along attribute `axis`: result[c] = data[c with c[axis] = "
                   "indices[c]]");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const Shape& ds = in[0].type.shape;
      const Shape& is = in[1].type.shape;
      if (in[1].type.dtype != DType::I64 && in[1].type.dtype != DType::I32)
        shape_error("gather_elements: indices must be i32 or i64");
      if (ds.empty() || is.size() != ds.size())
        shape_error("gather_elements: data and indices need the same rank >= 1, got " + to_string(ds) + " and " +
                    to_string(is));
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(ds.size())));
      // Off the axis, indices may be shorter than data (PyTorch's gather),
      // never longer.
      for (std::size_t k = 0; k < ds.size(); ++k)
        if (k != axis && is[k].is_static() && ds[k].is_static() && is[k].value() > ds[k].value())
          shape_error("gather_elements: indices " + to_string(is) + " exceed data " + to_string(ds) + " on axis " +
                      std::to_string(k));
      return std::vector<ValueType>{{in[0].type.dtype, is}};
    };
    d.admits = [](const Attrs&, Inputs in) {
      const DType t = in[1].type.dtype;
      return (t == DType::I64 || t == DType::I32) && !in[0].type.shape.empty() &&
             in[1].type.shape.size() == in[0].type.shape.size();
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      Tensor out(x[0].dtype(), x[1].dims());
      // Element copies by ir/gather_elements.hpp, as the lowering does them.
      const GatherElements g = gather_elements_geometry(x[0].dims(), x[1].dims(), axis, dtype_size(x[0].dtype()));
      gather_elements_copy(
          g, x[0].bytes(), [&](std::size_t j) { return x[1].at_int(j); }, out.bytes(), 0, g.result_rows());
      return std::vector<Tensor>{std::move(out)};
    };
    d.symbolic = [](const Attrs& a, std::span<const SymTensor> x, std::span<const bool>, std::size_t) {
      auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", 0), static_cast<std::int64_t>(x[0].rank())));
      const GatherElements g = gather_elements_geometry(x[0].dims(), x[1].dims(), axis, 1);
      SymTensor out(x[0].context(), x[0].dtype(), x[1].dims());
      for (std::size_t t = 0; t < out.numel(); ++t) {
        // Element t's place in data, its coordinate along the axis left out.
        const std::vector<std::int64_t> c = unflatten(static_cast<std::int64_t>(t), g.out_dims);
        std::int64_t base = 0;
        for (std::size_t k = 0; k < c.size(); ++k)
          if (k != axis) base += c[k] * g.data_strides[k];
        out.set(t,
                select_by_index(
                    x[1].at(t), g.n,
                    [&](std::int64_t k) { return x[0].at(static_cast<std::size_t>(base + k * g.data_strides[axis])); },
                    "gather_elements"));
      }
      return std::vector<SymTensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("scatter_nd", OpKind::Composite, 3, 3,
                   "scatter_nd(data, indices, updates): data with the slices that `indices` [..., k] name "
                   "replaced by (or, with `reduction` add/mul/max/min, combined with) the updates, in order");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const Shape &ds = in[0].type.shape, &is = in[1].type.shape, &us = in[2].type.shape;
      if (in[1].type.dtype != DType::I64) shape_error("scatter_nd: indices must be i64");
      if (a.s("reduction", "none") != "none" && stores_only(in[0].type.dtype))
        shape_error(std::string("scatter_nd: reduction ") + a.s("reduction", "none") + " computes, and " +
                    dtype_name(in[0].type.dtype) + " only stores values (cast it to compute)");
      if (in[2].type.dtype != in[0].type.dtype) shape_error("scatter_nd: updates must have the data's type");
      if (ds.empty() || is.empty()) shape_error("scatter_nd: data and indices need rank >= 1");
      if (!is.back().is_static()) shape_error("scatter_nd: the indices' last dimension must be static");
      const auto k = static_cast<std::size_t>(is.back().value());
      if (k > ds.size())
        shape_error("scatter_nd: indices address " + std::to_string(k) + " axes of a rank-" +
                    std::to_string(ds.size()) + " operand");
      // updates: the indices' dims but the last, then the data's from axis k.
      Shape want(is.begin(), is.end() - 1);
      want.insert(want.end(), ds.begin() + static_cast<std::ptrdiff_t>(k), ds.end());
      bool fits = want.size() == us.size();
      for (std::size_t i = 0; fits && i < us.size(); ++i)
        fits = !(want[i].is_static() && us[i].is_static() && want[i].value() != us[i].value());
      if (!fits) shape_error("scatter_nd: updates " + to_string(us) + " should be " + to_string(want));
      return std::vector<ValueType>{in[0].type};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      const std::string how = a.s("reduction", "none");
      const std::vector<std::int64_t>& dd = x[0].dims();
      const auto k = static_cast<std::size_t>(x[1].dims().back());
      std::size_t slice = 1;  // elements per addressed slice
      for (std::size_t i = k; i < dd.size(); ++i) slice *= static_cast<std::size_t>(dd[i]);
      std::size_t tuples = 1;  // index tuples: every dim of the indices but the last
      for (std::size_t i = 0; i + 1 < x[1].rank(); ++i) tuples *= static_cast<std::size_t>(x[1].dims()[i]);
      if (how != "none" && x[0].dtype() == DType::Bool) shape_error("scatter_nd: reduction " + how + " of bools");
      Tensor out = x[0];
      const std::size_t width = dtype_size(out.dtype());
      const bool ints = !is_float(out.dtype());
      for (std::size_t t = 0; t < tuples; ++t) {
        std::size_t at = 0;
        for (std::size_t m = 0; m < k; ++m) {
          std::int64_t i = x[1].at_int(t * k + m);
          if (i < -dd[m] || i >= dd[m])
            shape_error("scatter_nd: index " + std::to_string(i) + " out of range for axis " + std::to_string(m) +
                        " of size " + std::to_string(dd[m]));
          if (i < 0) i += dd[m];
          at = at * static_cast<std::size_t>(dd[m]) + static_cast<std::size_t>(i);
        }
        at *= slice;
        const std::size_t from = t * slice;
        if (how == "none") {
          if (slice) std::memcpy(out.bytes() + at * width, x[2].bytes() + from * width, slice * width);
          continue;
        }
        for (std::size_t e = 0; e < slice; ++e) {
          if (ints) {
            const std::int64_t o = out.at_int(at + e), u = x[2].at_int(from + e);
            out.set_int(at + e, how == "add"   ? wrapping_add(o, u)
                                : how == "mul" ? wrapping_mul(o, u)
                                : how == "max" ? std::max(o, u)
                                               : std::min(o, u));
          } else {
            const double o = out.at(at + e), u = x[2].at(from + e);
            out.set(at + e, how == "add"   ? o + u
                            : how == "mul" ? o * u
                            : how == "max" ? scalar::max(o, u)
                                           : scalar::min(o, u));
          }
        }
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("shape", OpKind::Composite, 1, 1, "the operand's shape as i64, dims [start, end)");
    auto range_of = [](const Attrs& a, std::int64_t rank) {
      std::int64_t s = a.i("start", 0), e = a.i("end", rank);
      if (s < 0) s += rank;
      if (e < 0) e += rank;
      s = std::clamp<std::int64_t>(s, 0, rank);
      e = std::clamp<std::int64_t>(e, 0, rank);
      return std::pair{s, std::max(s, e)};
    };
    d.infer = [range_of](const Attrs& a, Inputs in, std::size_t) {
      auto [s, e] = range_of(a, static_cast<std::int64_t>(in[0].type.shape.size()));
      return std::vector<ValueType>{{DType::I64, shape_of({e - s})}};
    };
    d.eval = [range_of](const Attrs& a, Args x, Given, std::size_t) {
      auto [s, e] = range_of(a, static_cast<std::int64_t>(x[0].rank()));
      std::vector<std::int64_t> v(x[0].dims().begin() + s, x[0].dims().begin() + e);
      return std::vector<Tensor>{Tensor::of_ints(DType::I64, {e - s}, v)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("size", OpKind::Composite, 1, 1, "the operand's element count as an i64 scalar");
    d.infer = [](const Attrs&, Inputs, std::size_t) { return std::vector<ValueType>{{DType::I64, {}}}; };
    d.eval = [](const Attrs&, Args x, Given, std::size_t) {
      return std::vector<Tensor>{Tensor::of_ints(DType::I64, {}, {static_cast<std::int64_t>(x[0].numel())})};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("const", OpKind::Primitive, 0, 0, "the tensor in attribute `value`");
    d.infer = [](const Attrs& a, Inputs, std::size_t) {
      const Tensor* t = a.tensor("value");
      if (!t) shape_error("const: no value");
      return std::vector<ValueType>{{t->dtype(), shape_of(t->dims())}};
    };
    d.eval = [](const Attrs& a, Args, Given, std::size_t) { return std::vector<Tensor>{*a.tensor("value")}; };
    r.add(std::move(d));
  }
  {
    OpDef d = make("range", OpKind::Composite, 3, 3, "range(start, limit, delta): 1-D, as numpy.arange");
    d.moves_values = false;  // it adds
    auto count = [](double s, double l, double dl) {
      if (dl == 0) shape_error("range: delta is 0");
      const double n = std::ceil((l - s) / dl);
      if (!(n < 0x1p62)) shape_error("range: (limit - start) / delta is " + std::to_string(n) + ", not a length");
      return std::max<std::int64_t>(0, static_cast<std::int64_t>(n));
    };
    d.infer = [count](const Attrs&, Inputs in, std::size_t) {
      for (const TypedInput& t : in) {
        if (!t.value) shape_error("range: start, limit and delta must be constants");
        if (t.value->numel() != 1)
          shape_error("range: start, limit and delta must be scalars, got " + t.value->summary());
        if (t.type.dtype != in[0].type.dtype) shape_error("range: start, limit and delta must have one type");
      }
      return std::vector<ValueType>{
          {in[0].type.dtype, shape_of({count(in[0].value->at(0), in[1].value->at(0), in[2].value->at(0))})}};
    };
    d.eval = [count](const Attrs&, Args x, Given, std::size_t) {
      double s = x[0].at(0), dl = x[2].at(0);
      std::int64_t n = count(s, x[1].at(0), dl);
      Tensor out(x[0].dtype(), {n});
      for (std::int64_t i = 0; i < n; ++i) {
        if (is_float(x[0].dtype()))
          out.set(static_cast<std::size_t>(i), s + static_cast<double>(i) * dl);
        else
          out.set_int(static_cast<std::size_t>(i), wrapping_add(x[0].at_int(0), wrapping_mul(i, x[2].at_int(0))));
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d =
        make("fill", OpKind::Composite, 0, 0, "a tensor of attribute `shape` filled with the one element of `value`");
    d.infer = [](const Attrs& a, Inputs, std::size_t) {
      const Tensor* v = a.tensor("value");
      return std::vector<ValueType>{{v ? v->dtype() : DType::F32, shape_of(a.ints("shape"))}};
    };
    d.eval = [](const Attrs& a, Args, Given, std::size_t) {
      const Tensor* v = a.tensor("value");
      Tensor out(v ? v->dtype() : DType::F32, a.ints("shape"));
      for (std::size_t i = 0; i < out.numel() && v; ++i) copy_elem(out, i, *v, 0);
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("trilu", OpKind::Composite, 1, 1,
                   "keep the upper (`upper`=1) or lower triangle of the last two axes, offset `k`");
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      if (in[0].type.shape.size() < 2) shape_error("trilu needs rank >= 2");
      return std::vector<ValueType>{in[0].type};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      Tensor out(x[0].dtype(), x[0].dims());
      const TriluRows t = trilu_rows(x[0].dims(), a.i("k", 0), a.i("upper", 1) != 0, dtype_size(x[0].dtype()));
      trilu_copy(t, x[0].bytes(), out.bytes(), 0, t.result_rows());
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("pad", OpKind::Primitive, 1, 1,
                   "pad by `pads` (all begins, then all ends); mode constant|reflect|edge|wrap; `value`");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      auto dims = static_shape(in[0], "pad");
      pad_mode(a.s("mode", "constant"));  // (throws on an unknown one)
      auto p = a.ints("pads");
      if (p.size() != 2 * dims.size())
        shape_error("pad: pads has " + std::to_string(p.size()) + " entries for rank " + std::to_string(dims.size()));
      for (std::size_t i = 0; i < dims.size(); ++i) {
        dims[i] += p[i] + p[i + dims.size()];
        if (dims[i] < 0) shape_error("pad: negative result dimension");
      }
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(dims)}};
    };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      const PadRows p =
          pad_rows(x[0].dims(), a.ints("pads"), pad_mode(a.s("mode", "constant")), dtype_size(x[0].dtype()));
      std::vector<std::int64_t> od = x[0].dims();
      for (std::size_t d = 0; d < od.size(); ++d) od[d] = p.out_dims[d];
      Tensor out(x[0].dtype(), od);
      Tensor fill(x[0].dtype(), {1});
      fill.set(0, a.f("value", 0.0));
      pad_copy(p, x[0].bytes(), fill.bytes(), out.bytes(), 0, p.rows());
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }

  // Attributes, in e-graph order.
  r.declare_attrs("reshape", {attr_ints("shape"), attr_int("allowzero", 0)});
  r.declare_attrs("transpose", {attr_ints("perm")});
  r.declare_attrs("flatten", {attr_int("axis", 1)});
  r.declare_attrs("squeeze", {attr_ints("axes")});
  r.declare_attrs("unsqueeze", {attr_ints("axes")});
  r.declare_attrs("concat", {attr_int("axis", 0)});
  r.declare_attrs("split", {attr_int("axis", 0), attr_ints("split")});
  r.declare_attrs("slice", {attr_ints("starts"), attr_ints("ends"), attr_ints("axes"), attr_ints("steps")});
  r.declare_attrs("expand", {attr_ints("shape")});
  r.declare_attrs("tile", {attr_ints("repeats")});
  r.declare_attrs("depth_to_space", {attr_int("blocksize"), attr_choice("mode", "DCR", {"DCR", "CRD"})});
  r.declare_attrs("space_to_depth", {attr_int("blocksize")});
  r.declare_attrs("windows", {attr_ints("kernel_shape"), attr_ints("strides"), attr_ints("dilations")});
  r.declare_attrs("gather", {attr_int("axis", 0)});
  r.declare_attrs("gather_elements", {attr_int("axis", 0)});
  r.declare_attrs("scatter_nd", {attr_choice("reduction", "none", {"none", "add", "mul", "max", "min"})});
  r.declare_attrs("shape", {attr_int("start", 0), attr_int("end")});
  r.declare_attrs("const", {attr_tensor("value")});
  r.declare_attrs("fill", {attr_ints("shape"), attr_tensor("value")});
  r.declare_attrs("trilu", {attr_int("upper", 1), attr_int("k", 0)});
  r.declare_attrs("pad", {attr_ints("pads"), attr_string("mode", "constant"), attr_real("value", 0.0)});
}

}  // namespace saturn::ir
