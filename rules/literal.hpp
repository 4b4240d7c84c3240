// What a numeric literal of a rule or a kernel means to the prover.
//
// Rules and reference kernels write irrational and repeating numbers as the
// float32 or float64 nearest to them (log2 e as 1.4426950408889634, 1/3 as
// 0.33333334f), and every other operation of theirs rounds the same way. The
// real-number prover reads such a literal as the number it was rounded from,
// as it reads a float32 product as the real product: a constant that is the
// float32 or float64 rounding of a named constant (pi, e, ln 2, sqrt 2 and
// their common forms) or of a fraction p/q with q <= kMaxDenominator stands
// for that number. A literal that is itself a short binary fraction (an
// integer, 0.5, 0.375) is exact and stays itself.
//
// Invariant: a literal is read as x only when rounding x to float32 or to
// float64 gives the literal back exactly, so a reading never moves a value
// by more than half a unit in the last place of its own type.
#pragma once

#include <cstdint>
#include <optional>

namespace saturn::rules {

enum class NamedConstant : std::uint8_t {
  Pi,
  HalfPi,
  QuarterPi,
  TwoPi,
  InvPi,      // 1/pi
  TwoOverPi,  // 2/pi
  SqrtTwoOverPi,
  E,
  Ln2,
  Ln10,
  Log2E,   // 1/ln 2
  Log10E,  // 1/ln 10
  Sqrt2,
  InvSqrt2,  // 1/sqrt 2
};
const char* named_constant_name(NamedConstant c);

inline constexpr std::int64_t kMaxDenominator = 1000;

struct LiteralReading {
  enum class Kind { Exact, Named, Fraction } kind = Kind::Exact;
  NamedConstant named = NamedConstant::Pi;  // Named
  std::int64_t num = 0, den = 1;            // Fraction: num / den, den > 1, in lowest terms
};

// How the prover reads the finite literal `v`.
LiteralReading read_literal(double v);

}  // namespace saturn::rules
