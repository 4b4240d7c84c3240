// A CUDA library (cuBLAS, cuDNN, NVRTC) opened when the cuda target first
// needs it, not when Saturn starts: linked, they cost every command (even
// `saturn --version`) about 0.1 s and 300 MB of resident memory on loading,
// and a machine without them could not start Saturn at all.
//
// Each library's user lists the entry points it calls and resolves them
// through `RuntimeLibrary` (see SATURN_RUNTIME_ENTRY below); a missing
// library or entry point is a CudaError that names it and says what the
// cuda target needs.
#pragma once

#include <string>
#include <utility>

#include "device/cuda_driver.hpp"

namespace saturn::device::cuda {

class RuntimeLibrary {
 public:
  // Opens `soname` (once per process; later calls return the same library).
  // `what` names it for the user ("cuDNN 9"). Throws CudaError when it
  // cannot be opened.
  static const RuntimeLibrary& open(const std::string& soname, const std::string& what);
  // The address of `symbol`; throws CudaError when the library lacks it.
  void* symbol(const char* symbol) const;

  RuntimeLibrary(std::string soname, std::string what, void* handle)
      : soname_(std::move(soname)), what_(std::move(what)), handle_(handle) {}

 private:
  std::string soname_, what_;
  void* handle_ = nullptr;  // never closed: its functions may be in use until exit
};

}  // namespace saturn::device::cuda

// An entry point as a member of a table of them: `decltype(&::f) f`. A
// header may map the name to a versioned symbol (cuBLAS: cublasCreate ->
// cublasCreate_v2): SATURN_RUNTIME_NAME expands the macro before making it
// a string, so the table asks for the symbol the header means.
#define SATURN_RUNTIME_STR2(x) #x
#define SATURN_RUNTIME_NAME(x) SATURN_RUNTIME_STR2(x)
#define SATURN_RUNTIME_ENTRY(f) decltype(&::f) f = nullptr;
#define SATURN_RUNTIME_RESOLVE(f) api.f = reinterpret_cast<decltype(&::f)>(lib.symbol(SATURN_RUNTIME_NAME(f)));
// A function named as the entry point that calls it through `table()`, for
// a namespace of forwarders: calls written `ns::cudnnCreate(&h)` read as
// the library's (qualified, so that argument-dependent lookup cannot find
// the header's declaration instead, which would link the library).
#define SATURN_RUNTIME_FORWARD(table, f)           \
  template <class... Args>                         \
  auto f(Args&&... args) {                         \
    return table().f(std::forward<Args>(args)...); \
  }
