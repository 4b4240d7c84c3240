// The CUDA code generator without a GPU: the kernels the lowering builds for
// every fusable elementwise op, the reductions, softmax, log-softmax and
// layer_norm compile with NVRTC to PTX for sm_80 and sm_90; the generated
// source carries the shapes and strides it was given (row decomposition,
// broadcast and transposed reads, float4 only where every read is
// contiguous and aligned, one warp per reduced element); NVRTC errors name
// the kernel and carry the log; the compile cache hits. Running the kernels
// needs a device: tests/test_cuda_device.cpp.
#include <catch2/catch.hpp>

#include "bench/models.hpp"
#include "lower/cpu_lowering.hpp"
#include "lower/cuda_codegen.hpp"
#include "runtime/cuda_compiler.hpp"

using namespace saturn;
using Dims = std::vector<std::int64_t>;

namespace {

std::vector<lower::CudaKernelSource> sources_of(const ir::Graph& g) {
  auto p = lower::compile_cpu(g);
  if (!p) FAIL(p.error().to_string());
  std::vector<lower::CudaKernelSource> out;
  int i = 0;
  for (const lower::LoopKernel& k : *(*p)->kernels) out.push_back(lower::cuda_kernel_source(k, i++));
  return out;
}

runtime::CudaCompiler& compiler() {
  static runtime::CudaCompiler c;
  return c;
}

void compiles_for_both(const std::vector<lower::CudaKernelSource>& ks) {
  REQUIRE(!ks.empty());
  for (const auto& k : ks) {
    for (const char* arch : {"compute_80", "compute_90"}) {
      INFO(arch << "\n" << k.source);
      auto ptx = compiler().ptx(k.source, k.name, arch);
      if (!ptx) FAIL(ptx.error().to_string());
      CHECK(ptx->find(".entry " + k.name) != std::string::npos);
      CHECK(ptx->find(std::string(".target sm_") + (arch + 8)) != std::string::npos);
    }
  }
}

ir::Attrs float_attr(const char* name, double v) {
  ir::Attrs a;
  a.set(name, v);
  return a;
}

}  // namespace

TEST_CASE("Every fusable elementwise op compiles with NVRTC for sm_80 and sm_90") {
  const std::vector<std::string> unary = {"neg",   "recip",      "sqrt",     "exp2",        "log2", "sin",  "cos",
                                          "exp",   "log",        "tanh",     "erf",         "abs",  "sign", "ceil",
                                          "floor", "sigmoid",    "relu",     "leaky_relu",  "elu",  "selu", "softplus",
                                          "gelu",  "hard_swish", "identity", "hard_sigmoid"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "div", "pow", "max", "min", "prelu"};
  models::GraphBuilder b("ops");
  std::string x = b.input("x", {3, 5});
  std::string y = b.input("y", {3, 5});
  std::vector<std::string> outs;
  for (const std::string& op : unary) outs.push_back(b.op(op, {x}));
  for (const std::string& op : binary) outs.push_back(b.op(op, {x, y}));
  ir::Attrs clip = float_attr("min", -0.5);
  clip.set("max", 0.5);
  outs.push_back(b.op("clip", {x}, clip));
  auto ks = sources_of(b.finish(outs));
  // One kernel per output (each is stored), every op's semantics inside one.
  CHECK(ks.size() == outs.size());
  compiles_for_both(ks);
  CHECK(compiler().compiled() >= 2 * outs.size());
}

TEST_CASE("Reductions - softmax - log-softmax and layer_norm compile with NVRTC") {
  models::GraphBuilder b("reductions");
  std::string x = b.input("x", {7, 33});
  std::vector<std::string> outs;
  for (const char* op :
       {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_l1", "reduce_l2", "reduce_sum_square"}) {
    ir::Attrs a = models::ints_attr("axes", {1});
    outs.push_back(b.op(op, {x}, a));
  }
  outs.push_back(b.op("softmax", {x}));
  outs.push_back(b.op("log_softmax", {x}));
  outs.push_back(b.layer_norm(x, 33));
  auto ks = sources_of(b.finish(outs));
  compiles_for_both(ks);
  int warp_reductions = 0;
  for (const auto& k : ks) warp_reductions += k.source.find("__shfl_xor_sync") != std::string::npos;
  CHECK(warp_reductions >= 9);
}

TEST_CASE("Generated CUDA source carries the shapes - strides and broadcasts it was given") {
  SECTION("contiguous rows of a multiple of 4 with a broadcast row and a broadcast scalar: float4") {
    models::GraphBuilder b("vec");
    std::string x = b.input("x", {4, 8});
    std::string row = b.input("row", {8});
    std::string s = b.input("s", {1});
    auto ks = sources_of(b.finish({b.op("mul", {b.op("add", {x, row}), s})}));
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].vectorized);
    CHECK(ks[0].elements == 32);
    CHECK(ks[0].source.find("i < 8LL") != std::string::npos);      // 32 elements, 4 per thread
    CHECK(ks[0].source.find("make_float4") != std::string::npos);  // the scalar, repeated
    CHECK(ks[0].source.find("% 8LL") != std::string::npos);        // the row index of the broadcast row
    compiles_for_both(ks);
  }
  SECTION("rows that are not a multiple of 4: one element per thread") {
    models::GraphBuilder b("odd");
    std::string x = b.input("x", {3, 5});
    std::string col = b.input("col", {3, 1});
    auto ks = sources_of(b.finish({b.op("add", {x, col})}));
    REQUIRE(ks.size() == 1);
    CHECK_FALSE(ks[0].vectorized);
    CHECK(ks[0].source.find("i < 15LL") != std::string::npos);
    CHECK(ks[0].source.find("r % 5LL") != std::string::npos);
    CHECK(ks[0].grid == 1);
    compiles_for_both(ks);
  }
  SECTION("a transposed operand is read through its strides, never vectorized") {
    models::GraphBuilder b("transposed");
    std::string x = b.input("x", {6, 12});
    std::string y = b.input("y", {12, 6});
    auto ks = sources_of(b.finish({b.op("add", {b.op("transpose", {x}, models::ints_attr("perm", {1, 0})), y})}));
    REQUIRE(ks.size() == 1);
    CHECK_FALSE(ks[0].vectorized);
    CHECK(ks[0].source.find("* 12LL") != std::string::npos);  // x's row stride, walked along the result's columns
    compiles_for_both(ks);
  }
  SECTION("a reduction: one warp per result element over the reduced extent") {
    models::GraphBuilder b("sum");
    std::string x = b.input("x", {7, 33});
    auto ks = sources_of(b.finish({b.op("reduce_sum", {x}, models::ints_attr("axes", {1}))}));
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].source.find("o < 7LL") != std::string::npos);
    CHECK(ks[0].source.find("j < 33LL") != std::string::npos);
    CHECK(ks[0].grid == 1);  // 7 warps
    compiles_for_both(ks);
  }
  SECTION("large results launch as many blocks as they fill, up to the grid-stride cap") {
    models::GraphBuilder b("big");
    std::string x = b.input("x", {1031, 1031});
    auto ks = sources_of(b.finish({b.op("exp", {x})}));
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].grid == (1031 * 1031 + 255) / 256);
  }
}

TEST_CASE("NVRTC errors name the kernel and carry the log - and the cache compiles a source once") {
  runtime::CudaCompiler c;
  auto bad = c.ptx("extern \"C\" __global__ void broken() { undeclared_thing(); }", "broken", "compute_90");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("broken") != std::string::npos);
  CHECK(bad.error().message.find("undeclared_thing") != std::string::npos);
  const std::string ok = "extern \"C\" __global__ void fine(float* p) { p[threadIdx.x] = 1.0f; }";
  REQUIRE(c.ptx(ok, "fine", "compute_90"));
  REQUIRE(c.ptx(ok, "fine", "compute_90"));
  REQUIRE(c.ptx(ok, "fine", "compute_80"));
  CHECK(c.compiled() == 2);
  CHECK(c.cache_hits() == 1);
  CHECK(runtime::CudaCompiler::version().find('.') != std::string::npos);
}
