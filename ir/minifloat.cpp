#include "ir/minifloat.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace saturn::ir {

namespace {

// How a minifloat spends its bits. Non-finite codes: `fnuz` types have one
// NaN (the negative-zero code 0x80) and no -0; e4m3fn's NaN is all ones
// (S.1111.111); e5m2's are IEEE's (exponent all ones: inf when the mantissa
// is 0); f4e2m1 has none.
struct Format {
  int exponent_bits, mantissa_bits, bias;
  bool fnuz, ieee_specials, all_ones_nan;
  std::uint8_t max_code;  // the largest finite magnitude's code
};

Format format(DType t) {
  switch (t) {
    case DType::F8E4M3FN:
      return {4, 3, 7, false, false, true, 0x7E};
    case DType::F8E4M3FNUZ:
      return {4, 3, 8, true, false, false, 0x7F};
    case DType::F8E5M2:
      return {5, 2, 15, false, true, false, 0x7B};
    case DType::F8E5M2FNUZ:
      return {5, 2, 16, true, false, false, 0x7F};
    default:  // F4E2M1
      return {2, 1, 1, false, false, false, 0x7};
  }
}

int sign_shift(const Format& f) { return f.exponent_bits + f.mantissa_bits; }

// f8e8m0 (OCP MX scales): an exponent alone, unsigned, 2^(code - 127);
// 0xFF is NaN.
double e8m0_value(std::uint8_t bits) {
  return bits == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, bits - 127);
}

// As ONNX's reference (round_mode "up"): the value is first rounded to
// f32; its exponent, plus one where it has a fraction (at most 0xFE when
// saturating); the sign is dropped; infinities and NaN give NaN.
std::uint8_t e8m0_code(double v, bool saturate) {
  const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(v));
  const std::uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;
  const bool up = (bits & 0x7FFFFF) != 0 && !(saturate && exponent == 0xFE);
  return static_cast<std::uint8_t>(exponent + up);
}

}  // namespace

double minifloat_value(DType t, std::uint8_t bits) {
  if (t == DType::F8E8M0) return e8m0_value(bits);
  const Format f = format(t);
  const int s = sign_shift(f);
  const bool negative = (bits >> s) & 1;
  const unsigned magnitude = bits & ((1u << s) - 1);
  const unsigned e = magnitude >> f.mantissa_bits, m = magnitude & ((1u << f.mantissa_bits) - 1);
  const unsigned e_max = (1u << f.exponent_bits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.fnuz && negative && magnitude == 0) return nan;
  if (f.all_ones_nan && magnitude == (1u << s) - 1) return negative ? -nan : nan;
  if (f.ieee_specials && e == e_max) {
    const double inf = std::numeric_limits<double>::infinity();
    if (m) return negative ? -nan : nan;
    return negative ? -inf : inf;
  }
  const double v = e == 0 ? std::ldexp(m, 1 - f.bias - f.mantissa_bits)
                          : std::ldexp((1u << f.mantissa_bits) | m, static_cast<int>(e) - f.bias - f.mantissa_bits);
  return negative ? -v : v;
}

std::uint8_t minifloat_code(DType t, double v, bool saturate) {
  if (t == DType::F8E8M0) return e8m0_code(v, saturate);
  const Format f = format(t);
  const int s = sign_shift(f);
  const bool has_nan = f.fnuz || f.ieee_specials || f.all_ones_nan;
  const std::uint8_t sign = std::signbit(v) ? static_cast<std::uint8_t>(1u << s) : 0;
  // (e5m2: the quiet NaN with the lowest mantissa, as ml_dtypes and ONNX's reference give.)
  const std::uint8_t nan_code = f.fnuz            ? 0x80
                                : f.ieee_specials ? static_cast<std::uint8_t>(sign | ((1u << s) - 2))
                                                  : static_cast<std::uint8_t>(sign | ((1u << s) - 1));
  if (std::isnan(v)) return has_nan ? nan_code : static_cast<std::uint8_t>(1u << s);  // f4e2m1: -0, as ONNX's reference
  // Past the largest finite value: the largest, infinity, or NaN.
  auto overflow = [&]() -> std::uint8_t {
    if (saturate || !has_nan) return sign | f.max_code;
    if (f.ieee_specials) return sign | static_cast<std::uint8_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
    return nan_code;
  };
  const double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  // The quantum at a's binade (or the subnormals' below the smallest
  // normal), then a in quanta rounded to even: the code of a positive value
  // is its exponent field and mantissa laid side by side, so a carry out of
  // the mantissa is the next binade's first code.
  const int min_exponent = 1 - f.bias;
  int e = std::ilogb(a);
  if (a == 0 || e < min_exponent) e = min_exponent;
  if (e > 64) return overflow();
  const double quanta = std::nearbyint(std::ldexp(a, f.mantissa_bits - e));  // the default mode: ties to even
  const double biased = a < std::ldexp(1.0, min_exponent) ? 0 : e - min_exponent + 1;
  const double code = (biased > 0 ? (biased - 1) * (1u << f.mantissa_bits) : 0) + quanta;
  if (code > f.max_code) return overflow();
  const auto c = static_cast<std::uint8_t>(code);
  if (c == 0 && f.fnuz) return 0;  // no negative zero
  return sign | c;
}

}  // namespace saturn::ir
