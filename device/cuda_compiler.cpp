#include "device/cuda_compiler.hpp"

#include <cuda.h>
#include <nvrtc.h>

#include <memory>

#include "device/runtime_library.hpp"
#include "ir/cache_dir.hpp"

namespace saturn::device {

namespace {

// NVRTC, opened on the first compile (device/runtime_library.hpp).
#define SATURN_NVRTC_FUNCTIONS(X) \
  X(nvrtcCompileProgram)          \
  X(nvrtcCreateProgram)           \
  X(nvrtcDestroyProgram)          \
  X(nvrtcGetErrorString)          \
  X(nvrtcGetPTX)                  \
  X(nvrtcGetPTXSize)              \
  X(nvrtcGetProgramLog)           \
  X(nvrtcGetProgramLogSize)       \
  X(nvrtcVersion)

struct NvrtcApi {
  SATURN_NVRTC_FUNCTIONS(SATURN_RUNTIME_ENTRY)
};

const NvrtcApi& nvrtc_table() {
  static const NvrtcApi api = [] {
    NvrtcApi api;
    const auto& lib =
        cuda::RuntimeLibrary::open("libnvrtc.so." + std::to_string(CUDA_VERSION / 1000), "NVRTC (CUDA's compiler)");
    SATURN_NVRTC_FUNCTIONS(SATURN_RUNTIME_RESOLVE)
    return api;
  }();
  return api;
}

namespace rt {
#define SATURN_NVRTC_FORWARD(f) SATURN_RUNTIME_FORWARD(nvrtc_table, f)
SATURN_NVRTC_FUNCTIONS(SATURN_NVRTC_FORWARD)
}  // namespace rt

Diagnostic nvrtc_error(const std::string& what, nvrtcResult r, const std::string& log = "") {
  Diagnostic d;
  d.message = what + ": " + rt::nvrtcGetErrorString(r);
  if (!log.empty()) d.message.append("\n").append(log);
  return d;
}

}  // namespace

std::string CudaCompiler::version() {
  int major = 0, minor = 0;
  if (rt::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

Expected<std::string> CudaCompiler::ptx(const std::string& source, const std::string& name, const std::string& arch) {
  std::string key = std::string(arch).append("\n").append(source);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++hits_;
      return it->second;
    }
  }
  const std::string disk_key = disk_.enabled() ? version() + "\n" + key : std::string();
  if (auto text = disk_.get(disk_key)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++disk_hits_;
    cache_.emplace(std::move(key), *text);
    return *text;
  }
  nvrtcProgram prog = nullptr;
  const std::string file = name + ".cu";
  if (nvrtcResult r = rt::nvrtcCreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nvrtc_error("nvrtcCreateProgram(" + name + ")", r);
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> owner(&prog,
                                                               [](nvrtcProgram* p) { rt::nvrtcDestroyProgram(p); });
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* options[] = {arch_flag.c_str(), "--std=c++17"};
  const nvrtcResult r = rt::nvrtcCompileProgram(prog, 2, options);
  if (r != NVRTC_SUCCESS) {
    std::size_t n = 0;
    rt::nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) rt::nvrtcGetProgramLog(prog, log.data());
    return nvrtc_error("NVRTC could not compile kernel " + name + " for " + arch, r, log);
  }
  std::size_t n = 0;
  if (nvrtcResult e = rt::nvrtcGetPTXSize(prog, &n); e != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetPTXSize", e);
  std::string text(n, '\0');
  if (nvrtcResult e = rt::nvrtcGetPTX(prog, text.data()); e != NVRTC_SUCCESS) return nvrtc_error("nvrtcGetPTX", e);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  disk_.put(disk_key, text);
  std::lock_guard<std::mutex> lock(mu_);
  ++compiled_;
  cache_.emplace(std::move(key), text);
  return text;
}

}  // namespace saturn::device
