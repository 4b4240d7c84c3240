#include "rules/literal.hpp"

#include <cmath>
#include <numeric>
#include <vector>

namespace saturn::rules {

const char* named_constant_name(NamedConstant c) {
  switch (c) {
    case NamedConstant::Pi:
      return "pi";
    case NamedConstant::HalfPi:
      return "pi/2";
    case NamedConstant::QuarterPi:
      return "pi/4";
    case NamedConstant::TwoPi:
      return "2pi";
    case NamedConstant::InvPi:
      return "1/pi";
    case NamedConstant::TwoOverPi:
      return "2/pi";
    case NamedConstant::SqrtTwoOverPi:
      return "sqrt(2/pi)";
    case NamedConstant::E:
      return "e";
    case NamedConstant::Ln2:
      return "ln2";
    case NamedConstant::Ln10:
      return "ln10";
    case NamedConstant::Log2E:
      return "log2(e)";
    case NamedConstant::Log10E:
      return "log10(e)";
    case NamedConstant::Sqrt2:
      return "sqrt2";
    case NamedConstant::InvSqrt2:
      return "1/sqrt2";
  }
  return "?";
}

namespace {

struct Candidate {
  NamedConstant c;
  long double value;
};

// Each constant in long double, rounded to float64 and to float32 below; a
// kernel may also have computed it in double (sqrt(2 / M_PI)), which is
// among the spellings accepted.
const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> all = [] {
    const long double pi = 3.141592653589793238462643383279502884L;
    const long double e = 2.718281828459045235360287471352662498L;
    const long double ln2 = 0.693147180559945309417232121458176568L;
    const long double ln10 = 2.302585092994045684017991454684364208L;
    const long double sqrt2 = 1.414213562373095048801688724209698079L;
    return std::vector<Candidate>{
        {NamedConstant::Pi, pi},
        {NamedConstant::HalfPi, pi / 2},
        {NamedConstant::QuarterPi, pi / 4},
        {NamedConstant::TwoPi, 2 * pi},
        {NamedConstant::InvPi, 1 / pi},
        {NamedConstant::TwoOverPi, 2 / pi},
        {NamedConstant::SqrtTwoOverPi, std::sqrt(2 / pi)},
        {NamedConstant::E, e},
        {NamedConstant::Ln2, ln2},
        {NamedConstant::Ln10, ln10},
        {NamedConstant::Log2E, 1 / ln2},
        {NamedConstant::Log10E, 1 / ln10},
        {NamedConstant::Sqrt2, sqrt2},
        {NamedConstant::InvSqrt2, 1 / sqrt2},
    };
  }();
  return all;
}

bool rounds_to(long double x, double v) {
  const auto d = static_cast<double>(x);
  return d == v || static_cast<double>(static_cast<float>(x)) == v;
}

}  // namespace

LiteralReading read_literal(double v) {
  LiteralReading r;
  if (!std::isfinite(v) || std::fabs(v) >= 1e6) return r;
  const double scaled = v * 4096.0;            // exact: a power of two
  if (scaled == std::floor(scaled)) return r;  // a short binary fraction is what it says
  for (const Candidate& c : candidates()) {
    if (rounds_to(c.value, std::fabs(v))) {
      if (v < 0) break;  // negative named constants are not read (no rule writes one)
      r.kind = LiteralReading::Kind::Named;
      r.named = c.c;
      return r;
    }
  }
  // kernels computing sqrt(2 / pi) in double
  if (v == std::sqrt(2 / M_PI)) {
    r.kind = LiteralReading::Kind::Named;
    r.named = NamedConstant::SqrtTwoOverPi;
    return r;
  }
  for (std::int64_t q = 2; q <= kMaxDenominator; ++q) {
    const auto p = static_cast<std::int64_t>(std::llround(v * static_cast<double>(q)));
    if (std::gcd(p, q) != 1) continue;
    if (rounds_to(static_cast<long double>(p) / static_cast<long double>(q), v)) {
      r.kind = LiteralReading::Kind::Fraction;
      r.num = p;
      r.den = q;
      return r;
    }
  }
  return r;
}

}  // namespace saturn::rules
