// NVRTC: CUDA C source to PTX for a device architecture, in process, with a
// cache keyed by the source and the architecture (a program compiled twice,
// or kernels that come out identical, are compiled once). The cache is a
// hash table over the whole source, so two sources whose hashes collide
// are told apart instead of sharing one kernel's PTX.
//
// With a folder (`disk`), PTX also outlives the process (ir::DiskCache):
// one file per source, architecture and NVRTC version, so that the next run
// of a model skips NVRTC (the driver's own cache then skips its JIT). A
// folder that cannot be read or written only makes compiling slower.
//
// Needs only the toolkit's NVRTC library, not a GPU or a driver: CI
// compiles every generated kernel for sm_80 and sm_90 this way.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include "ir/cache_dir.hpp"
#include "ir/diagnostic.hpp"

namespace saturn::device {

class CudaCompiler {
 public:
  explicit CudaCompiler(const std::string& disk = "") : disk_(disk, "ptx-", ".ptx") {}
  // PTX for `arch` (a virtual architecture: "compute_90"); `name` (the
  // kernel's) only labels errors, which carry NVRTC's log.
  Expected<std::string> ptx(const std::string& source, const std::string& name, const std::string& arch);
  std::size_t compiled() const { return compiled_; }
  std::size_t cache_hits() const { return hits_; }
  std::size_t disk_hits() const { return disk_hits_; }
  // NVRTC's version, "13.0".
  static std::string version();

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::string> cache_;  // arch + "\n" + source -> PTX
  ir::DiskCache disk_;
  std::size_t compiled_ = 0, hits_ = 0, disk_hits_ = 0;
};

}  // namespace saturn::device
