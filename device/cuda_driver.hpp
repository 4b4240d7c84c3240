// The CUDA driver API behind RAII types: a device's primary context, device
// memory, modules (PTX loaded by the driver's JIT), kernel functions,
// streams, events and captured graphs. No raw CUcontext / CUmodule / CUfunction /
// CUdeviceptr leaves this file's types.
//
// The driver library is loaded at run time (dlopen "libcuda.so.1"), not
// linked: Saturn starts on machines without a driver, and
// `CudaDriver::get()` says why the CUDA target cannot run there (no driver,
// no device) before any work is done.
//
// Errors: every failing driver call throws CudaError, whose message names
// the call and the driver's error ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY
// (out of memory)"). CudaError is a DiagnosticError: the runtime's public
// entry points turn it into a Diagnostic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"

namespace saturn::device::cuda {

struct CudaError : DiagnosticError {};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  std::size_t memory_bytes = 0;
  // NVRTC's virtual architecture for this device: "compute_90".
  std::string arch() const { return "compute_" + std::to_string(sm_major * 10 + sm_minor); }
};

struct DriverApi;  // the resolved entry points (cuda_driver.cpp)

class CudaDriver {
 public:
  // Loads and initializes the driver once. A Diagnostic when the library is
  // missing, cuInit fails, or there is no device.
  static Expected<const CudaDriver*> get();
  int device_count() const { return static_cast<int>(devices_.size()); }
  const DeviceInfo& device(int ordinal) const { return devices_.at(static_cast<std::size_t>(ordinal)); }
  const DriverApi& api() const { return *api_; }
  int version() const { return version_; }  // e.g. 13000

  // Only get() makes one (the key is private).
  struct Key {
   private:
    friend class CudaDriver;
    Key() = default;
  };
  explicit CudaDriver(Key) {}

 private:
  static Expected<const CudaDriver*> load(std::unique_ptr<CudaDriver>& keep);
  std::shared_ptr<DriverApi> api_;
  std::vector<DeviceInfo> devices_;
  int version_ = 0;
};

// A device's primary context, current on the calling thread while it lives.
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const DeviceInfo& device() const { return info_; }

 private:
  DeviceInfo info_;
  int dev_ = 0;
  void* ctx_ = nullptr;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize() const;
  void* handle() const { return s_; }

 private:
  void* s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& s);
  // Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const;

 private:
  void* e_ = nullptr;
};

// Device memory: one allocation, freed with the object.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void copy_from_host(const void* src, std::size_t bytes, std::size_t offset = 0);
  void copy_to_host(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  std::uint64_t address(std::size_t offset = 0) const { return ptr_ + offset; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::uint64_t ptr_ = 0;
  std::size_t bytes_ = 0;
};

// Stream work recorded once and replayed with one launch (a CUDA graph):
// the host's cost per kernel or library call is paid at capture, not at
// each run. A replay reads and writes the addresses the work was captured
// with.
class Graph {
 public:
  // Records what `enqueue` puts on `s` without running it, and instantiates
  // it. Throws CudaError (or what `enqueue` threw) when the work cannot be
  // captured, a synchronization say; `s` leaves capture mode either way.
  static std::unique_ptr<Graph> capture(const Stream& s, const std::function<void()>& enqueue);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(const Stream& s) const;

 private:
  Graph() = default;
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

class Module;

// A kernel of a loaded module (valid while the module lives).
class Function {
 public:
  // Launches with `args` the kernel's parameters (device addresses here).
  void launch(std::int64_t grid, int block, const std::vector<std::uint64_t>& args, const Stream& s) const;

 private:
  friend class Module;
  void* f_ = nullptr;
  std::string name_;
};

class Module {
 public:
  // PTX text, compiled for the current context's device by the driver.
  explicit Module(const std::string& ptx);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Function function(const std::string& name) const;

 private:
  void* m_ = nullptr;
};

// Copies between raw device addresses (DeviceBuffer::address) and host
// memory, in order on `s`; the ones touching host memory return when the
// copy is done, so the host side may be reused at once.
void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, const Stream& s);
void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes, const Stream& s);
void copy_on_device(std::uint64_t dst, std::uint64_t src, std::size_t bytes, const Stream& s);
// `rows` runs of `width` bytes, each `src_pitch` apart at src, to runs
// `dst_pitch` apart at dst (one cuMemcpy2DAsync), in order on `s`.
void copy_rows_on_device(std::uint64_t dst, std::size_t dst_pitch, std::uint64_t src, std::size_t src_pitch,
                         std::size_t width, std::size_t rows, const Stream& s);
// Zeros `bytes` (a multiple of 4) at dst, in order on `s`.
void fill_zero(std::uint64_t dst, std::size_t bytes, const Stream& s);

}  // namespace saturn::device::cuda
