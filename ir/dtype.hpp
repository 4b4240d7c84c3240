// Element types of tensors.
//
// Every type is stored one element per byte or more: the 4- and 2-bit
// types (i4, u4, f4e2m1, i2, u2) take a byte each in memory (the value
// sign- or zero-extended, or f4e2m1's code in the low half) and are packed
// only in ONNX files. The 8- and 4-bit floats (minifloats: f8e4m3fn,
// f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f4e2m1) are storage types: arithmetic on
// them is done in a wider type and its result rounded as ONNX's Cast
// rounds (ir/minifloat.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace saturn::ir {

enum class DType : std::uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I64,
  I32,
  I8,
  U8,
  Bool,
  I16,
  U16,
  U32,
  U64,
  I4,
  U4,
  F8E4M3FN,
  F8E4M3FNUZ,
  F8E5M2,
  F8E5M2FNUZ,
  F4E2M1,
  I2,
  U2,
  F8E8M0,
};

inline constexpr std::array<DType, 23> kAllDTypes = {
    DType::F32,        DType::F16,    DType::BF16,       DType::F64,    DType::I64,   DType::I32,
    DType::I8,         DType::U8,     DType::Bool,       DType::I16,    DType::U16,   DType::U32,
    DType::U64,        DType::I4,     DType::U4,         DType::I2,     DType::U2,    DType::F8E4M3FN,
    DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F4E2M1, DType::F8E8M0};

std::size_t dtype_size(DType t);  // bytes per element in memory
const char* dtype_name(DType t);  // "f32", "i64", "bool", ...
std::optional<DType> dtype_from_name(std::string_view name);
// The 8- and 4-bit floats, which only store values (see above).
inline bool is_minifloat(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 || t == DType::F8E5M2FNUZ ||
         t == DType::F4E2M1 || t == DType::F8E8M0;
}
inline bool is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64 || is_minifloat(t);
}
inline bool is_unsigned(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64 || t == DType::U4 || t == DType::U2;
}
inline bool is_integer(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8 || t == DType::I4 || t == DType::I2 ||
         is_unsigned(t);
}
// The types ONNX only stores and moves (Cast, Q/DQ, Reshape, Transpose, ...):
// the minifloats and the 4- and 2-bit integers. Arithmetic ops refuse them.
bool stores_only(DType t);
// The width of an integer type's values (4 for i4 and u4, stored in a byte).
int integer_bits(DType t);
// Bits an element takes in an ONNX file: 2 or 4 for the sub-byte types
// (packed, the first element in the low bits), else 8 * dtype_size.
int packed_bits(DType t);
// Whether every value of integer type `from` is a value of integer type `to`.
bool integer_type_contains(DType to, DType from);

// ONNX TensorProto.DataType codes.
std::optional<DType> dtype_from_onnx(int code);
int dtype_to_onnx(DType t);
std::string onnx_type_name(int code);  // for messages: "FLOAT", "STRING", ...

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);
float bf16_to_float(std::uint16_t b);
std::uint16_t float_to_bf16(float f);

}  // namespace saturn::ir
