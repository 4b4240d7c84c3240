#include "device/cuda_driver.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <optional>

#include "device/runtime_library.hpp"

namespace saturn::device::cuda {

// The entry points Saturn uses. cuda.h maps some names to versioned
// symbols (cuMemAlloc -> cuMemAlloc_v2): SATURN_RUNTIME_NAME
// (runtime_library.hpp) asks dlsym for the symbol the header means.
#define SATURN_CU_FUNCTIONS(X)                                                                                        \
  X(cuInit)                                                                                                           \
  X(cuDriverGetVersion)                                                                                               \
  X(cuDeviceGetCount)                                                                                                 \
  X(cuDeviceGet)                                                                                                      \
  X(cuDeviceGetName)                                                                                                  \
  X(cuDeviceTotalMem)                                                                                                 \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                 \
      X(cuGetErrorName) X(cuGetErrorString) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)                \
          X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuStreamCreate)            \
              X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)           \
                  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)               \
                      X(cuMemcpyDtoDAsync) X(cuMemcpy2DAsync) X(cuMemsetD32Async) X(cuStreamBeginCapture)             \
                          X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) \
                              X(cuGraphDestroy)

struct DriverApi {
  void* lib = nullptr;
  SATURN_CU_FUNCTIONS(SATURN_RUNTIME_ENTRY)
  ~DriverApi() {
    if (lib) dlclose(lib);
  }
};

namespace {

[[noreturn]] void fail(const DriverApi& api, CUresult r, const std::string& call) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  CudaError e;
  e.diag.message = call + ": " + (name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
                   (text ? std::string(" (").append(text).append(")") : "");
  throw e;
}

const DriverApi& api() {
  auto d = CudaDriver::get();
  if (!d) {
    CudaError e;
    e.diag = d.error();
    throw e;
  }
  return (*d)->api();
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) fail(api(), r, call);
}

}  // namespace

Expected<const CudaDriver*> CudaDriver::load(std::unique_ptr<CudaDriver>& keep) {
  // Why the target cannot run here; empty when it can. (Diagnostics are
  // built once, at the end: GCC 12 warns falsely on early returns of them.)
  std::string why;
  auto a = std::make_shared<DriverApi>();
  a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!a->lib) {
    const char* err = dlerror();
    why = std::string("the cuda target needs the NVIDIA driver, and there is none here (")
              .append(err ? err : "libcuda.so.1 not found")
              .append(")");
  }
#define SATURN_CU_LOAD(x)                                                                                         \
  if (why.empty()) {                                                                                              \
    a->x = reinterpret_cast<decltype(&::x)>(dlsym(a->lib, SATURN_RUNTIME_NAME(x)));                               \
    if (!a->x)                                                                                                    \
      why = std::string("the cuda target needs a newer NVIDIA driver: it lacks ").append(SATURN_RUNTIME_NAME(x)); \
  }
  SATURN_CU_FUNCTIONS(SATURN_CU_LOAD)
#undef SATURN_CU_LOAD
  if (why.empty()) {
    if (CUresult r = a->cuInit(0); r != CUDA_SUCCESS) {
      const char* name = nullptr;
      a->cuGetErrorName(r, &name);
      why = std::string("the cuda target cannot start the driver: cuInit: ").append(name ? name : "error");
    }
  }
  auto d = std::make_unique<CudaDriver>(Key{});
  if (why.empty()) {
    d->api_ = a;
    a->cuDriverGetVersion(&d->version_);
    int count = 0;
    if (a->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
      why = "the cuda target needs a CUDA device, and the driver sees none";
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      a->cuDeviceGet(&dev, i);
      DeviceInfo info;
      info.ordinal = i;
      char name[256] = {};
      a->cuDeviceGetName(name, sizeof name, dev);
      info.name = name;
      a->cuDeviceGetAttribute(&info.sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      a->cuDeviceGetAttribute(&info.sm_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
      a->cuDeviceTotalMem(&info.memory_bytes, dev);
      d->devices_.push_back(info);
    }
  }
  if (!why.empty()) {
    Diagnostic diag;
    diag.message = why;
    return diag;
  }
  keep = std::move(d);
  return static_cast<const CudaDriver*>(keep.get());
}

Expected<const CudaDriver*> CudaDriver::get() {
  // Loaded once per process; the outcome (a driver or why there is none) is kept.
  static std::once_flag once;
  static std::unique_ptr<CudaDriver> driver;
  static std::optional<Diagnostic> why;
  std::call_once(once, [] {
    auto d = load(driver);
    if (!d) why = d.error();
  });
  if (why) return *why;
  return static_cast<const CudaDriver*>(driver.get());
}

Context::Context(int ordinal) {
  auto d = CudaDriver::get();
  if (!d) {
    CudaError e;
    e.diag = d.error();
    throw e;
  }
  info_ = (*d)->device(ordinal);
  CUdevice dev = 0;
  check(api().cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  dev_ = dev;
  CUcontext c = nullptr;
  check(api().cuDevicePrimaryCtxRetain(&c, dev), "cuDevicePrimaryCtxRetain");
  ctx_ = c;
  check(api().cuCtxSetCurrent(c), "cuCtxSetCurrent");
}

Context::~Context() {
  if (ctx_) api().cuDevicePrimaryCtxRelease(dev_);
}

Stream::Stream() {
  CUstream s = nullptr;
  check(api().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  s_ = s;
}
Stream::~Stream() {
  if (s_) api().cuStreamDestroy(static_cast<CUstream>(s_));
}
void Stream::synchronize() const { check(api().cuStreamSynchronize(static_cast<CUstream>(s_)), "cuStreamSynchronize"); }

Event::Event() {
  CUevent e = nullptr;
  check(api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  e_ = e;
}
Event::~Event() {
  if (e_) api().cuEventDestroy(static_cast<CUevent>(e_));
}
void Event::record(const Stream& s) {
  check(api().cuEventRecord(static_cast<CUevent>(e_), static_cast<CUstream>(s.handle())), "cuEventRecord");
}
float Event::since(const Event& start) const {
  check(api().cuEventSynchronize(static_cast<CUevent>(e_)), "cuEventSynchronize");
  float ms = 0;
  check(api().cuEventElapsedTime(&ms, static_cast<CUevent>(start.e_), static_cast<CUevent>(e_)), "cuEventElapsedTime");
  return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  CUdeviceptr p = 0;
  check(api().cuMemAlloc(&p, bytes ? bytes : 1), ("cuMemAlloc(" + std::to_string(bytes) + " bytes)").c_str());
  ptr_ = p;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) api().cuMemFree(static_cast<CUdeviceptr>(ptr_));
}
void DeviceBuffer::copy_from_host(const void* src, std::size_t bytes, std::size_t offset) {
  check(api().cuMemcpyHtoD(static_cast<CUdeviceptr>(ptr_ + offset), src, bytes), "cuMemcpyHtoD");
}
void DeviceBuffer::copy_to_host(void* dst, std::size_t bytes, std::size_t offset) const {
  check(api().cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(ptr_ + offset), bytes), "cuMemcpyDtoH");
}

std::unique_ptr<Graph> Graph::capture(const Stream& s, const std::function<void()>& enqueue) {
  auto st = static_cast<CUstream>(s.handle());
  // Thread-local: another thread's driver calls (NVRTC's, a second
  // executor's) neither break this capture nor are broken by it.
  check(api().cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  std::unique_ptr<Graph> g(new Graph());
  CUgraph recorded = nullptr;
  try {
    enqueue();
  } catch (...) {
    api().cuStreamEndCapture(st, &recorded);
    if (recorded) api().cuGraphDestroy(recorded);
    throw;
  }
  check(api().cuStreamEndCapture(st, &recorded), "cuStreamEndCapture");
  g->graph_ = recorded;
  CUgraphExec exec = nullptr;
  check(api().cuGraphInstantiateWithFlags(&exec, recorded, 0), "cuGraphInstantiateWithFlags");
  g->exec_ = exec;
  return g;
}
Graph::~Graph() {
  if (exec_) api().cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
  if (graph_) api().cuGraphDestroy(static_cast<CUgraph>(graph_));
}
void Graph::launch(const Stream& s) const {
  check(api().cuGraphLaunch(static_cast<CUgraphExec>(exec_), static_cast<CUstream>(s.handle())), "cuGraphLaunch");
}

Module::Module(const std::string& ptx) {
  CUmodule m = nullptr;
  check(api().cuModuleLoadData(&m, ptx.c_str()), "cuModuleLoadData");
  m_ = m;
}
Module::~Module() {
  if (m_) api().cuModuleUnload(static_cast<CUmodule>(m_));
}
Function Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  check(api().cuModuleGetFunction(&f, static_cast<CUmodule>(m_), name.c_str()),
        ("cuModuleGetFunction(" + name + ")").c_str());
  Function fn;
  fn.f_ = f;
  fn.name_ = name;
  return fn;
}

void Function::launch(std::int64_t grid, int block, const std::vector<std::uint64_t>& args, const Stream& s) const {
  std::vector<CUdeviceptr> values(args.begin(), args.end());
  std::vector<void*> params;
  for (CUdeviceptr& v : values) params.push_back(&v);
  check(
      api().cuLaunchKernel(static_cast<CUfunction>(f_), static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block),
                           1, 1, 0, static_cast<CUstream>(s.handle()), params.data(), nullptr),
      ("cuLaunchKernel(" + name_ + ")").c_str());
}

void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes, const Stream& s) {
  if (!bytes) return;
  auto st = static_cast<CUstream>(s.handle());
  check(api().cuMemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(src), bytes, st), "cuMemcpyDtoHAsync");
  s.synchronize();
}
void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes, const Stream& s) {
  if (!bytes) return;
  auto st = static_cast<CUstream>(s.handle());
  check(api().cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), src, bytes, st), "cuMemcpyHtoDAsync");
  s.synchronize();
}
void copy_on_device(std::uint64_t dst, std::uint64_t src, std::size_t bytes, const Stream& s) {
  if (!bytes || dst == src) return;
  check(api().cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes,
                                static_cast<CUstream>(s.handle())),
        "cuMemcpyDtoDAsync");
}

void copy_rows_on_device(std::uint64_t dst, std::size_t dst_pitch, std::uint64_t src, std::size_t src_pitch,
                         std::size_t width, std::size_t rows, const Stream& s) {
  if (!width || !rows) return;
  CUDA_MEMCPY2D m{};
  m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  m.srcDevice = static_cast<CUdeviceptr>(src);
  m.srcPitch = src_pitch;
  m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  m.dstDevice = static_cast<CUdeviceptr>(dst);
  m.dstPitch = dst_pitch;
  m.WidthInBytes = width;
  m.Height = rows;
  check(api().cuMemcpy2DAsync(&m, static_cast<CUstream>(s.handle())), "cuMemcpy2DAsync");
}

void fill_zero(std::uint64_t dst, std::size_t bytes, const Stream& s) {
  if (bytes < 4) return;
  check(api().cuMemsetD32Async(static_cast<CUdeviceptr>(dst), 0u, bytes / 4, static_cast<CUstream>(s.handle())),
        "cuMemsetD32Async");
}

}  // namespace saturn::device::cuda
