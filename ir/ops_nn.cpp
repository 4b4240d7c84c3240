// Neural-network composites: matmul, gemm, normalizations, convolution,
// pooling, LRN. Reference loops: plain and obviously correct, not fast.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>

#include "ir/einsum.hpp"
#include "ir/op.hpp"
#include "ir/resize.hpp"
#include "ir/window.hpp"

namespace saturn::ir {

WindowGeometry window_geometry(const Attrs& a, const std::vector<std::int64_t>& spatial,
                               std::vector<std::int64_t> kernel, bool ceil_mode) {
  const std::size_t n = spatial.size();
  WindowGeometry w;
  w.kernel = std::move(kernel);
  if (w.kernel.size() != n)
    shape_error("kernel has " + std::to_string(w.kernel.size()) + " dims for " + std::to_string(n) + " spatial dims");
  w.strides = a.ints("strides", std::vector<std::int64_t>(n, 1));
  w.dilations = a.ints("dilations", std::vector<std::int64_t>(n, 1));
  auto pads = a.ints("pads", std::vector<std::int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    shape_error("strides/dilations/pads do not match the spatial rank");
  for (std::int64_t p : pads)
    if (p < 0) shape_error("pads must be >= 0, got " + std::to_string(p));
  std::string autopad = a.s("auto_pad", "NOTSET");
  w.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  w.pads_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  for (std::size_t i = 0; i < n; ++i) {
    if (w.kernel[i] <= 0) shape_error("kernel dims must be positive, got " + std::to_string(w.kernel[i]));
    if (w.strides[i] <= 0 || w.dilations[i] <= 0) shape_error("strides and dilations must be positive");
    std::int64_t ext = (w.kernel[i] - 1) * w.dilations[i] + 1;
    if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
      std::int64_t o = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      std::int64_t total = std::max<std::int64_t>(0, (o - 1) * w.strides[i] + ext - spatial[i]);
      w.pads_begin[i] = autopad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads_end[i] = total - w.pads_begin[i];
    } else if (autopad == "VALID") {
      w.pads_begin[i] = w.pads_end[i] = 0;
    }
    std::int64_t span = spatial[i] + w.pads_begin[i] + w.pads_end[i] - ext;
    if (span < 0) shape_error("the window is larger than the padded input");
    std::int64_t o = ceil_mode ? (span + w.strides[i] - 1) / w.strides[i] + 1 : span / w.strides[i] + 1;
    // With ceil_mode the last window must start inside the input or its left padding.
    if (ceil_mode && (o - 1) * w.strides[i] >= spatial[i] + w.pads_begin[i]) --o;
    w.out.push_back(o);
  }
  return w;
}

EinsumPlan einsum_plan(const std::string& equation, const std::vector<std::vector<std::int64_t>>& shapes) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  EinsumPlan p;
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_out = true;
  }
  std::vector<std::string> raw;
  for (std::size_t b = 0;;) {
    auto comma = lhs.find(',', b);
    raw.push_back(lhs.substr(b, comma == std::string::npos ? std::string::npos : comma - b));
    if (comma == std::string::npos) break;
    b = comma + 1;
  }
  if (raw.size() != shapes.size())
    shape_error("einsum: the equation has " + std::to_string(raw.size()) + " operands, given " +
                std::to_string(shapes.size()));
  // Ellipsis dimensions get the reserved letters '0'...'9' (right-aligned).
  std::size_t ell_rank = 0;
  for (std::size_t k = 0; k < raw.size(); ++k)
    if (raw[k].find("...") != std::string::npos) {
      if (shapes[k].size() + 3 < raw[k].size())
        shape_error("einsum: operand " + std::to_string(k) + " has rank " + std::to_string(shapes[k].size()) +
                    ", fewer than the equation's " + std::to_string(raw[k].size() - 3) + " letters");
      ell_rank = std::max(ell_rank, shapes[k].size() - (raw[k].size() - 3));
    }
  if (ell_rank > 10) shape_error("einsum: more than 10 axes under '...'");
  auto ell = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = ell_rank - n; i < ell_rank; ++i) s += static_cast<char>('0' + i);
    return s;
  };
  for (std::size_t k = 0; k < raw.size(); ++k) {
    std::string t = raw[k];
    if (auto e = t.find("..."); e != std::string::npos)
      t = t.substr(0, e) + ell(shapes[k].size() - (t.size() - 3)) + t.substr(e + 3);
    if (t.size() != shapes[k].size())
      shape_error("einsum: operand " + std::to_string(k) + " has rank " + std::to_string(shapes[k].size()) +
                  ", the equation says " + std::to_string(t.size()));
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::int64_t n = shapes[k][i];
      auto [it, fresh] = p.size.emplace(t[i], n);
      if (!fresh && it->second != n) {
        if (it->second == 1)
          it->second = n;
        else if (n != 1)
          shape_error(std::string("einsum: index '") + t[i] + "' has sizes " + std::to_string(it->second) + " and " +
                      std::to_string(n));
      }
    }
    p.terms.push_back(t);
  }
  if (explicit_out) {
    if (auto e = rhs.find("..."); e != std::string::npos) rhs = rhs.substr(0, e) + ell(ell_rank) + rhs.substr(e + 3);
    p.out = rhs;
  } else {
    std::map<char, int> count;
    for (auto& t : p.terms)
      for (char ch : t) ++count[ch];
    p.out = ell(ell_rank);
    for (auto& [ch, n] : count)
      if (n == 1 && !(ch >= '0' && ch <= '9')) p.out += ch;
  }
  for (char ch : p.out)
    if (!p.size.count(ch))
      shape_error(std::string("einsum: output index '") + ch + "' does not appear in the operands");
  return p;
}

ConvTransposeGeometry conv_transpose_geometry(const Attrs& a, const std::vector<std::int64_t>& xd,
                                              const std::vector<std::int64_t>& wd) {
  if (xd.size() < 3 || wd.size() != xd.size()) shape_error("conv_transpose: x and w must have the same rank >= 3");
  const std::size_t n = xd.size() - 2;
  ConvTransposeGeometry g;
  g.kernel = a.ints("kernel_shape", std::vector<std::int64_t>(wd.begin() + 2, wd.end()));
  g.strides = a.ints("strides", std::vector<std::int64_t>(n, 1));
  g.dilations = a.ints("dilations", std::vector<std::int64_t>(n, 1));
  auto pads = a.ints("pads", std::vector<std::int64_t>(2 * n, 0));
  auto outpad = a.ints("output_padding", std::vector<std::int64_t>(n, 0));
  auto oshape = a.ints("output_shape");
  std::string autopad = a.s("auto_pad", "NOTSET");
  if (g.kernel.size() != n || g.strides.size() != n || g.dilations.size() != n || pads.size() != 2 * n ||
      outpad.size() != n)
    shape_error("conv_transpose: attributes do not match the spatial rank");
  for (std::int64_t p : pads)
    if (p < 0) shape_error("conv_transpose: pads must be >= 0, got " + std::to_string(p));
  if (oshape.size() > n) oshape.erase(oshape.begin(), oshape.begin() + static_cast<std::ptrdiff_t>(oshape.size() - n));
  if (!oshape.empty() && oshape.size() < n)
    shape_error("conv_transpose: output_shape has " + std::to_string(oshape.size()) + " entries for " +
                std::to_string(n) + " spatial dims");
  for (std::size_t i = 0; i < n; ++i) {
    if (g.kernel[i] <= 0)
      shape_error("conv_transpose: kernel dims must be positive, got " + std::to_string(g.kernel[i]));
    std::int64_t full = g.strides[i] * (xd[i + 2] - 1) + outpad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    std::int64_t target = -1;
    if (!oshape.empty())
      target = oshape[i];
    else if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER")
      target = xd[i + 2] * g.strides[i];
    if (target >= 0) {
      // ONNX's reference divides with Python's floor division; the total
      // is negative when output_shape asks for extra trailing outputs.
      std::int64_t total = full - target;
      std::int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autopad == "SAME_UPPER";
      g.begin.push_back(upper ? half : total - half);
      g.out.push_back(target);
    } else {
      std::int64_t b = autopad == "VALID" ? 0 : pads[i], e = autopad == "VALID" ? 0 : pads[i + n];
      g.begin.push_back(b);
      g.out.push_back(full - b - e);
    }
    if (g.out.back() <= 0) shape_error("conv_transpose: non-positive output size");
  }
  return g;
}

namespace {

using Args = std::span<const Tensor>;
using Given = std::span<const bool>;
using Inputs = std::span<const TypedInput>;

OpDef make(const char* name, int min_in, int max_in, const char* doc) {
  OpDef d;
  d.name = name;
  d.kind = OpKind::Composite;
  d.min_inputs = min_in;
  d.max_inputs = max_in;
  d.doc = doc;
  return d;
}

void need_float(Inputs in, const char* op) {
  if (!is_float(in[0].type.dtype))
    shape_error(std::string(op) + " needs a floating operand, got " + dtype_name(in[0].type.dtype));
}

// Every present operand has operand 0's element type (ONNX's single type
// constraint T of convolutions and Gemm): an f64 input into f32 weights is
// an ill-typed model, not one to compute in either type.
bool one_type(Inputs in) {
  for (const TypedInput& t : in.subspan(1))
    if (t.present && t.type.dtype != in[0].type.dtype) return false;
  return true;
}

// What a convolution's infer asks of its operands' ranks and types before
// anything else: floating x, one type, x and w of the same rank >= 3, a
// 1-D bias.
bool convolution_operands_fit(Inputs in) {
  const std::size_t rank = in[0].type.shape.size();
  return is_float(in[0].type.dtype) && one_type(in) && rank >= 3 && in[1].type.shape.size() == rank &&
         (in.size() < 3 || !in[2].present || in[2].type.shape.size() == 1);
}

// one_type, or a ShapeError naming the operand that differs.
void need_one_type(Inputs in, const char* op) {
  for (std::size_t k = 1; k < in.size(); ++k)
    if (in[k].present && in[k].type.dtype != in[0].type.dtype)
      shape_error(std::string(op) + ": operand " + std::to_string(k) + " is " + dtype_name(in[k].type.dtype) +
                  ", operand 0 " + dtype_name(in[0].type.dtype));
}

// numpy matmul shapes: 1-D operands are promoted and the promoted axis
// dropped. For operands it does not take: a ShapeError saying why when
// `why`, else nullopt.
std::optional<Shape> try_matmul_shape(const Shape& a, const Shape& b, bool why) {
  if (a.empty() || b.empty()) {
    if (why) shape_error("matmul: operands must have rank >= 1");
    return std::nullopt;
  }
  Shape A = a, B = b;
  if (A.size() == 1) A.insert(A.begin(), Dim::of(1));
  if (B.size() == 1) B.push_back(Dim::of(1));
  const Dim& k1 = A.back();
  const Dim& k2 = B[B.size() - 2];
  if (!(k1 == k2)) {
    if (why) shape_error("matmul: inner dimensions differ: " + to_string(a) + " x " + to_string(b));
    return std::nullopt;
  }
  Shape ba(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  auto batch = broadcast(ba, bb);
  if (!batch) {
    if (why) shape_error("matmul: batch dimensions " + to_string(ba) + " and " + to_string(bb) + " do not broadcast");
    return std::nullopt;
  }
  Shape out = *batch;
  if (a.size() > 1) out.push_back(A[A.size() - 2]);
  if (b.size() > 1) out.push_back(B.back());
  return out;
}

Shape matmul_shape(const Shape& a, const Shape& b) { return *try_matmul_shape(a, b, true); }

std::int64_t offset(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& dims) {
  std::int64_t o = 0;
  for (std::size_t d = 0; d < c.size(); ++d) o = o * dims[d] + c[d];
  return o;
}

// MaxPool's Indices: the flat index of the maximum in the whole input (n, c,
// spatial...), row-major for storage_order 0 and column-major for 1.
std::int64_t argmax_index(std::int64_t nc, const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>& dims,
                          bool column_major) {
  std::vector<std::int64_t> full{nc / dims[1], nc % dims[1]};
  full.insert(full.end(), pos.begin(), pos.end());
  std::int64_t flat = 0;
  if (!column_major) {
    for (std::size_t k = 0; k < full.size(); ++k) flat = flat * dims[k] + full[k];
  } else {
    std::int64_t stride = 1;
    for (std::size_t k = 0; k < full.size(); ++k) {
      flat += full[k] * stride;
      stride *= dims[k];
    }
  }
  return flat;
}

void pool(OpRegistry& r, const char* name, bool is_max) {
  OpDef d =
      make(name, 1, 1,
           "pooling over `kernel_shape` with strides, pads, dilations, ceil_mode (count_include_pad for average)");
  auto geometry = [](const Attrs& a, const std::vector<std::int64_t>& dims) {
    if (dims.size() < 3) shape_error("pooling needs rank >= 3 (N, C, spatial...)");
    std::vector<std::int64_t> spatial(dims.begin() + 2, dims.end());
    return window_geometry(a, spatial, a.ints("kernel_shape"), a.i("ceil_mode", 0) != 0);
  };
  d.infer = [geometry, name, is_max](const Attrs& a, Inputs in, std::size_t outs) {
    if (is_max ? in[0].type.dtype == DType::Bool : !is_float(in[0].type.dtype))
      shape_error(std::string(name) + " does not take " + dtype_name(in[0].type.dtype) + " operands");
    auto dims = static_shape(in[0], name);
    WindowGeometry w = geometry(a, dims);
    std::vector<std::int64_t> od{dims[0], dims[1]};
    od.insert(od.end(), w.out.begin(), w.out.end());
    std::vector<ValueType> res{{in[0].type.dtype, shape_of(od)}};
    if (is_max && outs > 1) res.push_back({DType::I64, shape_of(od)});
    if (outs > res.size()) shape_error(std::string(name) + " has " + std::to_string(res.size()) + " results");
    return res;
  };
  d.admits = [is_max](const Attrs& a, Inputs in) {
    const DType t = in[0].type.dtype;
    const std::size_t rank = in[0].type.shape.size();
    return (is_max ? t != DType::Bool : is_float(t)) && rank >= 3 && a.ints("kernel_shape").size() == rank - 2;
  };
  set_kernel(d, [geometry, is_max](const Attrs& a, auto x, Given, std::size_t outs) {
    const auto& dims = x[0].dims();
    WindowGeometry w = geometry(a, dims);
    std::vector<std::int64_t> spatial(dims.begin() + 2, dims.end());
    std::vector<std::int64_t> od{dims[0], dims[1]};
    od.insert(od.end(), w.out.begin(), w.out.end());
    auto out = like(x[0], x[0].dtype(), od);
    auto indices = like(x[0], DType::I64, od);
    using E = decltype(x[0].at(0));
    if (!std::is_same_v<E, double> && is_max && outs > 1)
      throw SymbolicUnsupported{"max_pool's indices have no symbolic form"};
    const bool column_major = a.i("storage_order", 0) != 0;
    const bool include_pad = a.i("count_include_pad", 0) != 0;
    std::int64_t plane = numel(spatial), oplane = numel(w.out);
    for (std::int64_t nc = 0; nc < dims[0] * dims[1]; ++nc) {
      for (std::int64_t op = 0; op < oplane; ++op) {
        auto o = unflatten(op, w.out);
        E acc = lit(x[0], 0.0);
        std::int64_t count = 0, arg = -1;
        bool any = false;
        for_window(w, o, spatial,
                   [&](const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>&, bool inside) {
                     bool in_padded = true;
                     for (std::size_t k = 0; k < pos.size(); ++k)
                       if (pos[k] < -w.pads_begin[k] || pos[k] >= spatial[k] + w.pads_end[k]) in_padded = false;
                     if (inside) {
                       E v = x[0].at(static_cast<std::size_t>(nc * plane + offset(pos, spatial)));
                       if constexpr (std::is_same_v<E, double>)
                         if (is_max && (arg < 0 || v > acc)) arg = argmax_index(nc, pos, dims, column_major);
                       acc = !is_max ? acc + v : any ? scalar::max(acc, v) : v;
                       any = true;
                       ++count;
                     } else if (include_pad && in_padded) {
                       ++count;
                     }
                   });
        const double inf = std::numeric_limits<double>::infinity();
        out.set(static_cast<std::size_t>(nc * oplane + op),
                is_max ? (any ? acc : lit(x[0], -inf)) : (count ? acc / static_cast<double>(count) : lit(x[0], 0.0)));
        indices.set_int(static_cast<std::size_t>(nc * oplane + op), arg);
      }
    }
    std::vector<decltype(out)> res{std::move(out)};
    if (is_max && outs > 1) res.push_back(std::move(indices));
    return res;
  });
  r.add(std::move(d));
}

void global_pool(OpRegistry& r, const char* name, bool is_max) {
  OpDef d = make(name, 1, 1, "pool over all spatial dims, keeping them as 1");
  d.infer = [name](const Attrs&, Inputs in, std::size_t) {
    need_float(in, name);
    Shape s = in[0].type.shape;
    if (s.size() < 2) shape_error(std::string(name) + " needs rank >= 2");
    for (std::size_t i = 2; i < s.size(); ++i) s[i] = Dim::of(1);
    return std::vector<ValueType>{{in[0].type.dtype, s}};
  };
  set_kernel(d, [is_max](const Attrs&, auto x, Given, std::size_t) {
    auto od = x[0].dims();
    std::int64_t plane = 1;
    for (std::size_t i = 2; i < od.size(); ++i) {
      plane *= od[i];
      od[i] = 1;
    }
    auto out = like(x[0], x[0].dtype(), od);
    for (std::size_t nc = 0; nc < out.numel(); ++nc) {
      auto acc = lit(x[0], is_max ? -std::numeric_limits<double>::infinity() : 0.0);
      for (std::int64_t k = 0; k < plane; ++k) {
        auto v = x[0].at(nc * static_cast<std::size_t>(plane) + static_cast<std::size_t>(k));
        acc = !is_max ? acc + v : k ? scalar::max(acc, v) : v;
      }
      out.set(nc, is_max ? acc : acc / static_cast<double>(plane));
    }
    return std::vector<decltype(out)>{std::move(out)};
  });
  r.add(std::move(d));
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  {
    OpDef d = make("matmul", 2, 2, "numpy matmul with batch broadcasting");
    d.contraction = true;
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      if (in[0].type.dtype != in[1].type.dtype) shape_error("matmul: operand types differ");
      if (in[0].type.dtype == DType::Bool) shape_error("matmul does not take bool operands");
      return std::vector<ValueType>{{in[0].type.dtype, matmul_shape(in[0].type.shape, in[1].type.shape)}};
    };
    d.admits = [](const Attrs&, Inputs in) {
      return in[0].type.dtype == in[1].type.dtype && in[0].type.dtype != DType::Bool &&
             try_matmul_shape(in[0].type.shape, in[1].type.shape, false).has_value();
    };
    set_kernel(d, [](const Attrs&, auto x, Given, std::size_t) {
      auto ad = x[0].dims(), bd = x[1].dims();
      if (ad.size() == 1) ad.insert(ad.begin(), 1);
      if (bd.size() == 1) bd.push_back(1);
      const std::int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
      std::vector<std::int64_t> ba(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
      auto batch = broadcast_dims(ba, bb, "matmul");
      std::vector<std::int64_t> full = batch;
      full.push_back(M);
      full.push_back(N);
      auto out = like(x[0], x[0].dtype(), static_dims(matmul_shape(shape_of(x[0].dims()), shape_of(x[1].dims()))));
      const bool fl = is_float(x[0].dtype());
      auto batch_off = [&](const std::vector<std::int64_t>& bc, const std::vector<std::int64_t>& own) {
        std::int64_t o = 0;
        std::size_t off = bc.size() - own.size();
        for (std::size_t i = 0; i < own.size(); ++i) o = o * own[i] + (own[i] == 1 ? 0 : bc[off + i]);
        return o;
      };
      std::int64_t nb = numel(batch);
      for (std::int64_t b = 0; b < nb; ++b) {
        auto bc = unflatten(b, batch);
        std::int64_t ao = batch_off(bc, ba) * M * K, bo = batch_off(bc, bb) * K * N;
        for (std::int64_t i = 0; i < M; ++i)
          for (std::int64_t j = 0; j < N; ++j) {
            auto o = static_cast<std::size_t>((b * M + i) * N + j);
            if (fl) {
              auto acc = lit(x[0], 0.0);
              for (std::int64_t k = 0; k < K; ++k)
                acc += x[0].at(static_cast<std::size_t>(ao + i * K + k)) *
                       x[1].at(static_cast<std::size_t>(bo + k * N + j));
              out.set(o, acc);
            } else {
              std::int64_t acc = 0;
              for (std::int64_t k = 0; k < K; ++k)
                acc = wrapping_add(acc, wrapping_mul(x[0].at_int(static_cast<std::size_t>(ao + i * K + k)),
                                                     x[1].at_int(static_cast<std::size_t>(bo + k * N + j))));
              out.set_int(o, acc);
            }
          }
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    OpDef d = make("gemm", 2, 3, "alpha * op(A) op(B) + beta * C, op = transpose when transA/transB");
    d.contraction = true;
    auto dims2 = [](const Shape& s, bool t, const char* which) {
      if (s.size() != 2) shape_error(std::string("gemm: ") + which + " must be 2-D, got " + to_string(s));
      return t ? std::pair{s[1], s[0]} : std::pair{s[0], s[1]};
    };
    d.infer = [dims2](const Attrs& a, Inputs in, std::size_t) {
      need_one_type(in, "gemm");
      auto [m, k1] = dims2(in[0].type.shape, a.i("transA", 0) != 0, "A");
      auto [k2, n] = dims2(in[1].type.shape, a.i("transB", 0) != 0, "B");
      if (!(k1 == k2)) shape_error("gemm: inner dimensions differ (" + k1.to_string() + " vs " + k2.to_string() + ")");
      Shape out{m, n};
      auto bc = in.size() > 2 && in[2].present ? broadcast(in[2].type.shape, out) : std::optional<Shape>(out);
      if (!bc || *bc != out)
        shape_error("gemm: C of shape " + to_string(in[2].type.shape) + " does not broadcast to " + to_string(out));
      return std::vector<ValueType>{{in[0].type.dtype, out}};
    };
    d.admits = [](const Attrs& a, Inputs in) {
      if (!one_type(in) || in[0].type.shape.size() != 2 || in[1].type.shape.size() != 2) return false;
      const Dim& k1 = in[0].type.shape[a.i("transA", 0) != 0 ? 0 : 1];
      const Dim& k2 = in[1].type.shape[a.i("transB", 0) != 0 ? 1 : 0];
      return k1 == k2 && (in.size() < 3 || !in[2].present || in[2].type.shape.size() <= 2);
    };
    set_kernel(d, [](const Attrs& a, auto x, Given given, std::size_t) {
      bool ta = a.i("transA", 0) != 0, tb = a.i("transB", 0) != 0;
      double alpha = a.f("alpha", 1.0), beta = a.f("beta", 1.0);
      std::int64_t M = ta ? x[0].dims()[1] : x[0].dims()[0], K = ta ? x[0].dims()[0] : x[0].dims()[1];
      std::int64_t N = tb ? x[1].dims()[0] : x[1].dims()[1];
      auto out = like(x[0], x[0].dtype(), {M, N});
      const bool has_c = x.size() > 2 && given[2];
      std::vector<std::int64_t> cd = has_c ? x[2].dims() : std::vector<std::int64_t>{};
      auto c_index = [&](std::int64_t i, std::int64_t j) -> std::size_t {  // C broadcast to [M, N]
        if (cd.size() == 2) return static_cast<std::size_t>((cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j));
        if (cd.size() == 1) return static_cast<std::size_t>(cd[0] == 1 ? 0 : j);
        return 0;
      };
      auto a_at = [&](std::int64_t i, std::int64_t k) { return static_cast<std::size_t>(ta ? k * M + i : i * K + k); };
      auto b_at = [&](std::int64_t k, std::int64_t j) { return static_cast<std::size_t>(tb ? j * K + k : k * N + j); };
      // Integers as matmul's (and numpy.dot's) wrapping products and sums,
      // so that matmul => gemm holds for them; scaled in double (as ONNX's
      // reference does) unless alpha = beta = 1.
      const bool exact_int = !is_float(x[0].dtype()) && alpha == 1.0 && beta == 1.0;
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          const auto o = static_cast<std::size_t>(i * N + j);
          if (!is_float(x[0].dtype())) {
            std::int64_t acc = 0;
            for (std::int64_t k = 0; k < K; ++k)
              acc = wrapping_add(acc, wrapping_mul(x[0].at_int(a_at(i, k)), x[1].at_int(b_at(k, j))));
            const std::int64_t c = has_c ? x[2].at_int(c_index(i, j)) : 0;
            if (exact_int)
              out.set_int(o, wrapping_add(acc, c));
            else
              out.set(o, alpha * static_cast<double>(acc) + beta * static_cast<double>(c));
            continue;
          }
          auto acc = lit(x[0], 0.0);
          for (std::int64_t k = 0; k < K; ++k) acc += x[0].at(a_at(i, k)) * x[1].at(b_at(k, j));
          auto c = lit(x[0], 0.0);
          if (has_c) c = x[2].at(c_index(i, j));
          out.set(o, alpha * acc + beta * c);
        }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    OpDef d =
        make("batch_norm", 5, 5,
             "inference batch normalization: (x - mean) / sqrt(var + epsilon) * scale + bias per channel (axis 1)");
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      need_float(in, "batch_norm");
      // (The parameters are of x's type, ONNX's T, as the rules defining the
      // normalizations build arithmetic of x with each; the importer casts
      // BatchNormalization's, whose types may differ since opset 15.)
      need_one_type(in, "batch_norm");
      if (in[0].type.shape.size() < 2) shape_error("batch_norm needs rank >= 2");
      const Dim& c = in[0].type.shape[1];
      for (std::size_t k = 1; k < 5; ++k)
        if (in[k].type.shape.size() != 1 || !(in[k].type.shape[0] == c))
          shape_error("batch_norm: scale, bias, mean and var must have shape [" + c.to_string() + "], got " +
                      to_string(in[k].type.shape));
      return std::vector<ValueType>{in[0].type};
    };
    set_kernel(d, [](const Attrs& a, auto x, Given, std::size_t) {
      double eps = a.f("epsilon", 1e-5);
      auto out = like(x[0], x[0].dtype(), x[0].dims());
      std::int64_t C = x[0].dims()[1], inner = 1;
      for (std::size_t i = 2; i < x[0].rank(); ++i) inner *= x[0].dims()[i];
      for (std::size_t i = 0; i < out.numel(); ++i) {
        auto c = static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % C);
        out.set(i, (x[0].at(i) - x[3].at(c)) / scalar::sqrt(x[4].at(c) + eps) * x[1].at(c) + x[2].at(c));
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    // Normalizes over a block of trailing axes [axis, rank) per group.
    auto norm = [&](const char* name, const char* doc, bool instance) {
      OpDef d = make(name, instance ? 3 : 1, 3, doc);
      if (!instance) d.num_outputs = -1;  // Y, and optionally Mean and InvStdDev
      d.infer = [name, instance](const Attrs& a, Inputs in, std::size_t outs) {
        need_float(in, name);
        need_one_type(in, name);  // (as batch_norm's)
        if (!instance) {
          // scale and bias hold one value per element of the normalized
          // block (or one value): their shape is the block's trailing shape.
          const Shape& xs = in[0].type.shape;
          auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(xs.size())));
          auto strip = [](Shape s) {
            while (!s.empty() && s.front() == Dim::of(1)) s.erase(s.begin());
            return s;
          };
          // scale and bias hold values for a suffix of the normalized block
          Shape block(xs.begin() + static_cast<std::ptrdiff_t>(axis), xs.end());
          for (std::size_t k = 1; k < in.size(); ++k) {
            if (!in[k].present) continue;
            const Shape& p = in[k].type.shape;
            Shape q = strip(p);  // must be a suffix of the block: the kernel reads element k mod its size
            bool suffix = q.size() <= block.size() &&
                          std::equal(q.begin(), q.end(), block.end() - static_cast<std::ptrdiff_t>(q.size()));
            if (p.size() > block.size() || !suffix)
              shape_error(std::string(name) + ": scale and bias must have the normalized shape " + to_string(block) +
                          ", got " + to_string(p));
          }
        }
        if (instance) {  // per-channel scale and bias, [C]
          const Shape& xs = in[0].type.shape;
          if (xs.size() < 3) shape_error(std::string(name) + " needs rank >= 3 (N, C, spatial...)");
          for (std::size_t k = 1; k < in.size(); ++k)
            if (in[k].present && !(in[k].type.shape == Shape{xs[1]}))
              shape_error(std::string(name) + ": scale and bias must have shape " + to_string(Shape{xs[1]}) + ", got " +
                          to_string(in[k].type.shape));
        }
        std::vector<ValueType> res{in[0].type};
        if (!instance && outs > 1) {
          Shape stat = in[0].type.shape;
          auto axis = static_cast<std::size_t>(normalize_axis(a.i("axis", -1), static_cast<std::int64_t>(stat.size())));
          for (std::size_t i = axis; i < stat.size(); ++i) stat[i] = Dim::of(1);
          res.push_back({in[0].type.dtype, stat});
          res.push_back({in[0].type.dtype, stat});
        }
        if (outs > res.size())
          shape_error(std::string(name) + " has at most " + std::to_string(res.size()) + " results");
        return res;
      };
      set_kernel(d, [instance](const Attrs& a, auto x, Given given, std::size_t outs) {
        const auto& dims = x[0].dims();
        const auto rank = static_cast<std::int64_t>(dims.size());
        std::int64_t axis = instance ? 2 : normalize_axis(a.i("axis", -1), rank);
        double eps = a.f("epsilon", 1e-5);
        std::int64_t inner = 1;
        for (std::int64_t i = axis; i < rank; ++i) inner *= dims[static_cast<std::size_t>(i)];
        std::int64_t groups = inner ? static_cast<std::int64_t>(x[0].numel()) / inner : 0;
        auto out = like(x[0], x[0].dtype(), dims);
        std::int64_t C = instance && rank > 1 ? dims[1] : 1;
        std::vector<std::int64_t> stat_dims = dims;
        for (auto i = static_cast<std::size_t>(axis); i < stat_dims.size(); ++i) stat_dims[i] = 1;
        auto mean_out = like(x[0], x[0].dtype(), stat_dims), inv_out = like(x[0], x[0].dtype(), stat_dims);
        for (std::int64_t g = 0; g < groups; ++g) {
          auto mean = lit(x[0], 0.0), var = lit(x[0], 0.0);
          for (std::int64_t k = 0; k < inner; ++k) mean += x[0].at(static_cast<std::size_t>(g * inner + k));
          mean /= static_cast<double>(inner);
          for (std::int64_t k = 0; k < inner; ++k) {
            auto dv = x[0].at(static_cast<std::size_t>(g * inner + k)) - mean;
            var += dv * dv;
          }
          var /= static_cast<double>(inner);
          if (!instance) {
            mean_out.set(static_cast<std::size_t>(g), mean);
            inv_out.set(static_cast<std::size_t>(g), 1.0 / scalar::sqrt(var + eps));
          }
          for (std::int64_t k = 0; k < inner; ++k) {
            auto i = static_cast<std::size_t>(g * inner + k);
            auto v = (x[0].at(i) - mean) / scalar::sqrt(var + eps);
            // instance norm: per-channel scale/bias; layer norm: per element of the normalized block (broadcast)
            auto pi = static_cast<std::size_t>(instance ? g % C : k);
            auto pick = [&](const auto& t) { return t.numel() == 1 ? t.at(0) : t.at(pi % t.numel()); };
            if (x.size() > 1 && given[1]) v *= pick(x[1]);
            if (x.size() > 2 && given[2]) v += pick(x[2]);
            out.set(i, v);
          }
        }
        std::vector<decltype(out)> res{std::move(out)};
        if (!instance && outs > 1) {
          res.push_back(std::move(mean_out));
          res.push_back(std::move(inv_out));
        }
        return res;
      });
      r.add(std::move(d));
    };
    norm("layer_norm", "normalize over axes [axis, rank) then scale and bias (layer_norm(x, scale, bias))", false);
    norm("instance_norm", "normalize each (n, c) plane, then per-channel scale and bias", true);
  }
  {
    OpDef d = make("conv", 2, 3, "N-d convolution: conv(x, w, bias?) with strides, pads, dilations, group, auto_pad");
    d.contraction = true;
    auto geometry = [](const Attrs& a, const std::vector<std::int64_t>& xd, const std::vector<std::int64_t>& wd) {
      if (xd.size() < 3 || wd.size() != xd.size()) shape_error("conv: x and w must have the same rank >= 3");
      std::vector<std::int64_t> spatial(xd.begin() + 2, xd.end());
      auto ks = a.ints("kernel_shape", std::vector<std::int64_t>(wd.begin() + 2, wd.end()));
      return window_geometry(a, spatial, ks, false);
    };
    d.infer = [geometry](const Attrs& a, Inputs in, std::size_t) {
      need_float(in, "conv");
      need_one_type(in, "conv");
      auto xd = static_shape(in[0], "conv"), wd = static_shape(in[1], "conv");
      if (xd.size() < 3 || wd.size() != xd.size()) shape_error("conv: x and w must have the same rank >= 3");
      std::int64_t g = a.i("group", 1);
      if (g <= 0 || xd[1] % g != 0 || wd[0] % g != 0)
        shape_error("conv: group " + std::to_string(g) + " does not divide the channels");
      if (xd[1] / g != wd[1])
        shape_error("conv: x has " + std::to_string(xd[1]) + " channels, w expects " + std::to_string(wd[1] * g));
      if (a.has("kernel_shape") && a.ints("kernel_shape") != std::vector<std::int64_t>(wd.begin() + 2, wd.end()))
        shape_error("conv: kernel_shape does not match the weights' spatial dims " + to_string(in[1].type.shape));
      if (in.size() > 2 && in[2].present && (in[2].type.shape.size() != 1 || !(in[2].type.shape[0] == Dim::of(wd[0]))))
        shape_error("conv: the bias must have shape [" + std::to_string(wd[0]) + "], got " +
                    to_string(in[2].type.shape));
      WindowGeometry w = geometry(a, xd, wd);
      std::vector<std::int64_t> od{xd[0], wd[0]};
      od.insert(od.end(), w.out.begin(), w.out.end());
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(od)}};
    };
    d.admits = [](const Attrs& a, Inputs in) {
      if (!convolution_operands_fit(in)) return false;
      const Shape &x = in[0].type.shape, &w = in[1].type.shape;
      const std::int64_t g = a.i("group", 1);
      if (!x[1].is_static() || !w[0].is_static() || !w[1].is_static()) return true;
      return g > 0 && x[1].k % g == 0 && w[0].k % g == 0 && x[1].k / g == w[1].k;
    };
    set_kernel(d, [geometry](const Attrs& a, auto x, Given given, std::size_t) {
      const auto &xd = x[0].dims(), &wd = x[1].dims();
      WindowGeometry w = geometry(a, xd, wd);
      std::vector<std::int64_t> spatial(xd.begin() + 2, xd.end());
      std::int64_t N = xd[0], Cin = xd[1], M = wd[0], G = a.i("group", 1), cpg = Cin / G, mpg = M / G;
      std::vector<std::int64_t> od{N, M};
      od.insert(od.end(), w.out.begin(), w.out.end());
      auto out = like(x[0], x[0].dtype(), od);
      std::int64_t plane = numel(spatial), oplane = numel(w.out), kplane = numel(w.kernel);
      const bool has_bias = x.size() > 2 && given[2];
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t m = 0; m < M; ++m) {
          std::int64_t g = m / mpg;
          for (std::int64_t op = 0; op < oplane; ++op) {
            auto o = unflatten(op, w.out);
            auto acc = has_bias ? x[2].at(static_cast<std::size_t>(m)) : lit(x[0], 0.0);
            for (std::int64_t c = 0; c < cpg; ++c) {
              std::int64_t cin = g * cpg + c;
              for_window(w, o, spatial,
                         [&](const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>& kc, bool inside) {
                           if (!inside) return;
                           auto xv = x[0].at(static_cast<std::size_t>((n * Cin + cin) * plane + offset(pos, spatial)));
                           auto wv = x[1].at(static_cast<std::size_t>((m * cpg + c) * kplane + offset(kc, w.kernel)));
                           acc += xv * wv;
                         });
            }
            out.set(static_cast<std::size_t>((n * M + m) * oplane + op), acc);
          }
        }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    OpDef d = make("conv_transpose", 2, 3,
                   "transposed convolution: strides, pads, dilations, group, output_padding, output_shape, auto_pad");
    d.contraction = true;
    auto geometry = [](const Attrs& a, const std::vector<std::int64_t>& xd, const std::vector<std::int64_t>& wd) {
      return conv_transpose_geometry(a, xd, wd);
    };
    d.infer = [geometry](const Attrs& a, Inputs in, std::size_t) {
      need_float(in, "conv_transpose");
      need_one_type(in, "conv_transpose");
      auto xd = static_shape(in[0], "conv_transpose"), wd = static_shape(in[1], "conv_transpose");
      if (xd.size() < 3 || wd.size() != xd.size()) shape_error("conv_transpose: x and w must have the same rank >= 3");
      std::int64_t grp = a.i("group", 1);
      if (grp <= 0 || xd[1] != wd[0] || xd[1] % grp != 0)
        shape_error("conv_transpose: x has " + std::to_string(xd[1]) + " channels, w expects " + std::to_string(wd[0]));
      if (a.has("kernel_shape") && a.ints("kernel_shape") != std::vector<std::int64_t>(wd.begin() + 2, wd.end()))
        shape_error("conv_transpose: kernel_shape does not match the weights' spatial dims " +
                    to_string(in[1].type.shape));
      if (in.size() > 2 && in[2].present &&
          (in[2].type.shape.size() != 1 || !(in[2].type.shape[0] == Dim::of(wd[1] * grp))))
        shape_error("conv_transpose: the bias must have shape [" + std::to_string(wd[1] * grp) + "], got " +
                    to_string(in[2].type.shape));
      auto g = geometry(a, xd, wd);
      std::vector<std::int64_t> od{xd[0], wd[1] * grp};
      od.insert(od.end(), g.out.begin(), g.out.end());
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(od)}};
    };
    d.admits = [](const Attrs&, Inputs in) {
      if (!convolution_operands_fit(in)) return false;
      const Shape &x = in[0].type.shape, &w = in[1].type.shape;
      return !x[1].is_static() || !w[0].is_static() || x[1].k == w[0].k;
    };
    set_kernel(d, [geometry](const Attrs& a, auto x, Given given, std::size_t) {
      const auto &xd = x[0].dims(), &wd = x[1].dims();
      auto g = geometry(a, xd, wd);
      std::int64_t N = xd[0], C = xd[1], G = a.i("group", 1), cpg = C / G, mpg = wd[1], M = mpg * G;
      std::vector<std::int64_t> od{N, M};
      od.insert(od.end(), g.out.begin(), g.out.end());
      using E = decltype(x[0].at(0));
      std::vector<E> acc(static_cast<std::size_t>(numel(od)), lit(x[0], 0.0));
      std::vector<std::int64_t> spatial(xd.begin() + 2, xd.end());
      std::int64_t plane = numel(spatial), oplane = numel(g.out), kplane = numel(g.kernel);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < C; ++c) {
          std::int64_t grp = c / cpg;
          for (std::int64_t ip = 0; ip < plane; ++ip) {
            auto ic = unflatten(ip, spatial);
            E xv = x[0].at(static_cast<std::size_t>((n * C + c) * plane + ip));
            for (std::int64_t kp = 0; kp < kplane; ++kp) {
              auto kc = unflatten(kp, g.kernel);
              std::vector<std::int64_t> oc(kc.size());
              bool inside = true;
              for (std::size_t dd = 0; dd < kc.size(); ++dd) {
                oc[dd] = ic[dd] * g.strides[dd] - g.begin[dd] + kc[dd] * g.dilations[dd];
                if (oc[dd] < 0 || oc[dd] >= g.out[dd]) inside = false;
              }
              if (!inside) continue;
              for (std::int64_t mm = 0; mm < mpg; ++mm) {
                std::int64_t m = grp * mpg + mm;
                E wv = x[1].at(static_cast<std::size_t>((c * mpg + mm) * kplane + kp));
                acc[static_cast<std::size_t>((n * M + m) * oplane + offset(oc, g.out))] += xv * wv;
              }
            }
          }
        }
      auto out = like(x[0], x[0].dtype(), od);
      const bool has_bias = x.size() > 2 && given[2];
      for (std::size_t i = 0; i < out.numel(); ++i) {
        std::int64_t m = (static_cast<std::int64_t>(i) / oplane) % M;
        out.set(i, has_bias ? acc[i] + x[2].at(static_cast<std::size_t>(m)) : acc[i]);
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  {
    OpDef d = make("einsum", 1, -1, "Einstein summation over attribute `equation` (explicit or implicit output, ...)");
    d.contraction = true;
    auto plan_of = [](const Attrs& a, const std::vector<std::vector<std::int64_t>>& shapes) {
      return einsum_plan(a.s("equation", ""), shapes);
    };
    d.infer = [plan_of](const Attrs& a, Inputs in, std::size_t) {
      std::vector<std::vector<std::int64_t>> shapes;
      for (const auto& t : in) shapes.push_back(static_shape(t, "einsum"));
      auto p = plan_of(a, shapes);
      std::vector<std::int64_t> od;
      for (char ch : p.out) od.push_back(p.size[ch]);
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(od)}};
    };
    // The equation's operand count and each operand's rank (at least its
    // letters beside an ellipsis), as einsum_plan asks first.
    d.admits = [](const Attrs& a, Inputs in) {
      std::string lhs;
      for (char ch : a.s("equation", "")) {
        if (ch == '-') break;
        if (ch != ' ') lhs += ch;
      }
      std::size_t k = 0, letters = 0;
      bool ellipsis = false;
      for (std::size_t i = 0; i <= lhs.size(); ++i) {
        if (i < lhs.size() && lhs[i] != ',') {
          ellipsis |= lhs[i] == '.';
          letters += lhs[i] != '.';
          continue;
        }
        if (k >= in.size()) return false;
        const std::size_t rank = in[k++].type.shape.size();
        if (ellipsis ? rank < letters : rank != letters) return false;
        letters = 0;
        ellipsis = false;
      }
      return k == in.size();
    };
    set_kernel(d, [plan_of](const Attrs& a, auto x, Given, std::size_t) {
      std::vector<std::vector<std::int64_t>> shapes;
      for (const auto& t : x) shapes.push_back(t.dims());
      auto p = plan_of(a, shapes);
      std::string letters;
      std::vector<std::int64_t> sizes;
      for (auto& [ch, n] : p.size) {
        letters += ch;
        sizes.push_back(n);
      }
      std::vector<std::int64_t> od;
      for (char ch : p.out) od.push_back(p.size[ch]);
      using E = decltype(x[0].at(0));
      std::vector<E> acc(static_cast<std::size_t>(numel(od)), lit(x[0], 0.0));
      auto pos = [&](char ch) { return letters.find(ch); };
      std::int64_t total = numel(sizes);
      for (std::int64_t it = 0; it < total; ++it) {
        auto idx = unflatten(it, sizes);
        E prod = lit(x[0], 1.0);
        for (std::size_t k = 0; k < x.size(); ++k) {
          std::int64_t off = 0;
          for (std::size_t i = 0; i < p.terms[k].size(); ++i) {
            std::int64_t dim = shapes[k][i];
            off = off * dim + (dim == 1 ? 0 : idx[pos(p.terms[k][i])]);
          }
          prod *= x[k].at(static_cast<std::size_t>(off));
        }
        std::int64_t o = 0;
        for (std::size_t i = 0; i < p.out.size(); ++i) o = o * od[i] + idx[pos(p.out[i])];
        acc[static_cast<std::size_t>(o)] += prod;
      }
      auto out = like(x[0], x[0].dtype(), od);
      for (std::size_t i = 0; i < out.numel(); ++i) out.set(i, acc[i]);
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }
  pool(r, "max_pool", true);
  pool(r, "avg_pool", false);
  global_pool(r, "global_max_pool", true);
  global_pool(r, "global_avg_pool", false);
  {
    OpDef d = make("resize", 1, 1,
                   "ONNX Resize: interpolation (nearest, linear, cubic) to dims `sizes`, coordinates scaled by "
                   "`scales` (ir/resize.hpp)");
    d.infer = [](const Attrs& a, Inputs in, std::size_t) {
      const Shape& x = in[0].type.shape;
      std::vector<std::int64_t> dims;
      for (const Dim& dim : x) dims.push_back(dim.is_static() ? dim.value() : 1);
      const ResizeSpec s = resize_spec(a, dims);  // checks the attributes
      return std::vector<ValueType>{{in[0].type.dtype, shape_of(s.sizes)}};
    };
    d.admits = [](const Attrs& a, Inputs in) { return a.ints("sizes").size() == in[0].type.shape.size(); };
    d.eval = [](const Attrs& a, Args x, Given, std::size_t) {
      const ResizeSpec s = resize_spec(a, x[0].dims());
      Tensor out(x[0].dtype(), s.sizes);
      if (s.mode == "nearest" && !is_float(x[0].dtype())) {  // copies, exact for every integer
        const std::vector<std::int64_t> v = resize_apply(s, x[0].dims(), x[0].to_ints());
        for (std::size_t i = 0; i < v.size(); ++i) out.set_int(i, v[i]);
      } else {
        std::vector<double> in(x[0].numel());
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = x[0].at(i);
        const std::vector<double> v = resize_apply(s, x[0].dims(), std::move(in));
        for (std::size_t i = 0; i < v.size(); ++i) out.set(i, v[i]);
      }
      return std::vector<Tensor>{std::move(out)};
    };
    r.add(std::move(d));
  }
  {
    OpDef d = make("lrn", 1, 1, "local response normalization across channels: size, alpha, beta, bias");
    d.infer = [](const Attrs&, Inputs in, std::size_t) {
      need_float(in, "lrn");
      if (in[0].type.shape.size() < 2) shape_error("lrn needs rank >= 2 (N, C, ...)");
      return std::vector<ValueType>{in[0].type};
    };
    set_kernel(d, [](const Attrs& a, auto x, Given, std::size_t) {
      const auto& dims = x[0].dims();
      std::int64_t size = a.i("size", 1), C = dims[1], inner = 1;
      double alpha = a.f("alpha", 1e-4), beta = a.f("beta", 0.75), bias = a.f("bias", 1.0);
      for (std::size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
      auto out = like(x[0], x[0].dtype(), dims);
      for (std::size_t i = 0; i < out.numel(); ++i) {
        std::int64_t c = (static_cast<std::int64_t>(i) / inner) % C;
        std::int64_t base = static_cast<std::int64_t>(i) - c * inner;
        auto sq = lit(x[0], 0.0);
        std::int64_t lo = std::max<std::int64_t>(0, c - (size - 1) / 2), hi = std::min(C - 1, c + size / 2);
        for (std::int64_t k = lo; k <= hi; ++k) {
          auto v = x[0].at(static_cast<std::size_t>(base + k * inner));
          sq += v * v;
        }
        out.set(i, x[0].at(i) / scalar::pow(bias + alpha / static_cast<double>(size) * sq, lit(x[0], beta)));
      }
      return std::vector<decltype(out)>{std::move(out)};
    });
    r.add(std::move(d));
  }

  // Attributes, in e-graph order.
  r.declare_attrs("gemm",
                  {attr_real("alpha", 1.0), attr_real("beta", 1.0), attr_int("transA", 0), attr_int("transB", 0)});
  r.declare_attrs("batch_norm", {attr_real("epsilon", 1e-5)});
  r.declare_attrs("layer_norm", {attr_int("axis", -1), attr_real("epsilon", 1e-5)});
  r.declare_attrs("instance_norm", {attr_real("epsilon", 1e-5)});
  r.declare_attrs("conv", {attr_ints("kernel_shape"), attr_ints("strides"), attr_ints("pads"), attr_ints("dilations"),
                           attr_int("group", 1),
                           attr_choice("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})});
  r.declare_attrs("conv_transpose", {attr_ints("kernel_shape"), attr_ints("strides"), attr_ints("pads"),
                                     attr_ints("dilations"), attr_int("group", 1),
                                     attr_choice("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}),
                                     attr_ints("output_padding"), attr_ints("output_shape")});
  r.declare_attrs("einsum", {attr_string("equation")});
  for (const char* n : {"max_pool", "avg_pool"})
    r.declare_attrs(n, {attr_ints("kernel_shape"), attr_ints("strides"), attr_ints("pads"), attr_ints("dilations"),
                        attr_choice("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}),
                        attr_int("ceil_mode", 0), attr_int("count_include_pad", 0), attr_int("storage_order", 0)});
  r.declare_attrs("resize",
                  {attr_ints("sizes"), attr_reals("scales"), attr_reals("roi"), attr_string("mode", "nearest"),
                   attr_string("coordinate_transformation_mode", "half_pixel"),
                   attr_string("nearest_mode", "round_prefer_floor"), attr_real("cubic_coeff_a", -0.75),
                   attr_int("exclude_outside", 0), attr_real("extrapolation_value", 0.0), attr_int("antialias", 0)});
  r.declare_attrs("lrn",
                  {attr_int("size", 1), attr_real("alpha", 1e-4), attr_real("beta", 0.75), attr_real("bias", 1.0)});

  // Arithmetic work (multiply-adds count two), for the cost models.
  using Types = std::span<const ValueType>;
  auto elems = [](const ValueType& t) { return static_cast<double>(numel(static_dims(t.shape))); };
  auto dim = [](const ValueType& t, std::size_t i) { return static_cast<double>(t.shape[i].value()); };
  r.declare_work("matmul", [=](const Attrs&, Types in, Types out) {
    // Each result element is a dot product along A's last axis.
    return 2.0 * elems(out[0]) * dim(in[0], in[0].shape.size() - 1);
  });
  r.declare_work("gemm", [=](const Attrs& a, Types in, Types out) {
    return 2.0 * elems(out[0]) * dim(in[0], a.i("transA", 0) ? 0 : 1) + elems(out[0]);
  });
  auto conv_work = [=](const Attrs&, Types in, Types out) {
    // Per result element: (C_in / group) * prod(kernel) multiply-adds.
    double per = 1;
    for (std::size_t d = 1; d < in[1].shape.size(); ++d) per *= dim(in[1], d);
    return 2.0 * elems(out[0]) * per;
  };
  r.declare_work("conv", conv_work);
  r.declare_work("conv_transpose", [=](const Attrs&, Types in, Types) {
    double per = 1;
    for (std::size_t d = 1; d < in[1].shape.size(); ++d) per *= dim(in[1], d);
    return 2.0 * elems(in[0]) * per;
  });
  for (const char* n : {"max_pool", "avg_pool"})
    r.declare_work(n, [=](const Attrs& a, Types, Types out) {
      double per = 1;
      for (std::int64_t k : a.ints("kernel_shape")) per *= static_cast<double>(k);
      return elems(out[0]) * per;
    });
  for (const char* n : {"batch_norm", "instance_norm", "layer_norm"})
    r.declare_work(n, [=](const Attrs&, Types in, Types) { return 8.0 * elems(in[0]); });
  r.declare_work("einsum", [](const Attrs& a, Types in, Types) {
    // Every combination of the letters' values, one product of the
    // operands (one operation each beyond the first) added to a result.
    // (Without it einsum was priced as one pass over its largest value:
    // maxvit_t's attention einsums at 0.41 ms, where they ran 1.3.)
    std::vector<std::vector<std::int64_t>> shapes;
    for (const ValueType& t : in) shapes.push_back(static_dims(t.shape));
    EinsumPlan plan;
    try {
      plan = einsum_plan(a.s("equation", ""), shapes);
    } catch (const ShapeError&) {
      return 0.0;
    }
    double points = 1;
    for (const auto& [letter, n] : plan.size) points *= static_cast<double>(n);
    return points * static_cast<double>(std::max<std::size_t>(in.size(), 1));
  });
}

}  // namespace saturn::ir
