// Integer arithmetic as every Saturn kernel computes it: the reference
// kernels (ir/ops_*.cpp), the LLVM and CUDA code generators and the
// symbolic evaluator agree on these definitions.
//
// Invariant: nothing here is undefined behaviour for any int64 operands.
// Sums, products and negations wrap (two's complement, as numpy's int64
// and the generated i64 code); INT64_MIN / -1 wraps to INT64_MIN instead of
// trapping; the operations that can fail (a zero divisor, 0 to a negative
// power) say so with nullopt, and the kernels fail the run.
#pragma once

#include <cstdint>
#include <optional>

namespace saturn::ir {

inline std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t wrapping_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrapping_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}
inline std::int64_t wrapping_neg(std::int64_t a) { return wrapping_sub(0, a); }

// The quotient truncated toward zero and its remainder (the dividend's
// sign); nullopt for a zero divisor.
std::optional<std::int64_t> int_quotient(std::int64_t a, std::int64_t b);
std::optional<std::int64_t> int_remainder(std::int64_t a, std::int64_t b);
// x^n exactly (squaring, wrapping); for n < 0, 1 / x^n truncated (1, +-1 or
// 0); nullopt for 0 to a negative power.
std::optional<std::int64_t> int_power(std::int64_t x, std::int64_t n);

}  // namespace saturn::ir
