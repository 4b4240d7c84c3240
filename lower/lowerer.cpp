#include "lower/lowerer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "ir/memory_limit.hpp"
#include "lower/memory_plan.hpp"

namespace saturn::lower {

namespace {

using ir::DType;
using ir::SymId;

// One result, and `count` operands all given (any count when -1).
bool plain(const ir::Node& n, const std::vector<Value*>& in, int count) {
  return n.outputs.size() == 1 && !n.outputs[0].empty() &&
         (count < 0 || in.size() == static_cast<std::size_t>(count)) &&
         std::all_of(in.begin(), in.end(), [](const Value* v) { return v != nullptr; });
}
Dims dims(const std::vector<ir::ValueType>& out) { return ir::static_dims(out[0].shape); }

// Whether the extractor chose a library to run n (blas.gemm, dnnl.conv, ...).
bool library(const ir::Node& n) {
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  return def && def->kind == ir::OpKind::Library;
}

// Copies the elements of a view, row-major, into dst.
void copy_view(const std::uint8_t* base, std::size_t esize, const View& v, std::uint8_t* dst) {
  ir::copy_strided(base, esize, v.dims, v.strides, v.offset, dst);
}

// The `given` flags of an op kernel's call (a bool array: std::vector<bool>
// has none to point into).
std::unique_ptr<bool[]> given_flags(const std::vector<std::string>& inputs) {
  auto g = std::make_unique<bool[]>(inputs.size() + 1);
  for (std::size_t i = 0; i < inputs.size(); ++i) g[i] = !inputs[i].empty();
  return g;
}

}  // namespace

Lowerer::Lowerer(const ir::Graph& g, const LoweringOptions& o) : o_(o), graph_(std::make_shared<ir::Graph>(g)) {}

Diagnostic Lowerer::at_graph(std::string msg) const {
  Diagnostic d;
  d.loc.file = graph_->source;
  d.message = std::move(msg);
  return d;
}

void Lowerer::fail(const ir::Node& n, const std::string& msg) const {
  throw DiagnosticError{Diagnostic{{graph_->source, 0, 0}, ir::describe(n) + ": " + msg}};
}

BufferId Lowerer::add_weight(const ir::Tensor* t, const std::string& name) {
  BufferId b = add_buffer(BufferKind::Weight, t->dtype(), t->dims(), name);
  p_->buffers[static_cast<std::size_t>(b)].weight = t;
  return b;
}

Value Lowerer::stored(BufferId b) const {
  const Buffer& buf = buffer(b);
  Value v;
  v.dtype = buf.dtype;
  v.dims = buf.dims;
  v.view = View::of(b, buf.dims);
  if (buf.kind == BufferKind::Weight && kernel_dtype(buf.dtype) && buf.weight->numel() == 1) {
    v.is_scalar_constant = true;
    v.constant = buf.weight->at(0);
  }
  return v;
}

Value Lowerer::reshaped_to(Value v, const Dims& out) {
  if (v.dims != out) {
    // (in place: a reduction's result laid out in its operand's order)
    std::optional<View> in_place = v.view.reshaped_in_place(out);
    v.view = in_place ? *in_place : v.view.reshaped(out);
    v.dims = out;
  }
  return v;
}

SymId Lowerer::leaf(const View& v) {
  ir::Sym var = ctx_->var("l" + std::to_string(leaf_views_.size()));
  leaf_views_.emplace(var.id(), v);
  return var.id();
}

SymId Lowerer::expr_over(Value& v, const Dims& dims) {
  if (v.is_scalar_constant) return ctx_->constant(v.constant).id();
  if (v.pending && v.dims == dims) return v.sym;
  if (v.pending) store(v);
  return leaf(v.view.broadcast_to(dims));
}

void Lowerer::store(Value& v, std::string what, bool any_order) {
  if (!v.pending) return;
  if (what.empty()) what = v.label.empty() ? "fused" : v.label;
  const Dims order = operand_order(v, any_order);
  const View out = ordered_buffer(v.dtype, v.dims, order, what);
  emit_kernel(v.dims, {}, ReduceKind::None, v.sym, 0, out.buffer, v.ops, what, order, v.compute);
  v.pending = false;
  v.view = out;
}

View Lowerer::ordered_buffer(DType t, const Dims& dims, const Dims& order, const std::string& name) {
  Dims physical, inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    physical.push_back(dims[static_cast<std::size_t>(order[i])]);
    inverse[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
  }
  return View::of(add_buffer(BufferKind::Temp, t, physical, name), physical).transposed(inverse);
}

// The dimension order shared by every full-size operand of a pending value
// that is dense, or a slice of a dense layout (a concat's start in its
// chain's buffer, channels of an NHWC result); row-major when they disagree
// or there are none.
Dims Lowerer::operand_order(const Value& v, bool any_order) {
  const Dims identity = identity_order(v.dims.size());
  if (!any_order) return identity;
  const auto laid_out = [](const View& w) {
    for (std::size_t d = 0; d < w.dims.size(); ++d)
      if (w.dims[d] > 1 && w.strides[d] <= 0) return false;  // broadcast or reversed
    return true;
  };
  std::optional<Dims> shared;
  for (SymId id : ctx_->reachable(std::span<const SymId>(&v.sym, 1))) {
    auto it = leaf_views_.find(id);
    if (it == leaf_views_.end() || it->second.dims != v.dims || !(it->second.dense() || laid_out(it->second))) continue;
    Dims o = it->second.order();
    if (shared && *shared != o) return identity;
    shared = std::move(o);
  }
  return shared ? *shared : identity;
}

View Lowerer::dense(Value& v) {
  store(v);
  if (v.view.dense() && !v.is_scalar_constant) return v.view;
  if (v.is_scalar_constant) return whole(v);
  // Copied in the view's own dimension order: a channel slice of an NHWC
  // result stays NHWC, so the convolution reading it converts nothing.
  return copy_in_order(v, v.view.order());
}

View Lowerer::copy_in_order(Value& v, const Dims& order) {
  const View out = ordered_buffer(v.dtype, v.dims, order.empty() ? identity_order(v.dims.size()) : order, "copy");
  emit_kernel(v.dims, {}, ReduceKind::None, leaf(v.view), 0, out.buffer, 0, "copy", order, compute_dtype(v.dtype));
  p_->steps.back().bounded_by = {v.view.buffer};
  v.view = out;
  v.is_scalar_constant = false;
  return out;
}

View Lowerer::whole(Value& v) {
  store(v, "", false);
  if (v.view.whole() && !v.is_scalar_constant) return v.view;
  return copy_in_order(v, {});
}

void Lowerer::emit_kernel(const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId body, SymId post,
                          BufferId out, int ops, const std::string& what, const Dims& order, DType compute) {
  LoopKernel k;
  k.compute = compute;
  k.name = what;
  k.ctx = ctx_;
  k.body = body;
  k.post = post;
  k.acc_var = acc_;
  k.reduce = how;
  k.out = out;
  k.out_dtype = buffer(out).dtype;
  k.ops = ops;
  const Dims walk = order.empty() ? identity_order(full.size()) : order;
  auto is_reduced = [&](std::int64_t d) { return !reduced.empty() && reduced[static_cast<std::size_t>(d)]; };
  for (std::int64_t d : walk) (is_reduced(d) ? k.red_dims : k.dims).push_back(full[static_cast<std::size_t>(d)]);
  for (SymId id : ctx_->reachable(std::span<const SymId>(&body, 1))) {
    if (ctx_->node(id).op != ir::SymOp::Var || id == acc_) continue;
    const View& v = leaf_views_.at(id);
    Leaf l{v.buffer, v.offset, {}, buffer(v.buffer).dtype};
    // (kept dims first, then the reduced ones)
    for (bool red : {false, true})
      for (std::int64_t d : walk)
        if (is_reduced(d) == red) l.strides.push_back(v.strides[static_cast<std::size_t>(d)]);
    k.leaves.push_back(std::move(l));
    k.leaf_vars.push_back(id);
  }
  simplify_iteration_space(k);
  check_bounds(k, p_->buffers);
  if (compute == DType::I64 && !is_copy(k) && divides_integers(*ctx_, body)) {  // (only i64 kernels divide)
    k.fault = add_buffer(BufferKind::Temp, DType::I32, {1}, what + " (division check)");
    assign_fault_bits(k);
  }
  if (const std::optional<std::int64_t> parts = reduction_parts(k)) {
    const BufferId partials = add_buffer(BufferKind::Temp, k.compute, {*parts * ir::numel(k.dims)}, what + " (parts)");
    LoopKernel combine = split_outer_reduction(k, *parts, partials, ctx_->var("parts").id());
    push_kernel(std::move(k));
    push_kernel(std::move(combine));
    return;
  }
  push_kernel(std::move(k));
}

std::optional<std::int64_t> Lowerer::reduction_parts(const LoopKernel& k) const {
  // Under this much work a second kernel costs more than the parts save.
  constexpr std::int64_t kSplitWork = 65536;
  // More parts make the second kernel read more; past this many it is no
  // longer small.
  constexpr std::int64_t kMostParts = 16;
  const std::int64_t threads = o_.threads;
  if (o_.target != LoweringTarget::Cpu || threads < 2 || !reduces_by_columns(k) ||
      ir::numel(k.dims) * ir::numel(k.red_dims) < kSplitWork)
    return std::nullopt;
  // One part per thread where the pixels divide so; otherwise the fewest
  // equal parts, which the threads still share out in contiguous runs
  // (SqueezeNet's 13x13 pixels: 13 parts, the first thread six and a half).
  const std::int64_t pixels = k.red_dims[0];
  if (pixels % threads == 0) return threads;
  for (std::int64_t parts = threads + 1; parts <= kMostParts && parts <= pixels / 2; ++parts)
    if (pixels % parts == 0) return parts;
  return std::nullopt;
}

void Lowerer::push_kernel(LoopKernel k) {
  const std::string& what = k.name;
  const BufferId out = k.out;
  Step s;
  s.kind = StepKind::Kernel;
  s.label = what;
  for (const Leaf& l : k.leaves) s.reads.push_back(l.buffer);
  s.writes = {out};
  if (k.fault >= 0) s.writes.push_back(k.fault);
  // An operand read once, at the element written, may share the result's
  // storage: a temporary that dies here (the memory planner), or an input
  // the caller updates in place (runtime::CpuExecutor::run_in_place).
  if (k.reduce == ReduceKind::None) {
    const Buffer& ob = buffer(out);
    for (std::size_t i = 0; i < k.leaves.size(); ++i) {
      const Buffer& lb = buffer(k.leaves[i].buffer);
      int readers = 0;
      for (const Leaf& l : k.leaves) readers += l.buffer == k.leaves[i].buffer;
      View whole_out = View::of(out, k.dims);
      const bool storage = lb.kind == BufferKind::Temp || lb.kind == BufferKind::Input;
      if (readers == 1 && storage && lb.dtype == ob.dtype && lb.bytes == ob.bytes && k.leaves[i].offset == 0 &&
          k.leaves[i].strides == whole_out.strides)
        s.in_place_ok.push_back(k.leaves[i].buffer);
    }
  }
  kernel_step_.push_back(p_->steps.size());
  p_->steps.push_back(std::move(s));
  ++p_->fused_kernels;
  p_->fused_ops += k.ops;
  kernels_.push_back(std::move(k));
}

void Lowerer::assign_fault_bits(LoopKernel& k) const {
  struct Node {
    std::string name;
    std::vector<SymId> sites;
    bool powers = false, divides = false;
  };
  std::map<std::size_t, Node> nodes;
  for (SymId id : ctx_->reachable(std::span<const SymId>(&k.body, 1)))
    if (auto it = divisions_.find(id); it != divisions_.end()) {
      Node& n = nodes[it->second.node];
      n.name = it->second.name;
      n.sites.push_back(id);
      (ctx_->node(id).op == ir::SymOp::IntPow ? n.powers : n.divides) = true;
    }
  constexpr std::size_t kBits = 32;
  std::string shared;  // the nodes of the last bit
  for (const auto& [index, n] : nodes) {
    const std::size_t bit = std::min(k.fault_errors.size(), kBits - 1);
    for (SymId id : n.sites) k.fault_bits[id] = std::uint32_t{1} << bit;
    const std::string what = !n.powers    ? "integer division by zero"
                             : !n.divides ? "integer 0 to a negative power"
                                          : "integer division by zero (or 0 to a negative power)";
    if (bit < kBits - 1) {
      k.fault_errors.push_back(n.name + ": " + what);
    } else {
      shared += (shared.empty() ? "" : " or ") + n.name;
      k.fault_errors.resize(kBits);
      k.fault_errors.back() = "integer division by zero (or 0 to a negative power) in " + shared;
    }
  }
  if (k.fault_errors.size() == kBits && shared.find(" or ") == std::string::npos)
    k.fault_errors.back() = shared + ": integer division by zero (or 0 to a negative power)";
}

SymId Lowerer::channel(Value& p, const Dims& full) {
  if (p.is_scalar_constant) return ctx_->constant(p.constant).id();
  store(p);
  View c{p.view.buffer, p.view.offset, full, Dims(full.size(), 0)};
  c.strides[1] = p.view.strides[0];
  return leaf(c);
}

Value Lowerer::reduce(SymId body, const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId post,
                      int ops, const std::string& what, DType dtype, DType compute, const Dims& order) {
  Dims out_dims;
  for (std::size_t d = 0; d < full.size(); ++d) out_dims.push_back(reduced[d] ? 1 : full[d]);
  const View out = order.empty() ? View::of(add_buffer(BufferKind::Temp, dtype, out_dims, what), out_dims)
                                 : ordered_buffer(dtype, out_dims, order, what);
  emit_kernel(full, reduced, how, body, post, out.buffer, ops, what, order, compute);
  Value v;
  v.dtype = dtype;
  v.dims = out_dims;
  v.view = out;
  return v;
}

void Lowerer::set_pending(const ir::Node& n, const std::vector<Value*>& in, const Dims& out, DType dtype, SymId s,
                          int ops, std::size_t result, DType compute) {
  Value v;
  v.dtype = dtype;
  v.dims = out;
  v.pending = true;
  v.sym = s;
  v.ops = ops;
  v.compute = compute;
  for (Value* x : in)
    if (x && x->pending && x->dims == out && !x->label.empty()) v.label.append(x->label).append("+");
  v.label.append(n.op);
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  v.beyond_elementwise = !def || !def->elementwise;
  for (Value* x : in)
    if (x && x->pending) v.beyond_elementwise |= x->beyond_elementwise;
  if (!o_.fuse || uses_[n.outputs[result]] > 1 || v.ops >= kMaxFusedOps) store(v);
  values_[n.outputs[result]] = std::move(v);
}

void Lowerer::read_in_several_kernels(Value& x) {
  if (x.pending && (x.beyond_elementwise || x.ops > kMaxRecomputedOps)) store(x);
}

std::string Lowerer::where() const { return o_.target == LoweringTarget::Cuda ? "cuda" : "cpu"; }

// A convolution whose activation epilogue the target's library cannot take
// (cuDNN's fused call takes a ReLU only) becomes the library convolution
// and the activation after it, in the graph being lowered (its own copy), so
// that the activation is typed, lowered and fused like any other.
void Lowerer::split_unfusable_epilogues() {
  if (target_->traits().conv_activation_epilogues) return;
  std::vector<ir::Node> nodes;
  for (ir::Node& n : graph_->nodes) {
    const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
    if (!def || def->activation == ir::Activation::None || def->activation == ir::Activation::Relu ||
        def->sum_epilogue || n.outputs.empty()) {
      nodes.push_back(std::move(n));
      continue;
    }
    ir::EpilogueAttrs attrs = ir::split_epilogue_attrs(def->activation, n.attrs);
    ir::Node conv = n;
    const std::string y = n.outputs[0] + " before " + def->name;
    conv.op = n.op.substr(0, n.op.find('.')) + ".conv";
    conv.outputs = {y};
    conv.attrs = std::move(attrs.conv);
    nodes.push_back(std::move(conv));
    for (ir::Node& step : ir::activation_nodes(def->activation, attrs.activation, y, n.outputs, n))
      nodes.push_back(std::move(step));
  }
  graph_->nodes = std::move(nodes);
}

Expected<std::shared_ptr<Program>> Lowerer::run() {
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Diagnostic> failure;
  try {
    target_ = o_.target == LoweringTarget::Cuda ? make_cuda_target(*p_, o_) : make_cpu_target(*p_, o_);
    split_unfusable_epilogues();
    auto types = ir::infer_types(*graph_);
    if (!types) throw DiagnosticError{types.error()};
    types_ = std::move(*types);
    for (const auto& [name, t] : types_)
      if (!ir::is_static(t.shape))
        throw DiagnosticError{at_graph("the " + target_->traits().name + " target needs static shapes: '" + name +
                                       "' is " + ir::to_string(t.shape) + " (give inputs, or set the dimensions)")};
    // A value larger than the machine's memory cannot be computed: refused
    // before lowering builds tables and plans for it.
    for (const auto& [name, t] : types_)
      if (auto refusal = ir::exceeds_memory(name, t)) throw DiagnosticError{at_graph(*refusal)};
    acc_ = ctx_->var("acc").id();
    p_->keep_alive.push_back(graph_);
    p_->keep_alive.push_back(folded_);
    for (std::size_t i = 0; i < graph_->inputs.size(); ++i) {
      const ir::GraphValue& in = graph_->inputs[i];
      BufferId b = add_buffer(BufferKind::Input, in.type.dtype, ir::static_dims(in.type.shape), in.name);
      p_->buffers[static_cast<std::size_t>(b)].input_index = static_cast<int>(i);
      values_[in.name] = stored(b);
    }
    for (const auto& [name, t] : graph_->initializers) values_[name] = stored(add_weight(&t, name));
    // Dead nodes (nothing the outputs depend on) are not lowered: they
    // would run for nothing, and fail where the interpreter does not.
    live_ = ir::live_nodes(*graph_);
    for (std::size_t i = 0; i < graph_->nodes.size(); ++i)
      for (const std::string& in : graph_->nodes[i].inputs)
        if (live_[i] && !in.empty()) ++uses_[in];
    for (const std::string& o : graph_->outputs) ++uses_[o];
    plan_concat_chains();
    for (std::size_t i = 0; i < graph_->nodes.size(); ++i)
      if (live_[i]) lower_node(i);
    lower_outputs();
    target_->finish(kernels_, kernel_step_);
    p_->kernels = std::make_shared<const std::vector<LoopKernel>>(std::move(kernels_));
    plan_memory(*p_);
  } catch (const DiagnosticError& e) {
    failure = e.diag;
    if (failure->loc.file.empty()) failure->loc.file = graph_->source;
  } catch (const ir::ShapeError& e) {
    failure = at_graph(where() + " lowering: " + e.message);
  } catch (const std::exception& e) {  // (a library's: oneDNN's errors are std::exceptions)
    failure = at_graph(where() + " lowering: internal error: " + e.what());
  }
  if (failure) return *failure;
  p_->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return p_;
}

// Graph outputs: whole temporaries of their own. (A contiguous view from
// offset 0 may be a prefix of its buffer: a slice [0, 3) of 4.)
void Lowerer::lower_outputs() {
  std::set<BufferId> seen;
  for (const std::string& o : graph_->outputs) {
    Value& v = values_.at(o);
    store(v, "", false);
    const Buffer& b = buffer(v.view.buffer);
    const bool all_of_it = b.bytes == static_cast<std::size_t>(ir::numel(v.dims)) * ir::dtype_size(v.dtype);
    if (!v.view.whole() || !all_of_it || b.kind != BufferKind::Temp || seen.count(v.view.buffer) ||
        v.is_scalar_constant) {
      BufferId out = add_buffer(BufferKind::Temp, v.dtype, v.dims, "output");
      emit_kernel(v.dims, {}, ReduceKind::None, leaf(v.view), 0, out, 0, "output copy", {}, compute_dtype(v.dtype));
      p_->outputs.push_back(out);
    } else {
      p_->outputs.push_back(v.view.buffer);
    }
    seen.insert(p_->outputs.back());
    p_->buffers[static_cast<std::size_t>(p_->outputs.back())].kind = BufferKind::Output;
    p_->output_dims.push_back(v.dims);
  }
}

bool Lowerer::fold_constant(const ir::Node& n, const ir::OpDef& def) {
  bool all_const = !n.inputs.empty();
  for (const std::string& i : n.inputs) {
    if (i.empty()) continue;
    const Value& v = values_.at(i);
    all_const &= !v.pending && buffer(v.view.buffer).kind == BufferKind::Weight;
  }
  if (!all_const) return false;
  std::vector<ir::Tensor> args;
  for (const std::string& i : n.inputs) {
    if (i.empty()) {
      args.emplace_back();
      continue;
    }
    Value& v = values_.at(i);
    ir::Tensor t(v.dtype, v.dims);
    copy_view(buffer(v.view.buffer).weight->bytes(), ir::dtype_size(v.dtype), v.view, t.bytes());
    args.push_back(std::move(t));
  }
  auto given = given_flags(n.inputs);
  auto res = def.eval(n.attrs, args, std::span<const bool>(given.get(), n.inputs.size()), n.outputs.size());
  for (std::size_t k = 0; k < n.outputs.size() && k < res.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    folded_->push_back(std::move(res[k]));
    values_[n.outputs[k]] = stored(add_weight(&folded_->back(), n.outputs[k]));
  }
  return true;
}

void Lowerer::lower_node(std::size_t index) {
  const ir::Node& n = graph_->nodes[index];
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  if (!def) fail(n, "unknown op '" + n.op + "'");
  std::vector<ir::ValueType> out_types;
  for (const std::string& o : n.outputs) out_types.push_back(o.empty() ? ir::ValueType{} : types_.at(o));
  if (fold_constant(n, *def)) return;
  std::vector<Value*> in;
  for (const std::string& i : n.inputs) in.push_back(i.empty() ? nullptr : &values_.at(i));
  bool all_f32 = true;
  for (Value* v : in)
    if (v) all_f32 &= v->dtype == DType::F32;
  for (const auto& t : out_types) all_f32 &= t.dtype == DType::F32;
  const bool one_result = n.outputs.size() == 1 && !n.outputs[0].empty();
  if (n.op == "materialize" && one_result && in.size() == 1 && in[0]) {
    store(*in[0]);  // (a value already in memory stays where it is)
    values_[n.outputs[0]] = *in[0];
    return;
  }
  if (lower_view(n, in, out_types)) return;
  // Values of types loop kernels do not compute with are moved as they are
  // or computed by the op's reference kernel.
  bool kernel_types = true;
  for (Value* v : in)
    if (v) kernel_types &= kernel_value_dtype(v->dtype);
  for (const auto& t : out_types) kernel_types &= kernel_value_dtype(t.dtype);
  if (!kernel_types) {
    if (!def->view || in.empty() || !in[0] || n.outputs.size() != 1 || !lower_reshape(n, *in[0], out_types[0]))
      lower_reference(n, out_types);
    return;
  }
  if (def->elementwise && one_result && (all_f32 || fuses_across_types(n, in, out_types)) &&
      lower_elementwise(n, in, out_types))
    return;
  // (Integer library calls, dnnl.qconv and dnnl.qmatmul, take their quantized types.)
  if ((def->semantics() == "quantized_conv" || def->semantics() == "quantized_matmul") && one_result &&
      lower_library(n, *def, in, out_types))
    return;
  if (all_f32 && !n.outputs.empty() && !n.outputs[0].empty() && (one_result || def->semantics() == "layer_norm") &&
      (lower_norm(n, in, out_types) || lower_library(n, *def, in, out_types)))
    return;
  if (def->view && in.size() >= 1 && in[0] && n.outputs.size() == 1 && lower_reshape(n, *in[0], out_types[0])) return;
  if (lower_any_type(n, *def, in, out_types)) return;
  lower_reference(n, out_types);
}

// Each handler checks what its lowering needs of the node (its operands
// given, one result, ...) and says whether it lowered it.
bool Lowerer::lower_any_type(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in,
                             const std::vector<ir::ValueType>& out_types) {
  using Ins = std::vector<Value*>;
  using Outs = std::vector<ir::ValueType>;
  using Handler = bool (*)(Lowerer&, const ir::Node&, Ins&, const Outs&);
  const Handler arg_reduce = [](Lowerer& l, const ir::Node& n, Ins& in, const Outs& out) {
    if (!plain(n, in, 1) || in[0]->dims.empty()) return false;
    const DType t = in[0]->dtype;
    if (t != DType::F32 && t != DType::I64 && t != DType::I32) return false;
    l.lower_arg_reduce(n, *in[0], out[0]);
    return true;
  };
  const Handler softmax = [](Lowerer& l, const ir::Node& n, Ins& in, const Outs&) {
    return in.size() == 1 && in[0] && l.lower_softmax(n, *in[0]);
  };
  static const std::map<std::string, Handler> handlers = {
      {"concat", [](Lowerer& l, const ir::Node& n, Ins& in,
                    const Outs& out) { return plain(n, in, -1) && (l.lower_concat(n, in, out[0]), true); }},
      {"gather", [](Lowerer& l, const ir::Node& n, Ins& in,
                    const Outs& out) { return plain(n, in, 2) && (l.lower_gather(n, *in[0], *in[1], out[0]), true); }},
      {"gather_elements",
       [](Lowerer& l, const ir::Node& n, Ins& in, const Outs& out) {
         return plain(n, in, 2) && (l.lower_gather_elements(n, *in[0], *in[1], out[0]), true);
       }},
      {"tile", [](Lowerer& l, const ir::Node& n, Ins& in,
                  const Outs& out) { return plain(n, in, 1) && l.lower_tile(n, *in[0], out[0]); }},
      {"resize", [](Lowerer& l, const ir::Node& n, Ins& in,
                    const Outs& out) { return plain(n, in, 1) && (l.lower_resize(n, *in[0], out[0]), true); }},
      {"pad", [](Lowerer& l, const ir::Node& n, Ins& in,
                 const Outs&) { return plain(n, in, 1) && (l.lower_pad(n, *in[0]), true); }},
      {"trilu", [](Lowerer& l, const ir::Node& n, Ins& in,
                   const Outs& out) { return plain(n, in, 1) && (l.lower_trilu(n, *in[0], out[0]), true); }},
      {"argmax", arg_reduce},
      {"argmin", arg_reduce},
      {"softmax", softmax},
      {"log_softmax", softmax},
      {"matmul",
       [](Lowerer& l, const ir::Node& n, Ins& in, const Outs& out) {
         return in.size() == 2 && in[0] && in[1] && l.lower_matmul(n, *in[0], *in[1], dims(out), library(n));
       }},
      // (A library gemm or conv gets here only with operands its library
      // does not take: f64, halves through f32, other ranks.)
      {"gemm",
       [](Lowerer& l, const ir::Node& n, Ins& in, const Outs& out) {
         const bool doubles = !in.empty() && in[0] && in[0]->dtype == DType::F64;
         return (!library(n) || doubles) && l.lower_gemm_loops(n, in, dims(out));
       }},
      {"conv", [](Lowerer& l, const ir::Node& n, Ins& in,
                  const Outs& out) { return !library(n) && l.lower_conv_loops(n, in, dims(out)); }},
      {"einsum",
       [](Lowerer& l, const ir::Node& n, Ins& in, const Outs& out) { return l.lower_einsum(n, in, dims(out)); }},
  };
  if (auto it = handlers.find(def.semantics()); it != handlers.end() && it->second(*this, n, in, out_types))
    return true;
  if (is_reduction(def.semantics()) && in.size() == 1 && in[0] &&
      lower_reduction(n, *in[0], ir::static_dims(out_types[0].shape)))
    return true;
  if (n.op == "max_pool" && target_->traits().max_pool_as_reduction && in.size() == 1 && in[0] &&
      lower_max_pool(n, *in[0], ir::static_dims(out_types[0].shape)))
    return true;
  if (lower_through_f32(n, in, out_types)) return true;
  if ((def.semantics() == "max_pool" || def.semantics() == "avg_pool") && in.size() == 1 && in[0] &&
      in[0]->dims.size() >= 3 && !n.outputs.empty() && !n.outputs[0].empty()) {
    lower_pool_kernel(n, *in[0], out_types);
    return true;
  }
  return false;
}

void Lowerer::lower_reference(const ir::Node& n, const std::vector<ir::ValueType>& out_types) {
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  std::vector<View> ins;
  std::vector<DType> in_types;
  std::vector<bool> given;
  Step s;
  s.kind = StepKind::Reference;
  s.label = "reference " + n.op;
  for (const std::string& i : n.inputs) {
    given.push_back(!i.empty());
    if (i.empty()) {
      ins.push_back(View{});
      in_types.push_back(DType::F32);
      continue;
    }
    Value& v = values_.at(i);
    store(v);
    ins.push_back(v.view);
    in_types.push_back(v.dtype);
    s.reads.push_back(v.view.buffer);
  }
  std::vector<BufferId> outs;
  for (std::size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) {
      outs.push_back(-1);
      continue;
    }
    BufferId b = add_buffer(BufferKind::Temp, out_types[k].dtype, ir::static_dims(out_types[k].shape), n.outputs[k]);
    outs.push_back(b);
    s.writes.push_back(b);
  }
  p_->reference_ops.push_back(n.op);
  const std::size_t nout = n.outputs.size();
  s.run = [def, attrs = n.attrs, ins, in_types, inputs = n.inputs, outs, nout,
           name = ir::describe(n)](const RunContext& ctx) {
    std::vector<ir::Tensor> args;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (inputs[k].empty()) {
        args.emplace_back();
        continue;
      }
      ir::Tensor t(in_types[k], ins[k].dims);
      copy_view(ctx.addr[static_cast<std::size_t>(ins[k].buffer)], ir::dtype_size(in_types[k]), ins[k], t.bytes());
      args.push_back(std::move(t));
    }
    auto given = given_flags(inputs);
    std::vector<ir::Tensor> res;
    try {
      res = def->eval(attrs, args, std::span<const bool>(given.get(), inputs.size()), nout);
    } catch (const ir::ShapeError& e) {
      throw std::runtime_error(name + ": " + e.message);
    }
    for (std::size_t k = 0; k < outs.size() && k < res.size(); ++k)
      if (outs[k] >= 0 && res[k].nbytes() != 0)  // an empty result may have no storage at all
        std::memcpy(ctx.addr[static_cast<std::size_t>(outs[k])], res[k].bytes(), res[k].nbytes());
  };
  p_->steps.push_back(std::move(s));
  for (std::size_t k = 0; k < n.outputs.size(); ++k)
    if (outs[k] >= 0) values_[n.outputs[k]] = stored(outs[k]);
}

Expected<std::shared_ptr<Program>> compile_cpu(const ir::Graph& g, const LoweringOptions& o) {
  Lowerer l(g, o);
  return l.run();
}

Expected<std::shared_ptr<Program>> compile_cuda(const ir::Graph& g, LoweringOptions o) {
  o.target = LoweringTarget::Cuda;
  Lowerer l(g, o);
  return l.run();
}

}  // namespace saturn::lower
