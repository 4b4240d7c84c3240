// A lowered CPU program: buffers, and the steps that read and write them.
//
// lower::compile_cpu turns an ir::Graph into a Program; runtime::CpuExecutor
// runs it. Every value the program touches is a Buffer: a graph input (the
// caller's memory), a weight (the graph's initializer, never copied), or a
// temporary that the memory planner (lower/memory_plan.hpp) places in one
// arena. Views (reshape, transpose, expand, ...) are not buffers: they are
// strided accesses into one (lower/view.hpp), resolved when the program is
// compiled. Steps are compiled once (JIT kernels, library primitives with
// their weights already in the library's preferred layout) and then only
// bound to the run's buffer addresses.
//
// Invariant: a step only reads buffers written by earlier steps (or inputs
// and weights), and `reads`/`writes` list every buffer it touches, so the
// memory planner's liveness is exact.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/shape.hpp"
#include "ir/tensor.hpp"

namespace saturn::lower {

using BufferId = int;
struct LoopKernel;

// Output: a graph output, written straight into the caller's result tensor.
enum class BufferKind { Input, Weight, Temp, Output };

struct Buffer {
  BufferKind kind = BufferKind::Temp;
  ir::DType dtype = ir::DType::F32;
  std::vector<std::int64_t> dims;
  std::size_t bytes = 0;
  int input_index = -1;                // Input: position among the graph inputs
  const ir::Tensor* weight = nullptr;  // Weight: the initializer (owned by the Program's graph copy)
  std::string name;                    // the graph value, for reports
};

// What a step sees at run time: the address of every buffer, and a pool to
// split loops over.
class ThreadPoolRef {
 public:
  virtual ~ThreadPoolRef() = default;
  virtual int size() const = 0;
  // Runs fn(begin, end) over a split of [0, n), blocking until all parts end.
  virtual void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) = 0;
};

struct RunContext {
  std::vector<std::uint8_t*> addr;  // by BufferId (device addresses for a CUDA program)
  ThreadPoolRef* pool = nullptr;
  const void* stream = nullptr;  // a CUDA program's device::cuda::Stream
  template <class T = float>
  T* at(BufferId b) const {
    return reinterpret_cast<T*>(addr[static_cast<std::size_t>(b)]);
  }
};

// Copy: block copies between buffers (lower/block_copy.hpp), no arithmetic.
// ArgReduce: argmax / argmin (ir/arg_reduce.hpp).
enum class StepKind { Kernel, Gemm, Conv, Pool, Reference, Copy, ArgReduce };

struct Step {
  StepKind kind = StepKind::Kernel;
  std::string label;  // "fused add+gelu", "sgemm 128x768x3072", "reference gather" ...
  std::vector<BufferId> reads, writes;
  // Operands the (single) result may overwrite: read exactly once per
  // element, at the element it writes. The memory planner shares storage
  // when such an operand dies here.
  std::vector<BufferId> in_place_ok;
  std::function<void(const RunContext&)> run;
  // Buffers whose elements' magnitudes bound the (single) result's: it is
  // a maximum over windows of one, or a concat of them (the CPU target
  // passes their bounds on, lower/value_bounds.hpp).
  std::vector<BufferId> bounded_by;
  // cuda: the step waits for the device mid-run (a fault flag or an index
  // check read back, a host fallback), so a CUDA graph cannot hold it.
  bool host_sync = false;
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<BufferId> outputs;                       // graph outputs, in order (temporaries or copies)
  std::vector<std::vector<std::int64_t>> output_dims;  // their shapes (a buffer may hold a reshaped value)
  // Filled by plan_memory: the arena offset of every Temp buffer (bytes),
  // and the arena size.
  std::vector<std::size_t> offsets;
  std::size_t arena_bytes = 0;
  std::size_t naive_bytes = 0;                          // every temporary in its own allocation
  std::size_t lower_bound_bytes = 0;                    // the most bytes live at one step
  std::vector<std::pair<BufferId, BufferId>> in_place;  // (result, operand) sharing storage
  // What compile_cpu did, for reports: kernels generated, library calls,
  // ops run by the reference kernels (by op name).
  int fused_kernels = 0;
  int fused_ops = 0;
  int library_calls = 0;
  std::vector<std::string> reference_ops;
  double compile_ms = 0;
  int kernel_modules_cached = 0;  // cpu: LLVM modules read from LoweringOptions::kernel_cache_dir
  std::string target_cpu;         // what LLVM generated code for
  std::string ir_text;            // the optimized LLVM IR, when LoweringOptions::keep_ir
  // The loop kernels the Kernel steps run, in step order (what the CUDA
  // code generator and reports read).
  std::shared_ptr<const std::vector<LoopKernel>> kernels;
  // Keeps what steps point into alive (JIT, oneDNN primitives, weights).
  std::vector<std::shared_ptr<void>> keep_alive;

  // A new buffer of `dims` elements of type `t`; `name` is for reports.
  BufferId add_buffer(BufferKind kind, ir::DType t, const std::vector<std::int64_t>& dims, const std::string& name) {
    Buffer b;
    b.kind = kind;
    b.dtype = t;
    b.dims = dims;
    b.bytes = static_cast<std::size_t>(ir::numel(dims)) * ir::dtype_size(t);
    b.name = name;
    buffers.push_back(std::move(b));
    return static_cast<BufferId>(buffers.size() - 1);
  }
  const Buffer& buffer(BufferId b) const { return buffers[static_cast<std::size_t>(b)]; }
};

}  // namespace saturn::lower
