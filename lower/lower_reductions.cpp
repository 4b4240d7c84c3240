// Reductions and normalizations as loop kernels reading their operands in
// place (pending operands are fused into the reduction's body): reduce_*,
// softmax, layer / instance / batch norm, lrn, global pooling, einsum, and
// argmax / argmin through the target's step. Sums are kept in f32 (f64 for
// f64 values), as the reference's double sums round to the result.
#include <algorithm>
#include <limits>
#include <map>

#include "ir/einsum.hpp"
#include "ir/pool.hpp"
#include "lower/lowerer.hpp"

namespace saturn::lower {

using ir::DType;
using ir::SymId;

namespace {
// How each reduce_* accumulates (reduce_log_sum_exp: the shifted sum).
const std::map<std::string, ReduceKind>& reduction_kinds() {
  static const std::map<std::string, ReduceKind> kinds = {
      {"reduce_sum", ReduceKind::Sum},        {"reduce_mean", ReduceKind::Sum},
      {"reduce_max", ReduceKind::Max},        {"reduce_min", ReduceKind::Min},
      {"reduce_sum_square", ReduceKind::Sum}, {"reduce_l1", ReduceKind::Sum},
      {"reduce_l2", ReduceKind::Sum},         {"reduce_prod", ReduceKind::Prod},
      {"reduce_log_sum", ReduceKind::Sum},    {"reduce_log_sum_exp", ReduceKind::Sum}};
  return kinds;
}
}  // namespace

bool Lowerer::is_reduction(const std::string& op) { return reduction_kinds().count(op) != 0; }

bool Lowerer::lower_reduction(const ir::Node& n, Value& x, const Dims& out) {
  // (Bools: max and min, any and all, over their 0 and 1.)
  const bool logic = x.dtype == DType::Bool && (n.op == "reduce_max" || n.op == "reduce_min");
  if ((!ir::is_float(x.dtype) && !logic) || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (n.attrs.i("noop_with_empty_axes", 0) && n.attrs.ints("axes").empty()) return false;
  const DType compute = float_compute(x);
  const Dims full = x.dims;
  std::vector<bool> red(full.size(), n.attrs.ints("axes").empty());
  for (auto a : n.attrs.ints("axes"))
    red[static_cast<std::size_t>(ir::normalize_axis(a, static_cast<std::int64_t>(full.size())))] = true;
  if (n.op == "reduce_log_sum_exp") read_in_several_kernels(x);
  const int ops = 1 + (x.pending && x.dims == out ? x.ops : 0);
  ir::Sym xs(ctx_.get(), expr_over(x, full));
  ir::Sym acc(ctx_.get(), acc_);
  if (n.op == "reduce_log_sum_exp") {
    // log(sum(exp(x - max))) + max, as the op's kernel computes it; an
    // empty reduction is log(0) + -inf = -inf.
    Value top = reduce(xs.id(), full, red, ReduceKind::Max, acc.id(), 1, n.op + " max", compute, compute);
    ir::Sym shifted = xs - sym(expr_over(top, full));
    Value sum =
        reduce(ir::scalar::exp(shifted).id(), full, red, ReduceKind::Sum, acc.id(), 0, n.op + " sum", compute, compute);
    // The sum and the maximum, kept in the compute type, meet in the result.
    ir::Sym y = ir::scalar::log(sym(leaf(sum.view))) + sym(leaf(top.view));
    Value r = stored(add_buffer(BufferKind::Temp, x.dtype, sum.dims, n.outputs[0]));
    emit_kernel(sum.dims, {}, ReduceKind::None, y.id(), 0, r.view.buffer, ops, n.op, {}, compute);
    values_[n.outputs[0]] = reshaped_to(r, out);
    return true;
  }
  ir::Sym body = xs;
  if (n.op == "reduce_sum_square" || n.op == "reduce_l2") body = xs * xs;
  if (n.op == "reduce_l1") body = ir::scalar::abs(xs);
  ir::Sym post = acc;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < full.size(); ++d)
    if (red[d]) count *= full[d];
  if (n.op == "reduce_mean") post = acc / static_cast<double>(count);
  if (n.op == "reduce_l2") post = ir::scalar::sqrt(acc);
  if (n.op == "reduce_log_sum") post = ir::scalar::log(acc);
  values_[n.outputs[0]] = reshaped_to(reduce(body.id(), full, red, reduction_kinds().at(n.op), post.id(), ops, n.op,
                                             x.dtype, compute, kept_dims_order(x, red)),
                                      out);
  return true;
}

bool Lowerer::lower_max_pool(const ir::Node& n, Value& x, const Dims& out) {
  if (!ir::is_float(x.dtype) || x.dims.size() < 3 || n.outputs.empty() || n.outputs[0].empty() ||
      (n.outputs.size() > 1 && !n.outputs[1].empty()))
    return false;
  const ir::PoolWindow p = ir::pool_window(n.attrs, x.dims, true);
  const std::size_t rank = x.dims.size(), lead = rank - p.w.kernel.size();
  if (std::any_of(p.w.out.begin(), p.w.out.end(), [](std::int64_t o) { return o <= 0; })) return false;
  const auto [begin, end] = ir::reached_pads(p);
  Dims pads(2 * rank, 0);
  std::copy(begin.begin(), begin.end(), pads.begin() + static_cast<std::ptrdiff_t>(lead));
  std::copy(end.begin(), end.end(), pads.begin() + static_cast<std::ptrdiff_t>(rank + lead));
  const bool padded = std::any_of(pads.begin(), pads.end(), [](std::int64_t q) { return q > 0; });
  const DType compute = float_compute(x);
  store(x);
  Value src = x;
  if (padded) {
    src.view = pad_in_layout(x, pads, "constant", -std::numeric_limits<double>::infinity(), n.outputs[0] + " padded");
    src.dims = src.view.dims;
  }
  Value windows = src;
  windows.view = src.view.windowed(lead, p.w.out, p.w.kernel, p.w.strides, p.w.dilations);
  windows.dims = windows.view.dims;
  std::vector<bool> red(windows.dims.size(), false);
  std::fill(red.begin() + static_cast<std::ptrdiff_t>(rank), red.end(), true);
  ir::Sym acc(ctx_.get(), acc_);
  std::string label = "max_pool loop (window";
  for (std::int64_t k : p.w.kernel) label += " " + std::to_string(k);
  label += ")";
  values_[n.outputs[0]] = reshaped_to(reduce(expr_over(windows, windows.dims), windows.dims, red, ReduceKind::Max,
                                             acc.id(), 1, label, x.dtype, compute, kept_dims_order(windows, red)),
                                      out);
  // (Its windows always hold an element of x: its maximum is no larger.)
  p_->steps.back().bounded_by = {x.view.buffer};
  return true;
}

// A stored operand's kept dims in its own layout's order (a pooling's
// windows of an NHWC value: N, OH, OW, then C), the reduced ones after: the
// result keeps the operand's layout, and the kernel reduces columns of its
// innermost kept dim (reduce_by_columns). Empty (row-major) where the
// operand is pending or its kept dims are in row-major order already.
Dims Lowerer::kept_dims_order(const Value& x, const std::vector<bool>& reduced) {
  if (x.pending || x.is_scalar_constant) return {};
  Dims kept, dropped;
  for (std::int64_t d : x.view.order()) (reduced[static_cast<std::size_t>(d)] ? dropped : kept).push_back(d);
  if (std::is_sorted(kept.begin(), kept.end())) return {};
  kept.insert(kept.end(), dropped.begin(), dropped.end());
  return kept;
}

bool Lowerer::lower_softmax(const ir::Node& n, Value& x) {
  if (!ir::is_float(x.dtype) || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const DType compute = float_compute(x);
  const Dims full = x.dims;
  std::vector<bool> red(full.size(), false);
  red[static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", -1), static_cast<std::int64_t>(full.size())))] =
      true;
  read_in_several_kernels(x);
  const int ops = 1 + (x.pending ? x.ops : 0);
  SymId xs = expr_over(x, full);
  ir::Sym acc(ctx_.get(), acc_);
  Value top = reduce(xs, full, red, ReduceKind::Max, acc.id(), 1, n.op + " max", compute, compute);
  ir::Sym shifted = sym(xs) - sym(expr_over(top, full));
  Value sum =
      reduce(ir::scalar::exp(shifted).id(), full, red, ReduceKind::Sum, acc.id(), 0, n.op + " sum", compute, compute);
  ir::Sym s(ctx_.get(), expr_over(sum, full));
  ir::Sym y = n.op == "softmax" ? ir::scalar::exp(shifted) / s : shifted - ir::scalar::log(s);
  std::vector<Value*> in{&x};
  set_pending(n, in, full, x.dtype, y.id(), ops, 0, compute);
  return true;
}

bool Lowerer::lower_norm(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types) {
  const Dims out = ir::static_dims(out_types[0].shape);
  auto set = [&](Value v) { values_[n.outputs[0]] = std::move(v); };
  auto pending = [&](SymId s, int ops) { set_pending(n, in, out, DType::F32, s, ops); };
  auto operand_ops = [&](std::initializer_list<Value*> vs) {
    int k = 0;
    for (Value* v : vs)
      if (v && v->pending && v->dims == out) k += v->ops;
    return k;
  };
  if ((n.op == "global_avg_pool" || n.op == "global_max_pool") && in[0]->dims.size() > 2) {
    Value& x = *in[0];
    std::vector<bool> red(x.dims.size(), true);
    red[0] = red[1] = false;
    std::int64_t count = ir::numel(x.dims) / (x.dims[0] * x.dims[1]);
    ir::Sym acc(ctx_.get(), acc_);
    ir::Sym post = n.op == "global_avg_pool" ? acc / static_cast<double>(count) : acc;
    set(reshaped_to(reduce(expr_over(x, x.dims), x.dims, red,
                           n.op == "global_avg_pool" ? ReduceKind::Sum : ReduceKind::Max, post.id(), 1, n.op),
                    out));
    return true;
  }
  if (n.op == "layer_norm" && in.size() >= 1) {
    Value& x = *in[0];
    const Dims full = x.dims;
    auto axis =
        static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", -1), static_cast<std::int64_t>(full.size())));
    std::vector<bool> red(full.size(), false);
    std::int64_t count = 1;
    for (std::size_t d = axis; d < full.size(); ++d) {
      red[d] = true;
      count *= full[d];
    }
    read_in_several_kernels(x);
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym acc(ctx_.get(), acc_);
    Value mean =
        reduce(xs.id(), full, red, ReduceKind::Sum, (acc / static_cast<double>(count)).id(), 1, "layer_norm mean");
    ir::Sym d = xs - sym(expr_over(mean, full));
    Value var =
        reduce((d * d).id(), full, red, ReduceKind::Sum, (acc / static_cast<double>(count)).id(), 0, "layer_norm var");
    ir::Sym y = d / ir::scalar::sqrt(sym(expr_over(var, full)) + n.attrs.f("epsilon", 1e-5));
    // scale and bias broadcast over the normalized block (their shape is a suffix of it)
    if (in.size() > 1 && in[1]) y = y * sym(expr_over(*in[1], full));
    if (in.size() > 2 && in[2]) y = y + sym(expr_over(*in[2], full));
    pending(y.id(), 1 + operand_ops({&x}));
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) values_[n.outputs[1]] = mean;
    if (n.outputs.size() > 2 && !n.outputs[2].empty()) {
      const ir::Sym v(ctx_.get(), expr_over(var, var.dims));
      set_pending(n, in, var.dims, DType::F32, (1.0 / ir::scalar::sqrt(v + n.attrs.f("epsilon", 1e-5))).id(), 1, 2);
    }
    return true;
  }
  if (n.op == "instance_norm" && in.size() == 3 && in[0] && in[1] && in[2] && in[0]->dims.size() >= 3) {
    // Per (n, c): the mean and (biased) variance over the spatial dims,
    // two passes as layer_norm's; then the channel's scale and bias.
    Value& x = *in[0];
    const Dims full = x.dims;
    std::vector<bool> red(full.size(), true);
    red[0] = red[1] = false;
    const auto count = static_cast<double>(ir::numel(full) / (full[0] * full[1]));
    read_in_several_kernels(x);
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym acc(ctx_.get(), acc_);
    Value mean = reduce(xs.id(), full, red, ReduceKind::Sum, (acc / count).id(), 1, "instance_norm mean");
    ir::Sym d = xs - sym(expr_over(mean, full));
    Value var = reduce((d * d).id(), full, red, ReduceKind::Sum, (acc / count).id(), 0, "instance_norm var");
    ir::Sym y =
        d / ir::scalar::sqrt(sym(expr_over(var, full)) + n.attrs.f("epsilon", 1e-5)) * sym(channel(*in[1], full)) +
        sym(channel(*in[2], full));
    pending(y.id(), 1 + operand_ops({&x}));
    return true;
  }
  if (n.op == "lrn" && in.size() == 1 && in[0] && in[0]->dims.size() >= 2) {
    // The squares' window sum over channels [c - (size-1)/2, c + size/2]: x
    // padded with zeros along C (one row-copy step), then a loop kernel
    // over [N C ... size] reading the window as one more axis of C's
    // stride; the result a pending x / (bias + alpha/size sum)^beta.
    Value& x = *in[0];
    const Dims full = x.dims;
    const std::size_t r = full.size();
    const std::int64_t size = n.attrs.i("size", 1);
    Dims pads(2 * r, 0);
    pads[1] = (size - 1) / 2;
    pads[r + 1] = size / 2;
    const BufferId padded = emit_pad(x, pads, "constant", 0.0, n.outputs[0] + " padded");
    const Buffer& pb = p_->buffers[static_cast<std::size_t>(padded)];
    View window = View::of(padded, pb.dims);
    window.dims = full;
    window.dims.push_back(size);
    window.strides.push_back(window.strides[1]);
    Dims wide = window.dims;
    std::vector<bool> red(wide.size(), false);
    red.back() = true;
    ir::Sym w(ctx_.get(), leaf(window));
    Value sq = reshaped_to(reduce((w * w).id(), wide, red, ReduceKind::Sum, acc_, 0, "lrn window"), full);
    const double alpha = n.attrs.f("alpha", 1e-4), beta = n.attrs.f("beta", 0.75), bias = n.attrs.f("bias", 1.0);
    ir::Sym base = sym(expr_over(sq, full)) * (alpha / static_cast<double>(size)) + bias;
    ir::Sym y = sym(expr_over(x, full)) / ir::scalar::pow(base, base.lift(beta));
    pending(y.id(), 1 + operand_ops({&x}));
    return true;
  }
  if (n.op == "batch_norm" && in.size() == 5 && in[0]->dims.size() >= 2) {
    Value& x = *in[0];
    const Dims full = x.dims;
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym y = (xs - sym(channel(*in[3], full))) /
                    ir::scalar::sqrt(sym(channel(*in[4], full)) + n.attrs.f("epsilon", 1e-5)) *
                    sym(channel(*in[1], full)) +
                sym(channel(*in[2], full));
    pending(y.id(), 1 + operand_ops({&x}));
    return true;
  }
  return false;
}

bool Lowerer::lower_einsum(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  if (in.empty() || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const DType t = in[0] ? in[0]->dtype : DType::Bool;
  std::vector<std::vector<std::int64_t>> shapes;
  for (Value* v : in) {
    if (!v || v->dtype != t || !ir::is_float(t)) return false;
    shapes.push_back(v->dims);
  }
  const ir::EinsumPlan plan = ir::einsum_plan(n.attrs.s("equation", ""), shapes);
  std::string letters = plan.out;
  for (const auto& [ch, size] : plan.size)
    if (letters.find(ch) == std::string::npos) letters += ch;
  Dims full;
  for (char ch : letters) full.push_back(plan.size.at(ch));
  std::vector<bool> red(letters.size(), false);
  for (std::size_t i = plan.out.size(); i < letters.size(); ++i) red[i] = true;
  const DType compute = float_compute(*in[0]);
  std::optional<ir::Sym> body;
  for (std::size_t k = 0; k < in.size(); ++k) {
    Value& v = *in[k];
    if (v.pending || v.is_scalar_constant) v.view = whole(v);
    View lv = v.view;
    lv.dims = full;
    lv.strides.assign(full.size(), 0);
    for (std::size_t i = 0; i < plan.terms[k].size(); ++i)
      if (v.dims[i] != 1) lv.strides[letters.find(plan.terms[k][i])] += v.view.strides[i];
    ir::Sym term(ctx_.get(), leaf(lv));
    body = body ? *body * term : term;
  }
  const std::string& name = n.outputs[0];
  if (plan.out.size() == letters.size()) {  // nothing summed: a pending product
    set_pending(n, in, out, t, body->id(), 1, 0, compute);
    return true;
  }
  values_[name] = reshaped_to(
      reduce(body->id(), full, red, ReduceKind::Sum, acc_, 1, "einsum " + n.attrs.s("equation", ""), t, compute), out);
  return true;
}

void Lowerer::lower_arg_reduce(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
  const BufferId src = whole(x).buffer,
                 y = add_buffer(BufferKind::Temp, DType::I64, ir::static_dims(out_type.shape), n.outputs[0]);
  const auto axis =
      static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(x.dims.size())));
  const ir::ArgReduce g =
      ir::arg_reduce_geometry(x.dims, axis, n.op == "argmax", n.attrs.i("select_last_index", 0) != 0);
  const std::string label = n.op + " (" + std::to_string(g.results()) + " of " + std::to_string(g.count) + ")";
  p_->steps.push_back(target_->arg_reduce(g, x.dtype, src, y, label));
  values_[n.outputs[0]] = stored(y);
}

}  // namespace saturn::lower
