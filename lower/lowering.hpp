// From an extracted ir::Graph to a Program (lower/program.hpp) for a
// target: compile_cpu, compile_cuda. One lowering serves both
// (lower/lowerer.hpp: kernel grouping, views, library calls, the memory
// plan); a Target makes the steps (lower/target.hpp). Fused elementwise
// chains become one loop kernel each, views are strided reads, products,
// convolutions and pooling are library calls (with their epilogues fused
// where the library takes them), and any op no family lowers runs its
// reference kernel from the registry on that node alone, so every graph the
// interpreter runs also runs here; the Program lists those ops.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

// Which Target makes the steps (lower/target.hpp).
enum class LoweringTarget { Cpu, Cuda };

// Told as kernels compile: modules done of all, and the kernels in all.
// Called from the compiling threads, one call at a time.
using CompileProgress = std::function<void(std::size_t done, std::size_t modules, std::size_t kernels)>;

struct LoweringOptions {
  bool fuse = true;      // false: one kernel per elementwise op (for comparisons)
  bool keep_ir = false;  // keep the generated LLVM IR in Program (ir_text)
  LoweringTarget target = LoweringTarget::Cpu;
  // The CPU threads the program runs on (the executor's team: it compiles
  // a program per team size). A column reduction with work enough for them
  // is split in as many parts, one each (Lowerer::reduction_parts).
  int threads = 1;
  // The CUDA target's virtual architecture ("compute_90"): the executor
  // names its device's; empty, compute_80, PTX that later GPUs run through
  // the driver's JIT. (Lowering never asks the driver.)
  std::string cuda_arch;
  // Compiled kernels kept on disk in this folder for the next run: PTX on
  // cuda (device/cuda_compiler.hpp), object files on cpu
  // (lower/llvm_jit.hpp); empty: in this process only.
  std::string kernel_cache_dir;
  // Told as the CPU kernels compile (`saturn run`'s progress line on a
  // terminal).
  CompileProgress progress;
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
