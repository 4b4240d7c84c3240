// LLVM code generation for loop kernels, compiled in-process by ORC LLJIT.
//
// Each LoopKernel becomes `void name(void** buffers, i64 row_begin, i64
// row_end)` (buffers: the leaves', the result's, then the fault flag's when
// the kernel has one): a row loop the thread pool splits, a vectorizable inner loop
// over the result's last dimension, and reduction loops innermost. Strides
// and extents are compile-time constants (shapes are static), leaves are
// `noalias` (the memory planner only shares storage between a result and an
// operand read at the same element, see plan_memory), and each module is
// optimized at O3 for the host CPU (AVX-512 or AVX2, whatever LLVM detects).
// exp, tanh and erf are expanded inline as polynomials so that loops over
// them vectorize; rarer functions (log, sin, pow, ...) call the C library.
//
// The LLVM headers stay inside llvm_jit.cpp: nothing else includes them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "lower/loop_kernel.hpp"
#include "lower/lowering.hpp"

namespace saturn::lower {


using KernelFn = void (*)(void** buffers, std::int64_t row_begin, std::int64_t row_end);

class KernelJit {
 public:
  // Fails (instead of throwing) when LLVM cannot target the host.
  static Expected<std::shared_ptr<KernelJit>> create();
  ~KernelJit();
  KernelJit(const KernelJit&) = delete;
  KernelJit& operator=(const KernelJit&) = delete;

  // Compiles the kernels, one function for kernels alike but for their
  // buffers (kernel_signature), in a module per hardware thread compiled in
  // parallel; the result holds one function per kernel, valid while this
  // object lives.
  Expected<std::vector<KernelFn>> compile(const std::vector<LoopKernel>& kernels);
  // The host CPU and features LLVM generates code for ("znver4 +avx512f ...").
  std::string target_description() const;
  // The optimized IR of the last compile (for tests and `--dump-ir`).
  const std::string& last_ir() const { return last_ir_; }
  bool keep_ir = false;
  // A folder keeping each module's object file for the next compile of the
  // same kernels (ir::DiskCache, keyed by the module's unoptimized IR, the
  // CPU, its features and LLVM's version): a hit skips LLVM's optimization
  // and code generation, most of a big model's start-up. Empty: none.
  // (Unused with keep_ir, which needs the optimized IR.)
  std::string cache_dir;
  // Told after each module compiles (LoweringOptions::progress).
  CompileProgress progress;
  // Modules of the last compile that came from cache_dir.
  std::size_t cached_modules() const { return cached_modules_; }

 private:
  KernelJit() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string last_ir_;
  std::size_t cached_modules_ = 0;
};

}  // namespace saturn::lower
