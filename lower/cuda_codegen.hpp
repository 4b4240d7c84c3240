// CUDA C for loop kernels: the second code generator over the LoopKernel
// the CPU lowering builds (lower/loop_kernel.hpp), so both targets fuse the
// same way and compute the same expression DAG (ir::Sym, the op registry's
// own semantics).
//
// Each kernel is one translation unit for NVRTC with an `extern "C"`
// __global__ function taking the leaves' device pointers, then (a kernel
// that divides integers) the fault flag's, then the result's. Shapes are static, so every extent, stride and offset is
// a literal. Elementwise kernels are grid-stride loops over the result; when every operand is read contiguously along
// the last dimension (or broadcast along it) and the row length is a multiple of 4, each thread reads and writes
// float4. Reductions give one warp to each result element: the lanes stride over the reduced elements, then combine
// with
// __shfl_xor_sync. Arithmetic is IEEE f32 or f64 (the kernel's compute type;
// no fast-math), max/min propagate NaN as the CPU kernels do; integer
// kernels compute in long long through unsigned arithmetic (wrapping, as C
// defines it for unsigned), and divide through helpers that set the
// division's bit of the fault flag (atomicOr) on a zero divisor instead of
// dividing by it. Leaves of bool and integer types are converted
// when read, f16 and bf16 as their bits through the prelude's conversions,
// and results are stored as on the CPU (loop_kernel.hpp); only all-f32
// kernels use float4.
//
// Invariant: the source only reads a leaf at the offsets its strides give
// for points of the iteration space (check_bounds holds for the kernel).
#pragma once

#include <cstdint>
#include <string>

#include "ir/arg_reduce.hpp"
#include "ir/dtype.hpp"
#include "ir/gather.hpp"
#include "ir/gather_elements.hpp"
#include "ir/pad.hpp"
#include "ir/pool.hpp"
#include "ir/resize.hpp"
#include "ir/trilu.hpp"
#include "lower/loop_kernel.hpp"

namespace saturn::lower {

struct CudaKernelSource {
  std::string name;           // the __global__ function (a C identifier)
  std::string source;         // the whole translation unit
  int block = 256;            // threads per block
  std::int64_t grid = 1;      // blocks to launch (grid-stride loops: any count is correct)
  bool vectorized = false;    // float4 loads and stores
  std::int64_t elements = 0;  // result elements
};

// `index` makes the function's name unique within a program. `k` is
// simplified (simplify_iteration_space) already.
CudaKernelSource cuda_kernel_source(const LoopKernel& k, int index);

// A gather (ir/gather.hpp's geometry) as a grid-stride copy of the result's
// rows from the rows the indices pick, in 4-byte words when a row is a
// multiple of 4 bytes, else in bytes. Parameters: (data, indices (i64 or
// i32), int* bad, out). An index outside [-rows, rows) sets *bad and leaves
// its row unwritten: the caller checks the flag. `elements` counts words.
CudaKernelSource cuda_gather_source(const ir::GatherRows& g, bool i64_indices, int index);

// A gather_elements (ir/gather_elements.hpp's geometry) as a grid-stride
// loop over the result's elements, each copied (as an unsigned integer of
// the element's size) from data at its coordinates with the axis's replaced
// by its index. Parameters and the out-of-range flag as cuda_gather_source's.
CudaKernelSource cuda_gather_elements_source(const ir::GatherElements& g, bool i64_indices, int index);

// A pad (ir/pad.hpp's geometry, any mode) as a grid-stride loop over the
// result's elements, each read from the input element its indices map to
// or set to `fill_bits` (the fill value's bytes, in the low ones).
// Parameters: (in, out), elements as unsigned integers of the element's size.
CudaKernelSource cuda_pad_source(const ir::PadRows& p, std::uint64_t fill_bits, int index);

// One resize pass (ir/resize.hpp's geometry) as a grid-stride loop over the
// result's elements: f32 weighted sums of the taps (f32 arithmetic), or,
// with single taps (nearest), copies of elements of `element_bytes` as
// unsigned integers; a result index outside the input (tf_crop_and_resize)
// is `fill_bits`. The taps are tables in the source. Parameters: (in, out).
CudaKernelSource cuda_resize_source(const ir::ResizePass& p, std::size_t element_bytes, std::uint64_t fill_bits,
                                    int index);

// A trilu (ir/trilu.hpp's geometry) as a grid-stride loop over the result's
// elements: kept ones copied, the others zero. Parameters: (in, out).
CudaKernelSource cuda_trilu_source(const ir::TriluRows& t, int index);

// max_pool / avg_pool of any window (ir/pool.hpp's meaning: dilations,
// one-sided pads, ceil_mode, count_include_pad) as a grid-stride loop over
// the result's elements, each walking its window's taps as nested loops
// with the geometry as constants. Values of `t`: f32, f16 / bf16 (as their
// bits, compared and summed through f32), f64, or an integer type (max).
// Averages sum in double. Parameters: (x, [long long* indices,] out): with
// `indices`, MaxPool's second result too. `elements` counts results.
// `after_library` (f32 max pooling only): `out` holds a library's result
// already, and only the elements it left at -FLT_MAX are computed again.
// cuDNN starts its maximum there, so a window holding only -inf, or no
// input element, gives -FLT_MAX where the reference gives -inf; a window
// whose maximum is -FLT_MAX gives it again.
CudaKernelSource cuda_pool_source(const ir::PoolWindow& p, ir::DType t, bool indices, int index,
                                  bool after_library = false);

// argmax / argmin (ir/arg_reduce.hpp's meaning) of f32, i64 or i32 values:
// one warp per result, the lanes striding over the column and combining
// (value, position) pairs with __shfl_xor_sync; NaNs take no part, and a
// NaN first element wins its column. Parameters: (x, long long* out).
// `elements` counts results.
CudaKernelSource cuda_arg_reduce_source(const ir::ArgReduce& g, ir::DType t, int index);

}  // namespace saturn::lower
