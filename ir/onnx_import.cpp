#include "ir/onnx_import.hpp"

#include "ir/onnx_importer.hpp"

#include "ir/onnx_ops.hpp"
#include "ir/resize.hpp"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "ir/dependency_order.hpp"
#include "ir/memory_limit.hpp"
#include "ir/sexpr.hpp"

namespace saturn::ir {

namespace onnx_detail {

[[noreturn]] void fail(const std::string& where, const std::string& msg) {
  throw DiagnosticError{Diagnostic{SourceLoc{where, 0, 0}, msg}};
}

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& where, const std::string& what,
                         std::string* raw_owner) {
  auto dt = dtype_from_onnx(p.data_type());
  if (!dt) fail(where, what + ": tensor element type " + onnx_type_name(p.data_type()) + " is not supported");
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
    fail(where, what + ": tensors stored in external data files are not supported");
  std::vector<std::int64_t> dims(p.dims().begin(), p.dims().end());
  // Check the element count against the data present before allocating: a
  // corrupt or mistyped file must be an error, never a huge allocation.
  std::size_t n = 1;
  for (auto d : dims) {
    if (d < 0) fail(where, what + ": negative dimension");
    if (d != 0 && n > (std::size_t{1} << 40) / static_cast<std::size_t>(d))
      fail(where, what + ": dimensions too large");
    n *= static_cast<std::size_t>(d);
  }
  // The 4- and 2-bit types are packed into bytes (the first element in the
  // low bits) in raw_data and in int32_data; uint32 and uint64 are in
  // uint64_data, the other types narrower than 32 bits one to an int32_data
  // element.
  const int bits = packed_bits(*dt);
  const bool packed = bits < 8;
  const std::size_t per_byte = packed ? static_cast<std::size_t>(8 / bits) : 1;
  const std::size_t stored = (n + per_byte - 1) / per_byte;
  const std::size_t unit = packed ? 1 : dtype_size(*dt);
  const std::size_t available = !p.raw_data().empty() ? p.raw_data().size() / unit
                                : *dt == DType::F32   ? static_cast<std::size_t>(p.float_data_size())
                                : *dt == DType::F64   ? static_cast<std::size_t>(p.double_data_size())
                                : *dt == DType::I64   ? static_cast<std::size_t>(p.int64_data_size())
                                : *dt == DType::U32 || *dt == DType::U64
                                    ? static_cast<std::size_t>(p.uint64_data_size())
                                    : static_cast<std::size_t>(p.int32_data_size());
  if (available != stored || (!p.raw_data().empty() && p.raw_data().size() % unit != 0))
    fail(where, what + ": holds " + std::to_string(available) + " values, its shape needs " + std::to_string(stored));
  if (!packed && !p.raw_data().empty()) {
    // Read in place where malloc's alignment holds, as for a tensor's own
    // storage (ir/tensor.cpp). Checked after the move: a short string's
    // bytes live in the string object and move with it.
    if (raw_owner) {
      auto owner = std::make_shared<std::string>(std::move(*raw_owner));
      auto* bytes = reinterpret_cast<std::uint8_t*>(owner->data());
      if (reinterpret_cast<std::uintptr_t>(bytes) % alignof(std::max_align_t) == 0)
        return Tensor::borrowed(*dt, std::move(dims), std::shared_ptr<std::uint8_t[]>(std::move(owner), bytes));
      Tensor raw = Tensor::uninitialized(*dt, dims);
      std::memcpy(raw.bytes(), bytes, raw.nbytes());
      return raw;
    }
    Tensor raw = Tensor::uninitialized(*dt, dims);
    std::memcpy(raw.bytes(), p.raw_data().data(), raw.nbytes());
    return raw;
  }
  Tensor t(*dt, dims);
  auto byte = [&](std::size_t k) {
    return !p.raw_data().empty() ? static_cast<std::uint8_t>(p.raw_data()[k])
                                 : static_cast<std::uint8_t>(p.int32_data(static_cast<int>(k)));
  };
  if (packed) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto shift = static_cast<int>(i % per_byte) * bits;
      const std::uint8_t code = (byte(i / per_byte) >> shift) & ((1u << bits) - 1);
      if (*dt == DType::F4E2M1)
        t.bytes()[i] = code;
      else
        t.set_int(i, code);  // a signed type sign-extends its bits
    }
    return t;
  }
  switch (*dt) {
    case DType::F32:
      for (std::size_t i = 0; i < n; ++i) t.set(i, p.float_data(static_cast<int>(i)));
      break;
    case DType::F64:
      for (std::size_t i = 0; i < n; ++i) t.set(i, p.double_data(static_cast<int>(i)));
      break;
    case DType::I64:
      for (std::size_t i = 0; i < n; ++i) t.set_int(i, p.int64_data(static_cast<int>(i)));
      break;
    case DType::U32:
    case DType::U64:
      for (std::size_t i = 0; i < n; ++i) t.set_int(i, static_cast<std::int64_t>(p.uint64_data(static_cast<int>(i))));
      break;
    default:
      if (is_minifloat(*dt) || *dt == DType::F16 || *dt == DType::BF16) {  // their bits
        for (std::size_t i = 0; i < n; ++i) {
          const auto bits = static_cast<std::uint16_t>(p.int32_data(static_cast<int>(i)));
          std::memcpy(t.bytes() + dtype_size(*dt) * i, &bits, dtype_size(*dt));
        }
        break;
      }
      for (std::size_t i = 0; i < n; ++i) t.set_int(i, p.int32_data(static_cast<int>(i)));
      break;
  }
  return t;
}

}  // namespace onnx_detail

namespace {

using namespace onnx_detail;

std::string onnx_dtype_name(Importer& im, std::int64_t code) {
  auto dt = dtype_from_onnx(static_cast<int>(code));
  if (!dt) im.unsupported("cast to " + onnx_type_name(static_cast<int>(code)) + " is not supported");
  return dtype_name(*dt);
}

// Reductions: axes is an attribute before opset 13 (ReduceSum) / 18 (others),
// an optional operand after; noop_with_empty_axes turns "no axes" into identity.
ImportFn reduce(const char* op, int axes_input_since) {
  return [op, axes_input_since](Importer& im) {
    Attrs a;
    a.set("keepdims", im.ai("keepdims", 1));
    std::vector<std::int64_t> axes;
    if (im.opset() >= axes_input_since) {
      if (im.has_in(1)) axes = im.const_ints(1, "axes");
    } else {
      axes = im.aints("axes");
    }
    const bool noop = im.ai("noop_with_empty_axes", 0) != 0;
    if (axes.empty() && noop) {
      im.emit1("identity", {im.in(0)});
      return;
    }
    a.set("axes", axes);
    im.emit1(op, {im.in(0)}, std::move(a));
  };
}

// A row of onnx_op_names(): every operand and result, attributes by name.
ImportFn direct(const OnnxOpName& row) {
  return [&row](Importer& im) {
    if (im.has_attr("broadcast") && im.ai("broadcast", 0) && im.has_attr("axis") &&
        std::find(row.attrs.begin(), row.attrs.end(), std::string_view("axis")) == row.attrs.end())
      im.unsupported("legacy broadcast with an axis attribute is not supported");
    im.ignore({"broadcast"});  // before opset 7: numpy broadcasting covers it
    std::vector<std::string> ins(im.node().input().begin(), im.node().input().end());
    std::vector<std::string> outs;
    for (int k = 0; k < im.num_out(); ++k) outs.push_back(im.out(k));
    im.emit(row.op, ins, outs, im.copy(row.attrs));
  };
}

// Max/Min/Sum/Mean of any number of operands, as a chain of binary ops.
ImportFn variadic(const char* op, bool mean) {
  return [op, mean](Importer& im) {
    int n = im.node().input_size();
    if (n == 0) im.unsupported("needs at least one operand");
    std::string acc = im.in(0);
    for (int i = 1; i < n; ++i) {
      std::string next = (i == n - 1 && !mean) ? im.out(0) : im.fresh(im.out(0));
      im.emit(op, {acc, im.in(i)}, {next});
      acc = next;
    }
    if (mean) {
      std::string cnt = im.fresh(im.out(0) + "_count");
      im.add_const(cnt, Tensor::scalar(im.type_of(im.in(0)).dtype, n));
      im.emit("div", {acc, cnt}, {im.out(0)});
    } else if (n == 1) {
      im.emit("identity", {acc}, {im.out(0)});
    }
  };
}

// Softmax before opset 13 normalizes over the flattened axes [axis, rank).
ImportFn softmax(const char* op) {
  return [op](Importer& im) {
    std::int64_t axis = im.ai("axis", im.opset() >= 13 ? -1 : 1);
    if (im.opset() >= 13) {
      Attrs a;
      a.set("axis", axis);
      im.emit1(op, {im.in(0)}, std::move(a));
      return;
    }
    const Shape& s = im.type_of(im.in(0)).shape;
    if (!is_static(s)) im.unsupported("needs a static shape before opset 13");
    auto dims = static_dims(s);
    auto rank = static_cast<std::int64_t>(dims.size());
    if (axis < 0) axis += rank;
    std::int64_t lo = 1, hi = 1;
    for (std::int64_t i = 0; i < rank; ++i) (i < axis ? lo : hi) *= dims[static_cast<std::size_t>(i)];
    std::string flat = im.fresh(im.out(0)), sm = im.fresh(im.out(0));
    Attrs r1, r2, a;
    r1.set("shape", std::vector<std::int64_t>{lo, hi});
    im.emit("reshape", {im.in(0)}, {flat}, std::move(r1));
    a.set("axis", std::int64_t{1});
    im.emit(op, {flat}, {sm}, std::move(a));
    r2.set("shape", dims);
    im.emit("reshape", {sm}, {im.out(0)}, std::move(r2));
  };
}

// Quantization (docs/onnx.md, "Quantization"). ONNX gives a scale and zero
// point per tensor (a scalar or one element), per axis (1-D along `axis`)
// or per block (x's rank, `axis` divided into blocks of block_size); the
// registry's quantize_linear / dequantize_linear take them broadcast to x,
// so each form becomes a reshape, or a repeat along the axis, here (folded
// now when the operand is a constant).
std::string quant_param(Importer& im, const std::string& v, const Shape& x, std::int64_t axis, std::int64_t block,
                        const char* what) {
  const Shape& s = im.type_of(v).shape;
  const auto rank = static_cast<std::int64_t>(x.size());
  if (!is_static(s) || !is_static(x)) im.unsupported(std::string(what) + " needs static shapes");
  const std::vector<std::int64_t> xd = static_dims(x), sd = static_dims(s);
  const std::string y = im.fresh(v);
  Attrs a;
  if (numel(sd) == 1 && (block == 0 || sd.empty())) {  // (an absent zero point is a scalar 0)
    if (sd.empty()) return v;
    a.set("shape", std::vector<std::int64_t>{});
    im.emit("reshape", {v}, {y}, std::move(a));
    return y;
  }
  axis = normalize_axis(axis, rank, "axis");
  const auto ax = static_cast<std::size_t>(axis);
  if (block == 0) {
    if (sd.size() != 1 || sd[0] != xd[ax])
      im.unsupported(std::string(what) + " " + to_string(s) +
                     " is neither a scalar nor one value per element of axis " + std::to_string(axis) + " (" +
                     std::to_string(xd[ax]) + ")");
    std::vector<std::int64_t> dims(xd.size(), 1);
    dims[ax] = xd[ax];
    a.set("shape", dims);
    im.emit("reshape", {v}, {y}, std::move(a));
    return y;
  }
  if (block < 0) im.unsupported("block_size must be positive");
  std::vector<std::int64_t> want = xd;
  want[ax] = (xd[ax] + block - 1) / block;
  if (sd != want)
    im.unsupported(std::string(what) + " " + to_string(s) + " does not block x " + to_string(x) + " by " +
                   std::to_string(block) + " along axis " + std::to_string(axis) + " (expected " +
                   to_string(shape_of(want)) + ")");
  // [.. B ..] -> [.. B 1 ..] -> [.. B block ..] -> [.. B*block ..] -> the first n.
  std::vector<std::int64_t> split = want, spread = want, merged = want;
  split.insert(split.begin() + axis + 1, 1);
  spread.insert(spread.begin() + axis + 1, block);
  merged[ax] = want[ax] * block;
  const std::string s1 = im.fresh(v), s2 = im.fresh(v), s3 = im.fresh(v);
  Attrs r1, e, r2, sl;
  r1.set("shape", split);
  im.emit("reshape", {v}, {s1}, std::move(r1));
  e.set("shape", spread);
  im.emit("expand", {s1}, {s2}, std::move(e));
  r2.set("shape", merged);
  im.emit("reshape", {s2}, {s3}, std::move(r2));
  sl.set("starts", std::vector<std::int64_t>{0});
  sl.set("ends", std::vector<std::int64_t>{xd[ax]});
  sl.set("axes", std::vector<std::int64_t>{axis});
  im.emit("slice", {s3}, {y}, std::move(sl));
  return y;
}

// The zero point operand `i`, or a constant 0 of `t` where it is absent.
std::string zero_point(Importer& im, int i, DType t) {
  if (im.has_in(i)) return im.in(i);
  const std::string z = im.fresh(im.out(0) + "_zero_point");
  im.add_const(z, Tensor::scalar(t, 0));
  return z;
}

std::string scalar_const(Importer& im, DType t, double v, const std::string& hint) {
  const std::string c = im.fresh(hint);
  im.add_const(c, Tensor::scalar(t, v));
  return c;
}

std::string cast_to(Importer& im, const std::string& v, DType t) {
  if (im.type_of(v).dtype == t) return v;
  const std::string y = im.fresh(v);
  Attrs a;
  a.set("to", std::string(dtype_name(t)));
  im.emit("cast", {v}, {y}, std::move(a));
  return y;
}

std::string binary_node(Importer& im, const char* op, const std::string& a, const std::string& b,
                        const std::string& out = "") {
  const std::string y = out.empty() ? im.fresh(im.out(0)) : out;
  im.emit(op, {a, b}, {y});
  return y;
}

// An operand of an integer product (MatMulInteger, ConvInteger, the
// QLinear ops) less its zero point, in f64: a product of such values sums
// exactly there, as ONNX's int32 accumulation does.
std::string less_zero_point(Importer& im, const std::string& v, int zp, const std::vector<std::int64_t>& zp_shape) {
  const std::string x = cast_to(im, v, DType::F64);
  if (!im.has_in(zp)) return x;
  std::string z = cast_to(im, im.in(zp), DType::F64);
  if (!zp_shape.empty() && numel(static_dims(im.type_of(z).shape)) > 1) {
    const std::string r = im.fresh(z);
    Attrs a;
    a.set("shape", zp_shape);
    im.emit("reshape", {z}, {r}, std::move(a));
    z = r;
  }
  return binary_node(im, "sub", x, z);
}

// The integer result `acc` (f64) scaled by `multiplier` (f64) and shifted by
// the zero point operand `zp`, rounded halves to even and saturated to the
// zero point's type (QLinearConv, QLinearMatMul).
void requantize(Importer& im, const std::string& acc, const std::string& multiplier, int zp, DType fallback) {
  const DType t = im.has_in(zp) ? im.type_of(im.in(zp)).dtype : fallback;
  if (t != DType::U8 && t != DType::I8)
    im.unsupported(std::string("the result type ") + dtype_name(t) + " is not u8 or i8");
  std::string r = binary_node(im, "mul", acc, multiplier);
  if (im.has_in(zp)) r = binary_node(im, "add", r, cast_to(im, im.in(zp), DType::F64));
  const std::string rounded = im.fresh(im.out(0)), clipped = im.fresh(im.out(0));
  im.emit("round", {r}, {rounded});
  Attrs c;
  c.set("min", t == DType::U8 ? 0.0 : -128.0);
  c.set("max", t == DType::U8 ? 255.0 : 127.0);
  im.emit("clip", {rounded}, {clipped}, std::move(c));
  Attrs a;
  a.set("to", std::string(dtype_name(t)));
  im.emit("cast", {clipped}, {im.out(0)}, std::move(a));
}

// The product of the scales `sa` and `sb` over `sy`, in their type (as
// ONNX's reference computes it), then read in f64.
std::string multiplier(Importer& im, const std::string& sa, const std::string& sb, const std::string& sy) {
  return cast_to(im, binary_node(im, "div", binary_node(im, "mul", sa, sb), sy), DType::F64);
}

std::string reshaped(Importer& im, const std::string& v, std::vector<std::int64_t> dims) {
  if (numel(static_dims(im.type_of(v).shape)) <= 1) return v;
  const std::string r = im.fresh(v);
  Attrs a;
  a.set("shape", std::move(dims));
  im.emit("reshape", {v}, {r}, std::move(a));
  return r;
}

void import_quantization(std::unordered_map<std::string, ImportFn>& t) {
  t["DequantizeLinear"] = [](Importer& im) {
    const ValueType& x = im.type_of(im.in(0));
    const std::int64_t axis = im.ai("axis", 1), block = im.opset() >= 21 ? im.ai("block_size", 0) : 0;
    const std::string s = quant_param(im, im.in(1), x.shape, axis, block, "the scale");
    // A minifloat's zero point is not read (ONNX's reference: a float8's
    // must be 0, a known nonzero one is an error; FLOAT4E2M1's is ignored).
    const bool minifloat = is_minifloat(x.dtype);
    if (minifloat && x.dtype != DType::F4E2M1 && im.has_in(2))
      if (const Tensor* zv = im.const_value(im.in(2)))
        for (std::size_t i = 0; i < zv->numel(); ++i)
          if (zv->at(i) != 0)
            im.unsupported("the zero point of a " + std::string(dtype_name(x.dtype)) + " value must be 0");
    std::string z = minifloat ? scalar_const(im, x.dtype, 0, im.out(0) + "_zero_point") : zero_point(im, 2, x.dtype);
    z = quant_param(im, z, x.shape, axis, block, "the zero point");
    const std::optional<DType> out = im.opset() >= 23 && im.ai("output_dtype", 0) != 0
                                         ? dtype_from_onnx(static_cast<int>(im.ai("output_dtype", 0)))
                                         : std::nullopt;
    if (!out) {
      im.emit1("dequantize_linear", {im.in(0), s, z});
      return;
    }
    const std::string y = im.fresh(im.out(0));
    im.emit("dequantize_linear", {im.in(0), s, z}, {y});
    Attrs a;
    a.set("to", std::string(dtype_name(*out)));
    im.emit("cast", {y}, {im.out(0)}, std::move(a));
  };
  t["QuantizeLinear"] = [](Importer& im) {
    const ValueType& x = im.type_of(im.in(0));
    const std::int64_t axis = im.ai("axis", 1), block = im.opset() >= 21 ? im.ai("block_size", 0) : 0;
    if (im.opset() >= 23 && im.ai("precision", 0) != 0) im.unsupported("attribute 'precision' is not supported");
    DType to = DType::U8;
    if (im.has_in(2)) {
      to = im.type_of(im.in(2)).dtype;
    } else if (im.opset() >= 21 && im.ai("output_dtype", 0) != 0) {
      auto t = dtype_from_onnx(static_cast<int>(im.ai("output_dtype", 0)));
      if (!t) im.unsupported("output_dtype " + std::to_string(im.ai("output_dtype", 0)) + " is not supported");
      to = *t;
    }
    if (im.has_in(2) && im.opset() >= 21 && im.ai("output_dtype", 0) != 0 &&
        dtype_from_onnx(static_cast<int>(im.ai("output_dtype", 0))) != to)
      im.unsupported("output_dtype differs from the zero point's type");
    const std::string s = quant_param(im, im.in(1), x.shape, axis, block, "the scale");
    const std::string z = quant_param(im, zero_point(im, 2, to), x.shape, axis, block, "the zero point");
    Attrs a;
    if (im.opset() >= 19) a.set("saturate", im.ai("saturate", 1));
    im.emit1("quantize_linear", {im.in(0), s, z}, std::move(a));
  };
  // ONNX's reference, op by op: the range [min(0, min x), max(0, max x)]
  // over 255 steps, its zero point rounded, then x quantized by them.
  t["DynamicQuantizeLinear"] = [](Importer& im) {
    const std::string x = im.in(0);
    const DType ft = im.type_of(x).dtype;
    if (ft != DType::F32) im.unsupported("x must be f32");
    const std::string zero = scalar_const(im, ft, 0, x + "_0");
    auto reduce = [&](const char* op, const char* bound) {
      Attrs a;
      a.set("keepdims", std::int64_t{0});
      const std::string r = im.fresh(x);
      im.emit(op, {x}, {r}, std::move(a));
      return binary_node(im, bound, r, zero);
    };
    const std::string hi = reduce("reduce_max", "max"), lo = reduce("reduce_min", "min");
    const std::string same = im.fresh(x);
    im.emit("equal", {hi, lo}, {same});
    const std::string width = im.fresh(x);
    im.emit("where", {same, scalar_const(im, ft, 1, x + "_1"), binary_node(im, "sub", hi, lo)}, {width});
    const std::string scale = im.num_out() > 1 && !im.out(1).empty() ? im.out(1) : im.fresh(x + "_scale");
    binary_node(im, "div", width, scalar_const(im, ft, 255, x + "_255"), scale);
    const std::string initial = binary_node(im, "sub", zero, binary_node(im, "div", lo, scale));
    const std::string clipped = im.fresh(x), rounded = im.fresh(x);
    Attrs c;
    c.set("min", 0.0);
    c.set("max", 255.0);
    im.emit("clip", {initial}, {clipped}, std::move(c));
    im.emit("round", {clipped}, {rounded});
    const std::string zp = im.num_out() > 2 && !im.out(2).empty() ? im.out(2) : im.fresh(x + "_zero_point");
    Attrs u8;
    u8.set("to", std::string("u8"));
    im.emit("cast", {rounded}, {zp}, std::move(u8));
    im.emit("quantize_linear", {x, scale, zp}, {im.out(0)});
  };
  // Integer products in f64 (exact: see less_zero_point), as ONNX's int32.
  auto matmul_acc = [](Importer& im, int a, int az, int b, int bz) {
    const Shape& as = im.type_of(im.in(a)).shape;
    if (!is_static(as) || as.size() < 2) im.unsupported("needs a static A of rank 2 or more");
    // A's zero point is per row (M), B's per column (N, its last axis).
    const std::vector<std::int64_t> rows{as[as.size() - 2].value(), 1};
    const std::string pa = less_zero_point(im, im.in(a), az, rows), pb = less_zero_point(im, im.in(b), bz, {});
    return binary_node(im, "matmul", pa, pb);
  };
  auto conv_acc = [](Importer& im, int x, int xz, int w, int wz, const std::string& bias) {
    const Shape& ws = im.type_of(im.in(w)).shape;
    if (!is_static(ws) || ws.size() < 3) im.unsupported("needs static weights of rank 3 or more");
    std::vector<std::int64_t> per_channel(ws.size(), 1);
    per_channel[0] = ws[0].value();
    const std::string px = less_zero_point(im, im.in(x), xz, {}), pw = less_zero_point(im, im.in(w), wz, per_channel);
    const std::string y = im.fresh(im.out(0));
    std::vector<std::string> ins{px, pw};
    if (!bias.empty()) ins.push_back(bias);
    im.emit("conv", ins, {y}, im.copy({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}));
    return y;
  };
  t["MatMulInteger"] = [matmul_acc](Importer& im) {
    Attrs a;
    a.set("to", std::string("i32"));
    im.emit("cast", {matmul_acc(im, 0, 2, 1, 3)}, {im.out(0)}, std::move(a));
  };
  t["ConvInteger"] = [conv_acc](Importer& im) {
    Attrs a;
    a.set("to", std::string("i32"));
    im.emit("cast", {conv_acc(im, 0, 2, 1, 3, "")}, {im.out(0)}, std::move(a));
  };
  t["QLinearMatMul"] = [matmul_acc](Importer& im) {
    const std::string acc = matmul_acc(im, 0, 2, 3, 5);
    const Shape& as = im.type_of(im.in(0)).shape;
    const std::string sa = reshaped(im, im.in(1), {as[as.size() - 2].value(), 1});
    requantize(im, acc, multiplier(im, sa, im.in(4), im.in(6)), 7, im.type_of(im.in(0)).dtype);
  };
  t["QLinearConv"] = [conv_acc](Importer& im) {
    const Shape& ws = im.type_of(im.in(3)).shape;
    if (!is_static(ws) || ws.size() < 3) im.unsupported("needs static weights of rank 3 or more");
    const std::string bias = im.has_in(8) ? cast_to(im, im.in(8), DType::F64) : std::string();
    const std::string acc = conv_acc(im, 0, 2, 3, 5, bias);
    std::vector<std::int64_t> per_channel(ws.size(), 1);
    per_channel[1] = ws[0].value();
    const std::string sw = reshaped(im, im.in(4), per_channel);
    requantize(im, acc, multiplier(im, im.in(1), sw, im.in(6)), 7, im.type_of(im.in(0)).dtype);
  };
}

const std::unordered_map<std::string, ImportFn>& importers() {
  static const std::unordered_map<std::string, ImportFn> table = [] {
    std::unordered_map<std::string, ImportFn> t;
    for (const OnnxOpName& row : onnx_op_names())
      if (row.import_directly) t[row.onnx] = direct(row);
    import_quantization(t);
    import_recurrent(t);
    import_losses(t);
    import_bodies(t);
    t["Max"] = variadic("max", false);
    t["Min"] = variadic("min", false);
    t["Sum"] = variadic("add", false);
    t["Mean"] = variadic("add", true);
    // `saturate` (opset 19) only affects the minifloat targets.
    auto cast = [](Importer& im, const std::string& to) {
      Attrs a;
      a.set("to", to);
      // round_mode (opset 25) only affects f8e8m0 targets.
      if (const std::string mode = im.as("round_mode", "up"); to == "f8e8m0" && mode != "up")
        im.unsupported("Cast to FLOAT8E8M0 with round_mode '" + mode + "' is not supported (only 'up', the default)");
      const bool unsaturated = im.opset() >= 19 && im.ai("saturate", 1) == 0 && is_minifloat(*dtype_from_name(to));
      im.emit1(unsaturated ? "cast_unsaturated" : "cast", {im.in(0)}, std::move(a));
    };
    t["Cast"] = [cast](Importer& im) { cast(im, onnx_dtype_name(im, im.ai("to", 0))); };
    t["CastLike"] = [cast](Importer& im) { cast(im, dtype_name(im.type_of(im.in(1)).dtype)); };
    t["Clip"] = [](Importer& im) {
      Attrs a;
      if (im.opset() < 11) {
        if (im.has_attr("min")) a.set("min", im.af("min", 0));
        if (im.has_attr("max")) a.set("max", im.af("max", 0));
      } else {
        bool integral = !is_float(im.type_of(im.in(0)).dtype);
        auto bound = [&](int i, const char* name) {
          if (!im.has_in(i)) return;
          const Tensor& v = im.const_tensor(i, name);
          if (integral)
            a.set(name, v.at_int(0));
          else
            a.set(name, v.at(0));
        };
        bound(1, "min");
        bound(2, "max");
      }
      im.emit1("clip", {im.in(0)}, std::move(a));
    };
    // Inference Dropout is the identity, and so is training-mode Dropout
    // with ratio 0 (exporters emit it for attention dropout of p = 0: every
    // element kept, scaled by 1 / (1 - 0)). Another ratio in training mode
    // draws a random mask, which Saturn does not compute.
    t["Dropout"] = [](Importer& im) {
      im.ignore({"seed"});
      bool training = im.has_attr("is_test") && im.ai("is_test", 1) == 0;  // opsets 1-6
      if (im.opset() >= 12 && im.has_in(2)) {
        const Tensor* mode = im.const_value(im.in(2));
        if (!mode || mode->numel() != 1)
          im.unsupported("training_mode (operand '" + im.in(2) + "') must be a constant scalar");
        training = mode->at(0) != 0;
      }
      if (!training) im.ignore({"ratio"});
      if (training) {
        double ratio = 0.5;  // ONNX's default
        if (im.opset() >= 12 && im.has_in(1)) {
          const Tensor* r = im.const_value(im.in(1));
          if (!r || r->numel() != 1)
            im.unsupported("ratio (operand '" + im.in(1) + "') must be a constant scalar in training mode");
          ratio = r->at(0);
        } else if (im.opset() < 12) {
          ratio = im.af("ratio", 0.5);
        }
        char text[32];
        std::snprintf(text, sizeof text, "%g", ratio);
        if (ratio != 0)
          im.unsupported(std::string("training mode with ratio ") + text +
                         " draws a random mask, which is not supported (only ratio 0, the identity)");
      }
      im.emit("identity", {im.in(0)}, {im.out(0)});
      if (im.num_out() > 1) {
        const Shape& s = im.type_of(im.in(0)).shape;
        if (!is_static(s)) im.unsupported("the mask output needs a static shape");
        Attrs a;
        a.set("shape", static_dims(s));
        a.set("value", Tensor::scalar(DType::Bool, 1));
        im.emit("fill", {}, {im.out(1)}, std::move(a));
      }
    };
    t["ReduceSum"] = reduce("reduce_sum", 13);
    t["ReduceMean"] = reduce("reduce_mean", 18);
    t["ReduceMax"] = reduce("reduce_max", 18);
    t["ReduceMin"] = reduce("reduce_min", 18);
    t["ReduceProd"] = reduce("reduce_prod", 18);
    t["ReduceL1"] = reduce("reduce_l1", 18);
    t["ReduceL2"] = reduce("reduce_l2", 18);
    t["ReduceLogSum"] = reduce("reduce_log_sum", 18);
    t["ReduceLogSumExp"] = reduce("reduce_log_sum_exp", 18);
    t["ReduceSumSquare"] = reduce("reduce_sum_square", 18);
    t["Softmax"] = softmax("softmax");
    t["LogSoftmax"] = softmax("log_softmax");
    t["Reshape"] = [](Importer& im) {
      Attrs a;
      a.set("shape", im.opset() < 5 ? im.aints("shape") : im.const_ints(1, "the target shape"));
      a.set("allowzero", im.ai("allowzero", 0));
      im.emit1("reshape", {im.in(0)}, std::move(a));
    };
    auto axes_op = [](const char* op, bool required) {
      return [op, required](Importer& im) {
        Attrs a;
        if (im.opset() >= 13) {
          if (im.has_in(1)) a.set("axes", im.const_ints(1, "axes"));
        } else {
          a.set("axes", im.aints("axes"));
        }
        if (required && a.ints("axes").empty()) im.unsupported("needs axes");
        im.emit1(op, {im.in(0)}, std::move(a));
      };
    };
    t["Squeeze"] = axes_op("squeeze", false);
    t["Unsqueeze"] = axes_op("unsqueeze", true);
    t["Split"] = [](Importer& im) {
      Attrs a;
      a.set("axis", im.ai("axis", 0));
      if (im.opset() >= 13) {
        if (im.has_in(1)) a.set("split", im.const_ints(1, "split"));
      } else {
        a.set("split", im.aints("split"));
      }
      std::vector<std::string> outs(im.node().output().begin(), im.node().output().end());
      if (im.opset() >= 18 && im.has_attr("num_outputs") && !im.has_in(1)) {
        // Equal parts, the last possibly smaller (ceil), as many as num_outputs.
        std::int64_t k = im.ai("num_outputs", 1);
        const Shape& s = im.type_of(im.in(0)).shape;
        auto axis = static_cast<std::size_t>(normalize_axis(im.ai("axis", 0), static_cast<std::int64_t>(s.size())));
        if (!s[axis].is_static()) im.unsupported("needs a static split axis");
        std::int64_t n = s[axis].k, each = (n + k - 1) / k;
        std::vector<std::int64_t> sizes;
        for (std::int64_t i = 0; i < k; ++i) sizes.push_back(std::max<std::int64_t>(0, std::min(each, n - each * i)));
        a.set("split", sizes);
      }
      im.emit("split", {im.in(0)}, outs, std::move(a));
    };
    t["Slice"] = [](Importer& im) {
      Attrs a;
      if (im.opset() < 10) {
        a.set("starts", im.aints("starts"));
        a.set("ends", im.aints("ends"));
        if (im.has_attr("axes")) a.set("axes", im.aints("axes"));
      } else {
        a.set("starts", im.const_ints(1, "starts"));
        a.set("ends", im.const_ints(2, "ends"));
        if (im.has_in(3)) a.set("axes", im.const_ints(3, "axes"));
        if (im.has_in(4)) a.set("steps", im.const_ints(4, "steps"));
      }
      // Clamp the int64 extremes ONNX uses for "to the end" to keep arithmetic safe.
      for (const char* k : {"starts", "ends"}) {
        auto v = a.ints(k);
        for (auto& x : v) x = std::clamp<std::int64_t>(x, -(std::int64_t{1} << 62), std::int64_t{1} << 62);
        a.set(k, v);
      }
      im.emit1("slice", {im.in(0)}, std::move(a));
    };
    t["Expand"] = [](Importer& im) {
      Attrs a;
      a.set("shape", im.const_ints(1, "the target shape"));
      im.emit1("expand", {im.in(0)}, std::move(a));
    };
    t["Tile"] = [](Importer& im) {
      Attrs a;
      a.set("repeats", im.const_ints(1, "repeats"));
      im.emit1("tile", {im.in(0)}, std::move(a));
    };
    t["Range"] = [](Importer& im) {
      for (int i = 0; i < 3; ++i) im.const_tensor(i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
      im.emit1("range", {im.in(0), im.in(1), im.in(2)});
    };
    t["Constant"] = [](Importer& im) {
      const auto& n = im.node();
      if (n.attribute_size() != 1) im.unsupported("expects exactly one value attribute");
      const auto& a = *im.attr(n.attribute(0).name());
      Tensor v;
      if (a.name() == "value")
        v = im.copy({"value"}).tensor("value") ? *im.copy({"value"}).tensor("value") : Tensor();
      else if (a.name() == "value_float")
        v = Tensor::scalar(DType::F32, a.f());
      else if (a.name() == "value_int")
        v = Tensor::of_ints(DType::I64, {}, {a.i()});
      else if (a.name() == "value_floats")
        v = Tensor::of_doubles(DType::F32, {a.floats_size()},
                               std::vector<double>(a.floats().begin(), a.floats().end()));
      else if (a.name() == "value_ints")
        v = Tensor::of_ints(DType::I64, {a.ints_size()}, std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
      else
        im.unsupported("value attribute '" + a.name() + "' is not supported");
      im.add_const(im.out(0), std::move(v));
    };
    t["ConstantOfShape"] = [](Importer& im) {
      Attrs a;
      a.set("shape", im.const_ints(0, "the shape"));
      Attrs v = im.copy({"value"});
      a.set("value", v.tensor("value") ? *v.tensor("value") : Tensor::scalar(DType::F32, 0));
      im.emit1("fill", {}, std::move(a));
    };
    // Resize (and Upsample, Resize-10's model) as `resize` with every size
    // and scale resolved for the whole rank (ir/resize.hpp): scales give
    // sizes floor(in * scale); sizes give scales size / in, or under a
    // keep_aspect_ratio_policy one scale for the axes (the smallest or
    // largest ratio) and sizes round(in * scale).
    auto resize = [](Importer& im, bool upsample) {
      const Shape& xs = im.type_of(im.in(0)).shape;
      if (!is_static(xs)) im.unsupported("resize needs the operand's static shape: " + std::string(kRuntimeShapeHint));
      const std::vector<std::int64_t> in = static_dims(xs);
      const std::size_t rank = in.size();
      Attrs a;
      const bool old = upsample || im.opset() < 11;  // asymmetric coordinates, floor for nearest
      std::string mode = im.as("mode", "nearest");
      if (old && mode == "bilinear") mode = "linear";  // Upsample-7's name
      a.set("mode", mode);
      std::vector<std::int64_t> axes(rank);
      for (std::size_t i = 0; i < rank; ++i) axes[i] = static_cast<std::int64_t>(i);
      if (im.has_attr("axes")) {
        axes = im.aints("axes");
        for (std::int64_t& ax : axes) ax = normalize_axis(ax, static_cast<std::int64_t>(rank));
      }
      auto floats_of = [&](int i, const char* what) {
        const Tensor& t = im.const_tensor(i, what);
        std::vector<double> v(t.numel());
        for (std::size_t k = 0; k < v.size(); ++k) v[k] = t.at(k);
        return v;
      };
      std::vector<double> scales;
      std::vector<std::int64_t> sizes;
      if (old) {
        a.set("coordinate_transformation_mode", std::string("asymmetric"));
        a.set("nearest_mode", std::string("floor"));
        if (upsample && im.opset() < 9) {  // scales an attribute
          auto* at = im.attr("scales");
          if (!at) im.unsupported("Upsample needs scales");
          scales.assign(at->floats().begin(), at->floats().end());
        } else {
          scales = floats_of(1, "scales");
        }
      } else {
        a.set("coordinate_transformation_mode", im.as("coordinate_transformation_mode", "half_pixel"));
        a.set("nearest_mode", im.as("nearest_mode", "round_prefer_floor"));
        a.set("cubic_coeff_a", im.af("cubic_coeff_a", -0.75));
        a.set("exclude_outside", im.ai("exclude_outside", 0));
        a.set("extrapolation_value", im.af("extrapolation_value", 0.0));
        a.set("antialias", im.ai("antialias", 0));
        if (im.has_in(2)) scales = floats_of(2, "scales");
        if (im.has_in(3)) sizes = im.const_ints(3, "sizes");
        if (im.as("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
          std::vector<double> roi = im.has_in(1) ? floats_of(1, "roi") : std::vector<double>();
          if (roi.size() != 2 * axes.size())
            im.unsupported("roi needs 2 x " + std::to_string(axes.size()) + " values, got " +
                           std::to_string(roi.size()));
          std::vector<double> full(2 * rank, 0.0);
          for (std::size_t i = rank; i < 2 * rank; ++i) full[i] = 1.0;
          for (std::size_t k = 0; k < axes.size(); ++k) {
            full[static_cast<std::size_t>(axes[k])] = roi[k];
            full[rank + static_cast<std::size_t>(axes[k])] = roi[axes.size() + k];
          }
          a.set("roi", full);
        }
      }
      ResizeTarget target;
      try {
        target = resize_target(in, axes, scales, sizes, im.as("keep_aspect_ratio_policy", "stretch"));
      } catch (const ShapeError& e) {
        im.unsupported(e.message);
      }
      a.set("sizes", target.sizes);
      a.set("scales", target.scales);
      im.emit1("resize", {im.in(0)}, std::move(a));
    };
    t["Resize"] = [resize](Importer& im) { resize(im, false); };
    t["Upsample"] = [resize](Importer& im) { resize(im, true); };
    for (const auto& [onnx_op, op] : {std::pair<const char*, const char*>{"CumSum", "cumsum"}, {"CumProd", "cumprod"}})
      t[onnx_op] = [op](Importer& im) {
        Attrs a;
        const auto axis = im.const_ints(1, "axis");
        if (axis.size() != 1) im.unsupported("the axis must be one integer");
        a.set("axis", axis[0]);
        a.set("exclusive", im.ai("exclusive", 0));
        a.set("reverse", im.ai("reverse", 0));
        im.emit1(op, {im.in(0)}, std::move(a));
      };
    // K is an attribute before opset 10, a constant operand after.
    t["TopK"] = [](Importer& im) {
      Attrs a;
      if (im.opset() < 10) {
        a.set("k", im.ai("k", 1));
      } else {
        const auto k = im.const_ints(1, "K");
        if (k.size() != 1) im.unsupported("K must be one integer");
        a.set("k", k[0]);
      }
      a.set("axis", im.ai("axis", -1));
      a.set("largest", im.ai("largest", 1));
      a.set("sorted", im.ai("sorted", 1));
      im.emit("top_k", {im.in(0)}, {im.out(0), im.out(1)}, std::move(a));
    };
    t["Trilu"] = [](Importer& im) {
      Attrs a;
      a.set("upper", im.ai("upper", 1));
      a.set("k", im.has_in(1) ? im.const_ints(1, "k")[0] : std::int64_t{0});
      im.emit1("trilu", {im.in(0)}, std::move(a));
    };
    t["Pad"] = [](Importer& im) {
      Attrs a;
      a.set("mode", im.as("mode", "constant"));
      const std::size_t rank = im.type_of(im.in(0)).shape.size();
      std::vector<std::int64_t> pads;
      if (im.opset() < 11) {
        pads = im.aints(im.opset() < 2 ? "paddings" : "pads");
        a.set("value", im.af("value", 0.0));
      } else {
        pads = im.const_ints(1, "pads");
        if (im.has_in(2)) a.set("value", im.const_tensor(2, "constant_value").at(0));
        if (im.has_in(3)) {
          auto axes = im.const_ints(3, "axes");
          std::vector<std::int64_t> full(2 * rank, 0);
          for (std::size_t k = 0; k < axes.size(); ++k) {
            auto ax = static_cast<std::size_t>(normalize_axis(axes[k], static_cast<std::int64_t>(rank)));
            full[ax] = pads[k];
            full[ax + rank] = pads[k + axes.size()];
          }
          pads = full;
        }
      }
      a.set("pads", pads);
      im.emit1("pad", {im.in(0)}, std::move(a));
    };
    t["Gemm"] = [](Importer& im) {
      im.ignore({"broadcast"});  // before opset 7; C broadcasts either way
      im.emit1("gemm", {im.in(0), im.in(1), im.in(2)}, im.copy({"alpha", "beta", "transA", "transB"}));
    };
    t["BatchNormalization"] = [](Importer& im) {
      im.ignore({"momentum", "is_test"});  // running-statistics update: training only
      if (im.has_attr("spatial") && im.ai("spatial", 1) == 0)
        im.unsupported("spatial = 0 (per-element statistics) is not supported");
      if (im.num_out() > 1 || im.ai("training_mode", 0))
        im.unsupported("training mode is not supported (inference only)");
      // Since opset 15 the scale and bias (T1) and the statistics (T2) may
      // be of another floating type than x: computed in x's.
      std::vector<std::string> ops{im.in(0)};
      for (int k = 1; k < 5; ++k)
        ops.push_back(im.opset() >= 15 ? cast_to(im, im.in(k), im.type_of(im.in(0)).dtype) : im.in(k));
      im.emit1("batch_norm", std::move(ops), im.copy({"epsilon"}));
    };
    // Attention (opsets 23-24) as its function body: heads split from 3-D
    // inputs, the past keys and values concatenated before the new ones
    // (present_key / present_value), grouped-query heads repeated, scores
    // Q K^T scaled (by sqrt(scale) on each side, as the body does), then
    // softcap, the mask (bool: false is -inf; float: added) and the causal
    // triangle (key j visible to query i when j <= i + past length), softmax
    // and the product with V; qk_matmul_output is the scores after the
    // product (mode 0), softcap (1), the mask (2) or softmax (3), in the
    // order the body computes them (the conformance data agrees). Softmax
    // runs in the inputs' type (softmax_precision is not applied).
    t["Attention"] = [](Importer& im) {
      if (im.has_in(6)) im.unsupported("nonpad_kv_seqlen is not supported");
      im.ignore({"softmax_precision"});
      const DType dt = im.type_of(im.in(0)).dtype;
      const std::string base = im.fresh(im.out(0).empty() ? std::string("attention") : im.out(0));
      auto dims_of = [&](const std::string& v) {
        const Shape& sh = im.type_of(v).shape;
        if (!is_static(sh)) im.unsupported("needs static shapes");
        return static_dims(sh);
      };
      auto op = [&](const char* name, std::vector<std::string> ins, Attrs a = {}) {
        return im.emit_fresh(base, name, std::move(ins), std::move(a));
      };
      auto constant = [&](const char* what, Tensor t) { return im.add_fresh_const(base, what, std::move(t)); };
      const std::vector<std::int64_t> qd = dims_of(im.in(0)), kd = dims_of(im.in(1)), vd = dims_of(im.in(2));
      const bool three = qd.size() == 3;
      if ((qd.size() != 3 && qd.size() != 4) || kd.size() != qd.size() || vd.size() != qd.size())
        im.unsupported("Q, K and V must all be 3-D or all 4-D");
      std::int64_t qh = im.ai("q_num_heads", 0), kvh = im.ai("kv_num_heads", 0);
      std::string q = im.in(0), k = im.in(1), v = im.in(2);
      if (three) {
        if (qh <= 0 || kvh <= 0 || qd[2] % qh != 0 || kd[2] % kvh != 0 || vd[2] % kvh != 0)
          im.unsupported("3-D inputs need q_num_heads and kv_num_heads that divide their hidden sizes");
        auto split_heads = [&](const std::string& x, const std::vector<std::int64_t>& d, std::int64_t heads) {
          return op("transpose", {op("reshape", {x}, list_attr("shape", {d[0], d[1], heads, d[2] / heads}))},
                    list_attr("perm", {0, 2, 1, 3}));
        };
        q = split_heads(q, qd, qh);
        k = split_heads(k, kd, kvh);
        v = split_heads(v, vd, kvh);
      } else {
        qh = qd[1];
        kvh = kd[1];
      }
      const std::int64_t batch = qd[0], seq = three ? qd[1] : qd[2], head = three ? qd[2] / qh : qd[3],
                         v_head = three ? vd[2] / kvh : vd[3];
      std::int64_t past = 0;
      Attrs seq_axis;
      seq_axis.set("axis", std::int64_t{2});
      if (im.has_in(4)) {
        past = dims_of(im.in(4)).at(2);
        k = op("concat", {im.in(4), k}, seq_axis);
      }
      if (im.has_in(5)) v = op("concat", {im.in(5), v}, seq_axis);
      if (!im.out(1).empty()) im.emit("identity", {k}, {im.out(1)});
      if (!im.out(2).empty()) im.emit("identity", {v}, {im.out(2)});
      const std::int64_t total = dims_of(k).at(2);
      if (qh != kvh) {  // grouped-query attention: each key/value head serves qh / kvh query heads
        if (kvh <= 0 || qh % kvh != 0) im.unsupported("q_num_heads must be a multiple of kv_num_heads");
        auto repeat = [&](const std::string& x, std::int64_t size) {
          return op("reshape",
                    {op("expand", {op("unsqueeze", {x}, list_attr("axes", {2}))},
                        list_attr("shape", {batch, kvh, qh / kvh, total, size}))},
                    list_attr("shape", {batch, qh, total, size}));
        };
        k = repeat(k, head);
        v = repeat(v, v_head);
      }
      const double scale = im.has_attr("scale") ? im.af("scale", 1.0) : 1.0 / std::sqrt(static_cast<double>(head));
      const std::string root = constant("scale", Tensor::scalar(dt, std::sqrt(scale)));
      std::string scores = op(
          "matmul", {op("mul", {q, root}), op("mul", {op("transpose", {k}, list_attr("perm", {0, 1, 3, 2})), root})});
      std::string qk[4];
      qk[0] = scores;
      if (const double cap = im.af("softcap", 0.0); cap > 0) {
        const std::string c = constant("softcap", Tensor::scalar(dt, cap));
        scores = op("mul", {op("tanh", {op("div", {scores, c})}), c});
      }
      qk[1] = scores;
      std::string bias;
      if (im.has_in(3)) {
        bias = im.in(3);
        if (im.type_of(bias).dtype == DType::Bool)
          bias = op("where", {bias, constant("zero", Tensor::scalar(dt, 0.0)),
                              constant("masked", Tensor::scalar(dt, -INFINITY))});
      }
      if (im.ai("is_causal", 0) != 0) {
        Tensor tri(dt, {seq, total});
        for (std::int64_t i = 0; i < seq; ++i)
          for (std::int64_t j = 0; j < total; ++j)
            tri.set(static_cast<std::size_t>(i * total + j), j <= i + past ? 0.0 : -INFINITY);
        const std::string c = constant("causal", std::move(tri));
        bias = bias.empty() ? c : op("add", {bias, c});
      }
      if (!bias.empty()) scores = op("add", {scores, bias});
      qk[2] = scores;
      Attrs last;
      last.set("axis", std::int64_t{-1});
      const std::string probs = op("softmax", {scores}, last);
      qk[3] = probs;
      const std::int64_t mode = im.ai("qk_matmul_output_mode", 0);
      if (mode < 0 || mode > 3) im.unsupported("qk_matmul_output_mode " + std::to_string(mode) + " is not 0 to 3");
      if (!im.out(3).empty()) im.emit("identity", {qk[mode]}, {im.out(3)});
      const std::string y = op("matmul", {probs, v});
      if (im.out(0).empty()) return;
      if (three)
        im.emit("reshape", {op("transpose", {y}, list_attr("perm", {0, 2, 1, 3}))}, {im.out(0)},
                list_attr("shape", {batch, seq, qh * v_head}));
      else
        im.emit("identity", {y}, {im.out(0)});
    };
    // RMSNormalization (opset 23) as its function body: x / sqrt(mean(x^2
    // over [axis, rank)) + epsilon) * scale, in f32 (stash_type 1) for
    // other float types too, cast back at the end.
    t["RMSNormalization"] = [](Importer& im) {
      if (im.ai("stash_type", 1) != 1) im.unsupported("stash_type other than float is not supported");
      const ValueType xt = im.type_of(im.in(0));
      const auto rank = static_cast<std::int64_t>(xt.shape.size());
      std::int64_t axis = im.ai("axis", -1);
      if (axis < -rank || axis >= rank)
        im.unsupported("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      if (axis < 0) axis += rank;
      std::vector<std::int64_t> axes;
      for (std::int64_t d = axis; d < rank; ++d) axes.push_back(d);
      auto tmp = [&](const char* what) { return im.fresh(im.out(0) + "_" + what); };
      auto as = [&](const std::string& v, DType to, const std::string& out) {
        Attrs c;
        c.set("to", std::string(dtype_name(to)));
        im.emit("cast", {v}, {out}, std::move(c));
      };
      std::string x = im.in(0);
      if (xt.dtype != DType::F32) {
        const std::string x32 = tmp("x");
        as(x, DType::F32, x32);
        x = x32;
      }
      const std::string sq = tmp("square"), mean = tmp("mean"), eps = tmp("epsilon"), shifted = tmp("shifted"),
                        rms = tmp("rms"), normalized = tmp("normalized");
      im.emit("mul", {x, x}, {sq});
      Attrs r;
      r.set("axes", axes);
      r.set("keepdims", std::int64_t{1});
      im.emit("reduce_mean", {sq}, {mean}, std::move(r));
      im.add_const(eps, Tensor::scalar(DType::F32, im.af("epsilon", 1e-5)));
      im.emit("add", {mean, eps}, {shifted});
      im.emit("sqrt", {shifted}, {rms});
      im.emit("div", {x, rms}, {normalized});
      std::string scale = im.in(1);
      if (im.type_of(scale).dtype != DType::F32) {
        const std::string s32 = tmp("scale");
        as(scale, DType::F32, s32);
        scale = s32;
      }
      if (xt.dtype == DType::F32) {
        im.emit("mul", {normalized, scale}, {im.out(0)});
      } else {
        const std::string y = tmp("y");
        im.emit("mul", {normalized, scale}, {y});
        as(y, xt.dtype, im.out(0));
      }
    };
    t["LayerNormalization"] = [](Importer& im) {
      if (im.ai("stash_type", 1) != 1) im.unsupported("stash_type other than float is not supported");
      std::vector<std::string> outs;
      for (int i = 0; i < im.num_out(); ++i) outs.push_back(im.out(i));
      im.emit("layer_norm", {im.in(0), im.in(1), im.in(2)}, outs, im.copy({"axis", "epsilon"}));
    };
    return t;
  }();
  return table;
}

}  // namespace

namespace onnx_detail {

std::vector<int> Importer::node_order(const onnx::GraphProto& gp) {
  // ONNX asks for nodes in topological order but runtimes accept any order
  // (ONNX Runtime sorts them): a node comes after the producers of its
  // inputs, and an order that is already right is kept.
  std::unordered_map<std::string, std::uint32_t> producer;
  for (int i = 0; i < gp.node_size(); ++i)
    for (const auto& o : gp.node(i).output())
      if (!o.empty()) producer.emplace(o, static_cast<std::uint32_t>(i));
  std::vector<std::vector<std::uint32_t>> needs(static_cast<std::size_t>(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i)
    for (const auto& in : gp.node(i).input())
      if (auto it = producer.find(in); it != producer.end() && !types_.count(in))
        needs[static_cast<std::size_t>(i)].push_back(it->second);
  const DependencyOrder order = dependency_order(needs);
  if (order.cycle_at) {
    const auto& n = gp.node(static_cast<int>(*order.cycle_at));
    fail(source_,
         "node '" + n.name() + "' (" + n.op_type() + ") is on a cycle: one of its inputs depends on its own outputs");
  }
  return {order.order.begin(), order.order.end()};
}

void Importer::import_node(const onnx::NodeProto& n) {
  node_ = &n;
  if (has_attr("consumed_inputs")) unsupported("the legacy consumed_inputs attribute (opset < 6) is not supported");
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    unsupported("ops of domain '" + n.domain() + "' are not supported");
  auto it = importers().find(n.op_type());
  if (it == importers().end()) unsupported("op " + n.op_type() + " is not supported");
  // Operand and result counts as ONNX's schema for this opset states them
  // (libonnx's registry): an importer reads the operands it knows, and
  // would ignore an extra one. Trailing empty names are omitted optionals.
  // Debian's libonnx (1.12) knows opsets up to 17; later opsets changed
  // operand lists (ReduceMean's axes became an operand in 18), so newer
  // nodes are left to the importers' own checks.
  static const int known = [] {
    const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = m.find(onnx::ONNX_DOMAIN);
    return it == m.end() ? 0 : it->second.second;
  }();
  const onnx::OpSchema* schema = opset_ <= known ? onnx::OpSchemaRegistry::Schema(n.op_type(), opset_, "") : nullptr;
  if (schema) {
    int ins = n.input_size();
    while (ins > 0 && n.input(ins - 1).empty()) --ins;
    const int outs = num_out();
    const auto range = [](int lo, int hi) {
      return hi == std::numeric_limits<int>::max() ? std::to_string(lo) + " or more"
             : lo == hi                            ? std::to_string(lo)
                                                   : std::to_string(lo) + " to " + std::to_string(hi);
    };
    if (ins < schema->min_input() || ins > schema->max_input())
      unsupported(n.op_type() + " takes " + range(schema->min_input(), schema->max_input()) + " operands, given " +
                  std::to_string(ins));
    if (outs < schema->min_output() || outs > schema->max_output())
      unsupported(n.op_type() + " has " + range(schema->min_output(), schema->max_output()) +
                  " results, the node names " + std::to_string(outs));
  }
  read_attrs_.clear();
  try {
    it->second(*this);
  } catch (const ShapeError& e) {  // an attribute or constant operand out of range (an axis, ...)
    unsupported(e.message);
  } catch (const std::bad_alloc&) {  // a folded constant within the machine's memory, but not what is left
    unsupported("what it computes while importing (its operands are constants) does not fit in the memory left");
  }
  for (const auto& a : n.attribute())
    if (!read_attrs_.count(a.name())) unsupported("attribute '" + a.name() + "' is not supported");
}

}  // namespace onnx_detail

std::string input_needed_as_constant(const Diagnostic& d) {
  const std::string key = "(operand '";
  auto p = d.message.find(key);
  if (p == std::string::npos || d.message.find(onnx_detail::kRuntimeShapeHint) == std::string::npos) return {};
  auto q = d.message.find("')", p + key.size());
  return q == std::string::npos ? std::string() : d.message.substr(p + key.size(), q - p - key.size());
}

namespace {

Expected<Graph> import_model(onnx::ModelProto& m, const std::string& source, const ImportOptions& options) {
  if (!m.has_graph()) return Diagnostic{SourceLoc{source, 0, 0}, "the model has no graph"};
  try {
    return Importer(source, options).run(m);
  } catch (const DiagnosticError& e) {
    return e.diag;
  } catch (const std::exception& e) {
    return stray_exception(SourceLoc{source, 0, 0}, e, "the model");
  }
}

const char* const kMalformed = "not a valid ONNX model (malformed or truncated protobuf)";

}  // namespace

Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source, const ImportOptions& options) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return Diagnostic{SourceLoc{source, 0, 0}, kMalformed};
  return import_model(m, source, options);
}

Expected<Graph> import_onnx_file(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {  // read_file says why it cannot be read
    auto bytes = read_file(path);
    if (!bytes) return bytes.error();
    return import_onnx_bytes(*bytes, path, options);
  }
  // Parsed from the stream: the file's bytes are not also held whole (a
  // third of the import of a 350 MB model).
  std::ifstream in(path, std::ios::binary);
  if (!in) return Diagnostic{SourceLoc{path, 0, 0}, "cannot open file"};
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&in)) {
    if (in.bad()) return Diagnostic{SourceLoc{path, 0, 0}, "cannot read file"};
    return Diagnostic{SourceLoc{path, 0, 0}, kMalformed};
  }
  return import_model(m, path, options);
}

Expected<Graph> import_onnx_for_inputs(const std::string& path, const std::vector<Tensor>& inputs) {
  ImportOptions opts;
  std::vector<std::string> names;
  for (;;) {
    auto g = import_onnx_file(path, opts);
    if (g) return g;
    std::string name = input_needed_as_constant(g.error());
    if (name.empty()) return g;
    if (names.empty()) {
      // The declared input order, from a plain import of the structure.
      onnx::ModelProto m;
      std::ifstream in(path, std::ios::binary);
      if (!m.ParseFromIstream(&in)) return g;
      std::set<std::string> inits;
      for (const auto& t : m.graph().initializer()) inits.insert(t.name());
      for (const auto& i : m.graph().input())
        if (!inits.count(i.name())) names.push_back(i.name());
    }
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end() && !opts.bind.count(name)) {
      auto idx = static_cast<std::size_t>(it - names.begin());
      if (idx >= inputs.size()) return g;
      opts.bind[name] = inputs[idx];
      continue;
    }
    bool added = false;
    for (std::size_t k = 0; k < names.size() && k < inputs.size(); ++k)
      if (!is_float(inputs[k].dtype()) && inputs[k].dtype() != DType::Bool && !opts.bind.count(names[k])) {
        opts.bind[names[k]] = inputs[k];
        added = true;
      }
    if (!added) return g;
  }
}

std::vector<Tensor> runtime_inputs(const Graph& g, const std::vector<Tensor>& declared) {
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < declared.size(); ++k) {
    bool bound = k < g.declared_inputs.size() &&
                 std::find(g.bound_inputs.begin(), g.bound_inputs.end(), g.declared_inputs[k]) != g.bound_inputs.end();
    if (!bound) out.push_back(declared[k]);
  }
  return out;
}

Expected<Tensor> read_tensor_pb(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.error();
  onnx::TensorProto p;
  if (!p.ParseFromString(*bytes))
    return Diagnostic{SourceLoc{path, 0, 0}, "not a valid TensorProto (malformed or truncated)"};
  try {
    return tensor_from_proto(p, path, "tensor");
  } catch (const DiagnosticError& e) {
    return e.diag;
  } catch (const std::exception& e) {
    return stray_exception(SourceLoc{path, 0, 0}, e, "the tensor");
  }
}

}  // namespace saturn::ir
