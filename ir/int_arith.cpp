#include "ir/int_arith.hpp"

namespace saturn::ir {

std::optional<std::int64_t> int_quotient(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return wrapping_neg(a);
  return a / b;
}

std::optional<std::int64_t> int_remainder(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  return b == -1 ? 0 : a % b;
}

std::optional<std::int64_t> int_power(std::int64_t x, std::int64_t n) {
  if (n < 0) {
    if (x == 0) return std::nullopt;
    if (x == 1) return 1;
    return x == -1 ? (n % 2 ? -1 : 1) : 0;
  }
  std::int64_t r = 1;
  for (auto e = static_cast<std::uint64_t>(n); e; e >>= 1, x = wrapping_mul(x, x))
    if (e & 1) r = wrapping_mul(r, x);
  return r;
}

}  // namespace saturn::ir
