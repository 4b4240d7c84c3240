#include "egraph/constant_folding.hpp"

#include <cmath>
#include <limits>

#include "egraph/egraph.hpp"

namespace saturn::egraph {

namespace {
std::optional<Number> int_or_real(long double exact, bool all_int) {
  if (all_int) {
    if (exact > static_cast<long double>(std::numeric_limits<std::int64_t>::max()) ||
        exact < static_cast<long double>(std::numeric_limits<std::int64_t>::min()))
      return std::nullopt;
    return Number(static_cast<std::int64_t>(exact));
  }
  double d = static_cast<double>(exact);
  if (!std::isfinite(d)) return std::nullopt;
  return Number(d);
}
}  // namespace

std::optional<Number> fold_arithmetic(Op op, std::span<const Number> args) {
  if (op.kind() != OpKind::Symbol) return std::nullopt;
  const std::string name = op.name();
  bool all_int = true;
  for (const Number& a : args) all_int &= a.is_int();
  auto I = [&](std::size_t i) { return static_cast<long double>(args[i].as_int()); };
  auto R = [&](std::size_t i) { return static_cast<long double>(args[i].as_real()); };
  auto V = [&](std::size_t i) { return all_int ? I(i) : R(i); };
  if (args.size() == 2) {
    if (name == "+") return int_or_real(V(0) + V(1), all_int);
    if (name == "-") return int_or_real(V(0) - V(1), all_int);
    if (name == "*") return int_or_real(V(0) * V(1), all_int);
    if (name == "/") {
      if (args[1].as_real() == 0.0) return std::nullopt;
      if (all_int) {
        // INT64_MIN % -1 traps; a division by -1 is a negation, out of
        // range (not folded) for INT64_MIN.
        if (args[1].as_int() == -1) return int_or_real(-I(0), true);
        if (args[0].as_int() % args[1].as_int() != 0) return int_or_real(R(0) / R(1), false);
        return int_or_real(I(0) / I(1), true);
      }
      return int_or_real(R(0) / R(1), false);
    }
    if (name == "min") return V(0) <= V(1) ? args[0] : args[1];
    if (name == "max") return V(0) >= V(1) ? args[0] : args[1];
    if (name == "pow") {
      if (all_int && args[1].as_int() >= 0 && args[1].as_int() <= 62) {
        long double r = 1;
        for (std::int64_t k = 0; k < args[1].as_int(); ++k) r *= I(0);
        return int_or_real(r, true);
      }
      if (args[0].as_real() == 0.0 && args[1].as_real() < 0) return std::nullopt;
      if (args[0].as_real() < 0 && std::floor(args[1].as_real()) != args[1].as_real()) return std::nullopt;
      return int_or_real(std::pow(R(0), R(1)), false);
    }
  }
  if (args.size() == 1) {
    if (name == "-" || name == "neg") return int_or_real(-V(0), all_int);
    if (name == "abs") return int_or_real(std::fabs(V(0)), all_int);
  }
  return std::nullopt;
}

std::optional<Number> ConstantFolding::make_data(const EGraph& g, NodeId node) const {
  Op op = g.op(node);
  auto kids = g.children(node);
  if (kids.empty()) return op.number();
  std::vector<Number> args;
  args.reserve(kids.size());
  for (EClassId k : kids) {
    const auto& v = data(g.find(k));
    if (!v) return std::nullopt;
    args.push_back(*v);
  }
  return folder_(op, args);
}

DidMerge ConstantFolding::merge_data(std::optional<Number>& into, const std::optional<Number>& from) {
  if (!from) return {false, into.has_value()};
  if (!into) {
    into = from;
    return {true, false};
  }
  if (!(*into == *from)) {
    double a = into->as_real(), b = from->as_real();
    bool close = !into->is_int() && !from->is_int() && std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
    if (!close)
      conflicts_.push_back("merged classes with different constants " + format_number(*into) + " and " +
                           format_number(*from));
  }
  return {false, false};
}

void ConstantFolding::modify(EGraph& g, EClassId id) {
  id = g.find(id);
  const auto& v = data(id);
  if (!v) return;
  Number n = *v;
  EClassId lit = g.add(Op::number(n));
  if (g.explaining())
    g.merge(id, lit, Justification::of_analysis());
  else
    g.merge(id, lit);
}

std::optional<Number> ConstantFolding::value(const EGraph& g, EClassId id) const {
  id = g.find(id);
  if (id.v >= data_.size()) return std::nullopt;
  return data_[id.v];
}

}  // namespace saturn::egraph
