// A loop kernel's result bound from its leaves': the expression's nodes in
// an order where operands come first, evaluated on magnitudes.
#include "lower/value_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace saturn::lower {

namespace {
constexpr std::size_t kMaxNodes = 512;
}  // namespace

std::optional<KernelBound> KernelBound::of(const LoopKernel& k) {
  if (k.out_dtype != ir::DType::F32 || (k.compute != ir::DType::F32 && k.compute != ir::DType::F64) || !k.ctx)
    return std::nullopt;
  if (k.reduce != ReduceKind::None && ir::numel(k.red_dims) == 0) return std::nullopt;  // (an empty maximum: -inf)
  const ir::SymContext& ctx = *k.ctx;
  std::map<ir::SymId, int> leaf_of;
  for (std::size_t i = 0; i < k.leaf_vars.size(); ++i) leaf_of.emplace(k.leaf_vars[i], static_cast<int>(i));
  KernelBound bound;
  std::map<ir::SymId, int> index;  // node -> position in nodes_
  int body = -1;
  // Post-order walks (operands first), body then a reduction's post.
  std::set<ir::SymId> done;
  auto walk = [&](ir::SymId root) -> bool {
    for (ir::SymId id : ctx.post_order(root, done)) {
      const ir::SymNode& n = ctx.node(id);
      if (bound.nodes_.size() >= kMaxNodes) return false;
      Node b;
      b.op = n.op;
      const auto at = [&](ir::SymId kid) { return index.at(kid); };
      switch (n.op) {
        case ir::SymOp::Var:
          if (auto l = leaf_of.find(id); l != leaf_of.end()) {
            b.leaf = l->second;
          } else if (id == k.acc_var && k.reduce != ReduceKind::None && body >= 0) {
            b.accumulator = true;
            b.a = body;
            b.value = k.reduce == ReduceKind::Sum ? static_cast<double>(ir::numel(k.red_dims)) : 1;
            if (k.reduce == ReduceKind::Prod) return false;
          } else {
            return false;
          }
          break;
        case ir::SymOp::Const:
          if (!std::isfinite(n.value)) return false;
          b.value = std::abs(n.value);
          break;
        case ir::SymOp::Div:
          if (ctx.node(n.b).op != ir::SymOp::Const || ctx.node(n.b).value == 0) return false;
          b.a = at(n.a);
          b.value = 1 / std::abs(ctx.node(n.b).value);
          break;
        case ir::SymOp::Select:  // (the condition picks one of them)
          b.a = at(n.b);
          b.b = at(n.c);
          break;
        case ir::SymOp::Add:
        case ir::SymOp::Mul:
        case ir::SymOp::Max:
        case ir::SymOp::Min:
          b.a = at(n.a);
          b.b = at(n.b);
          break;
        case ir::SymOp::Neg:
        case ir::SymOp::Abs:
        case ir::SymOp::Floor:
        case ir::SymOp::Ceil:
        case ir::SymOp::Exp:
        case ir::SymOp::Exp2:
          b.a = at(n.a);
          break;
        case ir::SymOp::Less:
        case ir::SymOp::LessEq:
        case ir::SymOp::Equal:
        case ir::SymOp::Tanh:
        case ir::SymOp::Erf:
        case ir::SymOp::Sin:
        case ir::SymOp::Cos:
          break;
        default:
          return false;
      }
      index.emplace(id, static_cast<int>(bound.nodes_.size()));
      bound.nodes_.push_back(b);
    }
    return true;
  };
  if (!walk(k.body)) return std::nullopt;
  body = index.at(k.body);
  if (k.reduce != ReduceKind::None) {
    if (!walk(k.post)) return std::nullopt;
    // (The result is post's, evaluated last.)
    const int post = index.at(k.post);
    if (post != static_cast<int>(bound.nodes_.size()) - 1) {
      Node same;
      same.op = ir::SymOp::Neg;
      same.a = post;
      bound.nodes_.push_back(same);
    }
  }
  return bound;
}

double KernelBound::operator()(std::span<const double> leaf, std::vector<double>& v) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  v.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    const double a = n.a >= 0 ? v[static_cast<std::size_t>(n.a)] : 0,
                 b = n.b >= 0 ? v[static_cast<std::size_t>(n.b)] : 0;
    switch (n.op) {
      case ir::SymOp::Var:
        v[i] = n.accumulator ? a * n.value : leaf[static_cast<std::size_t>(n.leaf)];
        break;
      case ir::SymOp::Const:
        v[i] = n.value;
        break;
      case ir::SymOp::Div:
        v[i] = a * n.value;
        break;
      case ir::SymOp::Add:
        v[i] = a + b;
        break;
      case ir::SymOp::Mul:
        v[i] = a * b;
        break;
      case ir::SymOp::Max:
      case ir::SymOp::Min:
      case ir::SymOp::Select:
        v[i] = std::max(a, b);
        break;
      case ir::SymOp::Floor:
      case ir::SymOp::Ceil:
        v[i] = a + 1;
        break;
      case ir::SymOp::Exp:
        v[i] = std::exp(a);
        break;
      case ir::SymOp::Exp2:
        v[i] = std::exp2(a);
        break;
      case ir::SymOp::Neg:
      case ir::SymOp::Abs:
        v[i] = a;
        break;
      default:  // comparisons, tanh, erf, sin, cos
        v[i] = 1;
        break;
    }
    // A value past float's range may be an infinity in the kernel, which
    // a later product by 0 makes NaN: nothing is known then.
    if (!(v[i] < std::numeric_limits<float>::max() / 2)) return inf;
  }
  return nodes_.empty() ? inf : v.back();
}

}  // namespace saturn::lower
