#include "lower/loop_kernel.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace saturn::lower {

namespace {

// Drops size-1 dimensions and merges mergeable neighbours of one block of
// dimensions ([first, first + count) of every leaf's strides).
void simplify_block(LoopKernel& k, std::vector<std::int64_t>& dims, std::size_t first) {
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1 || dims.size() == 1) continue;
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    for (Leaf& l : k.leaves) l.strides.erase(l.strides.begin() + static_cast<std::ptrdiff_t>(first + i));
  }
  for (std::size_t i = dims.size(); i-- > 1;) {
    // Merge i-1 and i when every walk over them is one linear walk.
    bool ok = true;
    for (const Leaf& l : k.leaves) ok &= l.strides[first + i - 1] == l.strides[first + i] * dims[i];
    // (The result is contiguous over its own dimensions: it always merges.)
    if (!ok) continue;
    dims[i - 1] *= dims[i];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
    for (Leaf& l : k.leaves) l.strides.erase(l.strides.begin() + static_cast<std::ptrdiff_t>(first + i - 1));
  }
}

}  // namespace

bool kernel_value_dtype(ir::DType t) { return !ir::is_minifloat(t) && ir::packed_bits(t) >= 8 && t != ir::DType::U64; }

bool leaf_dtype(ir::DType t) { return kernel_value_dtype(t); }

bool kernel_dtype(ir::DType t) { return (ir::is_float(t) && kernel_value_dtype(t)) || t == ir::DType::Bool; }

ir::DType compute_dtype(ir::DType t) { return t == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32; }

bool is_copy(const LoopKernel& k) {
  return k.reduce == ReduceKind::None && k.leaves.size() == 1 && k.leaf_vars.size() == 1 && k.body == k.leaf_vars[0] &&
         k.leaves[0].dtype == k.out_dtype;
}

bool int_kernel_expression(const ir::SymContext& ctx, ir::SymId root) {
  for (ir::SymId id : ctx.reachable(std::span<const ir::SymId>(&root, 1))) {
    const ir::SymNode& n = ctx.node(id);
    using ir::SymOp;
    switch (n.op) {
      case SymOp::Var:
      case SymOp::Add:
      case SymOp::Mul:
      case SymOp::Neg:
      case SymOp::Max:
      case SymOp::Min:
      case SymOp::Abs:
      case SymOp::Less:
      case SymOp::LessEq:
      case SymOp::Equal:
      case SymOp::Select:
      case SymOp::IntDiv:
      case SymOp::IntRem:
      case SymOp::IntPow:
        break;
      case SymOp::Const:
        if (n.value != std::trunc(n.value) || std::abs(n.value) > 9.0e18) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

bool divides_integers(const ir::SymContext& ctx, ir::SymId root) {
  const auto nodes = ctx.reachable(std::span<const ir::SymId>(&root, 1));
  return std::any_of(nodes.begin(), nodes.end(), [&](ir::SymId id) { return ir::sym_op_divides(ctx.node(id).op); });
}

double reduce_init(ReduceKind how) {
  switch (how) {
    case ReduceKind::Max:
      return -std::numeric_limits<double>::infinity();
    case ReduceKind::Min:
      return std::numeric_limits<double>::infinity();
    case ReduceKind::Prod:
      return 1.0;
    default:
      return 0.0;
  }
}

void check_kernel_types(const LoopKernel& k) {
  const bool ints = k.compute == ir::DType::I64;
  const bool int_result =
      (ir::is_integer(k.out_dtype) && kernel_value_dtype(k.out_dtype)) || k.out_dtype == ir::DType::Bool;
  const bool from_float =
      !ints && k.reduce == ReduceKind::None && ir::is_integer(k.out_dtype) && kernel_value_dtype(k.out_dtype);
  if ((!kernel_dtype(k.out_dtype) && !is_copy(k) && !(ints && int_result) && !from_float) ||
      (k.reduce != ReduceKind::None && !ir::is_float(k.out_dtype) && k.out_dtype != ir::DType::Bool))
    throw std::logic_error(k.name + ": a loop kernel cannot compute " + ir::dtype_name(k.out_dtype));
  if (k.compute != ir::DType::F32 &&
      ((k.compute != ir::DType::F64 && !ints) || (ints && k.reduce != ReduceKind::None) || (ints && !int_result)))
    throw std::logic_error(k.name + ": a loop kernel cannot do its arithmetic in " + ir::dtype_name(k.compute));
  for (const Leaf& l : k.leaves)
    if (!leaf_dtype(l.dtype) || (ints && ir::is_float(l.dtype)))
      throw std::logic_error(k.name + ": a loop kernel cannot read " + ir::dtype_name(l.dtype));
  if (ints && !is_copy(k) && !int_kernel_expression(*k.ctx, k.body))
    throw std::logic_error(k.name + ": integer arithmetic that i64 does not compute exactly");
  if (ints && k.fault < 0 && !is_copy(k) && divides_integers(*k.ctx, k.body))
    throw std::logic_error(k.name + ": integer division without a fault flag");
  if (k.fault >= 0)
    for (ir::SymId id : k.ctx->reachable(std::span<const ir::SymId>(&k.body, 1)))
      if (ir::sym_op_divides(k.ctx->node(id).op) &&
          (!k.fault_bits.count(id) || std::bit_width(k.fault_bits.at(id)) > k.fault_errors.size()))
        throw std::logic_error(k.name + ": a division without a fault bit and its error");
}

std::string fault_message(const std::vector<std::string>& fault_errors, std::uint32_t flag) {
  const auto bit = static_cast<std::size_t>(std::countr_zero(flag));
  return bit < fault_errors.size() ? fault_errors[bit] : "integer division by zero";
}

void simplify_iteration_space(LoopKernel& k) {
  if (k.dims.empty()) {  // a scalar result: one row of one element
    k.dims.push_back(1);
    for (Leaf& l : k.leaves) l.strides.insert(l.strides.begin(), 0);
  }
  const std::size_t nd = k.dims.size();
  std::vector<std::int64_t> red = k.red_dims;
  // Reduction block first (its strides sit after the result's).
  if (!red.empty()) {
    simplify_block(k, red, nd);
    k.red_dims = red;
  }
  simplify_block(k, k.dims, 0);
  if (k.dims.empty()) return;
  if (k.red_dims.empty() && k.dims.size() == 1 && k.dims[0] >= 8192) {
    // One long walk: split it so the row loop can be shared out.
    for (std::int64_t b = 16384; b >= 1024; --b) {
      if (k.dims[0] % b) continue;
      k.dims = {k.dims[0] / b, b};
      for (Leaf& l : k.leaves) l.strides.insert(l.strides.begin(), l.strides[0] * b);
      break;
    }
  }
  if (!k.red_dims.empty()) {
    // Every result element is a row of its own: the reduction is the work.
    k.dims.push_back(1);
    for (Leaf& l : k.leaves) l.strides.insert(l.strides.begin() + static_cast<std::ptrdiff_t>(k.dims.size() - 1), 0);
  }
}

bool reduces_by_columns(const LoopKernel& k) {
  const std::size_t rank = k.dims.size();
  if (k.reduce == ReduceKind::None || k.red_dims.empty() || rank < 2 || k.dims.back() != 1 || k.fault >= 0 ||
      !ir::is_float(k.compute))
    return false;
  bool along_kept = false;
  for (const Leaf& l : k.leaves) {
    const std::int64_t s = l.strides[rank - 2];
    if (s != 0 && s != 1) return false;
    // (A leaf contiguous along the reduction reads as it is.)
    if (s == 1 && l.strides.back() != 1) along_kept = true;
    if (s == 0 && l.strides.back() == 1) return false;
  }
  return along_kept;
}

LoopKernel split_outer_reduction(LoopKernel& k, std::int64_t parts, BufferId partials, ir::SymId part_var) {
  const std::vector<std::int64_t> kept = k.dims;
  const std::size_t nd = kept.size();
  LoopKernel combine = k;
  combine.name = k.name + " (parts)";
  combine.red_dims = {parts};
  combine.leaves = {Leaf{partials, 0, {}, k.compute}};
  combine.leaf_vars = {part_var};
  combine.body = part_var;
  combine.ops = 0;
  std::int64_t stride = 1;
  std::vector<std::int64_t>& ps = combine.leaves[0].strides;
  ps.assign(nd + 1, 0);
  for (std::size_t d = nd; d-- > 0;) {
    ps[d] = kept[d] == 1 ? 0 : stride;
    stride *= kept[d];
  }
  ps[nd] = stride;  // (the parts, outermost in `partials`)

  const std::int64_t part = k.red_dims[0] / parts;
  k.dims.insert(k.dims.begin(), parts);
  k.red_dims[0] = part;
  for (Leaf& l : k.leaves) l.strides.insert(l.strides.begin(), l.strides[nd] * part);
  k.post = k.acc_var;
  k.out = partials;
  k.out_dtype = k.compute;
  return combine;
}

void reduce_by_columns(LoopKernel& k) {
  if (!reduces_by_columns(k)) return;
  const std::size_t rank = k.dims.size();
  const std::int64_t kept = k.dims[rank - 2];
  std::int64_t block = 0;
  for (std::int64_t b : {64, 32, 16, 8})
    if (kept % b == 0) {
      block = b;
      break;
    }
  if (!block) return;
  k.dims[rank - 2] = kept / block;
  k.dims[rank - 1] = block;
  for (Leaf& l : k.leaves) {
    l.strides[rank - 1] = l.strides[rank - 2];
    l.strides[rank - 2] *= block;
  }
}

std::int64_t kernel_rows(const LoopKernel& k) {
  std::int64_t r = 1;
  for (std::size_t i = 0; i + 1 < k.dims.size(); ++i) r *= k.dims[i];
  return r;
}

void check_bounds(const LoopKernel& k, const std::vector<Buffer>& buffers) {
  std::vector<std::int64_t> all = k.dims;
  all.insert(all.end(), k.red_dims.begin(), k.red_dims.end());
  for (const std::int64_t d : all)
    if (d == 0) return;  // nothing is read
  for (const Leaf& l : k.leaves) {
    if (l.strides.size() != all.size()) throw std::logic_error(k.name + ": a leaf's strides do not fit the loops");
    std::int64_t lo = l.offset, hi = l.offset;
    for (std::size_t i = 0; i < all.size(); ++i) (l.strides[i] > 0 ? hi : lo) += (all[i] - 1) * l.strides[i];
    const Buffer& b = buffers.at(static_cast<std::size_t>(l.buffer));
    if (l.dtype != b.dtype)
      throw std::logic_error(k.name + ": a leaf reads '" + b.name + "' (" + ir::dtype_name(b.dtype) + ") as " +
                             ir::dtype_name(l.dtype));
    const auto n = static_cast<std::int64_t>(b.bytes / ir::dtype_size(b.dtype));
    if (lo < 0 || hi >= n)
      throw std::logic_error(k.name + ": reads elements [" + std::to_string(lo) + ", " + std::to_string(hi) + "] of '" +
                             b.name + "', which has " + std::to_string(n));
  }
}

std::string kernel_signature(const LoopKernel& k) {
  std::string sig;
  auto put = [&sig](auto v) { sig.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto ints = [&](const std::vector<std::int64_t>& v) {
    put(v.size());
    for (auto x : v) put(x);
  };
  ints(k.dims);
  ints(k.red_dims);
  put(k.reduce);
  put(k.out_dtype);
  put(k.compute);
  put(k.fault >= 0);
  put(k.leaves.size());
  for (const Leaf& l : k.leaves) {
    put(l.offset);
    put(l.dtype);
    ints(l.strides);
  }
  // The expression DAGs of body and post, nodes numbered in the order first
  // reached; a variable by what it reads (its leaf, or the accumulator), a
  // division by its fault bit.
  std::map<ir::SymId, std::size_t> number;
  std::map<ir::SymId, std::size_t> leaf;
  for (std::size_t i = 0; i < k.leaf_vars.size(); ++i) leaf.emplace(k.leaf_vars[i], i);
  const ir::SymContext& ctx = *k.ctx;
  std::set<ir::SymId> done;
  for (ir::SymId root : {k.body, k.reduce == ReduceKind::None ? k.body : k.post}) {
    for (ir::SymId id : ctx.post_order(root, done)) {
      const ir::SymNode& n = ctx.node(id);
      const int arity = ir::sym_op_arity(n.op);
      number.emplace(id, number.size());
      put(n.op);
      if (n.op == ir::SymOp::Const) put(n.value);
      if (n.op == ir::SymOp::Var) {
        auto l = leaf.find(id);
        put(l == leaf.end() ? (id == k.acc_var ? std::int64_t{-1} : std::int64_t{-2})
                            : static_cast<std::int64_t>(l->second));
        put(ctx.var_integral(id));
      }
      const ir::SymId kids[] = {n.a, n.b, n.c};
      for (int i = 0; i < arity; ++i) put(number.at(kids[i]));
      if (auto bit = k.fault_bits.find(id); bit != k.fault_bits.end()) put(bit->second);
    }
    put(number.at(root));
  }
  return sig;
}

}  // namespace saturn::lower
