#include "tests/cuda_host_emulator.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/symbolic.hpp"

namespace saturn::test {

namespace {

// CUDA's built-ins as host C++. __shfl_xor_sync is a barrier of the warp's
// 32 threads around an exchange through `slot`; a lane that never arrives
// (the warp diverged) breaks the barrier after a timeout instead of hanging.
constexpr const char* kShim = R"CUDA(// CUDA built-ins on the host (tests/cuda_host_emulator.cpp)
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
struct sat_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local sat_dim3 threadIdx, blockIdx;
static sat_dim3 blockDim, gridDim;
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline float __int_as_float(unsigned bits) { float f; std::memcpy(&f, &bits, 4); return f; }
static std::mutex sat_error_mu;
static std::string sat_error;
static void sat_fail(const std::string& what) {
  std::lock_guard<std::mutex> l(sat_error_mu);
  if (sat_error.empty()) sat_error = what;
}
static inline float4 sat_load4(const float* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) sat_fail("a float4 load from an address that is not 16-byte aligned");
  float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void sat_store4(float* base, long long i, const float4& v) {
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) sat_fail("a float4 store to an address that is not 16-byte aligned");
  std::memcpy(base + 4 * i, &v, sizeof v);
}
struct sat_warp {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  unsigned generation = 0;
  bool broken = false;
  float slot[32] = {};
  bool sync() {
    std::unique_lock<std::mutex> l(mu);
    if (broken) return false;
    const unsigned g = generation;
    if (++arrived == 32) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return true;
    }
    if (!cv.wait_for(l, std::chrono::seconds(5), [&] { return generation != g || broken; })) {
      broken = true;
      cv.notify_all();
    }
    return !broken;
  }
};
static thread_local sat_warp* sat_my_warp = nullptr;
static thread_local unsigned sat_lane = 0;
static inline float __shfl_xor_sync(unsigned mask, float v, int m) {
  if (mask != 0xffffffffu) sat_fail("a shuffle with a partial mask");
  sat_warp& w = *sat_my_warp;
  w.slot[sat_lane] = v;
  if (!w.sync()) {
    sat_fail("the lanes of a warp did not all reach __shfl_xor_sync (divergence)");
    return v;
  }
  const float r = w.slot[(sat_lane ^ static_cast<unsigned>(m)) & 31u];
  w.sync();
  return r;
}
using sat_kernel_fn = void (*)(const float* const*, float*);
)CUDA";

// The launcher: one host thread per thread of a block, which plays that
// thread in every block in turn (blocks are independent; a warp's 32 lanes
// are the same host threads in each block, so its shuffles pair up).
constexpr const char* kLauncher = R"CUDA(
extern "C" const char* sat_launch(int index, const float* const* leaves, float* out, unsigned blocks, unsigned threads) {
  sat_error.clear();
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  std::unique_ptr<sat_warp[]> warps(new sat_warp[threads / 32]);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      sat_my_warp = &warps[t / 32];
      sat_lane = t % 32;
      for (unsigned b = 0; b < blocks; ++b) {
        blockIdx = {b, 0, 0};
        sat_kernels[index](leaves, out);
      }
    });
  for (std::thread& th : pool) th.join();
  return sat_error.c_str();
}
)CUDA";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::int64_t product(const std::vector<std::int64_t>& d) {
  std::int64_t n = 1;
  for (auto x : d) n *= x;
  return n;
}

// Leaf l's element offset at linear point `o` of dims and `j` of red_dims.
std::int64_t leaf_offset(const lower::LoopKernel& k, const lower::Leaf& leaf, std::int64_t o, std::int64_t j) {
  std::int64_t off = leaf.offset;
  for (std::size_t d = k.dims.size(); d-- > 0;) {
    off += (o % k.dims[d]) * leaf.strides[d];
    o /= k.dims[d];
  }
  for (std::size_t d = k.red_dims.size(); d-- > 0;) {
    off += (j % k.red_dims[d]) * leaf.strides[k.dims.size() + d];
    j /= k.red_dims[d];
  }
  return off;
}

// 64-byte-aligned float storage (the arena's alignment) with room after it.
struct AlignedFloats {
  explicit AlignedFloats(std::size_t n)
      : data(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float)) / 64 + 1) * 64)), &std::free) {}
  std::unique_ptr<float, decltype(&std::free)> data;
};

constexpr std::uint32_t kUnwritten = 0x7fa5a5a5u;  // a signalling NaN: arithmetic never yields it
constexpr std::size_t kGuard = 64;                 // floats after the output that must stay unwritten

bool unwritten(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits == kUnwritten;
}

}  // namespace

// The loaded library; its work directory goes with it.
struct CudaHostEmulator::Library {
  std::filesystem::path dir;
  void* handle = nullptr;
  const char* (*launch)(int, const float* const*, float*, unsigned, unsigned) = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

Expected<CudaHostEmulator> CudaHostEmulator::build(const std::vector<lower::CudaKernelSource>& kernels,
                                                   const std::string& work_dir) {
  namespace fs = std::filesystem;
  fs::create_directories(work_dir);
  std::ostringstream tu;
  tu << kShim;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    std::string src = kernels[i].source;
    replace_all(src, "extern \"C\" __global__", "__global__");
    replace_all(src, "*reinterpret_cast<const float4*>(", "sat_load4(");
    replace_all(src, "reinterpret_cast<float4*>(out)[i] = r;", "sat_store4(out, i, r);");
    if (src.find("reinterpret_cast") != std::string::npos) {
      Diagnostic d;
      d.message = "the host emulator does not know a memory access of kernel " + kernels[i].name;
      return d;
    }
    // The kernel's parameters: one pointer per leaf, then the result.
    const std::size_t open = src.find('(', src.find(" " + kernels[i].name + "("));
    const std::size_t close = src.find(')', open);
    const std::string params = src.substr(open + 1, close - open - 1);
    std::size_t leaves = 0;
    for (std::size_t at = params.find("const float*"); at != std::string::npos;
         at = params.find("const float*", at + 1))
      ++leaves;
    tu << "namespace sat_k" << i << " {\n" << src << "}\n";
    tu << "static void sat_call" << i << "(const float* const* l, float* o) { sat_k" << i << "::" << kernels[i].name
       << "(";
    for (std::size_t l = 0; l < leaves; ++l) tu << "l[" << l << "], ";
    tu << "o); }\n";
  }
  tu << "static const sat_kernel_fn sat_kernels[] = {";
  for (std::size_t i = 0; i < kernels.size(); ++i) tu << (i ? ", " : "") << "sat_call" << i;
  if (kernels.empty()) tu << "nullptr";
  tu << "};\n" << kLauncher;

  const fs::path dir(work_dir);
  const fs::path source = dir / "kernels.cpp", library = dir / "kernels.so", log = dir / "compiler.log";
  std::ofstream(source) << tu.str();
  // -O1: the kernels are small and many; the compile dominates.
  const std::string cmd = std::string(SATURN_HOST_CXX) + " -std=c++17 -O1 -fPIC -shared -pthread -w -o '" +
                          library.string() + "' '" + source.string() + "' > '" + log.string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    Diagnostic d;
    d.message = "the host compiler rejected the emulated kernels (" + source.string() + "):\n" + text.str();
    return d;
  }
  auto lib = std::make_shared<Library>();
  lib->dir = dir;
  lib->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    Diagnostic d;
    d.message = std::string("dlopen: ").append(dlerror());
    return d;
  }
  lib->launch = reinterpret_cast<decltype(lib->launch)>(dlsym(lib->handle, "sat_launch"));
  if (!lib->launch) {
    Diagnostic d;
    d.message = "no sat_launch in " + library.string();
    return d;
  }
  CudaHostEmulator e;
  e.lib_ = std::move(lib);
  e.count_ = kernels.size();
  return e;
}

std::string CudaHostEmulator::run(std::size_t index, const std::vector<const float*>& leaves, std::vector<float>& out,
                                  int blocks, int threads) const {
  if (index >= count_) return "no kernel " + std::to_string(index);
  if (threads <= 0 || threads % 32 != 0 || blocks <= 0) return "a launch of whole warps is needed";
  AlignedFloats result(out.size() + kGuard);
  float unset;
  std::memcpy(&unset, &kUnwritten, sizeof unset);
  std::fill(result.data.get(), result.data.get() + out.size() + kGuard, unset);
  std::string error = lib_->launch(static_cast<int>(index), leaves.data(), result.data.get(),
                                   static_cast<unsigned>(blocks), static_cast<unsigned>(threads));
  if (!error.empty()) return error;
  for (std::size_t g = 0; g < kGuard; ++g)
    if (!unwritten(result.data.get()[out.size() + g]))
      return "a write " + std::to_string(g) + " elements past the end of the output";
  for (std::size_t i = 0; i < out.size(); ++i)
    if (unwritten(result.data.get()[i])) return "output element " + std::to_string(i) + " was never written";
  std::copy(result.data.get(), result.data.get() + out.size(), out.begin());
  return "";
}

std::vector<float> reference_kernel(const lower::LoopKernel& k, const std::vector<std::vector<float>>& leaves) {
  const ir::SymContext& ctx = *k.ctx;
  const std::int64_t n = product(k.dims), r = product(k.red_dims);
  std::vector<double> vars(ctx.num_vars(), 0.0);
  auto value = [&](std::size_t v) { return vars[v]; };
  auto load = [&](std::int64_t o, std::int64_t j) {
    for (std::size_t l = 0; l < k.leaves.size(); ++l)
      vars[ctx.node(k.leaf_vars[l]).a] = leaves[l][static_cast<std::size_t>(leaf_offset(k, k.leaves[l], o, j))];
  };
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < n; ++o) {
    if (k.reduce == lower::ReduceKind::None) {
      load(o, 0);
      out[static_cast<std::size_t>(o)] = static_cast<float>(ctx.evaluate(k.body, value));
      continue;
    }
    double acc = k.reduce == lower::ReduceKind::Sum ? 0.0 : k.reduce == lower::ReduceKind::Max ? -INFINITY : INFINITY;
    for (std::int64_t j = 0; j < r; ++j) {
      load(o, j);
      const double x = ctx.evaluate(k.body, value);
      acc = k.reduce == lower::ReduceKind::Sum   ? acc + x
            : k.reduce == lower::ReduceKind::Max ? ir::scalar::max(acc, x)
                                                 : ir::scalar::min(acc, x);
    }
    vars[ctx.node(k.acc_var).a] = acc;
    out[static_cast<std::size_t>(o)] = static_cast<float>(ctx.evaluate(k.post, value));
  }
  return out;
}

std::vector<std::vector<float>> leaf_inputs(const lower::LoopKernel& k, unsigned seed) {
  std::vector<std::vector<float>> out;
  for (std::size_t l = 0; l < k.leaves.size(); ++l) {
    const lower::Leaf& leaf = k.leaves[l];
    std::int64_t last = leaf.offset;  // the furthest element read
    for (std::size_t d = 0; d < leaf.strides.size(); ++d) {
      const std::int64_t extent = d < k.dims.size() ? k.dims[d] : k.red_dims[d - k.dims.size()];
      if (leaf.strides[d] > 0 && extent > 0) last += (extent - 1) * leaf.strides[d];
    }
    std::mt19937 gen(seed * 7919u + static_cast<unsigned>(l));
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::uniform_int_distribution<int> special(0, 15);
    std::vector<float> a(static_cast<std::size_t>(last + 1));
    for (float& x : a) {
      const int s = special(gen);
      x = s == 0 ? 0.0f : s == 1 ? 1.0f : s == 2 ? -1.0f : dist(gen);
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::string emulator_dir(const std::string& tag) {
  return (std::filesystem::temp_directory_path() / ("saturn-cuda-emu-" + std::to_string(getpid()) + "-" + tag))
      .string();
}

std::vector<std::string> emulation_failures(const std::vector<lower::LoopKernel>& kernels,
                                            const std::vector<std::string>& where, const std::string& tag,
                                            const std::function<void(std::vector<float>&)>& poke) {
  std::vector<lower::CudaKernelSource> sources;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    sources.push_back(lower::cuda_kernel_source(kernels[i], static_cast<int>(i)));
  auto emu = CudaHostEmulator::build(sources, emulator_dir(tag));
  if (!emu) return {"the emulator could not be built: " + emu.error().message};
  std::vector<std::string> wrong;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    auto inputs = leaf_inputs(kernels[i], static_cast<unsigned>(i) + 1);
    if (poke)
      for (auto& in : inputs) poke(in);
    std::vector<const float*> ptrs;
    for (const auto& in : inputs) ptrs.push_back(in.data());
    std::vector<float> got(static_cast<std::size_t>(sources[i].elements));
    std::string error = emu->run(i, ptrs, got);
    if (error.empty()) error = first_mismatch(got, reference_kernel(kernels[i], inputs));
    if (!error.empty()) wrong.push_back(where.at(i) + " (" + kernels[i].name + "): " + error);
  }
  return wrong;
}

std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " elements where " + std::to_string(want.size()) + " were expected";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], w = want[i];
    const bool same = std::isnan(w)   ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::isfinite(g) && std::fabs(g - w) <= 1e-3f + 1e-4f * std::fabs(w);
    if (!same) {
      std::ostringstream s;
      s << "element " << i << ": " << g << " where the loop kernel gives " << w;
      return s.str();
    }
  }
  return "";
}

}  // namespace saturn::test
