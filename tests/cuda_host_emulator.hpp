// Runs the CUDA C that lower/cuda_codegen.cpp generates on the host, so the
// kernels' indexing, vectorization and warp reductions are checked against
// the loop kernels' meaning on machines without a GPU (CI's).
//
// The sources are compiled by the host C++ compiler (the one that built the
// tests) with a small header standing in for CUDA's built-ins: blockIdx /
// threadIdx / blockDim / gridDim, float4, __int_as_float, and
// __shfl_xor_sync, which exchanges values between the 32 threads of a warp
// in lockstep as the hardware does. Every thread of a block is a host
// thread, which plays that thread in each block in turn (the kernels are
// grid-stride loops without inter-block communication, so blocks may run in
// any order and any launch geometry is correct; the emulator uses a smaller
// one than the device would).
//
// What the device would reject, the emulator reports instead of computing on:
// a float4 access not 16-byte aligned, a shuffle that not all 32 lanes of a
// warp reach (divergence), an output element the kernel never wrote, and a
// write past the end of the output.
//
// What it does not model: the device's own libm (expf, erff... differ by a
// few ulp from the host's) and memory ordering between threads (the
// kernels share nothing but the shuffles).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "lower/cuda_codegen.hpp"
#include "lower/loop_kernel.hpp"

namespace saturn::test {

class CudaHostEmulator {
 public:
  // Compiles `kernels` into one shared library and loads it. `work_dir` is
  // where the source, library and compiler log go; it is removed with the
  // emulator, and kept when the compiler fails (the error names it).
  static Expected<CudaHostEmulator> build(const std::vector<lower::CudaKernelSource>& kernels,
                                          const std::string& work_dir);

  // Runs kernel `index` on `leaves` (one array per leaf of its LoopKernel,
  // in order, each of the leaf's type, then the fault flag of a kernel
  // that divides integers, a uint32) into `out` (the result's elements,
  // computed as `out_dtype`: a bool as 0 or 1; an integer (a copy's, or an
  // own kernel's indices) as its value). The launch is `blocks`
  // blocks of `threads` threads (a multiple of 32). With `out_holds` (f32
  // results only), `out` holds a library's result already, which the
  // kernel may leave as it is (cuda_pool_source's after_library). Returns
  // "" or what went wrong.
  std::string run(std::size_t index, const std::vector<const void*>& leaves, std::vector<float>& out,
                  ir::DType out_dtype = ir::DType::F32, int blocks = 2, int threads = 64, bool out_holds = false) const;

  std::size_t size() const { return count_; }

 private:
  struct Library;
  std::shared_ptr<Library> lib_;
  std::size_t count_ = 0;
};

// The loop kernel's meaning, evaluated in double over the leaves' arrays
// (one per leaf, read at offset + index . strides) and stored as its result
// type would store it (a bool result: 0 or 1), as f32.
// `fault`, when given, is set to the fault bits (LoopKernel::fault_bits) of
// the integer divisions that met a zero divisor (or 0 a negative power) at
// some element: the run would fail.
std::vector<float> reference_kernel(const lower::LoopKernel& k, const std::vector<std::vector<float>>& leaves,
                                    std::uint32_t* fault = nullptr);

// Arrays for the leaves of `k`, each as long as its reads reach, filled with
// deterministic values from `seed`: for f32 leaves in [-2, 2] (some exactly
// 0 and ±1), for bool ones 0 or 1, for integers small integers.
std::vector<std::vector<float>> leaf_inputs(const lower::LoopKernel& k, unsigned seed);

// Runs each kernel as the CUDA C generated for it, on the emulator, against
// the loop kernel's meaning on inputs from leaf_inputs (`poke` may change
// the f32 ones), stored in each leaf's type. A line per kernel that went wrong, naming `where[i]` and the
// kernel; one line alone when the emulator could not be built. `tag` names
// its work directory.
std::vector<std::string> emulation_failures(const std::vector<lower::LoopKernel>& kernels,
                                            const std::vector<std::string>& where, const std::string& tag,
                                            const std::function<void(std::vector<float>&)>& poke = {});

// A fresh work directory for an emulator, under the system's temporary one.
std::string emulator_dir(const std::string& tag);

// The first element where `got` and `want` differ beyond f32 tolerance (and
// one unit in the last place of a result of type `t` narrower than f32; NaN
// matches NaN, infinities match exactly), as a message, or "".
std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want, ir::DType t = ir::DType::F32);

}  // namespace saturn::test
