#include "lower/cpu_lowering.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "ir/arg_reduce.hpp"
#include "ir/einsum.hpp"
#include "ir/gather.hpp"
#include "ir/gather_elements.hpp"
#include "ir/pad.hpp"
#include "ir/pool.hpp"
#include "ir/resize.hpp"
#include "ir/slice.hpp"
#include "ir/trilu.hpp"
#include "ir/window.hpp"
#include "lower/block_copy.hpp"
#include "lower/cuda_steps.hpp"
#include "lower/library_calls.hpp"
#include "lower/llvm_jit.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/memory_plan.hpp"
#include "lower/view.hpp"

namespace saturn::lower {

namespace {

using ir::DType;
using ir::SymId;
using Dims = std::vector<std::int64_t>;

// conv_transpose, or the library call a substitution rule made of it.
bool is_conv_transpose(const std::string& op) {
  return op == "conv_transpose" || op == "dnnl.conv_transpose" || op == "cudnn.conv_transpose";
}

// Ops whose result element i is a function of operand elements at i (after
// broadcasting), computed by the registry's kernel on scalars.
bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "neg",  "recip", "sqrt",     "exp2", "log2",       "sin",      "cos",          "exp",  "log",
      "tanh", "erf",   "abs",      "sign", "ceil",       "floor",    "sigmoid",      "relu", "leaky_relu",
      "elu",  "selu",  "softplus", "gelu", "hard_swish", "identity", "hard_sigmoid", "add",  "sub",
      "mul",  "div",   "pow",      "max",  "min",        "prelu",    "clip",         "cast", "mod"};
  return ops.count(op) != 0;
}
bool is_view(const std::string& op) {
  return op == "reshape" || op == "flatten" || op == "squeeze" || op == "unsqueeze" || op == "identity";
}

// Runs fn(begin, end) over `rows` rows of `row_bytes` each: split over the
// pool from 256 KiB in all, on the calling thread below (waking the pool
// costs more).
template <class Fn>
void split_rows(const RunContext& ctx, std::size_t rows, std::size_t row_bytes, const Fn& fn) {
  if (rows >= 2 && rows * row_bytes >= (1u << 18) && ctx.pool && ctx.pool->size() >= 2)
    ctx.pool->parallel_for(static_cast<std::int64_t>(rows), [&](std::int64_t b, std::int64_t e) {
      fn(static_cast<std::size_t>(b), static_cast<std::size_t>(e));
    });
  else
    fn(0, rows);
}

// The view walks its buffer with these strides (size-1 dimensions aside).
// Whether padding both sides by `begin` gives the result dims `out` (the
// last window ends inside the input and the left padding): cuDNN's
// symmetric padding then computes the op. On success `end` becomes `begin`.
bool symmetric_padding(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& out,
                       const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& strides,
                       const std::vector<std::int64_t>& dilations, const std::vector<std::int64_t>& begin,
                       std::vector<std::int64_t>& end) {
  for (std::size_t i = 0; i < begin.size(); ++i) {
    const std::int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    const std::int64_t padded = x[2 + i] + 2 * begin[i];
    if (padded < span || (padded - span) / strides[i] + 1 != out[2 + i] || end[i] > begin[i]) return false;
  }
  end = begin;
  return true;
}

// The end padding that gives exactly the result's size `out` (NC +
// spatial): the last window ends there. ONNX's may be larger (a last window
// short of it) or smaller (ceil_mode).
Dims exact_end_padding(const Dims& x, const Dims& out, const Dims& kernel, const Dims& strides, const Dims& dilations,
                       const Dims& begin) {
  Dims end;
  for (std::size_t i = 0; i < begin.size(); ++i) {
    const std::int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    end.push_back((out[2 + i] - 1) * strides[i] + span - x[2 + i] - begin[i]);
  }
  return end;
}

bool same_strides(const View& v, const std::vector<std::int64_t>& strides) {
  for (std::size_t i = 0; i < v.dims.size(); ++i)
    if (v.dims[i] != 1 && v.strides[i] != strides[i]) return false;
  return v.dense();
}

// Copies the elements of a view, row-major, into dst.
void gather(const std::uint8_t* base, std::size_t esize, const View& v, std::uint8_t* dst) {
  const std::int64_t n = ir::numel(v.dims);
  std::vector<std::int64_t> idx(v.dims.size(), 0);
  std::int64_t off = v.offset;
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<std::size_t>(i) * esize, base + static_cast<std::size_t>(off) * esize, esize);
    for (std::size_t d = v.dims.size(); d-- > 0;) {
      off += v.strides[d];
      if (++idx[d] < v.dims[d]) break;
      off -= v.strides[d] * v.dims[d];
      idx[d] = 0;
    }
  }
}

// A graph value as the lowering holds it.
struct Value {
  DType dtype = DType::F32;
  Dims dims;
  bool pending = false;
  View view;                   // stored: where it is
  SymId sym = 0;               // pending: its expression over leaves of shape `dims`
  DType compute = DType::F32;  // pending: the type `sym` is computed in (loop_kernel.hpp)
  int ops = 0;                 // pending: graph ops folded into `sym`
  std::string label;           // pending: those ops' names ("add+gelu")
  double constant = 0;
  bool is_scalar_constant = false;  // a float or bool weight of one element: inlined as a literal
};

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const LoweringOptions& o) : o_(o), graph_(std::make_shared<ir::Graph>(g)) {}

  Expected<std::shared_ptr<Program>> run();

 private:
  Diagnostic at_graph(std::string msg) const {
    Diagnostic d;
    d.loc.file = graph_->source;
    d.message = std::move(msg);
    return d;
  }
  [[noreturn]] void fail(const ir::Node& n, const std::string& msg) {
    throw DiagnosticError{Diagnostic{{graph_->source, 0, 0}, ir::describe(n) + ": " + msg}};
  }
  BufferId add_buffer(BufferKind kind, DType t, const Dims& dims, const std::string& name) {
    Buffer b;
    b.kind = kind;
    b.dtype = t;
    b.dims = dims;
    b.bytes = static_cast<std::size_t>(ir::numel(dims)) * ir::dtype_size(t);
    b.name = name;
    p_->buffers.push_back(b);
    return static_cast<BufferId>(p_->buffers.size() - 1);
  }
  BufferId add_weight(const ir::Tensor* t, const std::string& name) {
    BufferId b = add_buffer(BufferKind::Weight, t->dtype(), t->dims(), name);
    p_->buffers[static_cast<std::size_t>(b)].weight = t;
    return b;
  }
  // An f16 / bf16 value as f32 (exactly): a weight converted now, once,
  // into a constant f32 buffer read through the same view (so a product's
  // weight stays a weight oneDNN packs); anything else a pending copy.
  Value f32_copy(Value& v, const std::string& label) {
    if (v.pending) store(v);
    const Buffer* weight =
        v.is_scalar_constant || v.view.buffer < 0 ? nullptr : &p_->buffers[static_cast<std::size_t>(v.view.buffer)];
    if (weight && weight->kind == BufferKind::Weight && weight->weight) {
      ir::Tensor t(DType::F32, weight->weight->dims());
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, weight->weight->at(i));
      const std::string name = weight->name + " as f32";  // (add_weight moves the buffers)
      folded_->push_back(std::move(t));
      Value c = v;
      c.dtype = DType::F32;
      c.view.buffer = add_weight(&folded_->back(), name);
      return c;
    }
    Value c;
    c.dims = v.dims;
    c.pending = true;
    c.sym = expr_over(v, v.dims);
    c.label = label;
    return c;
  }
  // v (stored, row-major) as the node's dims `out`: a reduction's result
  // without its kept size-1 axes, a product's without a 1-D operand's.
  static Value reshaped_to(Value v, const Dims& out) {
    if (v.dims != out) {
      v.view = v.view.reshaped(out);
      v.dims = out;
    }
    return v;
  }
  // The arithmetic a float value's reductions and products get: f64 for
  // f64, f32 for the others. A pending operand computed otherwise, or of a
  // half type (each op rounded when stored), is stored first.
  DType float_compute(Value& x) {
    const DType compute = x.dtype == DType::F64 ? DType::F64 : DType::F32;
    if (x.pending && (x.compute != compute || x.dtype == DType::F16 || x.dtype == DType::BF16)) store(x);
    return compute;
  }
  Value stored(BufferId b) {
    const Buffer& buf = p_->buffers[static_cast<std::size_t>(b)];
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

  // A variable reading `v` (a view over the kernel's dims).
  SymId leaf(const View& v) {
    ir::Sym var = ctx_->var("l" + std::to_string(leaf_views_.size()));
    leaf_views_.emplace(var.id(), v);
    return var.id();
  }
  // The value as an expression over `dims` (it broadcasts to them).
  SymId expr_over(Value& v, const Dims& dims) {
    if (v.is_scalar_constant) return ctx_->constant(v.constant).id();
    if (v.pending && v.dims == dims) return v.sym;
    if (v.pending) store(v);
    return leaf(v.view.broadcast_to(dims));
  }

  // Computes a pending value into a new buffer (one loop kernel), in the
  // dimension order its full-size operands are stored in: an elementwise
  // epilogue of an NHWC convolution stays NHWC, so the next one reads it
  // without a conversion.
  void store(Value& v, std::string what = "", bool any_order = true) {
    if (!v.pending) return;
    if (what.empty()) what = v.label.empty() ? "fused" : v.label;
    const Dims order = operand_order(v, any_order);
    Dims physical, inverse(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      physical.push_back(v.dims[static_cast<std::size_t>(order[i])]);
      inverse[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
    }
    BufferId out = add_buffer(BufferKind::Temp, v.dtype, physical, what);
    emit_kernel(v.dims, {}, ReduceKind::None, v.sym, 0, out, v.ops, what, order, v.compute);
    v.pending = false;
    v.view = View::of(out, physical).transposed(inverse);
  }
  // The dimension order shared by every dense full-size operand of a pending
  // value; row-major when they disagree or there are none.
  Dims operand_order(const Value& v, bool any_order) {
    Dims identity(v.dims.size());
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<std::int64_t>(i);
    if (!any_order) return identity;
    std::optional<Dims> shared;
    for (SymId id : ctx_->reachable(std::span<const SymId>(&v.sym, 1))) {
      auto it = leaf_views_.find(id);
      if (it == leaf_views_.end() || it->second.dims != v.dims || !it->second.dense()) continue;
      Dims o = it->second.order();
      if (shared && *shared != o) return identity;
      shared = std::move(o);
    }
    return shared ? *shared : identity;
  }
  // v stored densely (any dimension order), copied only when it is not.
  View dense(Value& v) {
    store(v);
    if (v.view.dense() && !v.is_scalar_constant) return v.view;
    return whole(v);
  }
  // A stored, contiguous, whole-buffer copy of v (copies when it must: a
  // loop kernel, which copies values of any type).
  View whole(Value& v) {
    store(v, "", false);
    if (v.view.whole() && !v.is_scalar_constant) return v.view;
    BufferId out = add_buffer(BufferKind::Temp, v.dtype, v.dims, "copy");
    emit_kernel(v.dims, {}, ReduceKind::None, leaf(v.view), 0, out, 0, "copy", {}, compute_dtype(v.dtype));
    v.view = View::of(out, v.dims);
    v.is_scalar_constant = false;
    return v.view;
  }

 private:
  // A loop kernel writing `out`. Leaves of `body` are views over `full`: the
  // result's dims (elementwise, `reduced` empty), or the operand's dims before
  // reducing the axes `reduced` marks (the result keeps the others).
  // An elementwise kernel may walk (and write its result in) another
  // dimension `order` than row-major. The arithmetic is in `compute`.
  void emit_kernel(const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId body, SymId post,
                   BufferId out, int ops, const std::string& what, const Dims& order = {}, DType compute = DType::F32) {
    LoopKernel k;
    k.compute = compute;
    k.name = what;
    k.ctx = ctx_;
    k.body = body;
    k.post = post;
    k.acc_var = acc_;
    k.reduce = how;
    k.out = out;
    k.out_dtype = p_->buffers[static_cast<std::size_t>(out)].dtype;
    k.ops = ops;
    for (std::size_t d = 0; d < full.size(); ++d)
      (!reduced.empty() && reduced[d] ? k.red_dims : k.dims)
          .push_back(full[order.empty() ? d : static_cast<std::size_t>(order[d])]);
    for (SymId id : ctx_->reachable(std::span<const SymId>(&body, 1))) {
      if (ctx_->node(id).op != ir::SymOp::Var || id == acc_) continue;
      const View& v = leaf_views_.at(id);
      Leaf l{v.buffer, v.offset, {}, p_->buffers[static_cast<std::size_t>(v.buffer)].dtype};
      if (reduced.empty() && !order.empty()) {
        for (std::int64_t d : order) l.strides.push_back(v.strides[static_cast<std::size_t>(d)]);
      } else if (reduced.empty()) {
        l.strides = v.strides;
      } else {  // kept dims first, then the reduced ones
        for (std::size_t d = 0; d < reduced.size(); ++d)
          if (!reduced[d]) l.strides.push_back(v.strides[d]);
        for (std::size_t d = 0; d < reduced.size(); ++d)
          if (reduced[d]) l.strides.push_back(v.strides[d]);
      }
      k.leaves.push_back(std::move(l));
      k.leaf_vars.push_back(id);
    }
    simplify_iteration_space(k);
    check_bounds(k, p_->buffers);
    if (compute == DType::I64 && !is_copy(k) && divides_integers(*ctx_, body)) {  // (only i64 kernels divide)
      k.fault = add_buffer(BufferKind::Temp, DType::I32, {1}, what + " (division check)");
      assign_fault_bits(k);
    }
    Step s;
    s.kind = StepKind::Kernel;
    s.label = what;
    for (const Leaf& l : k.leaves) s.reads.push_back(l.buffer);
    s.writes = {out};
    if (k.fault >= 0) s.writes.push_back(k.fault);
    // An operand read once, at the element written, may share the result's storage.
    if (how == ReduceKind::None) {
      const Buffer& ob = p_->buffers[static_cast<std::size_t>(out)];
      for (std::size_t i = 0; i < k.leaves.size(); ++i) {
        const Buffer& lb = p_->buffers[static_cast<std::size_t>(k.leaves[i].buffer)];
        int readers = 0;
        for (const Leaf& l : k.leaves) readers += l.buffer == k.leaves[i].buffer;
        View whole_out = View::of(out, k.dims);
        if (readers == 1 && lb.kind == BufferKind::Temp && lb.dtype == ob.dtype && lb.bytes == ob.bytes &&
            k.leaves[i].offset == 0 && k.leaves[i].strides == whole_out.strides)
          s.in_place_ok.push_back(k.leaves[i].buffer);
      }
    }
    kernel_step_.push_back(p_->steps.size());
    p_->steps.push_back(std::move(s));
    kernels_.push_back(std::move(k));
    ++p_->fused_kernels;
    p_->fused_ops += ops;
  }

  // k's fault bits and their errors: a bit per node dividing in k.body,
  // in graph order (the 32nd and later share the last).
  void assign_fault_bits(LoopKernel& k) const {
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

  // reduce(expr over `full`) along `reduced`, keeping them as size 1.
  Value reduce(SymId body, const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId post, int ops,
               const std::string& what, DType dtype = DType::F32, DType compute = DType::F32) {
    Dims out_dims;
    for (std::size_t d = 0; d < full.size(); ++d) out_dims.push_back(reduced[d] ? 1 : full[d]);
    BufferId out = add_buffer(BufferKind::Temp, dtype, out_dims, what);
    emit_kernel(full, reduced, how, body, post, out, ops, what, {}, compute);
    Value v;
    v.dtype = dtype;
    v.dims = out_dims;
    v.view = View::of(out, out_dims);
    return v;
  }

  void lower_node(std::size_t index);
  bool lower_view(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  bool lower_f32(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // reduce_* of a float value (or reduce_max / reduce_min of a bool) into
  // `out` (the node's dims): one loop kernel (two for reduce_log_sum_exp:
  // the maximum, then the shifted sum), in f64 for f64 values and f32 for
  // the others, the result of x's type.
  bool lower_reduction(const ir::Node& n, Value& x, const Dims& out);
  static bool is_reduction(const std::string& op);
  // softmax / log_softmax of a float value: the maximum, the sum of
  // exp(x - max) (both kept in the compute type: f64 for f64 values, f32
  // for the others), then a pending exp(x - max) / sum of x's type.
  bool lower_softmax(const ir::Node& n, Value& x);
  // matmul of float values, 1-D operands as matrices ([K] on the left as
  // [1 K], on the right as [K 1], the result without that axis): f32 a
  // library product; f16 / bf16 the same over f32 copies, rounded to the
  // operands' type once (as the reference rounds its double sum); f64 a
  // loop kernel summing a[..m k] b[..k n] along k in double, exact where a
  // f32 product would not be.
  bool lower_matmul(const ir::Node& n, Value& a, Value& b, const Dims& out);
  // einsum of float values as one loop kernel over its letters (the
  // result's, then the summed ones): each operand a view whose stride along
  // a letter is the sum of its axes' with that letter (a diagonal), 0 where
  // it lacks the letter or broadcasts it; the body the operands' product,
  // summed along the other letters (in f64 for f64 values, f32 for the
  // others), or a pending product when none is summed.
  bool lower_einsum(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  // A library or normalization op (convolution, gemm, pooling, batch /
  // layer / instance norm, lrn) of f16 or bf16 values: lower_f32's
  // lowering over f32 copies of its operands (exact), each result a
  // pending value rounded to the operands' type once, as the reference
  // rounds its double result.
  bool lower_through_f32(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // An elementwise op (or comparison, logic, where, cast) as a pending
  // expression over its operands', of the result's type.
  bool lower_elementwise(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // Whether a node with operands or a result other than f32 still fuses:
  // an elementwise op with a float or bool result, between floats, bools
  // and 8- or 32-bit integers (i64: only cast's operand).
  bool fuses_across_types(const ir::Node& n, const std::vector<Value*>& in,
                          const std::vector<ir::ValueType>& out_types);
  // The arithmetic an elementwise node fusing across types gets: f64 when
  // it reads or computes f64 or 8- and 32-bit integers, else f32.
  static DType elementwise_compute(const ir::Node& n, const std::vector<Value*>& in, DType out);
  // Result `result` of n is the pending expression s (over values of dims
  // `out`), computed in `compute`.
  void set_pending(const ir::Node& n, const std::vector<Value*>& in, const Dims& out, DType dtype, SymId s, int ops,
                   std::size_t result = 0, DType compute = DType::F32);
  void lower_reference(const ir::Node& n, const std::vector<ir::ValueType>& out_types);
  // concat of any element type: operands stored contiguously, then block
  // copies into the result (lower/block_copy.hpp).
  void lower_concat(const ir::Node& n, std::vector<Value*>& in, const ir::ValueType& out_type) {
    const Dims out = ir::static_dims(out_type.shape);
    const auto axis =
        static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(out.size())));
    const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, out, n.outputs[0]);
    std::vector<BufferId> srcs;
    std::vector<Dims> dims;
    for (Value* v : in) {
      srcs.push_back(whole(*v).buffer);
      dims.push_back(v->dims);
    }
    const BlockCopy c = concat_block_copy(srcs, dims, axis, ir::dtype_size(out_type.dtype), y);
    const std::string label = "concat (" + std::to_string(c.parts.size()) + " block copies)";
#ifdef SATURN_HAVE_CUDA
    p_->steps.push_back(cuda() ? make_cuda_block_copy_step(c, label) : make_host_block_copy_step(c, label));
#else
    p_->steps.push_back(make_host_block_copy_step(c, label));
#endif
    values_[n.outputs[0]] = stored(y);
  }
  // gather of any element type: whole rows copied (ir/gather.hpp, the op
  // kernel's own geometry), split over the pool from 256 KiB of result.
  // The indices are checked first, on the calling thread: an index out of
  // range fails the run naming the node, before anything is copied. On the
  // GPU, a kernel doing the same copies (cuda_gather_source).
  void lower_gather(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type) {
    const auto axis =
        static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(data.dims.size())));
    const BufferId src = whole(data).buffer, idx = whole(indices).buffer;
    const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, ir::static_dims(out_type.shape), n.outputs[0]);
    const ir::GatherRows g = ir::gather_rows(data.dims, axis, static_cast<std::size_t>(ir::numel(indices.dims)),
                                             ir::dtype_size(out_type.dtype));
    Step s;
    s.kind = StepKind::Copy;
    s.label = "gather (" + std::to_string(g.result_rows()) + " rows of " + std::to_string(g.row_bytes) + " B)";
    s.reads = {src, idx};
    s.writes = {y};
    const bool i64 = indices.dtype == DType::I64;
    s.run = [g, src, idx, y, i64, name = ir::describe(n)](const RunContext& ctx) {
      const auto* i64s = ctx.at<const std::int64_t>(idx);
      const auto* i32s = ctx.at<const std::int32_t>(idx);
      auto index = [&](std::size_t j) -> std::int64_t { return i64 ? i64s[j] : i32s[j]; };
      try {  // (rows without elements read nothing, and are not checked, as in the op's kernel)
        for (std::size_t j = 0; j < g.count && g.row_bytes; ++j) ir::gathered_row(index(j), g.rows);
      } catch (const ir::ShapeError& e) {
        throw std::runtime_error(name + ": " + e.message);
      }
      const std::uint8_t* d = ctx.at<const std::uint8_t>(src);
      std::uint8_t* out = ctx.at<std::uint8_t>(y);
      split_rows(ctx, g.result_rows(), g.row_bytes,
                 [&](std::size_t b, std::size_t e) { ir::gather_copy(g, d, index, out, b, e); });
    };
    emit_gather_step(
        n, std::move(s), [&] { return cuda_gather_source(g, i64, 0); },
        "gather: an index out of range for axis of size " + std::to_string(g.rows), src, idx, y);
  }
  // A gather-like step's end: on the GPU, the generated kernel `device()`
  // makes with an index flag (the run fails with `error`) replaces the host
  // step `s`; then it is emitted and its result stored.
  template <class DeviceSource>
  void emit_gather_step(const ir::Node& n, Step s, [[maybe_unused]] const DeviceSource& device,
                        [[maybe_unused]] const std::string& error, [[maybe_unused]] BufferId src,
                        [[maybe_unused]] BufferId idx, BufferId y) {
#ifdef SATURN_HAVE_CUDA
    if (cuda()) {
      const BufferId flag = add_buffer(BufferKind::Temp, DType::I32, {1}, n.outputs[0] + " (index check)");
      s = make_cuda_checked_gather_step(cuda_, device(), src, idx, flag, y, s.label, ir::describe(n) + ": " + error);
    }
#endif
    p_->steps.push_back(std::move(s));
    values_[n.outputs[0]] = stored(y);
  }
  // gather_elements of any element type: element copies by the op kernel's
  // own geometry (ir/gather_elements.hpp), split over the pool by result
  // rows from 256 KiB. The indices are checked first, as gather's. On the
  // GPU, a kernel doing the same copies (cuda_gather_elements_source).
  void lower_gather_elements(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type) {
    const auto axis =
        static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(data.dims.size())));
    const BufferId src = whole(data).buffer, idx = whole(indices).buffer;
    const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, ir::static_dims(out_type.shape), n.outputs[0]);
    const ir::GatherElements g =
        ir::gather_elements_geometry(data.dims, indices.dims, axis, ir::dtype_size(out_type.dtype));
    const std::size_t count = static_cast<std::size_t>(ir::numel(indices.dims));
    Step s;
    s.kind = StepKind::Copy;
    s.label = "gather_elements (" + std::to_string(count) + " elements)";
    s.reads = {src, idx};
    s.writes = {y};
    const bool i64 = indices.dtype == DType::I64;
    s.run = [g, src, idx, y, i64, count, name = ir::describe(n)](const RunContext& ctx) {
      const auto* i64s = ctx.at<const std::int64_t>(idx);
      const auto* i32s = ctx.at<const std::int32_t>(idx);
      auto index = [&](std::size_t j) -> std::int64_t { return i64 ? i64s[j] : i32s[j]; };
      try {
        for (std::size_t j = 0; j < count; ++j) ir::gathered_element(index(j), g.n);
      } catch (const ir::ShapeError& e) {
        throw std::runtime_error(name + ": " + e.message);
      }
      const std::uint8_t* d = ctx.at<const std::uint8_t>(src);
      std::uint8_t* out = ctx.at<std::uint8_t>(y);
      split_rows(ctx, g.result_rows(), g.row_length() * g.element_bytes,
                 [&](std::size_t b, std::size_t e) { ir::gather_elements_copy(g, d, index, out, b, e); });
    };
    emit_gather_step(
        n, std::move(s), [&] { return cuda_gather_elements_source(g, i64, 0); },
        "gather_elements: an index out of range for axis of size " + std::to_string(g.n), src, idx, y);
  }
  // resize: the op kernel's own passes (ir/resize.hpp), one step per axis
  // that changes, the last first, split over the pool by result rows from
  // 256 KiB: f32 interpolation accumulates in f32; nearest (single taps)
  // copies elements of any type. Other types' interpolation runs the
  // reference kernel. On the GPU, one generated kernel per pass with its
  // taps as tables in the source.
  void lower_resize(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
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
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const ir::ResizePass& pass = passes[k];
      const BufferId dst = add_buffer(
          BufferKind::Temp, x.dtype, pass.out_dims,
          k + 1 == passes.size() ? n.outputs[0] : n.outputs[0] + " (axis " + std::to_string(pass.axis) + ")");
      Step s;
      s.kind = pass.taps.taps == 1 ? StepKind::Copy : StepKind::Kernel;
      s.label = "resize " + spec.mode + " axis " + std::to_string(pass.axis) + " (" + std::to_string(pass.taps.in) +
                " -> " + std::to_string(pass.taps.out) + ", " + std::to_string(pass.taps.taps) + " taps)";
      s.reads = {src};
      s.writes = {dst};
      // The extrapolation value as the element type stores it, as bits.
      ir::Tensor fill_value(x.dtype, {1});
      fill_value.set(0, spec.extrapolation);
      std::uint64_t fill = 0;
      std::memcpy(&fill, fill_value.bytes(), esize);
      s.run = [pass, src, dst, esize, fill](const RunContext& ctx) {
        const std::size_t row_bytes = static_cast<std::size_t>(pass.inner) * esize;
        auto rows = [&](auto element) {
          using T = decltype(element);
          T fill_as;
          std::memcpy(&fill_as, &fill, sizeof(T));
          split_rows(ctx, pass.rows(), row_bytes, [&](std::size_t b, std::size_t e) {
            ir::resize_pass_rows<T, float>(pass, ctx.at<const T>(src), ctx.at<T>(dst), fill_as, b, e);
          });
        };
        if (pass.taps.taps != 1)
          rows(float{});
        else if (esize == 8)  // copies: elements as unsigned integers of their size
          rows(std::uint64_t{});
        else if (esize == 4)
          rows(std::uint32_t{});
        else if (esize == 2)
          rows(std::uint16_t{});
        else
          rows(std::uint8_t{});
      };
#ifdef SATURN_HAVE_CUDA
      if (cuda())
        s = make_cuda_own_kernel_step(cuda_, cuda_resize_source(pass, esize, fill, 0), {src}, {dst}, s.kind, s.label);
#endif
      p_->steps.push_back(std::move(s));
      src = dst;
    }
    values_[n.outputs[0]] = stored(src);
  }
  // pad and trilu of any element type: row copies by the op kernel's own
  // geometry (ir/pad.hpp, ir/trilu.hpp), split over the pool from 256 KiB
  // of result; on the GPU, one generated kernel each.
  void lower_pad(const ir::Node& n, Value& x) {
    values_[n.outputs[0]] =
        stored(emit_pad(x, n.attrs.ints("pads"), n.attrs.s("mode", "constant"), n.attrs.f("value", 0.0), n.outputs[0]));
  }
  // x padded by `pads` (ONNX's: begins then ends) in `mode`, into a new
  // buffer named `name`: one row-copy step (a kernel on the GPU).
  BufferId emit_pad(Value& x, const Dims& pads, const std::string& mode, double value, const std::string& name) {
    const BufferId src = whole(x).buffer;
    const ir::PadRows p = ir::pad_rows(x.dims, pads, ir::pad_mode(mode), ir::dtype_size(x.dtype));
    const BufferId y = add_buffer(BufferKind::Temp, x.dtype, p.out_dims, name);
    ir::Tensor fill(x.dtype, {1});
    fill.set(0, value);
    std::vector<std::uint8_t> fill_bytes(fill.bytes(), fill.bytes() + fill.nbytes());
    Step s;
    s.kind = StepKind::Copy;
    s.label = "pad (" + mode + ", " + std::to_string(p.rows()) + " rows)";
    s.reads = {src};
    s.writes = {y};
    s.run = [p, src, y, fill_bytes](const RunContext& ctx) {
      const std::uint8_t* in = ctx.at<const std::uint8_t>(src);
      std::uint8_t* o = ctx.at<std::uint8_t>(y);
      const std::size_t row_bytes = static_cast<std::size_t>(p.out_dims.back()) * p.element_bytes;
      split_rows(ctx, p.rows(), row_bytes,
                 [&](std::size_t b, std::size_t e) { ir::pad_copy(p, in, fill_bytes.data(), o, b, e); });
    };
#ifdef SATURN_HAVE_CUDA
    if (cuda()) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, fill_bytes.data(), fill_bytes.size());
      s = make_cuda_own_kernel_step(cuda_, cuda_pad_source(p, bits, 0), {src}, {y}, StepKind::Copy, s.label);
    }
#endif
    p_->steps.push_back(std::move(s));
    return y;
  }
  void lower_trilu(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
    const BufferId src = whole(x).buffer;
    const BufferId y = add_buffer(BufferKind::Temp, out_type.dtype, x.dims, n.outputs[0]);
    const ir::TriluRows t =
        ir::trilu_rows(x.dims, n.attrs.i("k", 0), n.attrs.i("upper", 1) != 0, ir::dtype_size(out_type.dtype));
    Step s;
    s.kind = StepKind::Copy;
    s.label =
        std::string("trilu (") + (t.upper ? "upper" : "lower") + ", " + std::to_string(t.result_rows()) + " rows)";
    s.reads = {src};
    s.writes = {y};
    s.run = [t, src, y](const RunContext& ctx) {
      const std::uint8_t* in = ctx.at<const std::uint8_t>(src);
      std::uint8_t* o = ctx.at<std::uint8_t>(y);
      split_rows(ctx, t.result_rows(), static_cast<std::size_t>(t.cols) * t.element_bytes,
                 [&](std::size_t b, std::size_t e) { ir::trilu_copy(t, in, o, b, e); });
    };
#ifdef SATURN_HAVE_CUDA
    if (cuda()) s = make_cuda_own_kernel_step(cuda_, cuda_trilu_source(t, 0), {src}, {y}, StepKind::Copy, s.label);
#endif
    p_->steps.push_back(std::move(s));
    values_[n.outputs[0]] = stored(y);
  }
  // argmax / argmin of f32, i64 or i32 values: the op kernel's own meaning
  // (ir/arg_reduce.hpp) over the columns of each block, split over the
  // pool from 256 KiB of operand; on the GPU a warp per result.
  void lower_arg_reduce(const ir::Node& n, Value& x, const ir::ValueType& out_type) {
    const BufferId src = whole(x).buffer,
                   y = add_buffer(BufferKind::Temp, DType::I64, ir::static_dims(out_type.shape), n.outputs[0]);
    const auto axis =
        static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", 0), static_cast<std::int64_t>(x.dims.size())));
    const ir::ArgReduce g =
        ir::arg_reduce_geometry(x.dims, axis, n.op == "argmax", n.attrs.i("select_last_index", 0) != 0);
    Step s;
    s.kind = StepKind::ArgReduce;
    s.label = n.op + " (" + std::to_string(g.results()) + " of " + std::to_string(g.count) + ")";
    s.reads = {src};
    s.writes = {y};
    const DType t = x.dtype;
    s.run = [g, src, y, t](const RunContext& ctx) {
      std::int64_t* out = ctx.at<std::int64_t>(y);
      const std::size_t block_bytes = g.count * g.inner * ir::dtype_size(t);
      auto rows = [&](const auto* v) {
        split_rows(ctx, g.outer, block_bytes, [&](std::size_t b, std::size_t e) {
          ir::arg_reduce(
              g, [v](std::size_t i) { return v[i]; }, out, b, e);
        });
      };
      if (t == DType::F32)
        rows(ctx.at<const float>(src));
      else if (t == DType::I64)
        rows(ctx.at<const std::int64_t>(src));
      else
        rows(ctx.at<const std::int32_t>(src));
    };
#ifdef SATURN_HAVE_CUDA
    if (cuda())
      s = make_cuda_own_kernel_step(cuda_, cuda_arg_reduce_source(g, t, 0), {src}, {y}, StepKind::ArgReduce, s.label);
#endif
    p_->steps.push_back(std::move(s));
    values_[n.outputs[0]] = stored(y);
  }
  // max_pool / avg_pool that oneDNN (CPU) or cuDNN (GPU) does not take:
  // other element types, MaxPool's Indices, dilations or one-sided pads on
  // the GPU, ceil_mode with count_include_pad. The op kernel's own meaning
  // (ir/pool.hpp), split over the pool by planes from 256 KiB of taps read;
  // on the GPU, one generated kernel with the window as constants. f16 /
  // bf16 on the CPU go to oneDNN over f32 copies (lower_through_f32).
  void lower_pool(const ir::Node& n, Value& x, const std::vector<ir::ValueType>& out_types) {
    // (f16 / bf16 on the CPU get here only when lower_through_f32 could not
    // take them.)
    const bool half = x.dtype == DType::F16 || x.dtype == DType::BF16;
    if (x.dtype == DType::Bool || (half && !cuda())) {
      lower_reference(n, out_types);
      return;
    }
    const ir::PoolWindow p = ir::pool_window(n.attrs, x.dims, n.op.find("max") != std::string::npos);
    const bool indices = p.max && n.outputs.size() > 1 && !n.outputs[1].empty();
    const BufferId src = whole(x).buffer;
    const DType t = x.dtype;
    const BufferId y = add_buffer(BufferKind::Temp, t, p.out_dims(), n.outputs[0]);
    const std::optional<BufferId> idx =
        indices ? std::optional(add_buffer(BufferKind::Temp, DType::I64, p.out_dims(), n.outputs[1])) : std::nullopt;
    Step s;
    s.kind = StepKind::Pool;
    s.label = n.op + " (window";
    for (auto k : p.w.kernel) s.label += " " + std::to_string(k);
    s.label += indices ? ", indices)" : ")";
    s.reads = {src};
    s.writes = idx ? std::vector<BufferId>{*idx, y} : std::vector<BufferId>{y};
    std::int64_t taps = 1;
    for (auto k : p.w.kernel) taps *= k;
    const std::size_t plane_bytes = static_cast<std::size_t>(p.out_plane() * taps) * ir::dtype_size(t);
    s.run = [p, src, y, idx, t, plane_bytes](const RunContext& ctx) {
      std::int64_t* at = idx ? ctx.at<std::int64_t>(*idx) : nullptr;
      auto planes = [&](auto element) {
        using T = decltype(element);
        split_rows(ctx, static_cast<std::size_t>(p.planes()), plane_bytes, [&](std::size_t b, std::size_t e) {
          ir::pool_planes<T>(p, ctx.at<const T>(src), ctx.at<T>(y), at, b, e);
        });
      };
      switch (t) {
        case DType::F32:
          return planes(float{});
        case DType::F64:
          return planes(double{});
        case DType::I64:
          return planes(std::int64_t{});
        case DType::I32:
          return planes(std::int32_t{});
        case DType::I8:
          return planes(std::int8_t{});
        default:
          return planes(std::uint8_t{});
      }
    };
#ifdef SATURN_HAVE_CUDA
    if (cuda())
      s = make_cuda_own_kernel_step(cuda_, cuda_pool_source(p, t, indices, 0), {src}, s.writes, s.kind, s.label);
#endif
    p_->steps.push_back(std::move(s));
    values_[n.outputs[0]] = stored(y);
    if (idx) values_[n.outputs[1]] = stored(*idx);
  }
  // v as sgemm reads it: [batch..., rows, cols] (after an optional transpose
  // of its last two dims), copied to a contiguous buffer only when its
  // strides fit neither sgemm layout.
  View gemm_operand(Value& v, bool transpose, std::int64_t rows, std::int64_t cols, const Dims& batch) {
    auto as_operand = [&](View view) -> std::optional<View> {
      const std::size_t r = view.dims.size();
      if (transpose) {
        std::swap(view.dims[r - 1], view.dims[r - 2]);
        std::swap(view.strides[r - 1], view.strides[r - 2]);
      }
      View lead{view.buffer, view.offset, Dims(view.dims.begin(), view.dims.end() - 2),
                Dims(view.strides.begin(), view.strides.end() - 2)};
      View out = lead.broadcast_to(batch);
      out.dims.push_back(rows);
      out.dims.push_back(cols);
      out.strides.push_back(view.strides[r - 2]);
      out.strides.push_back(view.strides[r - 1]);
      if (!matrix_layout(out)) return std::nullopt;
      for (std::int64_t st : out.strides)
        if (st < 0) return std::nullopt;  // a reversed slice: BLAS walks forwards
      return out;
    };
    store(v);
    if (!v.is_scalar_constant)
      if (auto op = as_operand(v.view)) return *op;
    return *as_operand(whole(v));
  }
  // `result`: the product's element type (f32; on CUDA also f16 / bf16,
  // which cuBLAS rounds its f32 sums to).
  void lower_gemm_like(const ir::Node& n, Value& a, Value& b, bool ta, bool tb, double alpha, Value* c, double beta,
                       const Dims& out_dims, DType result = DType::F32);

  bool cuda() const { return o_.target == LoweringTarget::Cuda; }
  // The CUDA target's pieces (lower/cuda_steps.hpp), built only with the toolkit.
  void start_cuda();
  void finish_cuda();
  Step cuda_gemm_step(Value& a_in, Value& b_in, bool ta, bool tb, View a, View b, BufferId y, const Dims& out_dims,
                      double alpha);
  LibraryStep cuda_conv_step(const ConvSpec& spec, const View& x, BufferId w, std::optional<BufferId> bias,
                             const View* skip, BufferId y);
  LibraryStep cuda_pool_step(const PoolSpec& spec, const ir::WindowGeometry& w, const View& x, BufferId y);
  std::optional<LibraryStep> cuda_conv_transpose_step(const ConvSpec& spec, const View& x, BufferId w,
                                                      std::optional<BufferId> bias, BufferId y);
  // A loop kernel that only copies f32 elements read across its rows (a
  // transpose: the last dimension's stride is not 1, or its rows are too
  // short to vectorize) as a oneDNN reorder, or nullopt. Broadcasts
  // (stride 0) and reversed reads stay kernels.
  std::optional<Step> transposing_copy(const LoopKernel& k, const std::string& label) {
    if (k.reduce != ReduceKind::None || k.leaves.size() != 1 || k.body != k.leaf_vars[0] || k.out_dtype != DType::F32 ||
        k.leaves[0].dtype != DType::F32 || k.dims.empty() || k.dims.size() > 12)
      return std::nullopt;
    const Leaf& l = k.leaves[0];
    const bool short_rows = k.dims.back() < 16 && ir::numel(k.dims) >= 4096;
    if ((l.strides.back() == 1 && !short_rows) ||
        std::any_of(l.strides.begin(), l.strides.end(), [](std::int64_t s) { return s <= 0; }))
      return std::nullopt;
    return make_reorder_step(l.buffer, l.offset, k.dims, l.strides, k.out, label, p_->keep_alive);
  }
  // A weight or bias operand of a convolution: a whole constant, read once
  // when lowering; otherwise read at every run, dense for oneDNN and
  // row-major for cuDNN (which reads filters and biases so).
  LibraryOperand library_operand(Value& v) {
    const Buffer& b = p_->buffers[static_cast<std::size_t>(v.view.buffer)];
    if (!v.pending && !v.is_scalar_constant && v.view.whole() && b.kind == BufferKind::Weight)
      return {v.view, b.weight};
    return {cuda() ? whole(v) : dense(v), nullptr};
  }
  std::shared_ptr<CudaSteps> cuda_;

  LoweringOptions o_;
  std::shared_ptr<ir::Graph> graph_;
  std::shared_ptr<Program> p_ = std::make_shared<Program>();
  std::shared_ptr<ir::SymContext> ctx_ = std::make_shared<ir::SymContext>();
  SymId acc_ = 0;
  std::unordered_map<SymId, View> leaf_views_;
  std::map<std::string, ir::ValueType> types_;
  std::map<std::string, Value> values_;
  std::map<std::string, int> uses_;
  std::vector<LoopKernel> kernels_;
  std::vector<std::size_t> kernel_step_;
  // The node each integer division, remainder and power of the expression
  // DAG comes from (the first, where nodes share one).
  struct DivisionSite {
    std::size_t node = 0;  // its index in the graph
    std::string name;      // ir::describe
  };
  std::map<SymId, DivisionSite> divisions_;
  // Epilogues a library convolution can take as post-ops: the residual add
  // (sum) and a ReLU after the conv or the add. Planned before lowering and
  // taken only when the convolution itself becomes a library call;
  // otherwise these nodes lower as usual.
  struct ConvEpilogue {
    std::optional<std::size_t> add;  // result = conv + skip
    std::string skip;
    std::optional<std::size_t> relu;
  };
  void plan_epilogues();
  // A convolution, direct or transposed (n.op says), as a library call with
  // the epilogue planned for it. False: the reference kernel runs it.
  bool lower_convolution(const ir::Node& n, ConvSpec spec, Value& x_value, Value& w_value, Value* bias_value,
                         bool own_relu);
  std::map<std::size_t, ConvEpilogue> epilogue_;  // conv node -> its planned epilogue
  std::vector<bool> live_;                        // ir::live_nodes: the nodes lowered
  std::map<std::size_t, std::string> fused_;      // epilogue node a conv took -> the value its output is
  std::shared_ptr<std::deque<ir::Tensor>> folded_ = std::make_shared<std::deque<ir::Tensor>>();
};

Expected<std::shared_ptr<Program>> Lowerer::run() {
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Diagnostic> failure;
  try {
    auto types = ir::infer_types(*graph_);
    if (!types) throw DiagnosticError{types.error()};
    types_ = std::move(*types);
    for (const auto& [name, t] : types_)
      if (!ir::is_static(t.shape))
        throw DiagnosticError{at_graph(std::string("the ")
                                           .append(cuda() ? "cuda" : "cpu")
                                           .append(" target needs static shapes: '")
                                           .append(name)
                                           .append("' is ")
                                           .append(ir::to_string(t.shape))
                                           .append(" (give inputs, or set the dimensions)"))};
    acc_ = ctx_->var("acc").id();
    if (cuda()) start_cuda();
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
    plan_epilogues();
    for (std::size_t i = 0; i < graph_->nodes.size(); ++i)
      if (live_[i]) lower_node(i);
    // Graph outputs: whole temporaries of their own. (A contiguous view
    // from offset 0 may be a prefix of its buffer: a slice [0, 3) of 4.)
    std::set<BufferId> seen;
    for (const std::string& o : graph_->outputs) {
      Value& v = values_.at(o);
      store(v, "", false);
      const Buffer& b = p_->buffers[static_cast<std::size_t>(v.view.buffer)];
      const bool all_of_it = b.bytes == static_cast<std::size_t>(ir::numel(v.dims)) * ir::dtype_size(v.dtype);
      if (!v.view.whole() || !all_of_it || b.kind != BufferKind::Temp || seen.count(v.view.buffer) ||
          v.is_scalar_constant) {
        Value copy = v;
        BufferId out = add_buffer(BufferKind::Temp, v.dtype, v.dims, "output");
        emit_kernel(v.dims, {}, ReduceKind::None, leaf(v.view), 0, out, 0, "output copy", {}, compute_dtype(v.dtype));
        copy.view = View::of(out, v.dims);
        copy.is_scalar_constant = false;
        p_->outputs.push_back(copy.view.buffer);
      } else {
        p_->outputs.push_back(v.view.buffer);
      }
      seen.insert(p_->outputs.back());
      p_->buffers[static_cast<std::size_t>(p_->outputs.back())].kind = BufferKind::Output;
      p_->output_dims.push_back(v.dims);
    }
    if (cuda()) {
      finish_cuda();
      p_->kernels = std::make_shared<const std::vector<LoopKernel>>(std::move(kernels_));
      plan_memory(*p_);
      p_->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return p_;
    }
    // Compile every loop kernel in one module.
    auto jit = KernelJit::create();
    if (!jit) throw DiagnosticError{jit.error()};
    (*jit)->keep_ir = o_.keep_ir;
    auto fns = (*jit)->compile(kernels_);
    if (!fns) throw DiagnosticError{fns.error()};
    p_->keep_alive.push_back(*jit);
    p_->ir_text = (*jit)->last_ir();
    p_->target_cpu = (*jit)->target_description();
    for (std::size_t k = 0; k < kernels_.size(); ++k) {
      Step& s = p_->steps[kernel_step_[k]];
      if (auto r = transposing_copy(kernels_[k], s.label)) {
        s = std::move(*r);
        --p_->fused_kernels;
        continue;
      }
      KernelFn fn = (*fns)[k];
      const LoopKernel& kernel = kernels_[k];
      std::vector<BufferId> args;
      for (const Leaf& l : kernel.leaves) args.push_back(l.buffer);
      args.push_back(kernel.out);
      if (kernel.fault >= 0) args.push_back(kernel.fault);
      const std::int64_t rows = kernel_rows(kernel);
      const std::int64_t work = ir::numel(kernel.dims) * std::max<std::int64_t>(1, ir::numel(kernel.red_dims));
      // ptrs: the argument array, filled per run (steps run one at a time).
      s.run = [fn, args, rows, work, fault = kernel.fault, errors = kernel.fault_errors,
               ptrs = std::vector<void*>(args.size())](const RunContext& ctx) mutable {
        for (std::size_t i = 0; i < args.size(); ++i) ptrs[i] = ctx.addr[static_cast<std::size_t>(args[i])];
        std::uint32_t* flag = fault >= 0 ? ctx.at<std::uint32_t>(fault) : nullptr;
        if (flag) *flag = 0;
        // Small kernels run on the calling thread: waking the pool costs more.
        if (work < 32768 || rows < 2 || !ctx.pool || ctx.pool->size() < 2)
          fn(ptrs.data(), 0, rows);
        else
          ctx.pool->parallel_for(rows, [&](std::int64_t b, std::int64_t e) { fn(ptrs.data(), b, e); });
        if (flag && *flag) throw std::runtime_error(fault_message(errors, *flag));
      };
    }
    p_->kernels = std::make_shared<const std::vector<LoopKernel>>(std::move(kernels_));
    plan_memory(*p_);
  } catch (const DiagnosticError& e) {
    failure = e.diag;
  } catch (const ir::ShapeError& e) {
    failure = at_graph("cpu lowering: " + e.message);
  } catch (const dnnl::error& e) {
    failure = at_graph(std::string("cpu lowering: oneDNN: ") + e.what());
  } catch (const std::exception& e) {
    failure = at_graph(std::string("cpu lowering: internal error: ") + e.what());
  }
  if (failure) return *failure;
  p_->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return p_;
}

bool Lowerer::lower_convolution(const ir::Node& n, ConvSpec spec, Value& x_value, Value& w_value, Value* bias_value,
                                bool own_relu) {
  const bool transposed = is_conv_transpose(n.op);
  ConvEpilogue e;
  if (auto it = epilogue_.find(static_cast<std::size_t>(&n - graph_->nodes.data())); it != epilogue_.end())
    e = it->second;
  Value* skip = e.add ? &values_.at(e.skip) : nullptr;
  if (e.add && (skip->dtype != DType::F32 || skip->dims != spec.out_dims)) e = {};  // (relu came after the add)
  spec.relu = own_relu || e.relu;
  spec.sum = e.add.has_value();
  const View x = dense(x_value);
  std::optional<View> skip_view;
  if (e.add) skip_view = dense(*skip);
  if (cuda() && skip_view && !skip_view->whole()) {  // cuDNN reads the residual in the result's layout
    e = {};
    skip_view.reset();
    spec.sum = false;
    spec.relu = own_relu;
  }
  const LibraryOperand w = library_operand(w_value);
  const std::optional<LibraryOperand> bias =
      bias_value ? std::optional<LibraryOperand>(library_operand(*bias_value)) : std::nullopt;
  const View* skip_read = skip_view ? &*skip_view : nullptr;
  const BufferId y = add_buffer(BufferKind::Temp, DType::F32, spec.out_dims, n.op);
  std::optional<LibraryStep> ls;
  if (cuda()) {
    const std::optional<BufferId> b = bias ? std::optional<BufferId>(bias->view.buffer) : std::nullopt;
    ls = transposed ? cuda_conv_transpose_step(spec, x, w.view.buffer, b, y)
                    : cuda_conv_step(spec, x, w.view.buffer, b, skip_read, y);
  } else {
    try {
      ls = transposed ? make_conv_transpose_step(spec, x, w, bias, y, p_->keep_alive)
                      : make_conv_step(spec, x, w, bias, skip_read, y, p_->keep_alive);
    } catch (const dnnl::error&) {
      ls.reset();  // a geometry oneDNN does not implement: the reference kernel
    }
  }
  if (!ls) {
    p_->buffers.pop_back();  // y, unused
    return false;
  }
  // The sum post-op reads each skip element once, where it writes: skip's
  // storage may become the result's when it is laid out alike (and is not
  // one of the conv's other operands, read all over).
  if (skip_view && skip_view->offset == 0 && skip_view->buffer != x.buffer && skip_view->buffer != w.view.buffer &&
      (!bias || skip_view->buffer != bias->view.buffer) && same_strides(*skip_view, ls->out_strides))
    ls->step.in_place_ok.push_back(skip_view->buffer);
  p_->steps.push_back(std::move(ls->step));
  ++p_->library_calls;
  if (e.add) fused_[*e.add] = n.outputs[0];
  if (e.relu) fused_[*e.relu] = graph_->nodes[*e.relu].inputs[0];
  Value v = stored(y);
  v.view.strides = ls->out_strides;
  values_[n.outputs[0]] = std::move(v);
  return true;
}

void Lowerer::plan_epilogues() {
  const std::vector<ir::Node>& nodes = graph_->nodes;
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
  // The conv node computing v, when v has no other use.
  auto conv_of = [&](const std::string& v) -> std::optional<std::size_t> {
    auto it = producer.find(v);
    if (it == producer.end() || uses_[v] != 1) return std::nullopt;
    const std::string& op = nodes[it->second].op;
    // (Not transposed ones: oneDNN 2.6's deconvolution with a ReLU post-op
    // took 16 ms where the plain one and a ReLU kernel take 2.9 ms, on
    // bench_cpu's unet_up; cuDNN's is a backward-data call, with none.)
    if (op != "conv" && op != "dnnl.conv" && op != "cudnn.conv") return std::nullopt;
    return it->second;
  };
  std::map<std::size_t, std::size_t> add_conv;  // planned add node -> its conv
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!live_[i]) continue;  // (a dead add must not take a live conv's result)
    const ir::Node& n = nodes[i];
    if (n.op == "add" && n.inputs.size() == 2 && n.outputs.size() == 1) {
      // The conv operand that runs last takes the add: the other operand
      // (skip) must exist when it runs, and have the result's shape.
      std::optional<std::size_t> best;
      std::size_t best_k = 0;
      for (std::size_t k = 0; k < 2; ++k) {
        auto c = conv_of(n.inputs[k]);
        const std::string& other = n.inputs[1 - k];
        if (!c || other.empty() || other == n.inputs[k]) continue;
        auto ot = types_.find(other), rt = types_.find(n.outputs[0]);
        if (ot == types_.end() || rt == types_.end() || ot->second.shape != rt->second.shape ||
            ot->second.dtype != DType::F32)
          continue;
        if (auto p = producer.find(other); p != producer.end() && p->second > *c) continue;
        if (!best || *c > *best) {
          best = c;
          best_k = k;
        }
      }
      if (best) {
        epilogue_[*best].add = i;
        epilogue_[*best].skip = n.inputs[1 - best_k];
        add_conv[i] = *best;
      }
    }
    if (n.op == "relu" && n.inputs.size() == 1 && n.outputs.size() == 1) {
      const std::string& v = n.inputs[0];
      if (auto c = conv_of(v); c && !epilogue_[*c].add) {
        epilogue_[*c].relu = i;
      } else if (auto p = producer.find(v); p != producer.end() && add_conv.count(p->second) && uses_[v] == 1) {
        epilogue_[add_conv[p->second]].relu = i;
      }
    }
  }
}

void Lowerer::lower_node(std::size_t index) {
  const ir::Node& n = graph_->nodes[index];
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  if (!def) fail(n, "unknown op '" + n.op + "'");
  std::vector<ir::ValueType> out_types;
  for (const std::string& o : n.outputs) out_types.push_back(o.empty() ? ir::ValueType{} : types_.at(o));
  if (auto it = fused_.find(index); it != fused_.end()) {  // already applied by the conv before it
    values_[n.outputs[0]] = values_.at(it->second);
    return;
  }
  // Constant subgraphs: evaluated now, once.
  bool all_const = !n.inputs.empty();
  for (const std::string& i : n.inputs) {
    if (i.empty()) continue;
    const Value& v = values_.at(i);
    all_const &= !v.pending && p_->buffers[static_cast<std::size_t>(v.view.buffer)].kind == BufferKind::Weight;
  }
  if (all_const) {
    std::vector<ir::Tensor> args;
    std::vector<char> given;
    for (const std::string& i : n.inputs) {
      given.push_back(!i.empty());
      if (i.empty()) {
        args.emplace_back();
        continue;
      }
      Value& v = values_.at(i);
      const Buffer& b = p_->buffers[static_cast<std::size_t>(v.view.buffer)];
      ir::Tensor t(v.dtype, v.dims);
      gather(b.weight->bytes(), ir::dtype_size(v.dtype), v.view, t.bytes());
      args.push_back(std::move(t));
    }
    std::vector<bool> g(given.begin(), given.end());
    auto gb = std::make_unique<bool[]>(g.size() + 1);
    for (std::size_t i = 0; i < g.size(); ++i) gb[i] = g[i];
    auto res = def->eval(n.attrs, args, std::span<const bool>(gb.get(), g.size()), n.outputs.size());
    for (std::size_t k = 0; k < n.outputs.size() && k < res.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      folded_->push_back(std::move(res[k]));
      values_[n.outputs[k]] = stored(add_weight(&folded_->back(), n.outputs[k]));
    }
    return;
  }
  std::vector<Value*> in;
  for (const std::string& i : n.inputs) in.push_back(i.empty() ? nullptr : &values_.at(i));
  bool all_f32 = true;
  for (Value* v : in)
    if (v) all_f32 &= v->dtype == DType::F32;
  for (const auto& t : out_types) all_f32 &= t.dtype == DType::F32;
  if (lower_view(n, in, out_types)) return;
  if (all_f32 && lower_f32(n, in, out_types)) return;
  if (!all_f32 && fuses_across_types(n, in, out_types) && lower_elementwise(n, in, out_types)) return;
  // Views of stored values of any type.
  if (is_view(n.op) && in.size() >= 1 && in[0] && n.outputs.size() == 1) {
    store(*in[0]);
    Value v = *in[0];
    Dims to = ir::static_dims(out_types[0].shape);
    if (!v.view.contiguous()) {
      v.view = whole(v);  // transposed or broadcast: one copy kernel, then a free reshape
    }
    if (v.view.contiguous()) {
      v.view = v.view.reshaped(to);
      v.dims = to;
      values_[n.outputs[0]] = v;
      return;
    }
  }
  if (n.op == "concat" && n.outputs.size() == 1 && !n.outputs[0].empty() &&
      std::all_of(in.begin(), in.end(), [](Value* v) { return v != nullptr; })) {
    lower_concat(n, in, out_types[0]);
    return;
  }
  if (n.op == "gather_elements" && in.size() == 2 && in[0] && in[1] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_gather_elements(n, *in[0], *in[1], out_types[0]);
    return;
  }
  if (n.op == "gather" && in.size() == 2 && in[0] && in[1] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_gather(n, *in[0], *in[1], out_types[0]);
    return;
  }
  if (n.op == "tile" && in.size() == 1 && in[0] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    // A copy of the operand viewed [r0 d0 r1 d1 ...] with stride 0 along
    // each repeat (any element type), reshaped to [r0 d0, r1 d1, ...].
    store(*in[0]);
    Value v = *in[0];
    const Dims reps = n.attrs.ints("repeats");
    if (reps.size() == v.dims.size() && std::all_of(reps.begin(), reps.end(), [](std::int64_t r) { return r >= 1; })) {
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
      const Dims out = ir::static_dims(out_types[0].shape);
      v.view = whole(v).reshaped(out);
      v.dims = out;
      values_[n.outputs[0]] = std::move(v);
      return;
    }
  }
  if (n.op == "resize" && in.size() == 1 && in[0] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_resize(n, *in[0], out_types[0]);
    return;
  }
  if (n.op == "pad" && in.size() == 1 && in[0] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_pad(n, *in[0]);
    return;
  }
  if ((n.op == "argmax" || n.op == "argmin") && in.size() == 1 && in[0] && !in[0]->dims.empty() &&
      (in[0]->dtype == DType::F32 || in[0]->dtype == DType::I64 || in[0]->dtype == DType::I32) &&
      n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_arg_reduce(n, *in[0], out_types[0]);
    return;
  }
  if (n.op == "trilu" && in.size() == 1 && in[0] && n.outputs.size() == 1 && !n.outputs[0].empty()) {
    lower_trilu(n, *in[0], out_types[0]);
    return;
  }
  if (is_reduction(n.op) && in.size() == 1 && in[0] && !out_types.empty() &&
      lower_reduction(n, *in[0], ir::static_dims(out_types[0].shape)))
    return;
  if ((n.op == "softmax" || n.op == "log_softmax") && in.size() == 1 && in[0] && lower_softmax(n, *in[0])) return;
  if (n.op == "matmul" && in.size() == 2 && in[0] && in[1] && !out_types.empty() &&
      lower_matmul(n, *in[0], *in[1], ir::static_dims(out_types[0].shape)))
    return;
  if (n.op == "einsum" && !out_types.empty() && lower_einsum(n, in, ir::static_dims(out_types[0].shape))) return;
  if (lower_through_f32(n, in, out_types)) return;
  const bool pool = n.op == "max_pool" || n.op == "avg_pool" || n.op == "dnnl.max_pool" || n.op == "dnnl.avg_pool" ||
                    n.op == "cudnn.max_pool" || n.op == "cudnn.avg_pool";
  if (pool && in.size() == 1 && in[0] && in[0]->dims.size() >= 3 && !n.outputs.empty() && !n.outputs[0].empty()) {
    lower_pool(n, *in[0], out_types);
    return;
  }
  lower_reference(n, out_types);
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
  if (!o_.fuse || uses_[n.outputs[result]] > 1) store(v);
  values_[n.outputs[result]] = std::move(v);
}

namespace {
bool integral(DType t) { return ir::is_integer(t) || t == DType::Bool; }
// Integer arithmetic: integer and bool operands, an integer or bool result,
// and an integer among them (bools alone keep the f32 logic they fuse into).
bool integer_node(const std::vector<Value*>& in, DType out) {
  const bool all = std::all_of(in.begin(), in.end(), [](const Value* v) { return v && integral(v->dtype); });
  const bool some = ir::is_integer(out) ||
                    std::any_of(in.begin(), in.end(), [](const Value* v) { return v && ir::is_integer(v->dtype); });
  return all && some && integral(out);
}

// Whether a pending integer operand `k` of `n` may be used before it is
// stored as its type: one computed in float is converted then; one
// computed in i64 is wrapped to its type's width then: i64 arithmetic
// computes its low bits, and
// only ops whose result's low bits depend on nothing else (add, sub, mul,
// neg, where's values, into a type no wider) may read the rest. A
// comparison, division, max, cast to a wider type... of an i8 sum that
// overflowed needs the wrapped value, which storing it gives.
bool wraps_later(const ir::Node& n, std::size_t k, const Value& v, DType out) {
  if (!ir::is_integer(v.dtype)) return true;
  if (v.compute != DType::I64) return false;  // converted from float when stored (saturated)
  if (v.dtype == DType::I64) return true;
  const bool low_bits = n.op == "add" || n.op == "sub" || n.op == "mul" || n.op == "neg" || (n.op == "where" && k > 0);
  return low_bits && ir::is_integer(out) && ir::dtype_size(out) <= ir::dtype_size(v.dtype);
}
}  // namespace

bool Lowerer::fuses_across_types(const ir::Node& n, const std::vector<Value*>& in,
                                 const std::vector<ir::ValueType>& out_types) {
  static const std::set<std::string> ops = {"less", "less_equal", "greater", "greater_equal", "equal",
                                            "not",  "and",        "or",      "xor",           "where"};
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (!ops.count(n.op) && !is_elementwise(n.op)) return false;
  const DType out = out_types[0].dtype;
  if (integer_node(in, out)) return true;  // i64 arithmetic (elementwise_compute)
  // (An integer result of float arithmetic is converted when stored.)
  if (!kernel_dtype(out) && !ir::is_integer(out)) return false;
  // Integers among floats are read as values, exactly in the f64
  // arithmetic they get (an i64 through double, as the reference reads it).
  return std::all_of(in.begin(), in.end(), [&](const Value* v) { return v && leaf_dtype(v->dtype); });
}

DType Lowerer::elementwise_compute(const ir::Node& n, const std::vector<Value*>& in, DType out) {
  if (integer_node(in, out)) return DType::I64;
  auto wide = [&](DType t) { return t == DType::F64 || ir::is_integer(t); };
  // A cast is a rounding to its result's type, which f32 arithmetic gives
  // (from f64 too, and from an i64 read through double) except the test
  // `!= 0` of a bool result and the truncation to an integer.
  if (n.op == "cast")
    return out == DType::F64 || ((out == DType::Bool || ir::is_integer(out)) && in[0] && wide(in[0]->dtype))
               ? DType::F64
               : DType::F32;
  // Floor modulo is x - y floor(x / y): in f32 a quotient rounded up to an
  // integer would give about -y for about y; in f64, as the reference
  // computes it, the f32 operands' result is the reference's.
  if (wide(out) || n.op == "mod") return DType::F64;
  return std::any_of(in.begin(), in.end(), [&](const Value* v) { return v && wide(v->dtype); }) ? DType::F64
                                                                                                : DType::F32;
}

bool Lowerer::lower_elementwise(const ir::Node& n, std::vector<Value*>& in,
                                const std::vector<ir::ValueType>& out_types) {
  const Dims out = ir::static_dims(out_types[0].shape);
  const DType compute = elementwise_compute(n, in, out_types[0].dtype);
  std::vector<ir::SymTensor> args;
  auto given = std::make_unique<bool[]>(in.size() + 1);
  int ops = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    given[k] = in[k] != nullptr;
    if (!in[k]) {
      args.emplace_back();
      continue;
    }
    // An operand computed in another type is stored first, so each value
    // is rounded as its own type rounds (an f16 one always: f32 arithmetic
    // does not round to it).
    if (in[k]->pending && (in[k]->compute != compute || in[k]->dtype == DType::F16 || in[k]->dtype == DType::BF16 ||
                           !wraps_later(n, k, *in[k], out_types[0].dtype)))
      store(*in[k]);
    if (in[k]->pending && in[k]->dims == out) ops += in[k]->ops;
    ir::SymTensor t(*ctx_, in[k]->dtype, {});
    t.set(0, ir::Sym(ctx_.get(), expr_over(*in[k], out)));
    args.push_back(std::move(t));
  }
  try {  // the op's own kernel applied to scalar expressions (leaves are read as values, loop_kernel.hpp)
    auto res =
        ir::OpRegistry::get().find(n.op)->symbolic(n.attrs, args, std::span<const bool>(given.get(), in.size()), 1);
    const SymId root = res.at(0).id(0);
    if (compute == DType::I64) {
      if (!int_kernel_expression(*ctx_, root)) return false;
      for (SymId id : ctx_->reachable(std::span<const SymId>(&root, 1)))
        if (ir::sym_op_divides(ctx_->node(id).op))
          divisions_.try_emplace(id,
                                 DivisionSite{static_cast<std::size_t>(&n - graph_->nodes.data()), ir::describe(n)});
    }
    set_pending(n, in, out, out_types[0].dtype, root, ops, 0, compute);
  } catch (const ir::SymbolicUnsupported&) {
    return false;
  }
  return true;
}

// Movement ops that only change how a buffer is read (any element type):
// split, transpose, slice and expand become strided views of the operand.
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
    Dims perm = n.attrs.ints("perm");
    if (perm.empty())
      for (std::size_t i = v.dims.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
    v.view = v.view.transposed(perm);
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
  const int ops = 1 + (x.pending && x.dims == out ? x.ops : 0);
  ir::Sym xs(ctx_.get(), expr_over(x, full));
  ir::Sym acc(ctx_.get(), acc_);
  if (n.op == "reduce_log_sum_exp") {
    // log(sum(exp(x - max))) + max, as the op's kernel computes it; an
    // empty reduction is log(0) + -inf = -inf.
    Value top = reduce(xs.id(), full, red, ReduceKind::Max, acc.id(), 1, n.op + " max", compute, compute);
    ir::Sym shifted = xs - ir::Sym(ctx_.get(), expr_over(top, full));
    Value sum =
        reduce(ir::scalar::exp(shifted).id(), full, red, ReduceKind::Sum, acc.id(), 0, n.op + " sum", compute, compute);
    // The sum and the maximum, kept in the compute type, meet in the result.
    ir::Sym y = ir::scalar::log(ir::Sym(ctx_.get(), leaf(sum.view))) + ir::Sym(ctx_.get(), leaf(top.view));
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
  values_[n.outputs[0]] = reshaped_to(
      reduce(body.id(), full, red, reduction_kinds().at(n.op), post.id(), ops, n.op, x.dtype, compute), out);
  return true;
}

bool Lowerer::lower_softmax(const ir::Node& n, Value& x) {
  if (!ir::is_float(x.dtype) || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const DType compute = float_compute(x);
  const Dims full = x.dims;
  std::vector<bool> red(full.size(), false);
  red[static_cast<std::size_t>(ir::normalize_axis(n.attrs.i("axis", -1), static_cast<std::int64_t>(full.size())))] =
      true;
  const int ops = 1 + (x.pending ? x.ops : 0);
  SymId xs = expr_over(x, full);
  ir::Sym acc(ctx_.get(), acc_);
  Value top = reduce(xs, full, red, ReduceKind::Max, acc.id(), 1, n.op + " max", compute, compute);
  ir::Sym shifted = ir::Sym(ctx_.get(), xs) - ir::Sym(ctx_.get(), expr_over(top, full));
  Value sum =
      reduce(ir::scalar::exp(shifted).id(), full, red, ReduceKind::Sum, acc.id(), 0, n.op + " sum", compute, compute);
  ir::Sym s(ctx_.get(), expr_over(sum, full));
  ir::Sym y = n.op == "softmax" ? ir::scalar::exp(shifted) / s : shifted - ir::scalar::log(s);
  std::vector<Value*> in{&x};
  set_pending(n, in, full, x.dtype, y.id(), ops, 0, compute);
  return true;
}

bool Lowerer::lower_matmul(const ir::Node& n, Value& a_in, Value& b_in, const Dims& out) {
  const DType t = a_in.dtype;
  if (!ir::is_float(t) || b_in.dtype != t || a_in.dims.empty() || b_in.dims.empty() || n.outputs.size() != 1 ||
      n.outputs[0].empty())
    return false;
  // A 1-D operand as a matrix (a copy of its Value); the others as they are
  // (what the product stores of them is theirs).
  Value a_matrix, b_matrix;
  auto as_matrix = [&](Value& v, Value& m, bool left) -> Value& {
    if (v.dims.size() != 1) return v;
    m = v;
    if (m.pending || m.is_scalar_constant || !m.view.contiguous()) m.view = whole(m);
    m.dims = left ? Dims{1, v.dims[0]} : Dims{v.dims[0], 1};
    m.view = m.view.reshaped(m.dims);
    return m;
  };
  Value& a = as_matrix(a_in, a_matrix, true);
  Value& b = as_matrix(b_in, b_matrix, false);
  Dims out2 = out;  // the product's dims before the 1-D operands' axes go
  if (b_in.dims.size() == 1) out2.push_back(1);
  if (a_in.dims.size() == 1) out2.insert(out2.end() - 1, 1);
  const std::string& name = n.outputs[0];
  if (t == DType::F64) {
    // [batch... M N K], K reduced: a broadcast along N, b along M.
    const std::size_t r = out2.size();
    const std::int64_t K = a.dims.back();
    Dims full = out2;
    full.push_back(K);
    for (Value* v : {&a, &b})
      if (v->pending || v->is_scalar_constant) v->view = whole(*v);
    Dims a_to(out2.begin(), out2.end() - 1), b_to(out2.begin(), out2.end() - 2);
    a_to.push_back(K);
    b_to.insert(b_to.end(), {K, out2.back()});
    View av = a.view.broadcast_to(a_to), bv = b.view.broadcast_to(b_to);
    av.dims = bv.dims = full;
    av.strides.insert(av.strides.end() - 1, 0);  // [.. sM 0 sK]
    bv.strides.push_back(bv.strides[r - 2]);     // [.. sK sN sK]
    bv.strides[r - 2] = 0;                       // [.. 0 sN sK]
    std::vector<bool> red(full.size(), false);
    red.back() = true;
    ir::Sym body = ir::Sym(ctx_.get(), leaf(av)) * ir::Sym(ctx_.get(), leaf(bv));
    Value y = reduce(body.id(), full, red, ReduceKind::Sum, acc_, 1, n.op + " (f64)", DType::F64, DType::F64);
    values_[name] = reshaped_to(y, out);
    return true;
  }
  const bool half = t != DType::F32;
  if (!half) {
    lower_gemm_like(n, a, b, false, false, 1.0, nullptr, 0.0, out2);
    values_[name] = reshaped_to(values_[name], out);
    return true;
  }
  if (cuda()) {  // cuBLAS takes the halves as they are, and rounds its f32 sums to them
    lower_gemm_like(n, a, b, false, false, 1.0, nullptr, 0.0, out2, t);
    values_[name] = reshaped_to(values_[name], out);
    return true;
  }
  Value af = f32_copy(a, n.op + " operand as f32"), bf = f32_copy(b, n.op + " operand as f32");
  lower_gemm_like(n, af, bf, false, false, 1.0, nullptr, 0.0, out2);
  std::vector<Value*> none;
  set_pending(n, none, out, t, leaf(reshaped_to(values_[name], out).view), 1, 0, DType::F32);
  return true;
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

bool Lowerer::lower_through_f32(const ir::Node& n, std::vector<Value*>& in,
                                const std::vector<ir::ValueType>& out_types) {
  static const std::set<std::string> ops = {"conv",       "conv_transpose",  "gemm",
                                            "batch_norm", "layer_norm",      "instance_norm",
                                            "lrn",        "global_avg_pool", "global_max_pool",
                                            "max_pool",   "avg_pool"};
  if (!ops.count(n.op) || in.empty() || !in[0] || out_types.empty()) return false;
  const DType t = in[0]->dtype;
  if (t != DType::F16 && t != DType::BF16) return false;
  for (const Value* v : in)
    if (v && v->dtype != t) return false;
  for (const ir::ValueType& o : out_types)
    if (o.dtype != t) return false;
  std::vector<Value> copies(in.size());
  std::vector<Value*> in32;
  for (std::size_t k = 0; k < in.size(); ++k) {
    // (cuBLAS multiplies a gemm's A and B as they are, into f32 sums.)
    if (!in[k] || (cuda() && n.op == "gemm" && k < 2)) {
      in32.push_back(in[k]);
      continue;
    }
    copies[k] = f32_copy(*in[k], n.op + " operand as f32");
    in32.push_back(&copies[k]);
  }
  std::vector<ir::ValueType> types32 = out_types;
  for (ir::ValueType& o : types32) o.dtype = DType::F32;
  if (!lower_f32(n, in32, types32)) return false;
  std::vector<Value*> none;
  for (std::size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    Value& r = values_.at(n.outputs[k]);
    const Dims dims = r.dims;
    set_pending(n, none, dims, t, expr_over(r, dims), 1, k, DType::F32);
  }
  return true;
}

bool Lowerer::lower_f32(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types) {
  // (layer_norm's mean and inverse standard deviation are results too.)
  if ((n.outputs.size() != 1 && n.op != "layer_norm") || n.outputs.empty() || n.outputs[0].empty()) return false;
  const Dims out = ir::static_dims(out_types[0].shape);
  Value result;
  result.dims = out;
  auto set = [&](Value v) { values_[n.outputs[0]] = std::move(v); };
  auto pending = [&](SymId s, int ops) { set_pending(n, in, out, DType::F32, s, ops); };
  auto operand_ops = [&](std::initializer_list<Value*> vs) {
    int k = 0;
    for (Value* v : vs)
      if (v && v->pending && v->dims == out) k += v->ops;
    return k;
  };

  if (is_elementwise(n.op)) return lower_elementwise(n, in, out_types);
  if (is_reduction(n.op) && in.size() == 1 && in[0]) return lower_reduction(n, *in[0], out);
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
  if ((n.op == "softmax" || n.op == "log_softmax") && in.size() == 1 && in[0]) return lower_softmax(n, *in[0]);
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
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym acc(ctx_.get(), acc_);
    Value mean =
        reduce(xs.id(), full, red, ReduceKind::Sum, (acc / static_cast<double>(count)).id(), 1, "layer_norm mean");
    ir::Sym d = xs - ir::Sym(ctx_.get(), expr_over(mean, full));
    Value var =
        reduce((d * d).id(), full, red, ReduceKind::Sum, (acc / static_cast<double>(count)).id(), 0, "layer_norm var");
    ir::Sym y = d / ir::scalar::sqrt(ir::Sym(ctx_.get(), expr_over(var, full)) + n.attrs.f("epsilon", 1e-5));
    // scale and bias broadcast over the normalized block (their shape is a suffix of it)
    if (in.size() > 1 && in[1]) y = y * ir::Sym(ctx_.get(), expr_over(*in[1], full));
    if (in.size() > 2 && in[2]) y = y + ir::Sym(ctx_.get(), expr_over(*in[2], full));
    pending(y.id(), 1 + operand_ops({&x}));
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) values_[n.outputs[1]] = mean;
    if (n.outputs.size() > 2 && !n.outputs[2].empty()) {
      const ir::Sym v(ctx_.get(), expr_over(var, var.dims));
      set_pending(n, in, var.dims, DType::F32, (1.0 / ir::scalar::sqrt(v + n.attrs.f("epsilon", 1e-5))).id(), 1, 2);
    }
    return true;
  }
  // Per-channel parameters [C] read along axis 1 of `full`.
  auto channel = [&](Value& p, const Dims& full) {
    if (p.is_scalar_constant) return ctx_->constant(p.constant).id();
    store(p);
    View v = p.view;
    View c{v.buffer, v.offset, full, Dims(full.size(), 0)};
    c.strides[1] = v.strides[0];
    return leaf(c);
  };
  auto S = [&](SymId id) { return ir::Sym(ctx_.get(), id); };
  if (n.op == "instance_norm" && in.size() == 3 && in[0] && in[1] && in[2] && in[0]->dims.size() >= 3) {
    // Per (n, c): the mean and (biased) variance over the spatial dims,
    // two passes as layer_norm's; then the channel's scale and bias.
    Value& x = *in[0];
    const Dims full = x.dims;
    std::vector<bool> red(full.size(), true);
    red[0] = red[1] = false;
    const auto count = static_cast<double>(ir::numel(full) / (full[0] * full[1]));
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym acc(ctx_.get(), acc_);
    Value mean = reduce(xs.id(), full, red, ReduceKind::Sum, (acc / count).id(), 1, "instance_norm mean");
    ir::Sym d = xs - S(expr_over(mean, full));
    Value var = reduce((d * d).id(), full, red, ReduceKind::Sum, (acc / count).id(), 0, "instance_norm var");
    ir::Sym y = d / ir::scalar::sqrt(S(expr_over(var, full)) + n.attrs.f("epsilon", 1e-5)) * S(channel(*in[1], full)) +
                S(channel(*in[2], full));
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
    ir::Sym base = S(expr_over(sq, full)) * (alpha / static_cast<double>(size)) + bias;
    ir::Sym y = S(expr_over(x, full)) / ir::scalar::pow(base, base.lift(beta));
    pending(y.id(), 1 + operand_ops({&x}));
    return true;
  }
  if (n.op == "batch_norm" && in.size() == 5 && in[0]->dims.size() >= 2) {
    Value& x = *in[0];
    const Dims full = x.dims;
    ir::Sym xs(ctx_.get(), expr_over(x, full));
    ir::Sym y = (xs - S(channel(*in[3], full))) /
                    ir::scalar::sqrt(S(channel(*in[4], full)) + n.attrs.f("epsilon", 1e-5)) * S(channel(*in[1], full)) +
                S(channel(*in[2], full));
    pending(y.id(), 1 + operand_ops({&x}));
    return true;
  }
  if ((n.op == "matmul" || n.op == "blas.matmul" || n.op == "cublas.matmul") && in.size() == 2 && in[0] && in[1])
    return lower_matmul(n, *in[0], *in[1], out);
  if ((n.op == "gemm" || n.op == "blas.gemm" || n.op == "cublas.gemm") && in.size() >= 2) {
    Value* c = in.size() > 2 ? in[2] : nullptr;
    lower_gemm_like(n, *in[0], *in[1], n.attrs.i("transA", 0) != 0, n.attrs.i("transB", 0) != 0,
                    n.attrs.f("alpha", 1.0), c, n.attrs.f("beta", 1.0), out);
    return true;
  }
  const bool conv = n.op == "conv" || n.op == "dnnl.conv" || n.op == "dnnl.conv_relu" || n.op == "cudnn.conv" ||
                    n.op == "cudnn.conv_relu";
  if (conv && in[0]->dims.size() >= 3 && in[0]->dims.size() <= 5 && in[1]) {
    ConvSpec spec;
    spec.x_dims = in[0]->dims;
    spec.w_dims = in[1]->dims;
    spec.out_dims = out;
    // The op's own window geometry (explicit pads or auto_pad).
    const ir::WindowGeometry win = ir::window_geometry(n.attrs, Dims(spec.x_dims.begin() + 2, spec.x_dims.end()),
                                                       Dims(spec.w_dims.begin() + 2, spec.w_dims.end()), false);
    spec.strides = win.strides;
    spec.dilations = win.dilations;
    spec.pads_begin = win.pads_begin;
    spec.group = n.attrs.i("group", 1);
    spec.pads_end = exact_end_padding(spec.x_dims, out, win.kernel, win.strides, win.dilations, win.pads_begin);
    // cuDNN takes symmetric padding only. The exact right padding computed
    // above may be smaller than the left one and still give the same result
    // (a last window that does not reach it): then the symmetric one does
    // too. Otherwise (TensorFlow's SAME with a stride, one-sided pads) the
    // input is padded explicitly with zeros (one row-copy kernel; a
    // negative end padding crops) and cuDNN convolves it unpadded.
    const bool own_relu = n.op == "dnnl.conv_relu" || n.op == "cudnn.conv_relu";
    if (cuda() && !symmetric_padding(spec.x_dims, out, win.kernel, spec.strides, spec.dilations, spec.pads_begin,
                                     spec.pads_end)) {
      const std::size_t r = spec.x_dims.size();
      Dims pads(2 * r, 0);
      for (std::size_t i = 0; i + 2 < r; ++i) {
        pads[2 + i] = spec.pads_begin[i];
        pads[r + 2 + i] = spec.pads_end[i];
      }
      Value padded = stored(emit_pad(*in[0], pads, "constant", 0.0, n.outputs[0] + " padded input"));
      spec.x_dims = padded.dims;
      std::fill(spec.pads_begin.begin(), spec.pads_begin.end(), 0);
      std::fill(spec.pads_end.begin(), spec.pads_end.end(), 0);
      return lower_convolution(n, spec, padded, *in[1], in.size() > 2 ? in[2] : nullptr, own_relu);
    }
    return lower_convolution(n, spec, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, own_relu);
  }
  if (is_conv_transpose(n.op) && in[0]->dims.size() >= 3 && in[0]->dims.size() <= 5 && in[1]) {
    const ir::ConvTransposeGeometry g = ir::conv_transpose_geometry(n.attrs, in[0]->dims, in[1]->dims);
    ConvSpec spec;
    spec.x_dims = in[0]->dims;
    spec.w_dims = in[1]->dims;
    spec.out_dims = out;
    spec.strides = g.strides;
    spec.dilations = g.dilations;
    spec.pads_begin = g.begin;
    spec.group = n.attrs.i("group", 1);
    for (std::size_t i = 0; i < g.begin.size(); ++i)  // what is left of the full result past `out`
      spec.pads_end.push_back((spec.x_dims[2 + i] - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dilations[i] + 1 -
                              g.begin[i] - out[2 + i]);
    if (lower_convolution(n, spec, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, false)) return true;
    if (!cuda()) return false;  // (a geometry oneDNN does not implement: the reference kernel)
    // cuDNN crops both sides of the full result alike. Otherwise (one-sided
    // pads, SAME with an odd kernel - stride): the full result unpadded, with
    // output_padding's zero rows past it (fewer than a stride, which cuDNN
    // accepts), and the op's result a strided view into it.
    ConvSpec full = spec;
    Dims start(out.size(), 0);
    for (std::size_t i = 0; i < g.begin.size(); ++i) {
      full.out_dims[2 + i] = out[2 + i] + g.begin[i] + spec.pads_end[i] + std::max<std::int64_t>(0, -spec.pads_end[i]);
      full.pads_begin[i] = full.pads_end[i] = 0;
      start[2 + i] = g.begin[i];
    }
    if (!lower_convolution(n, full, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, false)) return false;
    Value& v = values_.at(n.outputs[0]);
    v.view = v.view.sliced(start, Dims(out.size(), 1), out);
    v.dims = out;
    return true;
  }
  const bool pool = n.op == "max_pool" || n.op == "avg_pool" || n.op == "dnnl.max_pool" || n.op == "dnnl.avg_pool" ||
                    n.op == "cudnn.max_pool" || n.op == "cudnn.avg_pool";
  if (pool && in[0]->dims.size() >= 3 && in[0]->dims.size() <= 5 && (n.outputs.size() < 2 || n.outputs[1].empty())) {
    PoolSpec spec;
    spec.max = n.op.find("max") != std::string::npos;
    spec.count_include_pad = n.attrs.i("count_include_pad", 0) != 0;
    if (spec.count_include_pad && n.attrs.i("ceil_mode", 0)) return false;
    spec.x_dims = in[0]->dims;
    spec.out_dims = out;
    const ir::WindowGeometry w = ir::window_geometry(n.attrs, Dims(spec.x_dims.begin() + 2, spec.x_dims.end()),
                                                     n.attrs.ints("kernel_shape"), n.attrs.i("ceil_mode", 0) != 0);
    spec.kernel = w.kernel;
    spec.strides = w.strides;
    spec.dilations = w.dilations;
    spec.pads_begin = w.pads_begin;
    spec.pads_end = exact_end_padding(spec.x_dims, out, w.kernel, w.strides, w.dilations, w.pads_begin);
    // oneDNN averages over the padding it is told about; ONNX's right
    // padding may be smaller than what ceil_mode adds.
    if (!spec.max && spec.count_include_pad && spec.pads_end != w.pads_end) return false;
    // cuDNN pads symmetrically and has no dilated pooling.
    if (cuda() &&
        (std::any_of(w.dilations.begin(), w.dilations.end(), [](std::int64_t d) { return d != 1; }) ||
         !symmetric_padding(spec.x_dims, out, w.kernel, spec.strides, w.dilations, spec.pads_begin, spec.pads_end)))
      return false;
    View x = dense(*in[0]);
    if (cuda() && spec.max && !x.contiguous()) x = whole(*in[0]);  // (its correction reads x row-major)
    BufferId y = add_buffer(BufferKind::Temp, DType::F32, out, n.op);
    std::optional<LibraryStep> made;
    try {
      made = cuda() ? cuda_pool_step(spec, w, x, y) : make_pool_step(spec, x, y, p_->keep_alive);
    } catch (const dnnl::error&) {  // a geometry oneDNN does not implement: the reference kernel
      p_->buffers.pop_back();       // y, unused
      return false;
    }
    LibraryStep& ls = *made;
    p_->steps.push_back(std::move(ls.step));
    ++p_->library_calls;
    Value v = stored(y);
    v.view.strides = ls.out_strides;
    set(v);
    return true;
  }
  return false;
}

void Lowerer::lower_gemm_like(const ir::Node& n, Value& a_in, Value& b_in, bool ta, bool tb, double alpha, Value* c,
                              double beta, const Dims& out_dims, DType result) {
  const std::size_t r = out_dims.size();
  Dims batch(out_dims.begin(), out_dims.end() - 2);
  const std::int64_t M = out_dims[r - 2], N = out_dims[r - 1];
  const std::int64_t K = ta ? a_in.dims[a_in.dims.size() - 2] : a_in.dims.back();
  View a = gemm_operand(a_in, ta, M, K, batch);
  View b = gemm_operand(b_in, tb, K, N, batch);
  BufferId y = add_buffer(BufferKind::Temp, result, out_dims, n.op);
  if (cuda()) {
    p_->steps.push_back(cuda_gemm_step(a_in, b_in, ta, tb, a, b, y, out_dims, alpha));
  } else {
    std::optional<Step> packed;
    if (p_->buffers[static_cast<std::size_t>(b.buffer)].kind == BufferKind::Weight)
      packed = make_packed_gemm_step(a, b, p_->buffers[static_cast<std::size_t>(b.buffer)], y, out_dims, alpha,
                                     p_->keep_alive);
    p_->steps.push_back(packed ? std::move(*packed) : make_gemm_step(a, b, y, out_dims, alpha));
  }
  ++p_->library_calls;
  Value v = stored(y);
  if (c && !(c->is_scalar_constant && c->constant == 0.0) && beta != 0.0) {
    // beta * C joins the result as a pending elementwise add (fused into its consumer).
    ir::Sym s = ir::Sym(ctx_.get(), leaf(v.view)) + ir::Sym(ctx_.get(), expr_over(*c, out_dims)) * beta;
    v.pending = true;
    v.sym = s.id();
    v.ops = 1;
    v.label = n.op + " bias";
    if (!o_.fuse || uses_[n.outputs[0]] > 1) store(v);
  }
  values_[n.outputs[0]] = v;
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
  ir::Attrs attrs = n.attrs;
  std::string name = ir::describe(n);
  s.run = [def, attrs, ins, in_types, given, outs, nout, name](const RunContext& ctx) {
    std::vector<ir::Tensor> args;
    auto g = std::make_unique<bool[]>(given.size() + 1);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      g[k] = given[k];
      if (!given[k]) {
        args.emplace_back();
        continue;
      }
      ir::Tensor t(in_types[k], ins[k].dims);
      gather(ctx.addr[static_cast<std::size_t>(ins[k].buffer)], ir::dtype_size(in_types[k]), ins[k], t.bytes());
      args.push_back(std::move(t));
    }
    std::vector<ir::Tensor> res;
    try {
      res = def->eval(attrs, args, std::span<const bool>(g.get(), given.size()), nout);
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

#ifdef SATURN_HAVE_CUDA
void Lowerer::start_cuda() {
  const std::string arch = o_.cuda_arch.empty() ? "compute_80" : o_.cuda_arch;
  cuda_ = make_cuda_steps(arch);
  p_->target_cpu = "cuda " + arch;
}

void Lowerer::finish_cuda() {
  std::vector<Step*> steps;
  for (std::size_t k = 0; k < kernels_.size(); ++k) steps.push_back(&p_->steps[kernel_step_[k]]);
  set_cuda_kernel_steps(cuda_, kernels_, steps);
  for (Step& s : p_->steps)
    if (s.kind == StepKind::Reference) run_on_host(s, p_->buffers);
  p_->keep_alive.push_back(cuda_);
}

Step Lowerer::cuda_gemm_step(Value& a_in, Value& b_in, bool, bool, View a, View b, BufferId y, const Dims& out_dims,
                             double alpha) {
  auto g = cublas_gemm(a, b, out_dims, alpha);
  if (!g) {
    // Batch dims no single stride walks (an operand broadcast along some of
    // them but not others): both operands copied out in full, row-major.
    auto dense_copy = [&](const Value& in, const View& v) {
      Value c = in;
      c.view = v;
      c.dims = v.dims;
      c.pending = false;
      c.is_scalar_constant = false;
      return whole(c);
    };
    g = cublas_gemm(dense_copy(a_in, a), dense_copy(b_in, b), out_dims, alpha);
  }
  if (!g) throw DiagnosticError{at_graph("cuda lowering: a product cuBLAS cannot take")};
  g->operands = p_->buffers[static_cast<std::size_t>(g->a)].dtype;
  g->result = p_->buffers[static_cast<std::size_t>(y)].dtype;
  std::string label =
      g->operands == DType::F32 ? "cublas sgemm " : "cublas gemm " + std::string(ir::dtype_name(g->operands)) + " ";
  label += std::to_string(g->n) + "x" + std::to_string(g->m) + "x" + std::to_string(g->k);
  if (g->batch > 1) label.append(" x").append(std::to_string(g->batch));
  return make_cublas_gemm_step(cuda_, *g, y, label);
}

LibraryStep Lowerer::cuda_conv_step(const ConvSpec& spec, const View& x, BufferId w, std::optional<BufferId> bias,
                                    const View* skip, BufferId y) {
  auto ls = make_cudnn_conv_step(cuda_, spec, x, w, bias, skip, y);
  if (!ls) throw DiagnosticError{at_graph("cuda lowering: a convolution cuDNN cannot take")};
  return std::move(*ls);
}

LibraryStep Lowerer::cuda_pool_step(const PoolSpec& spec, const ir::WindowGeometry& w, const View& x, BufferId y) {
  std::optional<CudaKernelSource> correct;
  if (spec.max) {  // the windows cuDNN gives -FLT_MAX, again as the reference walks them
    ir::PoolWindow p;
    p.x_dims = spec.x_dims;
    p.w = w;
    correct = cuda_pool_source(p, DType::F32, false, 0, true);
  }
  auto ls = make_cudnn_pool_step(cuda_, spec, x, y, correct ? &*correct : nullptr);
  if (!ls) throw DiagnosticError{at_graph("cuda lowering: a pooling cuDNN cannot take")};
  return std::move(*ls);
}
std::optional<LibraryStep> Lowerer::cuda_conv_transpose_step(const ConvSpec& spec, const View& x, BufferId w,
                                                             std::optional<BufferId> bias, BufferId y) {
  return make_cudnn_conv_transpose_step(cuda_, spec, x, w, bias, y);
}
#else
[[noreturn]] void no_cuda() {
  throw DiagnosticError{Diagnostic{{}, "the cuda target is not built here: CMake found no CUDA toolkit"}};
}
void Lowerer::start_cuda() { no_cuda(); }
void Lowerer::finish_cuda() { no_cuda(); }
Step Lowerer::cuda_gemm_step(Value&, Value&, bool, bool, View, View, BufferId, const Dims&, double) { no_cuda(); }
LibraryStep Lowerer::cuda_conv_step(const ConvSpec&, const View&, BufferId, std::optional<BufferId>, const View*,
                                    BufferId) {
  no_cuda();
}
LibraryStep Lowerer::cuda_pool_step(const PoolSpec&, const ir::WindowGeometry&, const View&, BufferId) { no_cuda(); }
std::optional<LibraryStep> Lowerer::cuda_conv_transpose_step(const ConvSpec&, const View&, BufferId,
                                                             std::optional<BufferId>, BufferId) {
  no_cuda();
}
#endif

}  // namespace

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
