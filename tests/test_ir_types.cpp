// dtypes, shapes (static and symbolic), tensors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

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

TEST_CASE("a tensor's copies share its values until one is written") {
  Tensor a = Tensor::of_doubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = a;
  CHECK(static_cast<const Tensor&>(a).bytes() == b.bytes());  // shared, not copied
  a.set(0, 10);                                               // a gets its own first
  CHECK(a.at(0) == 10);
  CHECK(b.at(0) == 1);
  CHECK(static_cast<const Tensor&>(a).bytes() != b.bytes());
  Tensor c = b;
  c.bytes()[0] = 0xff;  // writable bytes unshare too
  CHECK(b.at(0) == 1);
  Tensor r = b.reshaped({3, 2});
  r.set_int(5, 7);
  CHECK(b.at(5) == 6);
  CHECK(r.at(5) == 7);
  Tensor u = Tensor::uninitialized(DType::I64, {3});
  CHECK(u.nbytes() == 24);
  CHECK(reinterpret_cast<std::uintptr_t>(u.bytes()) % 16 == 0);  // what f64 and i64 kernels read
  CHECK(Tensor().nbytes() == 0);
}

TEST_CASE("copy_strided gathers a strided view - permuted, offset, broadcast") {
  const Tensor t = Tensor::of_doubles(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  auto gather = [&](std::vector<std::int64_t> dims, std::vector<std::int64_t> strides, std::int64_t offset) {
    Tensor out = Tensor::uninitialized(DType::F32, dims);
    copy_strided(t.bytes(), 4, dims, strides, offset, out.bytes());
    std::vector<double> v;
    for (std::size_t i = 0; i < out.numel(); ++i) v.push_back(out.at(i));
    return v;
  };
  CHECK(gather({3, 2}, {1, 3}, 0) == std::vector<double>{0, 3, 1, 4, 2, 5});  // the transpose
  CHECK(gather({2, 2}, {3, 1}, 1) == std::vector<double>{1, 2, 4, 5});        // a slice
  CHECK(gather({2, 2, 3}, {0, 3, 1}, 0) == std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  CHECK(gather({3}, {-1}, 5) == std::vector<double>{5, 4, 3});
  CHECK(gather({}, {}, 4) == std::vector<double>{4});
  CHECK(gather({0, 3}, {3, 1}, 0).empty());
  // Element sizes without a fast path (a 3-byte element) copy byte for byte.
  const std::uint8_t bytes[] = {1, 2, 3, 4, 5, 6};
  std::uint8_t out[6] = {};
  copy_strided(bytes, 3, {2}, {-1}, 1, out);
  CHECK(std::vector<int>(out, out + 6) == std::vector<int>{4, 5, 6, 1, 2, 3});
}

TEST_CASE("copy_strided copies a large transpose in tiles - every element where the view puts it") {
  // Views whose innermost dimension walks the source with a large stride
  // (copied in tiles) next to the element-by-element gather of the same
  // view: sizes 64 does not divide, a batch dimension, a reversed one, a
  // broadcast one, and every element size with a fast path.
  struct Case {
    std::vector<std::int64_t> dims, strides;
    std::int64_t offset;
  };
  // The source: [3 130 200] row-major (strides 26000 200 1), 78000 elements.
  const std::vector<Case> cases = {
      {{200, 130}, {1, 200}, 0},            // a transpose of one matrix
      {{3, 200, 130}, {26000, 1, 200}, 0},  // of each of a batch
      {{200, 3, 130}, {1, 26000, 200}, 0},  // the batch in the middle
      {{2, 200, 130}, {0, 1, 200}, 26000},  // broadcast over a new dimension
      {{199, 130}, {-1, 200}, 199},         // the rows reversed
      {{100, 65}, {2, 400}, 7},             // every other row and column
  };
  for (std::size_t esize : {1, 2, 4, 8}) {
    std::vector<std::uint8_t> src(78000 * esize);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 2654435761u >> 13);
    for (const Case& c : cases) {
      INFO("element size " << esize << ", view of " << c.dims.size() << " dims, offset " << c.offset);
      std::int64_t n = 1;
      for (auto d : c.dims) n *= d;
      std::vector<std::uint8_t> got(static_cast<std::size_t>(n) * esize), want(got.size());
      copy_strided(src.data(), esize, c.dims, c.strides, c.offset, got.data());
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t at = c.offset, rest = i;
        for (std::size_t d = c.dims.size(); d-- > 0;) {
          at += (rest % c.dims[d]) * c.strides[d];
          rest /= c.dims[d];
        }
        std::memcpy(&want[static_cast<std::size_t>(i) * esize], &src[static_cast<std::size_t>(at) * esize], esize);
      }
      CHECK(got == want);
    }
  }
}
