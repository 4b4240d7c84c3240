// Operators and interned literals.
//
// An Op is a 32-bit handle into a process-wide table. It names either an
// operator symbol ("+", "matmul", "x") or a literal payload: an integer, a
// real, or a list of numbers ([1 0 2]). Interning makes equality of operators
// and literals a single integer comparison on the matcher's hot path, and lets
// a literal be an ordinary 0-ary e-node. The table only grows; handles stay
// valid for the life of the process. It is safe to use from several threads.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace saturn::egraph {

enum class OpKind : std::uint8_t { Symbol, Int, Real, List };

// A number as written: integers stay exact, everything else is a double.
struct Number {
  std::variant<std::int64_t, double> v;
  Number() : v(std::int64_t{0}) {}
  Number(std::int64_t i) : v(i) {}  // NOLINT(google-explicit-constructor)
  Number(double d) : v(d) {}        // NOLINT(google-explicit-constructor)
  bool is_int() const { return std::holds_alternative<std::int64_t>(v); }
  std::int64_t as_int() const { return std::get<std::int64_t>(v); }
  double as_real() const { return is_int() ? static_cast<double>(std::get<std::int64_t>(v)) : std::get<double>(v); }
  // Numeric equality across int/real (2 == 2.0).
  friend bool operator==(const Number& a, const Number& b) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_real() == b.as_real();
  }
};

// Shortest text that reads back to the same Number (reals always carry '.' or
// an exponent so that they do not read back as integers).
std::string format_number(const Number& n);

struct Op {
  std::uint32_t id = 0;
  friend constexpr auto operator<=>(Op, Op) = default;

  static Op symbol(std::string_view name);
  static Op integer(std::int64_t value);
  static Op real(double value);
  static Op list(std::span<const Number> values);
  static Op number(const Number& n) { return n.is_int() ? integer(n.as_int()) : real(n.as_real()); }

  OpKind kind() const;
  bool is_literal() const { return kind() != OpKind::Symbol; }
  // The operator's name, or the literal's text form.
  std::string name() const;
  // The literal's number, for Int and Real.
  std::optional<Number> number() const;
  // The literal's list, for List.
  std::vector<Number> list_value() const;
};

}  // namespace saturn::egraph

template <>
struct std::hash<saturn::egraph::Op> {
  std::size_t operator()(saturn::egraph::Op op) const noexcept { return op.id; }
};
