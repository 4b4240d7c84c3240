// A loop kernel: one generated function computing one f32 or bool buffer.
//
// The iteration space is the result's dimensions (row-major, the result is
// written contiguously), optionally followed by reduction dimensions. Every
// operand is a Leaf: a buffer read at `offset + sum(index[k] * strides[k])`
// over the result's dimensions and then the reduction dimensions, so
// broadcasts (stride 0), transposes and slices of stored tensors are read in
// place and never materialized. The arithmetic is a scalar expression DAG
// (ir::Sym, the same DAG `saturn verify` evaluates op semantics into), so a
// fused chain of elementwise ops is the composition of the ops' own kernels
// from the registry: nothing about an op's meaning is restated here.
//
// Element types: the arithmetic is in `compute`, f32, f64 or i64. A leaf of
// another type is converted when read (bool and integers to their value, an
// i64 through double, as the reference cast rounds it; f16 and bf16 exactly),
// and the result is rounded once when stored: f16 and bf16 to nearest even
// through f32 (as Tensor::set rounds them), a bool as `value != 0` (NaN is
// true); so comparisons, logic, where and casts fuse with the arithmetic
// around them; an integer result of float arithmetic (a cast, an integer
// raised to a float power) is converted as Tensor::set converts it:
// truncated, NaN 0, saturated to int64, then its low bits. f64 arithmetic
// runs in f64 (compute_dtype), and so do
// comparisons of 8- and 32-bit integers with floats, which f64 holds
// exactly. Integer arithmetic (add, mul, neg, max, min, abs, comparisons,
// where, truncating division, remainder and power: what
// int_kernel_expression accepts) runs in i64, wrapping, and an integer
// result keeps its low bits, as the reference's int64 kernels and
// Tensor::set_int do; its leaves are integers and bools. A kernel that
// divides integers has a `fault` flag: each division sets its bit
// (fault_bits) where its divisor is zero (or 0 is raised to a negative
// power), and the step running it fails the run with the error of the
// lowest bit set (fault_message), as the reference kernel of that node does. A copy (is_copy) moves elements of
// any type unchanged.
//
// Invariant: `body` only reads variables listed in `leaf_vars` (and, for a
// reduction's `post`, `acc_var`); every leaf access stays inside its buffer
// for every point of the iteration space (checked by check_bounds).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/symbolic.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

struct Leaf {
  BufferId buffer = -1;
  std::int64_t offset = 0;            // elements
  std::vector<std::int64_t> strides;  // one per dims, then one per red_dims (elements)
  ir::DType dtype = ir::DType::F32;   // the buffer's element type (leaf_dtype)
};

// Types whose values loop kernels compute with: all but the minifloats, the
// 4- and 2-bit integers and u64 (whose i64 arithmetic would be signed), which
// only move unchanged (is_copy) and are otherwise computed by the
// reference kernels, in double, rounded as their type says.
bool kernel_value_dtype(ir::DType t);
// Types a leaf may have: the floats, bool and the integers (read as values)
// of kernel_value_dtype.
bool leaf_dtype(ir::DType t);
// Types a kernel's result may have: the floats and bool (a reduction's: f32;
// a copy's: any, is_copy; an i64-computing kernel's: integers and bool; an
// elementwise float kernel's: integers too).
bool kernel_dtype(ir::DType t);
// Whether `root` only uses what i64 arithmetic computes exactly: variables,
// integral constants, add, mul, neg, max, min, abs, comparisons, select,
// and integer division, remainder and power.
bool int_kernel_expression(const ir::SymContext& ctx, ir::SymId root);
// Whether `root` divides integers (IntDiv, IntRem, IntPow): a kernel
// computing it needs a fault flag.
bool divides_integers(const ir::SymContext& ctx, ir::SymId root);
// The arithmetic a kernel computing values of `t` does: f64 for f64, else
// f32 (f16 and bf16 compute in f32 and round when stored).
ir::DType compute_dtype(ir::DType t);
// The error of a run that left a kernel's fault flag at `flag` (not 0),
// from its fault_errors.
std::string fault_message(const std::vector<std::string>& fault_errors, std::uint32_t flag);
// Throws std::logic_error when `k`'s result or a leaf has a type a loop
// kernel cannot have (the code generators call it before emitting).
void check_kernel_types(const LoopKernel& k);

// A float reduction whose operands are contiguous along the result's
// innermost dimension but not along the reduction (a global average pool
// over channels-last data, as oneDNN leaves it) reads a cache line for one
// element per row. Here the result's innermost dimension becomes the
// inner loop, in blocks of 8 to 64 elements (rows of their own, so that
// threads share them out), each reduced as a vector of accumulators
// (llvm_jit's column reductions); the other kernels are left as they are.
// For the CPU target, whose code generator takes both forms.
void reduce_by_columns(LoopKernel& k);
// Whether reduce_by_columns takes `k` (its blocks aside).
bool reduces_by_columns(const LoopKernel& k);

// A reduction split in two: `k` becomes `parts` partial reductions, each
// over a contiguous part of its outermost reduced dimension, side by side
// in `partials` (the accumulators, in k's compute type, parts outermost);
// the kernel returned reduces the parts into k's result with k's `post`,
// reading `partials` through `part_var` (a variable of k's context).
// Threads share the parts out by rows, each reading one part of the
// operand: for a column reduction (a global average pool of channels-last
// data), the part of the image its own core wrote, where a split of the
// channels had each read every pixel (efficientnet_b0's 96x56x56 pool:
// 0.010 ms against 0.043). Needs red_dims[0] % parts == 0; with more
// parts than threads each thread takes a contiguous run of them.
LoopKernel split_outer_reduction(LoopKernel& k, std::int64_t parts, BufferId partials, ir::SymId part_var);

enum class ReduceKind { None, Sum, Max, Min, Prod };

// The accumulator's start: 0, -inf, +inf or 1 (what an empty reduction gives).
double reduce_init(ReduceKind how);

struct LoopKernel {
  std::string name;
  std::vector<std::int64_t> dims;      // the result's iteration space
  std::vector<std::int64_t> red_dims;  // reduced dimensions (innermost loops); empty: elementwise
  ReduceKind reduce = ReduceKind::None;
  std::shared_ptr<ir::SymContext> ctx;
  ir::SymId body = 0;                // value at each point
  ir::SymId post = 0;                // reductions: the result from acc_var
  ir::SymId acc_var = 0;             // reductions: the variable `post` reads the accumulator as
  std::vector<ir::SymId> leaf_vars;  // leaf_vars[i] is the variable that reads leaves[i]
  std::vector<Leaf> leaves;
  BufferId out = -1;
  BufferId fault = -1;  // divides_integers: a u32 of bits, fault_bits[d] set where division d meets a zero divisor
  // A bit per graph node that divides, the first node's lowest (the
  // reference runs nodes in order: the one it fails in is the first whose
  // bit is set); the 32nd and later nodes share the last bit.
  std::map<ir::SymId, std::uint32_t> fault_bits;
  std::vector<std::string> fault_errors;  // by bit: the run's error (names the node)
  ir::DType out_dtype = ir::DType::F32;   // kernel_dtype
  ir::DType compute = ir::DType::F32;     // the arithmetic's type: f32, f64 or i64 (reductions: f32 or f64)
  int ops = 0;                            // graph ops fused into it (reports)
};

// Whether `k` copies its one leaf, of its result's type, element for element
// (no arithmetic): such a kernel moves values of any type, integers too.
bool is_copy(const LoopKernel& k);

// Merges adjacent dimensions that every leaf (and the contiguous result)
// walks as one, drops size-1 dimensions, and splits a long single dimension
// so the row loop has parts to share between threads. Does not change what
// the kernel computes.
void simplify_iteration_space(LoopKernel& k);

// Rows the generated function iterates over: all result dimensions but the
// last (the vectorized one).
std::int64_t kernel_rows(const LoopKernel& k);

// Everything the generated code of `k` depends on, as text: two kernels
// with one signature compile to the same function (they differ only in
// the buffers passed to it), so a code generator compiles it once: the
// repeated blocks of a model (its layers) cost one compile.
std::string kernel_signature(const LoopKernel& k);
// Throws std::logic_error when a leaf would read outside its buffer.
void check_bounds(const LoopKernel& k, const std::vector<Buffer>& buffers);

}  // namespace saturn::lower
