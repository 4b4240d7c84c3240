#include "tests/cuda_host_emulator.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/symbolic.hpp"
#include "ir/tensor.hpp"

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
static inline float __uint_as_float(unsigned bits) { return __int_as_float(bits); }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline unsigned atomicOr(unsigned* a, unsigned v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }
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
  unsigned long long slot[32] = {};  // a lane's value's bytes
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
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int m) {
  static_assert(sizeof(T) <= 8, "a shuffle of at most 8 bytes");
  if (mask != 0xffffffffu) sat_fail("a shuffle with a partial mask");
  sat_warp& w = *sat_my_warp;
  std::memcpy(&w.slot[sat_lane], &v, sizeof v);
  if (!w.sync()) {
    sat_fail("the lanes of a warp did not all reach __shfl_xor_sync (divergence)");
    return v;
  }
  T r;
  std::memcpy(&r, &w.slot[(sat_lane ^ static_cast<unsigned>(m)) & 31u], sizeof r);
  w.sync();
  return r;
}
using sat_kernel_fn = void (*)(const void* const*, void*);
)CUDA";

// The launcher: one host thread per thread of a block, which plays that
// thread in every block in turn (blocks are independent; a warp's 32 lanes
// are the same host threads in each block, so its shuffles pair up).
constexpr const char* kLauncher = R"CUDA(
extern "C" const char* sat_launch(int index, const void* const* leaves, void* out, unsigned blocks, unsigned threads) {
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

// 64-byte-aligned storage (the arena's alignment) with room after it.
struct AlignedBytes {
  explicit AlignedBytes(std::size_t n)
      : data(static_cast<std::uint8_t*>(std::aligned_alloc(64, (n / 64 + 1) * 64)), &std::free) {}
  std::unique_ptr<std::uint8_t, decltype(&std::free)> data;
};

// What an output element holds until the kernel writes it: for f32 a
// signalling NaN (arithmetic never yields it), for bool a byte that is
// neither 0 nor 1.
constexpr std::uint32_t kUnwrittenF32 = 0x7fa5a5a5u;
constexpr std::uint8_t kUnwrittenByte = 0xa5;
constexpr std::size_t kGuard = 64;  // elements after the output that must stay unwritten

// (For f16, bf16, f64 and i64: a byte pattern no kernel here computes.)
void mark_unwritten(std::uint8_t* p, std::size_t n, ir::DType t) {
  for (std::size_t i = 0; i < n; ++i) {
    if (t == ir::DType::F32)
      std::memcpy(p + 4 * i, &kUnwrittenF32, 4);
    else
      std::memset(p + ir::dtype_size(t) * i, kUnwrittenByte, ir::dtype_size(t));
  }
}
bool unwritten(const std::uint8_t* p, std::size_t i, ir::DType t) {
  if (t != ir::DType::F32) {
    const std::size_t size = ir::dtype_size(t);
    return std::all_of(p + size * i, p + size * (i + 1), [](std::uint8_t b) { return b == kUnwrittenByte; });
  }
  std::uint32_t bits;
  std::memcpy(&bits, p + 4 * i, sizeof bits);
  return bits == kUnwrittenF32;
}

// A leaf's values (from leaf_inputs: exact in its type) stored as `t`.
std::unique_ptr<std::uint8_t, decltype(&std::free)> stored_as(const std::vector<float>& v, ir::DType t) {
  AlignedBytes b(v.size() * ir::dtype_size(t));
  ir::Tensor x(t, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) x.set(i, v[i]);
  std::memcpy(b.data.get(), x.bytes(), x.nbytes());
  return std::move(b.data);
}

}  // namespace

// The loaded library; its work directory goes with it.
struct CudaHostEmulator::Library {
  std::filesystem::path dir;
  void* handle = nullptr;
  const char* (*launch)(int, const void* const*, void*, unsigned, unsigned) = nullptr;
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
    // The kernel's parameters: one pointer per leaf, then the result's, each
    // "TYPE* __restrict__ NAME".
    const std::size_t open = src.find('(', src.find(" " + kernels[i].name + "("));
    const std::size_t close = src.find(')', open);
    std::vector<std::string> types;
    std::stringstream params(src.substr(open + 1, close - open - 1));
    for (std::string p; std::getline(params, p, ',');) types.push_back(p.substr(0, p.find("__restrict__")));
    tu << "namespace sat_k" << i << " {\n" << src << "}\n";
    tu << "static void sat_call" << i << "(const void* const* l, void* o) { sat_k" << i << "::" << kernels[i].name
       << "(";
    // (A C cast: a parameter before the result may be written too, as a
    // gather's index-check flag is.)
    for (std::size_t l = 0; l + 1 < types.size(); ++l) tu << "(" << types[l] << ")l[" << l << "], ";
    tu << "(" << types.back() << ")o); }\n";
  }
  tu << "static const sat_kernel_fn sat_kernels[] = {";
  for (std::size_t i = 0; i < kernels.size(); ++i) tu << (i ? ", " : "") << "sat_call" << i;
  if (kernels.empty()) tu << "nullptr";
  tu << "};\n" << kLauncher;

  const fs::path dir(work_dir);
  const fs::path source = dir / "kernels.cpp", library = dir / "kernels.so", log = dir / "compiler.log";
  std::ofstream(source) << tu.str();
  // -O0: the kernels are many and run on small inputs, so their compile
  // dominates (test_cuda_lowering: 16.5 s at -O1, 13.3 s at -O0).
  const std::string cmd = std::string(SATURN_HOST_CXX) + " -std=c++17 -O0 -fPIC -shared -pthread -w -o '" +
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

std::string CudaHostEmulator::run(std::size_t index, const std::vector<const void*>& leaves, std::vector<float>& out,
                                  ir::DType out_dtype, int blocks, int threads, bool out_holds) const {
  if (index >= count_) return "no kernel " + std::to_string(index);
  if (threads <= 0 || threads % 32 != 0 || blocks <= 0) return "a launch of whole warps is needed";
  if (!lower::kernel_dtype(out_dtype) && !ir::is_integer(out_dtype))
    return std::string("no kernel result of type ") + ir::dtype_name(out_dtype);
  const std::size_t n = out.size() + kGuard;
  AlignedBytes result(n * ir::dtype_size(out_dtype));
  std::uint8_t* r = result.data.get();
  mark_unwritten(r, n, out_dtype);
  if (out_holds) {
    if (out_dtype != ir::DType::F32) return "only an f32 result is given beforehand";
    std::memcpy(r, out.data(), 4 * out.size());
  }
  std::string error = lib_->launch(static_cast<int>(index), leaves.data(), r, static_cast<unsigned>(blocks),
                                   static_cast<unsigned>(threads));
  if (!error.empty()) return error;
  for (std::size_t g = 0; g < kGuard; ++g)
    if (!unwritten(r, out.size() + g, out_dtype))
      return "a write " + std::to_string(g) + " elements past the end of the output";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (unwritten(r, i, out_dtype)) return "output element " + std::to_string(i) + " was never written";
    if (out_dtype == ir::DType::F32) {
      std::memcpy(&out[i], r + 4 * i, 4);
    } else if (out_dtype == ir::DType::F64) {
      double v;
      std::memcpy(&v, r + 8 * i, 8);
      out[i] = static_cast<float>(v);
    } else if (out_dtype == ir::DType::F16 || out_dtype == ir::DType::BF16) {
      std::uint16_t v;
      std::memcpy(&v, r + 2 * i, 2);
      out[i] = out_dtype == ir::DType::F16 ? ir::half_to_float(v) : ir::bf16_to_float(v);
    } else if (out_dtype != ir::DType::Bool) {  // integers
      ir::Tensor element(out_dtype, {});
      std::memcpy(element.bytes(), r + ir::dtype_size(out_dtype) * i, ir::dtype_size(out_dtype));
      out[i] = static_cast<float>(element.at_int(0));
    } else if (r[i] > 1) {
      return "output element " + std::to_string(i) + " is bool " + std::to_string(r[i]) + ", neither 0 nor 1";
    } else {
      out[i] = r[i];
    }
  }
  return "";
}

std::vector<float> reference_kernel(const lower::LoopKernel& k, const std::vector<std::vector<float>>& leaves,
                                    std::uint32_t* fault) {
  const ir::SymContext& ctx = *k.ctx;
  // The divisions whose zero divisor (or 0 to a negative power) faults.
  std::vector<ir::SymId> divisions;
  for (ir::SymId id : ctx.reachable(std::span<const ir::SymId>(&k.body, 1))) {
    if (ir::sym_op_divides(ctx.node(id).op)) divisions.push_back(id);
  }
  if (fault) *fault = 0;
  const std::int64_t n = product(k.dims), r = product(k.red_dims);
  std::vector<double> vars(ctx.num_vars(), 0.0);
  auto value = [&](std::size_t v) { return vars[v]; };
  auto load = [&](std::int64_t o, std::int64_t j) {
    for (std::size_t l = 0; l < k.leaves.size(); ++l)
      vars[ctx.node(k.leaf_vars[l]).a] = leaves[l][static_cast<std::size_t>(leaf_offset(k, k.leaves[l], o, j))];
  };
  std::vector<float> out(static_cast<std::size_t>(n));
  // Stored as Tensor::set stores it: a bool is `value != 0` (NaN included),
  // f16 and bf16 round through f32.
  auto stored_as = [&](double v) {
    ir::Tensor stored(k.out_dtype, {});
    stored.set(0, v);
    return static_cast<float>(stored.at(0));
  };
  for (std::int64_t o = 0; o < n; ++o) {
    if (k.reduce == lower::ReduceKind::None) {
      load(o, 0);
      out[static_cast<std::size_t>(o)] = stored_as(ctx.evaluate(k.body, value));
      for (ir::SymId d : divisions) {
        const ir::SymNode& n = ctx.node(d);
        const double divisor = ctx.evaluate(n.b, value);
        const bool bad = n.op == ir::SymOp::IntPow ? ctx.evaluate(n.a, value) == 0 && divisor < 0 : divisor == 0;
        if (bad && fault) *fault |= k.fault_bits.count(d) ? k.fault_bits.at(d) : 0x80000000u;
      }
      continue;
    }
    double acc = lower::reduce_init(k.reduce);
    for (std::int64_t j = 0; j < r; ++j) {
      load(o, j);
      const double x = ctx.evaluate(k.body, value);
      acc = k.reduce == lower::ReduceKind::Sum    ? acc + x
            : k.reduce == lower::ReduceKind::Prod ? acc * x
            : k.reduce == lower::ReduceKind::Max  ? ir::scalar::max(acc, x)
                                                  : ir::scalar::min(acc, x);
    }
    vars[ctx.node(k.acc_var).a] = acc;
    out[static_cast<std::size_t>(o)] = stored_as(ctx.evaluate(k.post, value));
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
    std::uniform_int_distribution<int> bit(0, 1), small(-3, 3), unsigned_small(0, 6);
    std::vector<float> a(static_cast<std::size_t>(last + 1));
    for (float& x : a) {
      const int s = special(gen);
      if (leaf.dtype == ir::DType::Bool)
        x = static_cast<float>(bit(gen));
      else if (leaf.dtype == ir::DType::F16)  // values the leaf's type holds exactly
        x = ir::half_to_float(ir::float_to_half(dist(gen)));
      else if (leaf.dtype == ir::DType::BF16)
        x = ir::bf16_to_float(ir::float_to_bf16(dist(gen)));
      else if (ir::is_unsigned(leaf.dtype))
        x = static_cast<float>(unsigned_small(gen));
      else if (ir::is_integer(leaf.dtype))
        x = static_cast<float>(small(gen));
      else
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
    std::vector<std::unique_ptr<std::uint8_t, decltype(&std::free)>> stored;
    std::vector<const void*> ptrs;
    const bool divides = kernels[i].fault >= 0;
    for (std::size_t l = 0; l < inputs.size(); ++l) {
      const ir::DType t = kernels[i].leaves[l].dtype;
      if (poke && t == ir::DType::F32) poke(inputs[l]);  // special values are floats'
      // Few zero divisors, so most kernels' values are compared (a run that
      // divides by zero fails, whatever it computed).
      if (divides) std::replace(inputs[l].begin(), inputs[l].end(), 0.0f, 1.0f);
      stored.push_back(stored_as(inputs[l], t));
      ptrs.push_back(stored.back().get());
    }
    std::uint32_t fault = 0;
    if (divides) ptrs.push_back(&fault);
    std::vector<float> got(static_cast<std::size_t>(sources[i].elements));
    std::string error = emu->run(i, ptrs, got, kernels[i].out_dtype);
    std::uint32_t want_fault = 0;
    const std::vector<float> want = reference_kernel(kernels[i], inputs, &want_fault);
    if (error.empty() && fault != want_fault)
      error = !fault ? "no fault where a divisor is zero"
              : !want_fault
                  ? "the fault flag is set without a zero divisor"
                  : "fault bits " + std::to_string(fault) + " where " + std::to_string(want_fault) + " divide by zero";
    // (A run that faults fails: what it computed does not matter.)
    if (error.empty() && !want_fault) error = first_mismatch(got, want, kernels[i].out_dtype);
    if (!error.empty()) wrong.push_back(where.at(i) + " (" + kernels[i].name + "): " + error);
  }
  return wrong;
}

std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want, ir::DType t) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " elements where " + std::to_string(want.size()) + " were expected";
  // f32 arithmetic may round to the other neighbour of a narrow result.
  const float ulp = t == ir::DType::F16 ? 0x1p-10f : t == ir::DType::BF16 ? 0x1p-7f : 0.0f;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], w = want[i];
    const bool same = std::isnan(w)   ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::isfinite(g) && std::fabs(g - w) <= 1e-3f + (1e-4f + ulp) * std::fabs(w);
    if (!same) {
      std::ostringstream s;
      s << "element " << i << ": " << g << " where the loop kernel gives " << w;
      return s.str();
    }
  }
  return "";
}

}  // namespace saturn::test
