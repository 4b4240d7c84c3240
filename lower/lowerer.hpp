// The lowering: an extracted ir::Graph translated into a Program, the same
// way for every target (lower/target.hpp makes the steps). Private to lower/.
//
// Kernel grouping follows the graph in order and keeps every value either
// stored (a View of a buffer) or pending (a scalar expression over stored
// leaves, not yet computed). Elementwise ops (OpDef::elementwise) compose
// pending values, views only change how a buffer is read, and a pending
// value is computed (one loop kernel) only where it must be stored: before
// a library call, a reference op, a broadcast, a second use, or a graph
// output. Any op no family below takes runs its reference kernel from the
// registry on that node alone, so every graph the interpreter runs also
// runs here; the Program lists those ops.
//
// The member functions live by op family, one file each:
//   lowerer.cpp            the walk over the graph, stored and pending
//                          values, loop kernels, constants, reference steps
//   lower_elementwise.cpp  elementwise fusion, across element types
//   lower_movement.cpp     views, concat, gather, tile, resize, pad, trilu
//   lower_reductions.cpp   reductions, softmax, norms, lrn, einsum, argmax
//   lower_loop_products.cpp  plain products and convolutions as loop nests
//   lower_library.cpp      products, convolutions, pooling (library calls
//                          and their epilogues), halves through f32
//
// Invariant: values_ maps every graph value lowered so far to where it is
// (stored) or what it is (pending); a stored value's buffer was written by
// an earlier step, or is an input or a weight.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/lowering.hpp"
#include "lower/program.hpp"
#include "lower/target.hpp"
#include "lower/view.hpp"

namespace saturn::lower {

using Dims = std::vector<std::int64_t>;

// A graph value as the lowering holds it.
struct Value {
  ir::DType dtype = ir::DType::F32;
  Dims dims;
  bool pending = false;
  View view;                           // stored: where it is
  ir::SymId sym = 0;                   // pending: its expression over leaves of shape `dims`
  ir::DType compute = ir::DType::F32;  // pending: the type `sym` is computed in (loop_kernel.hpp)
  int ops = 0;                         // pending: graph ops folded into `sym`
  std::string label;                   // pending: those ops' names ("add+gelu")
  // pending: folds in an op other than an elementwise one (softmax's
  // result pass, a norm's), which the cost model prices as stored
  // (extract/problem.hpp: only elementwise chains join their consumer)
  bool beyond_elementwise = false;
  double constant = 0;
  bool is_scalar_constant = false;  // a float or bool weight of one element: inlined as a literal
};

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const LoweringOptions& o);

  Expected<std::shared_ptr<Program>> run();

 private:
  using DType = ir::DType;
  using SymId = ir::SymId;

  // ---- lowerer.cpp: values, kernels, the walk
  Diagnostic at_graph(std::string msg) const;
  std::string where() const;  // "cpu" or "cuda", in messages
  [[noreturn]] void fail(const ir::Node& n, const std::string& msg) const;
  BufferId add_buffer(BufferKind kind, DType t, const Dims& dims, const std::string& name) {
    return p_->add_buffer(kind, t, dims, name);
  }
  BufferId add_weight(const ir::Tensor* t, const std::string& name);
  const Buffer& buffer(BufferId b) const { return p_->buffer(b); }
  Value stored(BufferId b) const;
  // v (stored; row-major, or a reduction's result in its operand's order)
  // as the node's dims `out`: a reduction's result without its kept size-1
  // axes, a product's without a 1-D operand's.
  static Value reshaped_to(Value v, const Dims& out);
  // A variable reading `v` (a view over the kernel's dims).
  SymId leaf(const View& v);
  ir::Sym sym(SymId id) const { return ir::Sym(ctx_.get(), id); }
  // The value as an expression over `dims` (it broadcasts to them).
  SymId expr_over(Value& v, const Dims& dims);
  // Per-channel parameters [C] (a bias, a norm's scale) read along axis 1
  // of `full`.
  SymId channel(Value& p, const Dims& full);
  // Computes a pending value into a new buffer (one loop kernel), in the
  // dimension order its full-size operands are stored in (any_order): an
  // elementwise epilogue of an NHWC convolution stays NHWC, so the next one
  // reads it without a conversion.
  void store(Value& v, std::string what = "", bool any_order = true);
  Dims operand_order(const Value& v, bool any_order);
  // A new Temp buffer of `dims` laid out outermost-first in `order` (a
  // permutation of the dims), as a view over `dims`.
  View ordered_buffer(DType t, const Dims& dims, const Dims& order, const std::string& name);
  // v stored densely (any dimension order), copied only when it is not.
  View dense(Value& v);
  // One copy kernel of (stored) v into a new buffer laid out in `order`
  // (empty: row-major); v becomes the copy.
  View copy_in_order(Value& v, const Dims& order);
  // A stored, contiguous, whole-buffer copy of v (copies when it must: a
  // loop kernel, which copies values of any type).
  View whole(Value& v);
  // A loop kernel writing `out`. Leaves of `body` are views over `full`:
  // the result's dims (elementwise, `reduced` empty), or the operand's dims
  // before reducing the axes `reduced` marks (the result keeps the others).
  // A kernel may walk (and write its result in) another dimension `order`
  // than row-major (a reduction: its kept dims in that order, then the
  // reduced ones). The arithmetic is in `compute`.
  void emit_kernel(const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId body, SymId post,
                   BufferId out, int ops, const std::string& what, const Dims& order = {}, DType compute = DType::F32);
  // A kernel made by emit_kernel, as the next step.
  void push_kernel(LoopKernel k);
  // The parts a CPU column reduction is split into (split_outer_reduction):
  // one per thread, or the fewest equal parts past that, where it has work
  // enough: none for another kernel.
  std::optional<std::int64_t> reduction_parts(const LoopKernel& k) const;
  // k's fault bits and their errors: a bit per node dividing in k.body,
  // in graph order (the 32nd and later share the last).
  void assign_fault_bits(LoopKernel& k) const;
  // A stored operand's kept dims in its own layout's order, the reduced
  // ones after (empty: row-major): what a reduction of x is written in.
  Dims kept_dims_order(const Value& x, const std::vector<bool>& reduced);
  // reduce(expr over `full`) along `reduced`, keeping them as size 1; the
  // result laid out in `order` (a permutation of full's dims; empty:
  // row-major).
  Value reduce(SymId body, const Dims& full, const std::vector<bool>& reduced, ReduceKind how, SymId post, int ops,
               const std::string& what, DType dtype = DType::F32, DType compute = DType::F32, const Dims& order = {});
  // A pending operand that one node reads in several kernels (softmax's
  // max, sum and result; a norm's mean, variance and result) is recomputed
  // in each when it is an elementwise chain: whether it should be stored
  // once instead is the extractor's choice (a `materialize` it placed,
  // rulesets/fusion.rules, priced by extract/cost_model.cpp). Anything
  // else pending (an earlier softmax's result pass) is stored first, as
  // the cost model prices it; recomputed, a chain of softmaxes would nest
  // every earlier one in each kernel (work and code quadratic in its
  // length). Past kMaxRecomputedOps, a bound on kernel size like
  // kMaxFusedOps, an elementwise chain is stored too.
  static constexpr int kMaxRecomputedOps = 64;
  void read_in_several_kernels(Value& x);
  // A kernel's code grows with its expression, and LLVM's instruction
  // selection is superlinear in a block's size: a pending value of
  // kMaxFusedOps graph ops is stored, so a chain of any length compiles in
  // time linear in it.
  static constexpr int kMaxFusedOps = 256;
  // Result `result` of n is the pending expression s (over values of dims
  // `out`), computed in `compute`; stored at once when used twice, or when
  // it holds kMaxFusedOps ops.
  void set_pending(const ir::Node& n, const std::vector<Value*>& in, const Dims& out, DType dtype, SymId s, int ops,
                   std::size_t result = 0, DType compute = DType::F32);
  void lower_node(std::size_t index);
  // Ops of any element type, by the family of what they compute
  // (OpDef::semantics): copies, argmax, softmax, products, einsum,
  // reductions, halves through f32, pooling kernels.
  bool lower_any_type(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in,
                      const std::vector<ir::ValueType>& out_types);
  // A node whose operands are all constants: evaluated now, once.
  bool fold_constant(const ir::Node& n, const ir::OpDef& def);
  void lower_reference(const ir::Node& n, const std::vector<ir::ValueType>& out_types);
  void lower_outputs();
  void split_unfusable_epilogues();

  // ---- lower_elementwise.cpp
  // An elementwise op (or comparison, logic, where, cast) as a pending
  // expression over its operands', of the result's type.
  bool lower_elementwise(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // Whether a node with operands or a result other than f32 still fuses:
  // an elementwise op with a float or bool result, between floats, bools
  // and 8- or 32-bit integers (i64: only cast's operand).
  bool fuses_across_types(const ir::Node& n, const std::vector<Value*>& in,
                          const std::vector<ir::ValueType>& out_types) const;
  // The arithmetic an elementwise node fusing across types gets: f64 when
  // it reads or computes f64 or 8- and 32-bit integers, else f32.
  static DType elementwise_compute(const ir::Node& n, const std::vector<Value*>& in, DType out);
  // An f16 / bf16 value as f32 (exactly): a weight converted now, once,
  // into a constant f32 buffer read through the same view (so a product's
  // weight stays a weight the library packs); anything else a pending copy.
  Value f32_copy(Value& v, const std::string& label);
  // The arithmetic a float value's reductions and products get: f64 for
  // f64, f32 for the others. A pending operand computed otherwise, or of a
  // half type (each op rounded when stored), is stored first.
  DType float_compute(Value& x);

  // ---- lower_movement.cpp
  // split, transpose, slice and expand: strided views of the operand (any
  // element type).
  bool lower_view(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // reshape-like views (OpDef::view) of stored values of any type.
  bool lower_reshape(const ir::Node& n, Value& x, const ir::ValueType& out_type);
  bool lower_tile(const ir::Node& n, Value& x, const ir::ValueType& out_type);
  // concat of any element type: operands stored contiguously, then block
  // copies into the result (lower/block_copy.hpp).
  void lower_concat(const ir::Node& n, std::vector<Value*>& in, const ir::ValueType& out_type);
  // Where a concat's block copy into `dst` reads operand `v` (stored
  // first, in any order or row-major): in place when it lies in `order` as
  // equal blocks one stride apart in another buffer, else from a copy made
  // in `order`.
  BlockSource concat_source(Value& v, const Dims& order, std::size_t physical_axis, std::size_t element_bytes,
                            bool any_order, BufferId dst);
  // Concats that share storage (a DenseNet block, where each layer
  // concatenates every earlier layer's features): a concat whose leading
  // operands are an earlier concat, as its result or as the same operands
  // in the same order along the same axis, holds that concat's result as
  // the start of its own. A chain of them is one buffer (the last one's),
  // each concat copying only its own new operands into it, instead of
  // every operand again; the earlier results are views of its start. Set
  // before the walk; a chain leaves out graph outputs (their buffers are
  // the caller's, row-major).
  void plan_concat_chains();
  // A concat of the chain ending in `last`: its operands past those its
  // guest holds copied into the chain's buffer (made now, in `order`, by
  // the chain's first concat); its result a view of the buffer's start.
  void lower_chained_concat(const ir::Node& n, std::vector<Value*>& in, const Dims& out, std::size_t axis,
                            const Dims& order, const std::string& last);
  struct ConcatStorage {
    View view;   // the chain's last concat's result
    Dims order;  // the dimension order its buffer is laid out in
  };
  struct ConcatGuest {
    std::string result;      // the earlier concat's result
    std::size_t operands{};  // how many of the host's leading operands it covers
  };
  std::map<std::string, std::string> concat_host_;       // a concat's result -> the concat holding it
  std::map<std::string, ConcatGuest> concat_guest_;      // a host's result -> the concat it holds
  std::map<std::string, ConcatStorage> concat_storage_;  // the chain's last result -> its buffer, once made
  // gather / gather_elements of any element type: rows or elements copied
  // by the op kernel's own geometry, indices checked first.
  void lower_gather(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type);
  void lower_gather_elements(const ir::Node& n, Value& data, Value& indices, const ir::ValueType& out_type);
  // resize: the op kernel's own passes (ir/resize.hpp), one step per axis
  // that changes, the last first: f32 interpolation, or nearest (single
  // taps) of any type; other types' interpolation runs the reference.
  void lower_resize(const ir::Node& n, Value& x, const ir::ValueType& out_type);
  // pad and trilu of any element type: row copies by the op kernel's own
  // geometry (ir/pad.hpp, ir/trilu.hpp).
  void lower_pad(const ir::Node& n, Value& x);
  // x padded by `pads` (ONNX's: begins then ends) in `mode`, into a new
  // buffer named `name`.
  BufferId emit_pad(Value& x, const Dims& pads, const std::string& mode, double value, const std::string& name);
  // x padded likewise into a buffer laid out in x's own dimension order
  // (an NHWC value's padding stays NHWC, so the pooling reading it converts
  // nothing).
  View pad_in_layout(Value& x, const Dims& pads, const std::string& mode, double value, const std::string& name);
  BufferId pad_rows_step(BufferId src, const Dims& dims, const Dims& pads, DType t, const std::string& mode,
                         double value, const std::string& name);
  void lower_trilu(const ir::Node& n, Value& x, const ir::ValueType& out_type);

  // ---- lower_reductions.cpp
  // reduce_* of a float value (or reduce_max / reduce_min of a bool) into
  // `out` (the node's dims): one loop kernel (two for reduce_log_sum_exp:
  // the maximum, then the shifted sum), in f64 for f64 values and f32 for
  // the others, the result of x's type.
  bool lower_reduction(const ir::Node& n, Value& x, const Dims& out);
  static bool is_reduction(const std::string& op);
  // max_pool of a float value without its indices: the largest tap of each
  // window, one loop kernel reducing a strided view of x (padded with -inf
  // first where windows reach past it, in x's own layout), its result in
  // x's layout.
  bool lower_max_pool(const ir::Node& n, Value& x, const Dims& out);
  // softmax / log_softmax of a float value: the maximum, the sum of
  // exp(x - max) (both kept in the compute type), then a pending
  // exp(x - max) / sum of x's type.
  bool lower_softmax(const ir::Node& n, Value& x);
  // f32 normalizations and global pooling: layer_norm (its mean and
  // inverse standard deviation are results too), instance_norm,
  // batch_norm, lrn, global_avg_pool / global_max_pool.
  bool lower_norm(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);
  // einsum of float values as one loop kernel over its letters (the
  // result's, then the summed ones): each operand a view whose stride along
  // a letter is the sum of its axes' with that letter (a diagonal), 0 where
  // it lacks the letter or broadcasts it; the body the operands' product,
  // summed along the other letters, or a pending product when none is.
  bool lower_einsum(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  // argmax / argmin of f32, i64 or i32 values (ir/arg_reduce.hpp).
  void lower_arg_reduce(const ir::Node& n, Value& x, const ir::ValueType& out_type);

  // ---- lower_library.cpp
  // Library ops (OpKind::Library) of f32 values: matmul and gemm,
  // convolutions with their epilogues, pooling. False for every other op.
  bool lower_library(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in,
                     const std::vector<ir::ValueType>& out_types);
  // matmul of float values, 1-D operands as matrices. A library product
  // (`library`): f32 as it is, f16 / bf16 on the halves
  // (TargetTraits::half_products) or over f32 copies rounded once; f64, and
  // a plain matmul, a loop nest (product_loops).
  bool lower_matmul(const ir::Node& n, Value& a, Value& b, const Dims& out, bool library);
  // v as a product reads it: [batch..., rows, cols] (after an optional
  // transpose of its last two dims), copied to a contiguous buffer only when
  // its strides fit neither BLAS layout.
  View gemm_operand(Value& v, bool transpose, std::int64_t rows, std::int64_t cols, const Dims& batch);
  // `result`: the product's element type (f32, or the operands' half type
  // on a target with half_products).
  void lower_gemm_like(const ir::Node& n, Value& a, Value& b, bool ta, bool tb, double alpha, Value* c, double beta,
                       const Dims& out_dims, DType result = DType::F32);
  // Result 0 of n: v, plus beta * c when there is one (a pending add of
  // type `result`; without one, v as it is).
  void add_product_bias(const ir::Node& n, Value v, Value* c, double beta, const Dims& out_dims, DType result);
  static bool adds_product_bias(const Value* c, double beta);
  // A library step's result y, in the layout the library wrote it.
  Value library_result(LibraryStep made, BufferId y);
  bool lower_conv(const ir::Node& n, const ir::OpDef& def, std::vector<Value*>& in, const Dims& out);
  bool lower_conv_transpose(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  bool lower_library_pool(const ir::Node& n, Value& x, const Dims& out);
  bool lower_qconv(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  bool lower_qmatmul(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  // The constant a value holds (a whole weight), or null.
  const ir::Tensor* constant_of(const Value* v) const;
  // A convolution, direct or transposed, as a library call, plus `skip`
  // (the sum post-op) and then a ReLU when its op says so. False: the
  // library does not take this geometry.
  bool lower_convolution(const ir::Node& n, bool transposed, ConvSpec spec, Value& x_value, Value& w_value,
                         Value* bias_value, Value* skip);
  // A weight or bias operand of a convolution: a whole constant, read once
  // when lowering; otherwise read at every run, dense (or row-major where
  // the target's library reads it so).
  LibraryOperand library_operand(Value& v);
  // max_pool / avg_pool that the library does not take: other element
  // types, MaxPool's Indices, geometries it lacks. The op kernel's own
  // meaning (ir/pool.hpp).
  void lower_pool_kernel(const ir::Node& n, Value& x, const std::vector<ir::ValueType>& out_types);
  // A library or normalization op of f16 or bf16 values: the f32 lowering
  // over f32 copies of its operands (exact), each result a pending value
  // rounded to the operands' type once, as the reference rounds its double
  // result.
  bool lower_through_f32(const ir::Node& n, std::vector<Value*>& in, const std::vector<ir::ValueType>& out_types);

  // ---- lower_loop_products.cpp
  // A product as one loop nest summing along K: a [batch..., M, K] by
  // b [batch..., K, N] (after the optional transposes of their last two
  // dims), broadcast over the batch dims of `out` ([batch..., M, N]),
  // times alpha, summed in the operands' float compute type and stored as
  // `result`.
  Value product_loops(const ir::Node& n, Value& a, Value& b, bool ta, bool tb, double alpha, const Dims& out,
                      DType result);
  // A plain gemm (rank-2 operands) as product_loops plus beta C.
  bool lower_gemm_loops(const ir::Node& n, std::vector<Value*>& in, const Dims& out);
  // A plain convolution (1-D to 3-D, groups, dilations) as one loop nest
  // over the zero-padded input, plus the bias.
  bool lower_conv_loops(const ir::Node& n, std::vector<Value*>& in, const Dims& out);

  LoweringOptions o_;
  std::shared_ptr<ir::Graph> graph_;
  std::shared_ptr<Program> p_ = std::make_shared<Program>();
  std::unique_ptr<Target> target_;
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
  std::vector<bool> live_;  // ir::live_nodes: the nodes lowered
  std::shared_ptr<std::deque<ir::Tensor>> folded_ = std::make_shared<std::deque<ir::Tensor>>();
};

}  // namespace saturn::lower
