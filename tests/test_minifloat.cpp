// The minifloats (ir/minifloat.hpp) against ONNX's reference conversions
// (ml_dtypes' astype without saturation, onnx.numpy_helper.saturate_cast
// with it), code for code.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ir/minifloat.hpp"
#include "ir/tensor.hpp"

using namespace saturn::ir;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<double> kValues = {0.0,     -0.0,    0.3,   -1.7,  1.0625, 17.0,   239.0,   240.0,       250.0,
                                     449.0,   470.0,   480.0, 1e6,   -1e6,   0x1p-9, 0x1p-10, 3 * 0x1p-11, 0x1p-17,
                                     57344.0, 61440.0, kInf,  -kInf, kNaN,   5.0,    6.5,     0.25,        0.75};

struct Expected {
  DType type;
  std::vector<std::uint8_t> unsaturated, saturated;
};

// Printed by ml_dtypes 0.5 / onnx 1.23 for kValues.
const std::vector<Expected> kExpected = {
    {DType::F8E4M3FN,
     {0x0, 0x80, 0x2a, 0xbe, 0x38, 0x58, 0x77, 0x77, 0x78, 0x7e, 0x7f, 0x7f, 0x7f, 0xff,
      0x1, 0x0,  0x1,  0x0,  0x7f, 0x7f, 0x7f, 0xff, 0x7f, 0x4a, 0x4d, 0x28, 0x34},
     {0x0, 0x80, 0x2a, 0xbe, 0x38, 0x58, 0x77, 0x77, 0x78, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe,
      0x1, 0x0,  0x1,  0x0,  0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x4a, 0x4d, 0x28, 0x34}},
    {DType::F8E4M3FNUZ,
     {0x0, 0x0, 0x32, 0xc6, 0x40, 0x60, 0x7f, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
      0x2, 0x1, 0x2,  0x0,  0x80, 0x80, 0x80, 0x80, 0x80, 0x52, 0x55, 0x30, 0x3c},
     {0x0, 0x0, 0x32, 0xc6, 0x40, 0x60, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff,
      0x2, 0x1, 0x2,  0x0,  0x7f, 0x7f, 0x7f, 0xff, 0x80, 0x52, 0x55, 0x30, 0x3c}},
    {DType::F8E5M2,
     {0x0,  0x80, 0x35, 0xbf, 0x3c, 0x4c, 0x5b, 0x5c, 0x5c, 0x5f, 0x5f, 0x60, 0x7c, 0xfc,
      0x18, 0x14, 0x16, 0x0,  0x7b, 0x7c, 0x7c, 0xfc, 0x7e, 0x45, 0x46, 0x34, 0x3a},
     {0x0,  0x80, 0x35, 0xbf, 0x3c, 0x4c, 0x5b, 0x5c, 0x5c, 0x5f, 0x5f, 0x60, 0x7b, 0xfb,
      0x18, 0x14, 0x16, 0x0,  0x7b, 0x7b, 0x7b, 0xfb, 0x7e, 0x45, 0x46, 0x34, 0x3a}},
    {DType::F8E5M2FNUZ,
     {0x0,  0x0,  0x39, 0xc3, 0x40, 0x50, 0x5f, 0x60, 0x60, 0x63, 0x63, 0x64, 0x80, 0x80,
      0x1c, 0x18, 0x1a, 0x1,  0x7f, 0x80, 0x80, 0x80, 0x80, 0x49, 0x4a, 0x38, 0x3e},
     {0x0,  0x0,  0x39, 0xc3, 0x40, 0x50, 0x5f, 0x60, 0x60, 0x63, 0x63, 0x64, 0x7f, 0xff,
      0x1c, 0x18, 0x1a, 0x1,  0x7f, 0x7f, 0x7f, 0xff, 0x80, 0x49, 0x4a, 0x38, 0x3e}},
    // f4e2m1 has no infinity or NaN: it always saturates (NaN gives -0).
    {DType::F4E2M1,
     {0x0, 0x8, 0x1, 0xb, 0x2, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0xf,
      0x0, 0x0, 0x0, 0x0, 0x7, 0x7, 0x7, 0xf, 0x8, 0x6, 0x7, 0x0, 0x2},
     {0x0, 0x8, 0x1, 0xb, 0x2, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0xf,
      0x0, 0x0, 0x0, 0x0, 0x7, 0x7, 0x7, 0xf, 0x8, 0x6, 0x7, 0x0, 0x2}},
};

}  // namespace

TEST_CASE("minifloat codes are ONNX's - rounding to even - saturating or overflowing") {
  for (const Expected& e : kExpected)
    for (std::size_t i = 0; i < kValues.size(); ++i) {
      INFO(dtype_name(e.type) << " of " << kValues[i]);
      CHECK(int{minifloat_code(e.type, kValues[i], false)} == int{e.unsaturated[i]});
      CHECK(int{minifloat_code(e.type, kValues[i], true)} == int{e.saturated[i]});
    }
}

TEST_CASE("minifloat values decode every code - and encode back") {
  CHECK(minifloat_value(DType::F8E4M3FN, 0x7e) == 448);
  CHECK(std::isnan(minifloat_value(DType::F8E4M3FN, 0x7f)));
  CHECK(minifloat_value(DType::F8E4M3FN, 0x01) == 0x1p-9);
  CHECK(minifloat_value(DType::F8E4M3FNUZ, 0x7f) == 240);
  CHECK(std::isnan(minifloat_value(DType::F8E4M3FNUZ, 0x80)));
  CHECK(minifloat_value(DType::F8E5M2, 0x7b) == 57344);
  CHECK(minifloat_value(DType::F8E5M2, 0xfc) == -kInf);
  CHECK(std::isnan(minifloat_value(DType::F8E5M2, 0x7d)));
  CHECK(minifloat_value(DType::F8E5M2FNUZ, 0x7f) == 57344);
  CHECK(minifloat_value(DType::F8E5M2FNUZ, 0x01) == 0x1p-17);
  CHECK(minifloat_value(DType::F4E2M1, 0x7) == 6);
  CHECK(minifloat_value(DType::F4E2M1, 0x9) == -0.5);
  for (DType t : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F4E2M1})
    for (int c = 0; c < (t == DType::F4E2M1 ? 16 : 256); ++c) {
      const double v = minifloat_value(t, static_cast<std::uint8_t>(c));
      INFO(dtype_name(t) << " code " << c << " = " << v);
      if (std::isnan(v)) continue;
      CHECK(int{minifloat_code(t, v, false)} == c);
      // Codes are ordered as their values (sign apart).
      if ((c & 0x7f) > 0 && t != DType::F4E2M1 && !std::isnan(minifloat_value(t, static_cast<std::uint8_t>(c - 1))))
        CHECK(std::fabs(v) > std::fabs(minifloat_value(t, static_cast<std::uint8_t>(c - 1))));
    }
}

TEST_CASE("tensors of the new types store as ONNX converts") {
  Tensor f8(DType::F8E4M3FN, {3});
  f8.set(0, 0.3);
  f8.set(1, 1e6);  // saturates
  f8.set_unsaturated(2, 1e6);
  CHECK(f8.at(0) == 0.3125);
  CHECK(f8.at(1) == 448);
  CHECK(std::isnan(f8.at(2)));
  Tensor i4(DType::I4, {3});
  i4.set_int(0, 8);    // wraps to -8
  i4.set(1, -9.5);     // truncates to -9, wraps to 7
  i4.set_int(2, -20);  // -20 & 15 = 12: -4
  CHECK(i4.to_ints() == std::vector<std::int64_t>{-8, 7, -4});
  Tensor u2(DType::U2, {2});
  u2.set_int(0, 5);
  u2.set_int(1, -1);
  CHECK(u2.to_ints() == std::vector<std::int64_t>{1, 3});
  Tensor u64(DType::U64, {2});
  u64.set(0, 0x1p63 + 0x1p12);  // past int64: by value
  u64.set_int(1, -1);
  CHECK(u64.at(0) == 0x1p63 + 0x1p12);
  CHECK(u64.at(1) == 0x1p64);  // 2^64 - 1 in double
  Tensor u32(DType::U32, {1});
  u32.set_int(0, -1);
  CHECK(u32.at_int(0) == 4294967295);
  Tensor i16(DType::I16, {1});
  i16.set_int(0, 40000);
  CHECK(i16.at_int(0) == 40000 - 65536);
}

TEST_CASE("f8e8m0 is an exponent - rounded up - saturating below NaN") {
  CHECK(minifloat_value(DType::F8E8M0, 127) == 1);
  CHECK(minifloat_value(DType::F8E8M0, 0) == 0x1p-127);
  CHECK(std::isnan(minifloat_value(DType::F8E8M0, 0xFF)));
  CHECK(int{minifloat_code(DType::F8E8M0, 1.0)} == 127);
  CHECK(int{minifloat_code(DType::F8E8M0, 1.5)} == 128);    // up
  CHECK(int{minifloat_code(DType::F8E8M0, -0.75)} == 127);  // the sign is dropped
  CHECK(int{minifloat_code(DType::F8E8M0, 0.0)} == 0);
  CHECK(int{minifloat_code(DType::F8E8M0, kInf)} == 0xFF);
  CHECK(int{minifloat_code(DType::F8E8M0, 3.0e38, true)} == 0xFE);   // saturates
  CHECK(int{minifloat_code(DType::F8E8M0, 3.0e38, false)} == 0xFF);  // NaN
}
