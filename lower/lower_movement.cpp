// Movement: ops that change where elements are, not their values, for
// any element type. split, transpose, slice, expand, windows and
// reshape-like ops (OpDef::view) become strided views of a stored operand
// (nothing runs); concat, gather, gather_elements, tile, resize, pad and
// trilu copy by the geometry of their op kernel in ir/, through the
// target's copy steps.
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "ir/slice.hpp"
#include "lower/lowerer.hpp"

namespace saturn::lower {

using ir::DType;

bool Lowerer::lower_view(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types) {
  if (n.op == "split" && in.size() == 1 && in[0]) {
    // Each part is a slice view of the operand; the parts' sizes are the
    // inferred output types'.
    store(*in[0]);
    const Value& x = *in[0];
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    const auto axis = static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), rank));
    Dims start(x.dims.size(), 0), step(x.dims.size(), 1);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const Dims part = ir::static_dims(out_types[k].shape);
      if (!n.outputs[k].empty()) {
        Value v = x;
        v.view = x.view.sliced(start, step, part);
        v.dims = part;
        values_[n.outputs[k]] = std::move(v);
      }
      start[axis] += part[axis];
    }
    return true;
  }
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const Dims out = ir::static_dims(out_types[0].shape);
  if (n.op == "transpose" && in[0]) {
    Value v = *in[0];
    store(v);
    *in[0] = v;
    v.view = v.view.transposed(ir::transpose_perm(n.attrs, v.dims.size()));
    v.dims = out;
    values_[n.outputs[0]] = std::move(v);
    return true;
  }
  if (n.op == "slice" && in.size() == 1 && in[0]) {
    Value v = *in[0];
    store(v);
    *in[0] = v;
    const ir::SliceSpec spec = ir::slice_spec(n.attrs, v.dims);
    v.view = v.view.sliced(spec.start, spec.step, spec.count);
    v.dims = out;
    values_[n.outputs[0]] = std::move(v);
    return true;
  }
  if (n.op == "windows" && in.size() == 1 && in[0]) {
    // Window (o..., k...) of the trailing axes reads element o s + k d of
    // each: a view whose o and k axes step through the same axis of x (taps
    // of neighbouring windows overlap), so a pooling's reduce_max reads x
    // in place.
    Value v = *in[0];
    store(v);
    *in[0] = v;
    const Dims kernel = n.attrs.ints("kernel_shape");
    const std::size_t lead = v.dims.size() - kernel.size();
    const Dims windows(out.begin() + static_cast<std::ptrdiff_t>(lead),
                       out.begin() + static_cast<std::ptrdiff_t>(lead + kernel.size()));
    v.view = v.view.windowed(lead, windows, kernel, n.attrs.ints("strides", Dims(kernel.size(), 1)),
                             n.attrs.ints("dilations", Dims(kernel.size(), 1)));
    v.dims = out;
    v.is_scalar_constant = false;
    values_[n.outputs[0]] = std::move(v);
    return true;
  }
  if (n.op == "expand" && in[0]) {
    Value v = *in[0];
    if (v.pending) {
      store(*in[0]);
      v = *in[0];
    }
    v.view = v.view.broadcast_to(out);
    v.dims = out;
    values_[n.outputs[0]] = std::move(v);
    return true;
  }
  return false;
}

// A view when the strides allow it (a split of NHWC's channels); else one
// copy kernel, written in the order that makes the reshape a view and
// otherwise keeps the operand's layout (ShuffleNet's channel shuffle of an
// NHWC result stays NHWC), then a free reshape.
bool Lowerer::lower_reshape(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
  store(x);
  Value v = x;
  const Dims to = ir::static_dims(out_type.shape);
  std::optional<View> in_place = v.view.reshaped_in_place(to);
  if (!in_place) in_place = copy_in_order(v, v.view.reshape_copy_order(to)).reshaped_in_place(to);
  if (!in_place) return false;
  v.view = *in_place;
  v.dims = to;
  values_[n.outputs[0]] = v;
  return true;
}

// A copy of the operand viewed [r0 d0 r1 d1 ...] with stride 0 along each
// repeat (any element type), reshaped to [r0 d0, r1 d1, ...].
bool Lowerer::lower_tile(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
  store(x);
  Value v = x;
  const Dims reps = n.attrs.ints("repeats");
  if (reps.size() != v.dims.size() || !std::all_of(reps.begin(), reps.end(), [](std::int64_t r) { return r >= 1; }))
    return false;
  View t = v.view;
  t.dims.clear();
  t.strides.clear();
  for (std::size_t a = 0; a < reps.size(); ++a) {
    t.dims.insert(t.dims.end(), {reps[a], v.dims[a]});
    t.strides.insert(t.strides.end(), {0, v.view.strides[a]});
  }
  v.view = t;
  v.dims = t.dims;
  v.is_scalar_constant = false;
  const Dims out = ir::static_dims(out_type.shape);
  v.view = whole(v).reshaped(out);
  v.dims = out;
  values_[n.outputs[0]] = std::move(v);
  return true;
}

void Lowerer::plan_concat_chains() {
  const std::set<std::string> outputs(graph_->outputs.begin(), graph_->outputs.end());
  const auto single_result = [&](const ir::Node& c) {
    return c.outputs.size() == 1 && !c.outputs[0].empty() && !outputs.count(c.outputs[0]);
  };
  struct Unheld {
    std::size_t node;
    std::int64_t axis;
  };
  std::vector<Unheld> unheld;  // earlier concats no later one holds yet
  for (std::size_t i = 0; i < graph_->nodes.size(); ++i) {
    const ir::Node& c = graph_->nodes[i];
    if (!live_[i] || c.op != "concat" || !single_result(c)) continue;
    const ir::ValueType& t = types_.at(c.outputs[0]);
    const std::int64_t axis = ir::normalize_axis(c.attrs.i("axis", 0), static_cast<std::int64_t>(t.shape.size()));
    // Of the earlier concats this one can hold, the longest: in a DenseNet
    // block every earlier layer's concat is a prefix, the last one longest.
    std::optional<std::size_t> best;
    ConcatGuest guest;
    std::int64_t best_length = 0;
    for (std::size_t k = 0; k < unheld.size(); ++k) {
      const ir::Node& g = graph_->nodes[unheld[k].node];
      const ir::ValueType& gt = types_.at(g.outputs[0]);
      if (unheld[k].axis != axis || gt.dtype != t.dtype || gt.shape.size() != t.shape.size()) continue;
      std::size_t covered = 0;
      if (!c.inputs.empty() && c.inputs[0] == g.outputs[0])
        covered = 1;
      else if (g.inputs.size() < c.inputs.size() && std::equal(g.inputs.begin(), g.inputs.end(), c.inputs.begin()))
        covered = g.inputs.size();
      const std::int64_t length = ir::static_dims(gt.shape)[static_cast<std::size_t>(axis)];
      if (covered && length > best_length) {
        best = k;
        guest = {g.outputs[0], covered};
        best_length = length;
      }
    }
    if (best) {
      concat_host_[guest.result] = c.outputs[0];
      concat_guest_[c.outputs[0]] = guest;
      unheld.erase(unheld.begin() + static_cast<std::ptrdiff_t>(*best));
    }
    unheld.push_back({i, axis});
  }
}

namespace {

// Where a view, seen in `order` (outermost first), lies as equal blocks one
// stride apart, each block the dims from `axis` inwards stored row-major
// (a channel slice of an NHWC result: a pixel's channels, the pixels a
// row apart): a block copy reads it in place. nullopt otherwise.
std::optional<BlockSource> blocks_in_place(const View& v, const Dims& order, std::size_t axis,
                                           std::size_t element_bytes) {
  const View p = v.transposed(order);
  std::int64_t block = 1;
  for (std::size_t i = p.dims.size(); i-- > axis;) {
    if (p.dims[i] == 1) continue;
    if (p.strides[i] != block) return std::nullopt;
    block *= p.dims[i];
  }
  std::optional<std::int64_t> stride;
  std::int64_t next = 0;
  for (std::size_t i = axis; i-- > 0;) {
    if (p.dims[i] == 1) continue;
    if (!stride) {
      stride = p.strides[i];
      next = *stride * p.dims[i];
    } else if (p.strides[i] == next) {
      next *= p.dims[i];
    } else {
      return std::nullopt;
    }
  }
  if (p.offset < 0 || (stride && *stride < block)) return std::nullopt;
  return BlockSource{v.buffer, static_cast<std::size_t>(p.offset) * element_bytes,
                     static_cast<std::size_t>(stride.value_or(block)) * element_bytes};
}

// Every operand has one element along the axis: the concat stacks them
// along it (torch.stack, or ShuffleNet's channel shuffle after
// rulesets/views.rules' shuffle-as-stack).
bool stacks(const std::vector<Value*>& in, std::size_t axis) {
  return std::all_of(in.begin(), in.end(), [&](const Value* v) { return v->dims.at(axis) == 1; });
}

// `order` with the stacking axis placed right inside the axis before it,
// so that a reshape merging the two reads the result where it is: the
// shuffle's [N C 2 H W] over channels-last operands is then laid out
// N H W C 2, which is its [N 2C H W] reshape's channels-last layout,
// where the operands' own order would put the 2 outermost and the reshape
// would copy. Axis 0 goes first.
Dims stack_order(const Dims& order, std::size_t axis) {
  Dims o;
  for (std::int64_t d : order)
    if (d != static_cast<std::int64_t>(axis)) o.push_back(d);
  const auto at = axis == 0 ? o.begin() : std::find(o.begin(), o.end(), static_cast<std::int64_t>(axis) - 1) + 1;
  o.insert(at, static_cast<std::int64_t>(axis));
  return o;
}

}  // namespace

// Operands stored in one shared dimension order (oneDNN's NHWC results
// seen as NCHW, and slices of them) are concatenated in that order, and the
// result keeps it: neither the operands nor the result's consumers (the
// next convolution) convert layouts. Otherwise every operand is row-major.
// An operand whose blocks lie one stride apart in that order is read where
// it is (ShuffleNet's half of the previous block's channels); any other is
// copied first. A concat in a chain (plan_concat_chains) writes into the
// chain's buffer, in the order its first concat chose.
void Lowerer::lower_concat(const ir::Node& n, std::vector<Value*>& in, const ir::ValueType& out_type) {
  const Dims out = ir::static_dims(out_type.shape);
  const auto axis =
      static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(out.size())));
  std::string last = n.outputs[0];
  for (auto h = concat_host_.find(last); h != concat_host_.end(); h = concat_host_.find(last)) last = h->second;
  const auto guest = concat_guest_.find(n.outputs[0]);
  const bool chained = last != n.outputs[0] || guest != concat_guest_.end();
  const auto storage = concat_storage_.find(last);
  std::optional<Dims> order;
  if (storage != concat_storage_.end()) {
    order = storage->second.order;
  } else {
    for (Value* v : in) {
      store(*v);
      if (v->is_scalar_constant) {
        order.reset();
        break;
      }
      const Dims o = v->view.order();
      if (order && *order != o) {
        order.reset();
        break;
      }
      order = o;
    }
  }
  if (chained) {
    lower_chained_concat(n, in, out, axis, order ? *order : identity_order(out.size()), last);
    return;
  }
  if (order && stacks(in, axis)) order = stack_order(*order, axis);
  const bool shared_order = order.has_value();
  if (!shared_order) order = identity_order(out.size());
  const View y = ordered_buffer(out_type.dtype, out, *order, n.outputs[0]);
  const auto physical_axis = static_cast<std::size_t>(
      std::find(order->begin(), order->end(), static_cast<std::int64_t>(axis)) - order->begin());
  const std::size_t element_bytes = ir::dtype_size(out_type.dtype);
  std::vector<BlockSource> srcs;
  std::vector<Dims> physical;
  for (Value* v : in) {
    // Operands after the one that ended the search for a shared order may
    // be pending still: stored row-major, as the result is.
    srcs.push_back(concat_source(*v, *order, physical_axis, element_bytes, shared_order, y.buffer));
    physical.push_back(v->view.transposed(*order).dims);
  }
  const BlockCopy c = concat_block_copy(srcs, physical, physical_axis, element_bytes, y.buffer);
  p_->steps.push_back(target_->block_copy(c, "concat (" + std::to_string(c.parts.size()) + " block copies)"));
  Value r = stored(y.buffer);
  r.view = y;
  r.dims = out;
  values_[n.outputs[0]] = std::move(r);
}

BlockSource Lowerer::concat_source(Value& v, const Dims& order, std::size_t physical_axis, std::size_t element_bytes,
                                   bool any_order, BufferId dst) {
  store(v, "", any_order);
  // A view of the buffer being written (a chain's) is copied out first:
  // memcpy must not read what the same copy writes.
  if (!v.is_scalar_constant && v.view.buffer != dst)
    if (std::optional<BlockSource> src = blocks_in_place(v.view, order, physical_axis, element_bytes)) return *src;
  return {copy_in_order(v, order).buffer};
}

void Lowerer::lower_chained_concat(const ir::Node& n, std::vector<Value*>& in, const Dims& out, std::size_t axis,
                                   const Dims& order, const std::string& last) {
  auto storage = concat_storage_.find(last);
  if (storage == concat_storage_.end()) {
    const ir::ValueType& t = types_.at(last);
    const View y = ordered_buffer(t.dtype, ir::static_dims(t.shape), order, last);
    storage = concat_storage_.emplace(last, ConcatStorage{y, order}).first;
  }
  const View& y = storage->second.view;
  // Leading operands already in place: the held concat's, when it was
  // lowered into this buffer (not folded as a constant, not a reference).
  std::size_t held = 0;
  if (const auto g = concat_guest_.find(n.outputs[0]); g != concat_guest_.end()) {
    const auto v = values_.find(g->second.result);
    if (v != values_.end() && !v->second.pending && v->second.view.buffer == y.buffer) held = g->second.operands;
  }
  const auto physical = [&](const Dims& dims) {
    Dims p;
    for (std::int64_t k : order) p.push_back(dims[static_cast<std::size_t>(k)]);
    return p;
  };
  // Parts of the chain's buffer this concat does not write (before and
  // after its own operands) are sources -1, dropped from the plan.
  std::vector<BlockSource> srcs;
  std::vector<Dims> dims;
  const auto untouched = [&](std::int64_t length) {
    if (length <= 0) return;
    Dims d = y.dims;
    d[axis] = length;
    srcs.push_back({});
    dims.push_back(physical(d));
  };
  const auto physical_axis =
      static_cast<std::size_t>(std::find(order.begin(), order.end(), static_cast<std::int64_t>(axis)) - order.begin());
  const std::size_t element_bytes = ir::dtype_size(buffer(y.buffer).dtype);
  std::int64_t at = 0;
  for (std::size_t k = 0; k < held; ++k) at += in[k]->dims[axis];
  untouched(at);
  for (std::size_t k = held; k < in.size(); ++k) {
    Value& v = *in[k];
    srcs.push_back(concat_source(v, order, physical_axis, element_bytes, true, y.buffer));
    dims.push_back(physical(v.dims));
    at += v.dims[axis];
  }
  untouched(y.dims[axis] - at);
  BlockCopy c = concat_block_copy(srcs, dims, physical_axis, element_bytes, y.buffer);
  std::erase_if(c.parts, [](const BlockCopy::Part& p) { return p.src < 0; });
  // Shared unless it is the chain's last and its guest is not in place
  // (a concat of weights, folded when lowered).
  const bool shared = held > 0 || last != n.outputs[0];
  if (!c.parts.empty())
    p_->steps.push_back(target_->block_copy(
        c, "concat (" + std::to_string(c.parts.size()) + " block copies" + (shared ? ", into a shared buffer)" : ")")));
  Value r = stored(y.buffer);
  r.view = y.sliced(Dims(out.size(), 0), Dims(out.size(), 1), out);
  r.dims = out;
  values_[n.outputs[0]] = std::move(r);
}

void Lowerer::lower_gather(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type) {
  const auto axis =
      static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(data.dims.size())));
  const BufferId src = whole(data).buffer, idx = whole(indices).buffer;
  const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, ir::static_dims(out_type.shape), n.outputs[0]);
  const ir::GatherRows g = ir::gather_rows(data.dims, axis, static_cast<std::size_t>(ir::numel(indices.dims)),
                                           ir::dtype_size(out_type.dtype));
  const std::string label =
      "gather (" + std::to_string(g.result_rows()) + " rows of " + std::to_string(g.row_bytes) + " B)";
  p_->steps.push_back(target_->gather(g, indices.dtype == DType::I64, src, idx, y, label, ir::describe(n)));
  values_[n.outputs[0]] = stored(y);
}

void Lowerer::lower_gather_elements(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type) {
  const auto axis =
      static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(data.dims.size())));
  const BufferId src = whole(data).buffer, idx = whole(indices).buffer;
  const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, ir::static_dims(out_type.shape), n.outputs[0]);
  const ir::GatherElements g =
      ir::gather_elements_geometry(data.dims, indices.dims, axis, ir::dtype_size(out_type.dtype));
  const std::size_t count = static_cast<std::size_t>(ir::numel(indices.dims));
  const std::string label = "gather_elements (" + std::to_string(count) + " elements)";
  p_->steps.push_back(
      target_->gather_elements(g, count, indices.dtype == DType::I64, src, idx, y, label, ir::describe(n)));
  values_[n.outputs[0]] = stored(y);
}

void Lowerer::lower_resize(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
  const ir::ResizeSpec spec = ir::resize_spec(n.attrs, x.dims);
  if (spec.mode != "nearest" && x.dtype != DType::F32) {
    lower_reference(n, {out_type});
    return;
  }
  const std::vector<ir::ResizePass> passes = ir::resize_passes(spec, x.dims);
  if (passes.empty()) {  // every axis as it is
    values_[n.outputs[0]] = x;
    return;
  }
  BufferId src = whole(x).buffer;
  const std::size_t esize = ir::dtype_size(x.dtype);
  // The extrapolation value as the element type stores it, as bits.
  ir::Tensor fill_value(x.dtype, {1});
  fill_value.set(0, spec.extrapolation);
  std::uint64_t fill = 0;
  std::memcpy(&fill, fill_value.bytes(), esize);
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const ir::ResizePass& pass = passes[k];
    const BufferId dst =
        add_buffer(BufferKind::Temp, x.dtype, pass.out_dims,
                   k + 1 == passes.size() ? n.outputs[0] : n.outputs[0] + " (axis " + std::to_string(pass.axis) + ")");
    const std::string label = "resize " + spec.mode + " axis " + std::to_string(pass.axis) + " (" +
                              std::to_string(pass.taps.in) + " -> " + std::to_string(pass.taps.out) + ", " +
                              std::to_string(pass.taps.taps) + " taps)";
    p_->steps.push_back(target_->resize_pass(pass, esize, fill, src, dst, label));
    src = dst;
  }
  values_[n.outputs[0]] = stored(src);
}

void Lowerer::lower_pad(const ir::Node& n, Value& x) {
  values_[n.outputs[0]] =
      stored(emit_pad(x, n.attrs.ints("pads"), n.attrs.s("mode", "constant"), n.attrs.f("value", 0.0), n.outputs[0]));
}

BufferId Lowerer::emit_pad(Value& x, const Dims& pads, const std::string& mode, double value, const std::string& name) {
  return pad_rows_step(whole(x).buffer, x.dims, pads, x.dtype, mode, value, name);
}

View Lowerer::pad_in_layout(Value& x, const Dims& pads, const std::string& mode, double value,
                            const std::string& name) {
  View d = dense(x);
  if (d.offset != 0) d = copy_in_order(x, d.order());
  // Padded as the buffer's own row-major dims (the logical ones in x's
  // order), the pads permuted alike.
  const Dims order = d.order();
  const std::size_t rank = x.dims.size();
  Dims physical, physical_pads(2 * rank), inverse(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const auto a = static_cast<std::size_t>(order[i]);
    physical.push_back(x.dims[a]);
    physical_pads[i] = pads[a];
    physical_pads[rank + i] = pads[rank + a];
    inverse[a] = static_cast<std::int64_t>(i);
  }
  Dims padded = physical;
  for (std::size_t i = 0; i < rank; ++i) padded[i] += physical_pads[i] + physical_pads[rank + i];
  // A constant pad copies rows of the innermost dim: the trailing dims it
  // does not pad join the one before (an NHWC value padded in H and W is
  // copied in rows of W C elements, not of C: 113 rows for ResNet's stem
  // where there were 12769).
  Dims rows = physical, row_pads = physical_pads;
  if (mode == "constant")
    while (rows.size() > 1 && row_pads[rows.size() - 1] == 0 && row_pads[2 * rows.size() - 1] == 0) {
      const std::size_t r = rows.size();
      const std::int64_t inner = rows[r - 1];
      Dims merged(row_pads.begin(), row_pads.begin() + static_cast<std::ptrdiff_t>(r - 1));
      merged.insert(merged.end(), row_pads.begin() + static_cast<std::ptrdiff_t>(r),
                    row_pads.begin() + static_cast<std::ptrdiff_t>(2 * r - 1));
      merged[r - 2] *= inner;
      merged[2 * (r - 1) - 1] *= inner;
      row_pads = std::move(merged);
      rows.pop_back();
      rows.back() *= inner;
    }
  const BufferId y = pad_rows_step(d.buffer, rows, row_pads, x.dtype, mode, value, name);
  return View::of(y, padded).transposed(inverse);
}

BufferId Lowerer::pad_rows_step(BufferId src, const Dims& dims, const Dims& pads, DType t, const std::string& mode,
                                double value, const std::string& name) {
  const ir::PadRows p = ir::pad_rows(dims, pads, ir::pad_mode(mode), ir::dtype_size(t));
  const BufferId y = add_buffer(BufferKind::Temp, t, p.out_dims, name);
  ir::Tensor fill(t, {1});
  fill.set(0, value);
  const std::vector<std::uint8_t> fill_bytes(fill.bytes(), fill.bytes() + fill.nbytes());
  p_->steps.push_back(target_->pad(p, fill_bytes, src, y, "pad (" + mode + ", " + std::to_string(p.rows()) + " rows)"));
  return y;
}

void Lowerer::lower_trilu(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
  const BufferId src = whole(x).buffer;
  const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, x.dims, n.outputs[0]);
  const ir::TriluRows t =
      ir::trilu_rows(x.dims, n.attrs.i("k", 0), n.attrs.i("upper", 1) != 0, ir::dtype_size(out_type.dtype));
  const std::string label =
      std::string("trilu (") + (t.upper ? "upper" : "lower") + ", " + std::to_string(t.result_rows()) + " rows)";
  p_->steps.push_back(target_->trilu(t, src, y, label));
  values_[n.outputs[0]] = stored(y);
}

}  // namespace saturn::lower
