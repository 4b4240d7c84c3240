#include "device/runtime_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace saturn::device::cuda {

namespace {

[[noreturn]] void fail(const std::string& message) {
  CudaError e;
  e.diag.message = message;
  throw e;
}

}  // namespace

const RuntimeLibrary& RuntimeLibrary::open(const std::string& soname, const std::string& what) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<RuntimeLibrary>> opened;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened.find(soname); it != opened.end()) return *it->second;
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* err = handle ? nullptr : dlerror();
  const std::string first_error = err ? err : "not found";
  // Then the folders the build found the toolkit's libraries in.
  std::string_view dirs = SATURN_CUDA_LIBRARY_DIRS;
  while (!handle && !dirs.empty()) {
    const std::size_t colon = std::min(dirs.find(':'), dirs.size());
    const std::string path = std::string(dirs.substr(0, colon)) + "/" + soname;
    dirs.remove_prefix(std::min(colon + 1, dirs.size()));
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle)
    fail("the cuda target needs " + what + " (" + soname + "), and it cannot be loaded here: " + first_error);
  auto& lib = opened[soname];
  lib = std::make_unique<RuntimeLibrary>(soname, what, handle);
  return *lib;
}

void* RuntimeLibrary::symbol(const char* name) const {
  dlerror();
  void* p = dlsym(handle_, name);
  if (!p) fail("the cuda target needs " + what_ + " with " + name + ", which " + soname_ + " lacks");
  return p;
}

}  // namespace saturn::device::cuda
