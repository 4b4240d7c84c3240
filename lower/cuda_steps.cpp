#include "lower/cuda_steps.hpp"

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "device/cuda_compiler.hpp"
#include "device/cuda_driver.hpp"
#include "device/runtime_library.hpp"
#include "lower/cuda_codegen.hpp"

namespace saturn::lower {

namespace cu = device::cuda;
using Dims = std::vector<std::int64_t>;

namespace {

// cuBLAS and cuDNN, opened when a program first calls them
// (device/runtime_library.hpp): calls are written rt::cudnnCreate(...).
#define SATURN_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate)                  \
  X(cublasDestroy)                 \
  X(cublasGetStatusString)         \
  X(cublasSetMathMode)             \
  X(cublasSetStream)               \
  X(cublasSgemm)                   \
  X(cublasSgemmStridedBatched)
#define SATURN_CUDNN_FUNCTIONS(X)                 \
  X(cudnnAddTensor)                               \
  X(cudnnConvolutionBackwardData)                 \
  X(cudnnConvolutionBiasActivationForward)        \
  X(cudnnConvolutionForward)                      \
  X(cudnnCreate)                                  \
  X(cudnnCreateActivationDescriptor)              \
  X(cudnnCreateConvolutionDescriptor)             \
  X(cudnnCreateFilterDescriptor)                  \
  X(cudnnCreatePoolingDescriptor)                 \
  X(cudnnCreateTensorDescriptor)                  \
  X(cudnnDestroy)                                 \
  X(cudnnDestroyActivationDescriptor)             \
  X(cudnnDestroyConvolutionDescriptor)            \
  X(cudnnDestroyFilterDescriptor)                 \
  X(cudnnDestroyPoolingDescriptor)                \
  X(cudnnDestroyTensorDescriptor)                 \
  X(cudnnFindConvolutionBackwardDataAlgorithm)    \
  X(cudnnFindConvolutionForwardAlgorithm)         \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)  \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
  X(cudnnGetConvolutionForwardAlgorithm_v7)       \
  X(cudnnGetConvolutionForwardWorkspaceSize)      \
  X(cudnnGetErrorString)                          \
  X(cudnnPoolingForward)                          \
  X(cudnnSetActivationDescriptor)                 \
  X(cudnnSetConvolutionGroupCount)                \
  X(cudnnSetConvolutionMathType)                  \
  X(cudnnSetConvolutionNdDescriptor)              \
  X(cudnnSetFilterNdDescriptor)                   \
  X(cudnnSetPoolingNdDescriptor)                  \
  X(cudnnSetStream)                               \
  X(cudnnSetTensorNdDescriptor)

// cuBLAS's header overloads these two in C++ (a cudaDataType compute type,
// for older code): the table holds the C entry points.
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                      int, const void*, const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long, const void*, void*,
                                                      cudaDataType, int, long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);

struct CublasApi {
  SATURN_CUBLAS_FUNCTIONS(SATURN_RUNTIME_ENTRY)
  CublasGemmEx cublasGemmEx = nullptr;
  CublasGemmStridedBatchedEx cublasGemmStridedBatchedEx = nullptr;
};
struct CudnnApi {
  SATURN_CUDNN_FUNCTIONS(SATURN_RUNTIME_ENTRY)
};

const CublasApi& cublas_table() {
  static const CublasApi api = [] {
    CublasApi api;
    const auto& lib = cu::RuntimeLibrary::open("libcublas.so." + std::to_string(CUBLAS_VER_MAJOR),
                                               "cuBLAS " + std::to_string(CUBLAS_VER_MAJOR));
    SATURN_CUBLAS_FUNCTIONS(SATURN_RUNTIME_RESOLVE)
    api.cublasGemmEx = reinterpret_cast<CublasGemmEx>(lib.symbol("cublasGemmEx"));
    api.cublasGemmStridedBatchedEx =
        reinterpret_cast<CublasGemmStridedBatchedEx>(lib.symbol("cublasGemmStridedBatchedEx"));
    return api;
  }();
  return api;
}

const CudnnApi& cudnn_table() {
  static const CudnnApi api = [] {
    CudnnApi api;
    const auto& lib =
        cu::RuntimeLibrary::open("libcudnn.so." + std::to_string(CUDNN_MAJOR), "cuDNN " + std::to_string(CUDNN_MAJOR));
    SATURN_CUDNN_FUNCTIONS(SATURN_RUNTIME_RESOLVE)
    return api;
  }();
  return api;
}

namespace rt {
#define SATURN_CUBLAS_FORWARD(f) SATURN_RUNTIME_FORWARD(cublas_table, f)
#define SATURN_CUDNN_FORWARD(f) SATURN_RUNTIME_FORWARD(cudnn_table, f)
SATURN_CUBLAS_FUNCTIONS(SATURN_CUBLAS_FORWARD)
SATURN_CUBLAS_FORWARD(cublasGemmEx)
SATURN_CUBLAS_FORWARD(cublasGemmStridedBatchedEx)
SATURN_CUDNN_FUNCTIONS(SATURN_CUDNN_FORWARD)
}  // namespace rt

}  // namespace

// ---------------------------------------------------------------- cuBLAS mapping

namespace {

// The one stride that walks an operand's batch dims in row-major order (0
// when it broadcasts them all), or nullopt when no single stride does.
std::optional<std::int64_t> batch_stride(const View& v, const Dims& batch) {
  std::optional<std::int64_t> stride;
  std::int64_t inner = 1;  // batch entries inside dim i
  for (std::size_t i = batch.size(); i-- > 0;) {
    if (batch[i] != 1) {
      const std::int64_t s = v.strides[i];
      if (!stride) {
        if (s % inner != 0) return std::nullopt;
        stride = s / inner;
      } else if (s != *stride * inner) {
        return std::nullopt;
      }
    }
    inner *= batch[i];
  }
  return stride.value_or(0);
}

}  // namespace

std::optional<CublasGemm> cublas_gemm(const View& a, const View& b, const Dims& out_dims, double alpha) {
  const std::size_t r = out_dims.size();
  if (r < 2 || a.dims.size() != r || b.dims.size() != r) return std::nullopt;
  const Dims batch(out_dims.begin(), out_dims.end() - 2);
  const std::int64_t M = out_dims[r - 2], N = out_dims[r - 1], K = a.dims[r - 1];
  auto la = matrix_layout(a), lb = matrix_layout(b);
  auto sa = batch_stride(a, batch), sb = batch_stride(b, batch);
  if (!la || !lb || !sa || !sb) return std::nullopt;
  std::int64_t count = 1;
  for (auto d : batch) count *= d;
  CublasGemm g;
  g.alpha = static_cast<float>(alpha);
  // cuBLAS's first operand, op(A) [m x k] column-major, is our B^T: B's
  // (k, n) element sits at k ld + n (row-major: no op, lda = ld) or at
  // k + n ld (stored transposed: op T on the K x N column-major matrix).
  g.trans_a = lb->transposed;
  g.lda = lb->ld;
  g.a = b.buffer;
  g.offset_a = b.offset;
  g.stride_a = *sb;
  // Its second, op(B) [k x n], is our A^T, the same way.
  g.trans_b = la->transposed;
  g.ldb = la->ld;
  g.b = a.buffer;
  g.offset_b = a.offset;
  g.stride_b = *sa;
  g.m = N;
  g.n = M;
  g.k = K;
  g.ldc = N;
  g.stride_c = M * N;
  g.batch = count;
  // A batch that B broadcasts and A holds as consecutive rows is more rows.
  if (count > 1 && *sb == 0 && !la->transposed && *sa == M * la->ld) {
    g.n = M * count;
    g.batch = 1;
  }
  // cuBLAS counts in int.
  const auto limit = static_cast<std::int64_t>(std::numeric_limits<int>::max());
  for (std::int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
    if (v > limit) return std::nullopt;
  // Leading dimensions below the rows cuBLAS checks against are never read
  // across (a single column or row): give the smallest value it accepts.
  g.lda = std::max<std::int64_t>(g.lda, std::max<std::int64_t>(1, g.trans_a ? g.k : g.m));
  g.ldb = std::max<std::int64_t>(g.ldb, std::max<std::int64_t>(1, g.trans_b ? g.n : g.k));
  return g;
}

// ---------------------------------------------------------------- shared device state

namespace {

[[noreturn]] void library_error(const std::string& call, const std::string& what) {
  cu::CudaError e;
  e.diag.message = call + ": " + what;
  throw e;
}

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) library_error(call, rt::cublasGetStatusString(s));
}

void check_cudnn(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) library_error(call, rt::cudnnGetErrorString(s));
}

const cu::Stream& stream_of(const RunContext& ctx) { return *static_cast<const cu::Stream*>(ctx.stream); }

std::uint64_t device_address(const RunContext& ctx, BufferId b, std::int64_t offset_elements = 0,
                             std::size_t element_bytes = sizeof(float)) {
  return reinterpret_cast<std::uint64_t>(ctx.addr[static_cast<std::size_t>(b)]) +
         static_cast<std::uint64_t>(offset_elements) * element_bytes;
}

}  // namespace

struct CudaSteps {
  CudaSteps(std::string a, std::string disk) : arch(std::move(a)), compiler(std::move(disk)) {}
  ~CudaSteps() {
    if (cublas) rt::cublasDestroy(cublas);
    if (cudnn) rt::cudnnDestroy(cudnn);
  }
  CudaSteps(const CudaSteps&) = delete;
  CudaSteps& operator=(const CudaSteps&) = delete;

  std::string arch;
  device::CudaCompiler compiler;
  std::vector<std::string> ptx, names;  // per module (per distinct kernel source)
  std::vector<std::unique_ptr<cu::Module>> modules;
  std::vector<cu::Function> functions;  // per module
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;

  // The device state, made on the first run (a context is current then).
  const cu::Function& function(std::size_t m) {
    if (functions.size() != ptx.size()) {
      modules.clear();
      functions.clear();
      for (std::size_t i = 0; i < ptx.size(); ++i) {
        modules.push_back(std::make_unique<cu::Module>(ptx[i]));
        functions.push_back(modules.back()->function(names[i]));
      }
    }
    return functions[m];
  }
  cublasHandle_t blas(const cu::Stream& s) {
    if (!cublas) {
      check_cublas(rt::cublasCreate(&cublas), "cublasCreate");
      // Plain float32 products (no TF32): the results the reference gives.
      check_cublas(rt::cublasSetMathMode(cublas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    }
    check_cublas(rt::cublasSetStream(cublas, static_cast<cudaStream_t>(s.handle())), "cublasSetStream");
    return cublas;
  }
  cudnnHandle_t dnn(const cu::Stream& s) {
    if (!cudnn) check_cudnn(rt::cudnnCreate(&cudnn), "cudnnCreate");
    check_cudnn(rt::cudnnSetStream(cudnn, static_cast<cudaStream_t>(s.handle())), "cudnnSetStream");
    return cudnn;
  }
};

std::shared_ptr<CudaSteps> make_cuda_steps(const std::string& arch, const std::string& kernel_cache_dir) {
  return std::make_shared<CudaSteps>(arch, kernel_cache_dir);
}

// ---------------------------------------------------------------- kernels

void set_cuda_kernel_steps(const std::shared_ptr<CudaSteps>& cs, const std::vector<LoopKernel>& kernels,
                           const std::vector<Step*>& steps) {
  // Every kernel is named alike (index 0: each is its own module), so that
  // kernels that come out identical (a model's repeated layers) are one
  // source: compiled once and loaded once. The distinct sources compile in
  // parallel, one NVRTC program each, as NVRTC allows.
  std::vector<CudaKernelSource> sources;
  std::unordered_map<std::string, std::size_t> module_by_source;
  std::vector<std::size_t> module_of;
  for (const LoopKernel& kernel : kernels) {
    CudaKernelSource src = cuda_kernel_source(kernel, 0);
    auto [it, fresh] = module_by_source.emplace(src.source, sources.size());
    module_of.push_back(it->second);
    if (fresh) sources.push_back(std::move(src));
  }
  cs->ptx.assign(sources.size(), "");
  cs->names.clear();
  for (const CudaKernelSource& src : sources) cs->names.push_back(src.name);
  std::vector<std::optional<Diagnostic>> failed(sources.size());
  std::atomic<std::size_t> next{0};
  const auto compile = [&] {
    for (std::size_t i; (i = next++) < sources.size();) {
      auto ptx = cs->compiler.ptx(sources[i].source, sources[i].name, cs->arch);
      if (ptx)
        cs->ptx[i] = std::move(*ptx);
      else
        failed[i] = ptx.error();
    }
  };
  const std::size_t workers = std::min<std::size_t>(sources.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(compile);
  compile();
  for (std::thread& t : pool) t.join();
  for (const auto& f : failed)
    if (f) throw DiagnosticError{*f};
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    std::vector<BufferId> args;
    for (const Leaf& l : kernels[k].leaves) args.push_back(l.buffer);
    const BufferId fault = kernels[k].fault;
    if (fault >= 0) args.push_back(fault);
    args.push_back(kernels[k].out);
    const std::int64_t grid = sources[module_of[k]].grid;
    const int block = sources[module_of[k]].block;
    // A kernel dividing integers clears its fault flag, runs, and reads the
    // flag back (a synchronization, as the gathers' index check).
    steps[k]->run = [cs, m = module_of[k], args, grid, block, fault, errors = kernels[k].fault_errors,
                     values = std::vector<std::uint64_t>(args.size())](const RunContext& ctx) mutable {
      for (std::size_t i = 0; i < args.size(); ++i) values[i] = device_address(ctx, args[i]);
      const cu::Stream& stream = stream_of(ctx);
      if (fault >= 0) cu::fill_zero(device_address(ctx, fault), 4, stream);
      cs->function(m).launch(grid, block, values, stream);
      if (fault < 0) return;
      std::uint32_t bad = 0;
      cu::copy_to_host(&bad, device_address(ctx, fault), sizeof bad, stream);
      if (bad) throw std::runtime_error(fault_message(errors, bad));
    };
    steps[k]->host_sync = fault >= 0;
  }
}

namespace {

// A generated kernel of its own (not a loop kernel): compiled to PTX when
// the program is, its module loaded on the first run (a context is current
// then).
struct OwnKernel {
  std::string ptx, name;
  std::int64_t grid = 1, elements = 0;
  int block = 256;
  std::unique_ptr<cu::Module> module;
  cu::Function function;
  void launch(const std::vector<std::uint64_t>& args, const cu::Stream& stream) {
    if (!module) {
      module = std::make_unique<cu::Module>(ptx);
      function = module->function(name);
    }
    function.launch(grid, block, args, stream);
  }
};

std::shared_ptr<OwnKernel> compile_own_kernel(CudaSteps& cs, const CudaKernelSource& src) {
  auto ptx = cs.compiler.ptx(src.source, src.name, cs.arch);
  if (!ptx) throw DiagnosticError{ptx.error()};
  auto k = std::make_shared<OwnKernel>();
  k->ptx = std::move(*ptx);
  k->name = src.name;
  k->grid = src.grid;
  k->block = src.block;
  k->elements = src.elements;
  return k;
}

}  // namespace

// ---------------------------------------------------------------- cuBLAS

Step make_cublas_gemm_step(const std::shared_ptr<CudaSteps>& cs, const CublasGemm& g, BufferId out,
                           const std::string& label) {
  Step s;
  s.kind = StepKind::Gemm;
  s.label = label;
  s.reads = {g.a, g.b};
  s.writes = {out};
  s.run = [cs, g, out](const RunContext& ctx) {
    cublasHandle_t h = cs->blas(stream_of(ctx));
    const float alpha = g.alpha, beta = 0.0f;
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb), ldc = static_cast<int>(g.ldc);
    const std::size_t size = ir::dtype_size(g.operands);
    const void* A = reinterpret_cast<const void*>(device_address(ctx, g.a, g.offset_a, size));
    const void* B = reinterpret_cast<const void*>(device_address(ctx, g.b, g.offset_b, size));
    void* C = reinterpret_cast<void*>(device_address(ctx, out));
    if (g.operands != ir::DType::F32) {
      // Halves on tensor cores: their products are exact in f32, which the
      // sums keep (CUBLAS_COMPUTE_32F), as the f32 path on converted
      // operands would; only the order of the sums differs. (Pedantic math
      // ran as fast as the default here: 0.046 ms each for 512x4096x4096.)
      const cudaDataType_t type = g.operands == ir::DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
      const cudaDataType_t c_type = g.result == ir::DType::F32 ? CUDA_R_32F : type;
      if (g.batch == 1)
        check_cublas(rt::cublasGemmEx(h, ta, tb, m, n, k, &alpha, A, type, lda, B, type, ldb, &beta, C, c_type, ldc,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
      else
        check_cublas(rt::cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, A, type, lda, g.stride_a, B, type, ldb,
                                                    g.stride_b, &beta, C, c_type, ldc, g.stride_c,
                                                    static_cast<int>(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx");
      return;
    }
    const auto *fa = static_cast<const float*>(A), *fb = static_cast<const float*>(B);
    auto* fc = static_cast<float*>(C);
    if (g.batch == 1) {
      check_cublas(rt::cublasSgemm(h, ta, tb, m, n, k, &alpha, fa, lda, fb, ldb, &beta, fc, ldc), "cublasSgemm");
    } else {
      check_cublas(rt::cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, fa, lda, g.stride_a, fb, ldb, g.stride_b,
                                                 &beta, fc, ldc, g.stride_c, static_cast<int>(g.batch)),
                   "cublasSgemmStridedBatched");
    }
  };
  return s;
}

// ---------------------------------------------------------------- cuDNN

namespace {

// A tensor descriptor of a View (any strides) or of row-major dims.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(const Dims& dims, const Dims& strides) {
    check_cudnn(rt::cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    std::vector<int> di(dims.begin(), dims.end()), si(strides.begin(), strides.end());
    check_cudnn(rt::cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, static_cast<int>(di.size()), di.data(), si.data()),
                "cudnnSetTensorNdDescriptor");
  }
  ~TensorDesc() { rt::cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

std::vector<int> ints(const Dims& d) { return std::vector<int>(d.begin(), d.end()); }

// cuDNN's tensors have 4 or more dims: a 1-D window op becomes a 2-D one
// over a height of 1 (an added dim after N and C, and an added spatial
// entry of stride 1, dilation 1 and no padding).
View with_unit_height(View v) {
  v.dims.insert(v.dims.begin() + 2, 1);
  v.strides.insert(v.strides.begin() + 2, 0);  // (tidy_strides makes it consistent)
  return v;
}
void insert_at(Dims& d, std::size_t at, std::int64_t value) {
  d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), value);
}
ConvSpec with_unit_height(ConvSpec s) {
  for (Dims* d : {&s.x_dims, &s.w_dims, &s.out_dims}) insert_at(*d, 2, 1);
  for (Dims* d : {&s.strides, &s.dilations}) insert_at(*d, 0, 1);
  for (Dims* d : {&s.pads_begin, &s.pads_end}) insert_at(*d, 0, 0);
  return s;
}
PoolSpec with_unit_height(PoolSpec s) {
  for (Dims* d : {&s.x_dims, &s.out_dims}) insert_at(*d, 2, 1);
  for (Dims* d : {&s.kernel, &s.strides, &s.dilations}) insert_at(*d, 0, 1);
  for (Dims* d : {&s.pads_begin, &s.pads_end}) insert_at(*d, 0, 0);
  return s;
}

// Strides along size-1 dims are free in a View; cuDNN wants them consistent.
Dims tidy_strides(const View& v) {
  Dims s = v.strides;
  for (std::size_t i = v.dims.size(); i-- > 0;)
    if (v.dims[i] == 1) s[i] = i + 1 < v.dims.size() ? s[i + 1] * v.dims[i + 1] : 1;
  return s;
}

bool measure_algorithms() {
  const char* e = std::getenv("SATURN_CUDNN_ALGO");
  return !(e && std::string_view(e) == "heuristic");
}

// SATURN_CUDNN_LOG=1: each convolution's candidates as cuDNN ranked them
// (algorithm, its time in ms or -1, "tensor" for tensor-core math) and the
// one taken, on stderr. Find times each candidate once, and its order moves
// from one process to the next: this says which algorithms a run took.
template <class Perf>
void log_algorithms(const char* what, const ConvSpec& spec, const Perf* perf, int found, int taken) {
  const char* e = std::getenv("SATURN_CUDNN_LOG");
  if (!e || std::string_view(e) != "1") return;
  std::ostringstream line;
  line << "cudnn " << what << ' ' << dims_text(spec.x_dims) << " * " << dims_text(spec.w_dims) << " group "
       << spec.group << ":";
  for (int i = 0; i < found; ++i)
    line << " [" << static_cast<int>(perf[i].algo) << " "
         << (perf[i].status == CUDNN_STATUS_SUCCESS ? perf[i].time : -1.0f)
         << (perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH ? "" : " tensor") << "]";
  line << " -> " << taken << "\n";
  std::cerr << line.str();
}

// What one convolution keeps between runs: descriptors, the algorithm and
// its workspace, made on the first run. A transposed one is cuDNN's
// backward-data convolution: the same filter and convolution descriptors,
// x in the forward result's place and y in its input's.
struct ConvState {
  ConvSpec spec;
  bool transposed = false;
  cudnnConvolutionBwdDataAlgo_t bwd_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  Dims x_strides;
  std::unique_ptr<TensorDesc> x, y, bias;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  std::unique_ptr<cu::DeviceBuffer> workspace, zero_bias;
  ~ConvState() {
    if (w) rt::cudnnDestroyFilterDescriptor(w);
    if (conv) rt::cudnnDestroyConvolutionDescriptor(conv);
    if (act) rt::cudnnDestroyActivationDescriptor(act);
  }

  void make(cudnnHandle_t h) {
    if (conv) return;
    const Dims& xd = spec.x_dims;
    x = std::make_unique<TensorDesc>(xd, x_strides);
    y = std::make_unique<TensorDesc>(spec.out_dims, row_major_strides(spec.out_dims));
    Dims bias_dims(xd.size(), 1);
    bias_dims[1] = transposed ? spec.w_dims[1] * spec.group : spec.w_dims[0];
    bias = std::make_unique<TensorDesc>(bias_dims, row_major_strides(bias_dims));
    check_cudnn(rt::cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    const std::vector<int> wd = ints(spec.w_dims), pad = ints(spec.pads_begin), stride = ints(spec.strides),
                           dil = ints(spec.dilations);
    check_cudnn(
        rt::cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(wd.size()), wd.data()),
        "cudnnSetFilterNdDescriptor");
    check_cudnn(rt::cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    check_cudnn(rt::cudnnSetConvolutionNdDescriptor(conv, static_cast<int>(pad.size()), pad.data(), stride.data(),
                                                    dil.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolutionNdDescriptor");
    check_cudnn(rt::cudnnSetConvolutionGroupCount(conv, static_cast<int>(spec.group)), "cudnnSetConvolutionGroupCount");
    // Plain float32 (no TF32 tensor cores): the results the reference gives.
    check_cudnn(rt::cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    check_cudnn(rt::cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor");
    check_cudnn(rt::cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor");
    // The fastest algorithm that stays in plain float32 math, as cuDNN
    // measures them at these shapes on the first run (or, with
    // SATURN_CUDNN_ALGO=heuristic, as its heuristic expects).
    auto plain = [](const auto& perf) {
      return perf.status == CUDNN_STATUS_SUCCESS && perf.mathType != CUDNN_TENSOR_OP_MATH &&
             perf.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    };
    std::size_t bytes = 0;
    int found = 0;
    if (transposed) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[8];
      if (measure_algorithms())
        check_cudnn(rt::cudnnFindConvolutionBackwardDataAlgorithm(h, w, x->d, conv, y->d, 8, &found, perf),
                    "cudnnFindConvolutionBackwardDataAlgorithm");
      else
        check_cudnn(rt::cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, x->d, conv, y->d, 8, &found, perf),
                    "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      for (int i = 0; i < found; ++i)
        if (plain(perf[i])) {
          bwd_algo = perf[i].algo;
          break;
        }
      log_algorithms("conv_transpose", spec, perf, found, static_cast<int>(bwd_algo));
      check_cudnn(rt::cudnnGetConvolutionBackwardDataWorkspaceSize(h, w, x->d, conv, y->d, bwd_algo, &bytes),
                  "cudnnGetConvolutionBackwardDataWorkspaceSize");
      workspace = std::make_unique<cu::DeviceBuffer>(std::max<std::size_t>(bytes, 16));
      return;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    if (measure_algorithms())
      check_cudnn(rt::cudnnFindConvolutionForwardAlgorithm(h, x->d, w, conv, y->d, 8, &found, perf),
                  "cudnnFindConvolutionForwardAlgorithm");
    else
      check_cudnn(rt::cudnnGetConvolutionForwardAlgorithm_v7(h, x->d, w, conv, y->d, 8, &found, perf),
                  "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < found; ++i)
      if (plain(perf[i])) {
        algo = perf[i].algo;
        break;
      }
    log_algorithms("conv", spec, perf, found, static_cast<int>(algo));
    check_cudnn(rt::cudnnGetConvolutionForwardWorkspaceSize(h, x->d, w, conv, y->d, algo, &bytes),
                "cudnnGetConvolutionForwardWorkspaceSize");
    workspace = std::make_unique<cu::DeviceBuffer>(std::max<std::size_t>(bytes, 16));
  }
};

}  // namespace

std::optional<LibraryStep> make_cudnn_conv_step(const std::shared_ptr<CudaSteps>& cs, const ConvSpec& spec,
                                                const View& x, BufferId w, std::optional<BufferId> bias,
                                                const View* skip, BufferId out) {
  if (spec.x_dims.size() < 3 || spec.x_dims.size() > 5 || spec.pads_begin != spec.pads_end) return std::nullopt;
  if (skip && !skip->whole()) return std::nullopt;  // the residual is read as y's own layout
  // (cuDNN's fused call takes a ReLU only; no cuda rule makes other epilogues.)
  if (spec.activation != ir::Activation::None && spec.activation != ir::Activation::Relu) return std::nullopt;
  auto st = std::make_shared<ConvState>();
  const bool lift = spec.x_dims.size() == 3;
  st->spec = lift ? with_unit_height(spec) : spec;
  st->x_strides = tidy_strides(lift ? with_unit_height(x) : x);
  Step s;
  s.kind = StepKind::Conv;
  s.label = std::string("cudnn conv") + (bias ? "+bias" : "") + (spec.sum ? "+sum" : "") +
            (spec.activation == ir::Activation::Relu ? "+relu" : "");
  s.reads = {x.buffer, w};
  if (bias) s.reads.push_back(*bias);
  if (skip) s.reads.push_back(skip->buffer);
  s.writes = {out};
  std::size_t out_bytes = sizeof(float);
  for (auto d : spec.out_dims) out_bytes *= static_cast<std::size_t>(d);
  const BufferId xb = x.buffer;
  const std::int64_t x_off = x.offset;
  std::optional<BufferId> skip_buffer;
  if (skip) skip_buffer = skip->buffer;
  s.run = [cs, st, xb, x_off, w, bias, skip_buffer, out, out_bytes](const RunContext& ctx) {
    const cu::Stream& stream = stream_of(ctx);
    cudnnHandle_t h = cs->dnn(stream);
    const ConvSpec& sp = st->spec;
    // With a ReLU: one fused call, y = relu(conv(x) + bias + z), z the
    // residual (or zeros). Without: the convolution accumulating into the
    // residual, then the bias.
    const bool fused = sp.activation == ir::Activation::Relu;
    st->make(h);
    const std::uint64_t y = device_address(ctx, out);
    // The residual is accumulated into y: copied there first, unless the
    // memory planner gave its storage to y.
    if (skip_buffer)
      cu::copy_on_device(y, device_address(ctx, *skip_buffer), out_bytes, stream);
    else if (fused)
      cu::fill_zero(y, out_bytes, stream);
    const auto* X = reinterpret_cast<const void*>(device_address(ctx, xb, x_off));
    const auto* W = reinterpret_cast<const void*>(device_address(ctx, w));
    void* Y = reinterpret_cast<void*>(y);
    void* ws = reinterpret_cast<void*>(st->workspace->address());
    const std::size_t ws_bytes = st->workspace->bytes();
    const float one = 1.0f, zero = 0.0f, z_scale = skip_buffer ? 1.0f : 0.0f;
    if (fused) {
      const void* bias_ptr = nullptr;
      if (bias) {
        bias_ptr = reinterpret_cast<const void*>(device_address(ctx, *bias));
      } else {
        if (!st->zero_bias) {
          std::vector<float> zeros(static_cast<std::size_t>(sp.w_dims[0]), 0.0f);
          st->zero_bias = std::make_unique<cu::DeviceBuffer>(zeros.size() * sizeof(float));
          st->zero_bias->copy_from_host(zeros.data(), zeros.size() * sizeof(float));
        }
        bias_ptr = reinterpret_cast<const void*>(st->zero_bias->address());
      }
      check_cudnn(
          rt::cudnnConvolutionBiasActivationForward(h, &one, st->x->d, X, st->w, W, st->conv, st->algo, ws, ws_bytes,
                                                    &z_scale, st->y->d, Y, st->bias->d, bias_ptr, st->act, st->y->d, Y),
          "cudnnConvolutionBiasActivationForward");
      return;
    }
    check_cudnn(rt::cudnnConvolutionForward(h, &one, st->x->d, X, st->w, W, st->conv, st->algo, ws, ws_bytes,
                                            skip_buffer ? &one : &zero, st->y->d, Y),
                "cudnnConvolutionForward");
    if (bias)
      check_cudnn(rt::cudnnAddTensor(h, &one, st->bias->d, reinterpret_cast<const void*>(device_address(ctx, *bias)),
                                     &one, st->y->d, Y),
                  "cudnnAddTensor");
  };
  return LibraryStep{std::move(s), row_major_strides(spec.out_dims)};
}

std::optional<LibraryStep> make_cudnn_conv_transpose_step(const std::shared_ptr<CudaSteps>& cs, const ConvSpec& spec,
                                                          const View& x, BufferId w, std::optional<BufferId> bias,
                                                          BufferId out) {
  if (spec.x_dims.size() < 3 || spec.x_dims.size() > 5) return std::nullopt;
  // cuDNN derives the forward input's size (our result) from both sides
  // padded by pads_begin: the forward convolution of the result must give x.
  for (std::size_t i = 0; i < spec.pads_begin.size(); ++i) {
    const std::int64_t span = (spec.w_dims[2 + i] - 1) * spec.dilations[i] + 1;
    const std::int64_t room = spec.out_dims[2 + i] + 2 * spec.pads_begin[i] - span;
    if (spec.pads_begin[i] < 0 || room < 0 || room / spec.strides[i] + 1 != spec.x_dims[2 + i]) return std::nullopt;
  }
  auto st = std::make_shared<ConvState>();
  const bool lift = spec.x_dims.size() == 3;
  st->spec = lift ? with_unit_height(spec) : spec;
  st->spec.pads_end = st->spec.pads_begin;
  st->transposed = true;
  st->x_strides = tidy_strides(lift ? with_unit_height(x) : x);
  Step s;
  s.kind = StepKind::Conv;
  s.label = std::string("cudnn conv_transpose") + (bias ? "+bias" : "");
  s.reads = {x.buffer, w};
  if (bias) s.reads.push_back(*bias);
  s.writes = {out};
  const BufferId xb = x.buffer;
  const std::int64_t x_off = x.offset;
  s.run = [cs, st, xb, x_off, w, bias, out](const RunContext& ctx) {
    cudnnHandle_t h = cs->dnn(stream_of(ctx));
    st->make(h);
    void* Y = reinterpret_cast<void*>(device_address(ctx, out));
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(rt::cudnnConvolutionBackwardData(
                    h, &one, st->w, reinterpret_cast<const void*>(device_address(ctx, w)), st->x->d,
                    reinterpret_cast<const void*>(device_address(ctx, xb, x_off)), st->conv, st->bwd_algo,
                    reinterpret_cast<void*>(st->workspace->address()), st->workspace->bytes(), &zero, st->y->d, Y),
                "cudnnConvolutionBackwardData");
    if (bias)
      check_cudnn(rt::cudnnAddTensor(h, &one, st->bias->d, reinterpret_cast<const void*>(device_address(ctx, *bias)),
                                     &one, st->y->d, Y),
                  "cudnnAddTensor");
  };
  return LibraryStep{std::move(s), row_major_strides(spec.out_dims)};
}

namespace {

struct PoolState {
  PoolSpec spec;
  Dims x_strides;
  std::unique_ptr<TensorDesc> x, y;
  cudnnPoolingDescriptor_t pool = nullptr;
  ~PoolState() {
    if (pool) rt::cudnnDestroyPoolingDescriptor(pool);
  }
  void make() {
    if (pool) return;
    x = std::make_unique<TensorDesc>(spec.x_dims, x_strides);
    y = std::make_unique<TensorDesc>(spec.out_dims, row_major_strides(spec.out_dims));
    check_cudnn(rt::cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor");
    const cudnnPoolingMode_t mode = spec.max                 ? CUDNN_POOLING_MAX_DETERMINISTIC
                                    : spec.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    const std::vector<int> window = ints(spec.kernel), pad = ints(spec.pads_begin), stride = ints(spec.strides);
    check_cudnn(rt::cudnnSetPoolingNdDescriptor(pool, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(window.size()),
                                                window.data(), pad.data(), stride.data()),
                "cudnnSetPoolingNdDescriptor");
  }
};

}  // namespace

std::optional<LibraryStep> make_cudnn_pool_step(const std::shared_ptr<CudaSteps>& cs, const PoolSpec& spec,
                                                const View& x, BufferId out, const CudaKernelSource* correct) {
  if (spec.x_dims.size() < 3 || spec.x_dims.size() > 5 || spec.pads_begin != spec.pads_end) return std::nullopt;
  for (auto d : spec.dilations)
    if (d != 1) return std::nullopt;  // cuDNN has no dilated pooling
  auto st = std::make_shared<PoolState>();
  const bool lift = spec.x_dims.size() == 3;
  st->spec = lift ? with_unit_height(spec) : spec;
  st->x_strides = tidy_strides(lift ? with_unit_height(x) : x);
  Step s;
  s.kind = StepKind::Pool;
  s.label = spec.max ? "cudnn max_pool" : "cudnn avg_pool";
  s.reads = {x.buffer};
  s.writes = {out};
  const BufferId xb = x.buffer;
  const std::int64_t x_off = x.offset;
  std::shared_ptr<OwnKernel> fix = correct ? compile_own_kernel(*cs, *correct) : nullptr;
  s.run = [cs, st, xb, x_off, out, fix](const RunContext& ctx) {
    cudnnHandle_t h = cs->dnn(stream_of(ctx));
    st->make();
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(rt::cudnnPoolingForward(h, st->pool, &one, st->x->d,
                                        reinterpret_cast<const void*>(device_address(ctx, xb, x_off)), &zero, st->y->d,
                                        reinterpret_cast<void*>(device_address(ctx, out))),
                "cudnnPoolingForward");
    if (fix && fix->elements > 0)
      fix->launch({device_address(ctx, xb, x_off), device_address(ctx, out)}, stream_of(ctx));
  };
  return LibraryStep{std::move(s), row_major_strides(spec.out_dims)};
}

// ---------------------------------------------------------------- host steps

Step make_cuda_block_copy_step(const BlockCopy& c, const std::string& label) {
  Step s = make_host_block_copy_step(c, label);  // its reads and writes; the copies are the device's
  s.run = [c](const RunContext& ctx) {
    for (const BlockCopy::Part& p : c.parts)
      cu::copy_rows_on_device(device_address(ctx, c.dst) + p.at, c.dst_block, device_address(ctx, p.src) + p.src_at,
                              p.src_stride, p.block, c.outer, stream_of(ctx));
  };
  return s;
}

Step make_cuda_checked_gather_step(const std::shared_ptr<CudaSteps>& cs, const CudaKernelSource& src, BufferId data,
                                   BufferId indices, BufferId flag, BufferId out, const std::string& label,
                                   const std::string& error) {
  auto kernel = compile_own_kernel(*cs, src);
  Step s;
  s.kind = StepKind::Copy;
  s.label = label;
  s.reads = {data, indices};
  s.writes = {out, flag};
  s.run = [kernel, data, indices, flag, out, error](const RunContext& ctx) {
    if (kernel->elements == 0) return;
    const cu::Stream& stream = stream_of(ctx);
    cu::fill_zero(device_address(ctx, flag), 4, stream);
    kernel->launch(
        {device_address(ctx, data), device_address(ctx, indices), device_address(ctx, flag), device_address(ctx, out)},
        stream);
    std::int32_t bad = 0;
    cu::copy_to_host(&bad, device_address(ctx, flag), sizeof bad, stream);
    if (bad) throw std::runtime_error(error);
  };
  s.host_sync = true;
  return s;
}

Step make_cuda_own_kernel_step(const std::shared_ptr<CudaSteps>& cs, const CudaKernelSource& src,
                               const std::vector<BufferId>& reads, const std::vector<BufferId>& writes, StepKind kind,
                               const std::string& label) {
  auto kernel = compile_own_kernel(*cs, src);
  Step s;
  s.kind = kind;
  s.label = label;
  s.reads = reads;
  s.writes = writes;
  s.run = [kernel, reads, writes](const RunContext& ctx) {
    if (kernel->elements == 0) return;
    std::vector<std::uint64_t> args;
    for (BufferId b : reads) args.push_back(device_address(ctx, b));
    for (BufferId b : writes) args.push_back(device_address(ctx, b));
    kernel->launch(args, stream_of(ctx));
  };
  return s;
}

void run_on_host(Step& s, const std::vector<Buffer>& buffers) {
  std::vector<BufferId> touched = s.reads;
  for (BufferId b : s.writes)
    if (std::find(touched.begin(), touched.end(), b) == touched.end()) touched.push_back(b);
  std::vector<std::size_t> bytes;
  for (BufferId b : touched) bytes.push_back(buffers[static_cast<std::size_t>(b)].bytes);
  const std::vector<BufferId> reads = s.reads, writes = s.writes;
  s.label += " (on the host)";
  s.host_sync = true;
  s.run = [inner = std::move(s.run), touched, bytes, reads, writes](const RunContext& ctx) {
    const cu::Stream& stream = stream_of(ctx);
    std::vector<std::vector<std::uint8_t>> host(touched.size());
    RunContext on_host;
    on_host.addr.assign(ctx.addr.size(), nullptr);
    for (std::size_t i = 0; i < touched.size(); ++i) {
      host[i].resize(std::max<std::size_t>(bytes[i], 1));
      on_host.addr[static_cast<std::size_t>(touched[i])] = host[i].data();
      if (std::find(reads.begin(), reads.end(), touched[i]) != reads.end())
        cu::copy_to_host(host[i].data(), device_address(ctx, touched[i]), bytes[i], stream);
    }
    inner(on_host);
    for (std::size_t i = 0; i < touched.size(); ++i)
      if (std::find(writes.begin(), writes.end(), touched[i]) != writes.end())
        cu::copy_to_device(device_address(ctx, touched[i]), host[i].data(), bytes[i], stream);
  };
}

}  // namespace saturn::lower
