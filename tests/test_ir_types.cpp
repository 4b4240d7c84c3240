// dtypes, shapes (static and symbolic), tensors.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/dtype.hpp"
#include "ir/shape.hpp"
#include "ir/tensor.hpp"

using namespace saturn::ir;

TEST_CASE("dtype names and ONNX codes round-trip") {
  for (DType t : kAllDTypes) {
    CHECK(dtype_from_name(dtype_name(t)) == t);
    CHECK(dtype_from_onnx(dtype_to_onnx(t)) == t);
  }
  CHECK(dtype_from_onnx(17) == DType::F8E4M3FN);
  CHECK(dtype_from_onnx(22) == DType::I4);
  CHECK(dtype_from_onnx(26) == DType::I2);
  CHECK(dtype_from_onnx(24) == DType::F8E8M0);
  CHECK_FALSE(dtype_from_onnx(14).has_value());  // COMPLEX64
  CHECK(integer_type_contains(DType::I64, DType::U32));
  CHECK_FALSE(integer_type_contains(DType::I32, DType::U32));
  CHECK_FALSE(integer_type_contains(DType::U64, DType::I8));
  CHECK(integer_type_contains(DType::I8, DType::I4));
  CHECK(packed_bits(DType::U2) == 2);
  CHECK(packed_bits(DType::F4E2M1) == 4);
  CHECK(packed_bits(DType::F8E5M2) == 8);
  CHECK_FALSE(dtype_from_onnx(8).has_value());  // STRING
  CHECK(onnx_type_name(8) == "STRING");
}

TEST_CASE("half and bfloat16 conversions round to nearest even") {
  CHECK(half_to_float(float_to_half(1.0f)) == 1.0f);
  CHECK(half_to_float(float_to_half(65504.0f)) == 65504.0f);
  CHECK(std::isinf(half_to_float(float_to_half(70000.0f))));
  CHECK(half_to_float(float_to_half(5.960464477539063e-08f)) == 5.960464477539063e-08f);  // smallest subnormal
  CHECK(half_to_float(float_to_half(1.0f + 1.0f / 2048)) == 1.0f);                        // tie to even
  CHECK(half_to_float(float_to_half(1.0f + 3.0f / 2048)) == 1.0f + 2.0f / 1024);          // tie to even (up)
  CHECK(bf16_to_float(float_to_bf16(3.140625f)) == 3.140625f);
  CHECK(bf16_to_float(float_to_bf16(1.00390625f)) == 1.0f);  // tie to even
  CHECK(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST_CASE("symbolic dims print - compare and broadcast") {
  Shape a{Dim::symbol("N"), Dim::of(1), Dim::symbol("M", 2, 1)};
  CHECK(to_string(a) == "[N 1 2*M+1]");
  Shape b{Dim::of(3), Dim::symbol("M", 2, 1)};
  auto c = broadcast(a, b);
  REQUIRE(c);
  CHECK(to_string(*c) == "[N 3 2*M+1]");
  CHECK_FALSE(broadcast(Shape{Dim::of(2)}, Shape{Dim::of(3)}).has_value());
  CHECK_FALSE(broadcast(Shape{Dim::symbol("N")}, Shape{Dim::symbol("M")}).has_value());
}

TEST_CASE("tensors store and convert every dtype") {
  Tensor f(DType::F16, {2});
  f.set(0, 0.1);
  CHECK(f.at(0) == Approx(0.1).epsilon(1e-3));
  Tensor i(DType::I8, {3});
  i.set_int(0, 200);  // wraps as a C++ conversion
  CHECK(i.at_int(0) == -56);
  Tensor b(DType::Bool, {1});
  b.set(0, -2.5);
  CHECK(b.at_int(0) == 1);
  Tensor big(DType::I64, {1});
  big.set_int(0, (std::int64_t{1} << 62) + 1);
  CHECK(big.at_int(0) == (std::int64_t{1} << 62) + 1);  // not through double
  CHECK(Tensor(DType::F32, {2, 3, 4}).strides() == std::vector<std::int64_t>{12, 4, 1});
  CHECK(Tensor::of_ints(DType::I32, {2}, {7, 8}).summary() == "i32[2]");
  CHECK_THROWS(Tensor(DType::F32, {-1}));
}
