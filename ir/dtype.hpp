// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace saturn::ir {

enum class DType : std::uint8_t { F32, F16, BF16, F64, I64, I32, I8, U8, Bool };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "i64", "bool", ...
std::optional<DType> dtype_from_name(std::string_view name);
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }
inline bool is_integer(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8; }

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
