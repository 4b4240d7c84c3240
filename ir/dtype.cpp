#include "ir/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace saturn::ir {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 2;
    case DType::F64:
      return 8;
    case DType::I64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I8:
      return 1;
    case DType::U8:
      return 1;
    case DType::Bool:
      return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F64:
      return "f64";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
    case DType::I8:
      return "i8";
    case DType::U8:
      return "u8";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  for (DType t :
       {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool})
    if (n == dtype_name(t)) return t;
  return std::nullopt;
}

std::optional<DType> dtype_from_onnx(int code) {
  switch (code) {
    case 1:
      return DType::F32;
    case 2:
      return DType::U8;
    case 3:
      return DType::I8;
    case 6:
      return DType::I32;
    case 7:
      return DType::I64;
    case 9:
      return DType::Bool;
    case 10:
      return DType::F16;
    case 11:
      return DType::F64;
    case 16:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::F32:
      return 1;
    case DType::U8:
      return 2;
    case DType::I8:
      return 3;
    case DType::I32:
      return 6;
    case DType::I64:
      return 7;
    case DType::Bool:
      return 9;
    case DType::F16:
      return 10;
    case DType::F64:
      return 11;
    case DType::BF16:
      return 16;
  }
  return 0;
}

std::string onnx_type_name(int code) {
  static const char* names[] = {"UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
                                "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
                                "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
                                "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1"};
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
