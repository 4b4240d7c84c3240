#include "ir/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace saturn::ir {

namespace {
struct TypeInfo {
  DType type;
  const char* name;
  std::size_t size;
  int onnx;
  int bits;  // integers' value width
};
// ONNX codes: TensorProto.DataType.
constexpr TypeInfo kTypes[] = {
    {DType::F32, "f32", 4, 1, 0},
    {DType::F16, "f16", 2, 10, 0},
    {DType::BF16, "bf16", 2, 16, 0},
    {DType::F64, "f64", 8, 11, 0},
    {DType::I64, "i64", 8, 7, 64},
    {DType::I32, "i32", 4, 6, 32},
    {DType::I8, "i8", 1, 3, 8},
    {DType::U8, "u8", 1, 2, 8},
    {DType::Bool, "bool", 1, 9, 0},
    {DType::I16, "i16", 2, 5, 16},
    {DType::U16, "u16", 2, 4, 16},
    {DType::U32, "u32", 4, 12, 32},
    {DType::U64, "u64", 8, 13, 64},
    {DType::I4, "i4", 1, 22, 4},
    {DType::U4, "u4", 1, 21, 4},
    {DType::F8E4M3FN, "f8e4m3fn", 1, 17, 0},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", 1, 18, 0},
    {DType::F8E5M2, "f8e5m2", 1, 19, 0},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", 1, 20, 0},
    {DType::F4E2M1, "f4e2m1", 1, 23, 0},
    {DType::I2, "i2", 1, 26, 2},
    {DType::F8E8M0, "f8e8m0", 1, 24, 0},
    {DType::U2, "u2", 1, 25, 2},
};
static_assert(std::size(kTypes) == kAllDTypes.size());

const TypeInfo& info(DType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}
}  // namespace

std::size_t dtype_size(DType t) { return info(t).size; }

const char* dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(std::string_view n) {
  for (const TypeInfo& i : kTypes)
    if (n == i.name) return i.type;
  return std::nullopt;
}

int integer_bits(DType t) { return info(t).bits; }

bool stores_only(DType t) { return is_minifloat(t) || packed_bits(t) < 8; }

int packed_bits(DType t) {
  if (t == DType::F4E2M1) return 4;
  const int bits = integer_bits(t);
  return bits == 2 || bits == 4 ? bits : static_cast<int>(8 * dtype_size(t));
}

bool integer_type_contains(DType to, DType from) {
  if (!is_integer(to) || !is_integer(from)) return false;
  if (to == from) return true;
  const int bt = integer_bits(to), bf = integer_bits(from);
  if (is_unsigned(from)) return is_unsigned(to) ? bt >= bf : bt > bf;
  return !is_unsigned(to) && bt >= bf;
}

std::optional<DType> dtype_from_onnx(int code) {
  for (const TypeInfo& i : kTypes)
    if (code == i.onnx) return i.type;
  return std::nullopt;
}

int dtype_to_onnx(DType t) { return info(t).onnx; }

std::string onnx_type_name(int code) {
  static const char* names[] = {
      "UNDEFINED", "FLOAT",      "UINT8",      "INT8",         "UINT16",         "INT16",      "INT32",
      "INT64",     "STRING",     "BOOL",       "FLOAT16",      "DOUBLE",         "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16",   "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",     "INT4",       "FLOAT4E2M1", "FLOAT8E8M0",   "UINT2",          "INT2"};
  if (code >= 0 && code < static_cast<int>(sizeof names / sizeof *names)) return names[code];
  return "type " + std::to_string(code);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (x >> 16) & 0x8000;
  std::uint32_t exp = (x >> 23) & 0xFF, mant = x & 0x7FFFFF;
  if (exp == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00);
  if (e <= 0) {
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    int shift = 14 - e;
    std::uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | half);
}

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  std::uint32_t rounding = 0x7FFF + ((x >> 16) & 1);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

}  // namespace saturn::ir
