// From an extracted ir::Graph to a CPU Program (lower/program.hpp).
//
// Kernel grouping follows the graph in order and keeps every f32 value
// either stored (a View of a buffer) or pending (a scalar expression over
// stored leaves, not yet computed). Elementwise ops compose pending values
// (their semantics are the registry's own kernels applied to ir::Sym
// scalars), views (reshape, transpose, expand, squeeze, ...) only change how
// a buffer is read, and a pending value is computed (one generated loop
// kernel) only where it must be stored: before a library call, a reference
// op, a broadcast, a second use, or a graph output. Reductions, softmax,
// layer_norm, batch_norm and global pooling become loop kernels reading
// their pending operands in place. Matrix products go to OpenBLAS sgemm
// (transposed operands read in place through sgemm's flags), convolutions
// and pooling to oneDNN (with a fused ReLU post-op when a ReLU is the only
// consumer). Any other op, and any op on other types than f32, runs its
// reference kernel from the registry on that node alone, so every graph
// the interpreter runs also runs here; the Program lists those ops.
#pragma once

#include <memory>
#include <string>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

// The CUDA target shares this lowering: the same kernel grouping, views and
// memory plan, with CUDA kernels and cuBLAS/cuDNN calls for its steps
// (lower/cuda_steps.hpp).
enum class LoweringTarget { Cpu, Cuda };

struct LoweringOptions {
  bool fuse = true;      // false: one kernel per elementwise op (for comparisons)
  bool keep_ir = false;  // keep the generated LLVM IR in Program (ir_text)
  LoweringTarget target = LoweringTarget::Cpu;
  // The CUDA target's virtual architecture ("compute_90"): the executor
  // names its device's; empty, compute_80, PTX that later GPUs run through
  // the driver's JIT. (Lowering never asks the driver.)
  std::string cuda_arch;
};

// Needs static shapes (import specializes symbolic dimensions to the given
// inputs). Constant subgraphs are evaluated here, once. The result is
// memory-planned (plan_memory) and ready to run.
Expected<std::shared_ptr<Program>> compile_cpu(const ir::Graph& g, const LoweringOptions& o = {});

// The same for the CUDA target: steps take device addresses and a stream
// (RunContext::stream); runtime::CudaExecutor runs the result. Compiling
// needs NVRTC, not a GPU. Without the toolkit at configure time, an error.
Expected<std::shared_ptr<Program>> compile_cuda(const ir::Graph& g, LoweringOptions o = {});

}  // namespace saturn::lower
