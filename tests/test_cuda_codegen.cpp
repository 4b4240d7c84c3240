// The CUDA code generator without a GPU: the kernels the lowering builds for
// every fusable elementwise op, the reductions, softmax, log-softmax and
// layer_norm compile with NVRTC to PTX for sm_80 and sm_90; the generated
// source carries the shapes and strides it was given (row decomposition,
// broadcast and transposed reads, float4 only where every read is
// contiguous and aligned, one warp per reduced element); NVRTC errors name
// the kernel and carry the log; the compile cache hits. The kernels also
// run on the host emulator (tests/cuda_host_emulator.hpp) and must compute
// what their loop kernels mean; running them on a device is
// tests/test_cuda_device.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "bench/models.hpp"
#include "device/cuda_compiler.hpp"
#include "lower/cuda_codegen.hpp"
#include "lower/lowering.hpp"
#include "scratch.hpp"
#include "tests/cuda_host_emulator.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
using Dims = std::vector<std::int64_t>;

namespace {

std::vector<lower::LoopKernel> kernels_of(const ir::Graph& g) {
  auto p = lower::compile_cpu(g);
  if (!p) FAIL(p.error().to_string());
  return *(*p)->kernels;
}

std::vector<lower::CudaKernelSource> sources_of(const ir::Graph& g) {
  std::vector<lower::CudaKernelSource> out;
  int i = 0;
  for (const lower::LoopKernel& k : kernels_of(g)) out.push_back(lower::cuda_kernel_source(k, i++));
  return out;
}

// Every kernel of `g`'s program, generated as CUDA C and run on the host
// emulator, against the loop kernel's meaning on the same inputs. `poke`
// may put special values into the inputs. Returns how many ran.
int emulated_kernels_match(const ir::Graph& g, const std::string& tag,
                           const std::function<void(std::vector<float>&)>& poke = {}) {
  const std::vector<lower::LoopKernel> ks = kernels_of(g);
  std::vector<std::string> where;
  for (const lower::LoopKernel& k : ks) where.push_back(g.name + " " + k.name);
  const std::vector<std::string> wrong = test::emulation_failures(ks, where, tag, poke);
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
  return static_cast<int>(ks.size());
}

// Some infinities and NaNs among the values.
void special_values(std::vector<float>& a) {
  for (std::size_t i = 3; i < a.size(); i += 7) a[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
}

device::CudaCompiler& compiler() {
  static device::CudaCompiler c;
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

// One output per fusable elementwise op over x and y [3 5], each its own kernel.
ir::Graph elementwise_ops(std::size_t& outputs) {
  const std::vector<std::string> unary = {"neg",   "recip",      "sqrt",     "exp2",        "log2", "sin",  "cos",
                                          "exp",   "log",        "tanh",     "erf",         "abs",  "sign", "ceil",
                                          "floor", "sigmoid",    "relu",     "leaky_relu",  "elu",  "selu", "softplus",
                                          "gelu",  "hard_swish", "identity", "hard_sigmoid"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "div", "pow", "max", "min", "prelu", "mod"};
  models::GraphBuilder b("ops");
  std::string x = b.input("x", {3, 5});
  std::string y = b.input("y", {3, 5});
  std::vector<std::string> outs;
  for (const std::string& op : unary) outs.push_back(b.op(op, {x}));
  for (const std::string& op : binary) outs.push_back(b.op(op, {x, y}));
  ir::Attrs clip = float_attr("min", -0.5);
  clip.set("max", 0.5);
  outs.push_back(b.op("clip", {x}, clip));
  ir::Attrs c_mod;
  c_mod.set("fmod", std::int64_t{1});
  outs.push_back(b.op("mod", {x, y}, c_mod));
  outputs = outs.size();
  return b.finish(outs);
}

// Every reduction over the last axis of x [7 33], softmax, log-softmax and layer_norm.
ir::Graph reductions() {
  models::GraphBuilder b("reductions");
  std::string x = b.input("x", {7, 33});
  std::vector<std::string> outs;
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_l1", "reduce_l2",
                         "reduce_sum_square", "reduce_prod", "reduce_log_sum", "reduce_log_sum_exp"}) {
    ir::Attrs a = models::ints_attr("axes", {1});
    outs.push_back(b.op(op, {x}, a));
  }
  outs.push_back(b.op("softmax", {x}));
  outs.push_back(b.op("log_softmax", {x}));
  outs.push_back(b.layer_norm(x, 33));
  // Reductions of other float types: f64 in double, halves through f32.
  std::string d = b.input("d", {7, 33}, ir::DType::F64);
  std::string h = b.input("h", {5, 40}, ir::DType::F16);
  std::string bf = b.input("bf", {5, 40}, ir::DType::BF16);
  outs.push_back(b.op("reduce_sum", {d}, models::ints_attr("axes", {1})));
  outs.push_back(b.op("reduce_log_sum_exp", {d}, models::ints_attr("axes", {0})));
  outs.push_back(b.op("reduce_prod", {h}, models::ints_attr("axes", {0})));
  outs.push_back(b.op("reduce_mean", {bf}, models::ints_attr("axes", {1})));
  outs.push_back(b.op("softmax", {h}));
  std::string m = b.input("m", {5, 40}, ir::DType::Bool);
  outs.push_back(b.op("reduce_min", {m}, models::ints_attr("axes", {1})));  // all
  return b.finish(outs);
}

// Kernels across element types: bool and integer leaves (contiguous and
// broadcast), bool results, and a reduction over a cast.
ir::Graph typed_kernels() {
  models::GraphBuilder b("typed");
  std::string x = b.input("x", {6, 16});
  std::string m = b.input("m", {6, 16}, ir::DType::Bool);
  std::string col = b.input("col", {6, 1}, ir::DType::Bool);
  std::string k = b.input("k", {1, 16}, ir::DType::I64);
  std::string i = b.input("i", {6, 16}, ir::DType::I32);
  std::string s = b.input("s", {6, 16}, ir::DType::I8);
  std::string u = b.input("u", {6, 16}, ir::DType::U8);
  auto cast = [&](const std::string& v, const char* to) {
    ir::Attrs a;
    a.set("to", std::string(to));
    return b.op("cast", {v}, a);
  };
  return b.finish({
      b.op("where", {m, x, cast(k, "f32")}),
      b.op("where", {col, x, b.op("neg", {x})}),  // f32 rows, a broadcast bool: float4
      b.op("add", {b.op("mul", {cast(i, "f32"), x}), cast(u, "f32")}),
      b.op("greater", {x, cast(s, "f32")}),
      b.op("and", {b.op("not", {m}), b.op("less", {x, b.fill({}, 0.0)})}),
      cast(x, "bool"),
      b.op("reduce_sum", {cast(m, "f32")}, models::ints_attr("axes", {1})),
  });
}

// The first loop kernel of typed_kernels().
lower::LoopKernel typed_loop_kernel() { return kernels_of(typed_kernels()).at(0); }

// Kernels of f16, bf16 and f64 values: casts between them, f16 arithmetic
// (in f32, rounded when stored), f64 arithmetic in f64, and comparisons of
// 32-bit integers (in i64).
ir::Graph wide_typed_kernels() {
  models::GraphBuilder b("wide");
  std::string h = b.input("h", {5, 12}, ir::DType::F16);
  std::string bf = b.input("bf", {1, 12}, ir::DType::BF16);
  std::string d = b.input("d", {5, 12}, ir::DType::F64);
  std::string x = b.input("x", {5, 12});
  std::string i = b.input("i", {5, 1}, ir::DType::I32);
  auto cast = [&](const std::string& v, const char* to) {
    ir::Attrs a;
    a.set("to", std::string(to));
    return b.op("cast", {v}, a);
  };
  return b.finish({
      b.op("add", {b.op("mul", {h, h}), b.fill({}, 0.5, ir::DType::F16)}),  // f16 arithmetic
      cast(x, "f16"),
      cast(x, "bf16"),
      b.op("mul", {cast(bf, "f32"), x}),
      b.op("tanh", {b.op("add", {b.op("exp", {d}), cast(h, "f64")})}),  // f64 arithmetic
      cast(d, "f32"),
      cast(d, "bf16"),
      b.op("less", {i, b.fill({}, 0, ir::DType::I32)}),
  });
}

// One kernel reading a leaf of type `from` into a result of type `to`.
lower::LoopKernel cast_kernel(ir::DType from, ir::DType to, std::int64_t n) {
  lower::LoopKernel k;
  k.name = std::string("cast ") + ir::dtype_name(from) + " to " + ir::dtype_name(to);
  k.ctx = std::make_shared<ir::SymContext>();
  const ir::Sym v = k.ctx->var("x");
  k.body = v.id();
  k.leaf_vars = {v.id()};
  k.leaves = {lower::Leaf{0, 0, {1}, from}};
  k.dims = {n};
  k.out_dtype = to;
  k.compute = lower::compute_dtype(to);
  return k;
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST_CASE("Kernels across element types compile with NVRTC for sm_80 and sm_90") {
  const auto ks = sources_of(typed_kernels());
  CHECK(ks.size() == 8);  // the seven results, and cast(k) stored before it broadcasts
  compiles_for_both(ks);
  // Only the kernel whose leaves are f32 or broadcast, into f32, reads float4.
  int vectorized = 0, bool_results = 0, i64_reads = 0;
  for (const auto& k : ks) {
    vectorized += k.vectorized;
    bool_results += k.source.find("unsigned char* __restrict__ out") != std::string::npos;
    i64_reads += k.source.find("(float)(double)l") != std::string::npos;
  }
  CHECK(vectorized == 1);
  CHECK(bool_results == 3);
  CHECK(i64_reads == 1);
  // A float kernel's integer result is converted as Tensor::set converts
  // (saturating); integer reductions are not kernels' (check_kernel_types).
  lower::LoopKernel k = typed_loop_kernel();
  REQUIRE(k.leaves.size() == 1);  // cast(k), read as a value
  REQUIRE(k.leaves[0].dtype == ir::DType::I64);
  k.out_dtype = ir::DType::I64;
  REQUIRE(lower::is_copy(k));
  CHECK(lower::cuda_kernel_source(k, 0).source.find("out[i] = l0[off0];") != std::string::npos);
  k.out_dtype = ir::DType::I32;
  CHECK(lower::cuda_kernel_source(k, 0).source.find("out[i] = (int)sat_f2ll((double)(") != std::string::npos);
  k.out_dtype = ir::DType::I64;
  k.reduce = lower::ReduceKind::Sum;
  CHECK_THROWS_AS(lower::cuda_kernel_source(k, 0), std::logic_error);
}

TEST_CASE("f16 - bf16 and f64 kernels compile with NVRTC - halves as bits - f64 arithmetic in double") {
  const auto ks = sources_of(wide_typed_kernels());
  compiles_for_both(ks);
  int halves = 0, doubles = 0, vectorized = 0;
  for (const auto& k : ks) {
    halves += k.source.find("unsigned short* __restrict__ out") != std::string::npos;
    doubles += k.source.find("__device__ __forceinline__ double " + k.name + "_body") != std::string::npos;
    vectorized += k.vectorized;
  }
  // Ten kernels: h*h is stored (rounded to f16) before + 0.5 reads it, so
  // five store halves (the mul, the add, the casts of x and d's to bf16);
  // exp+cast+add+tanh of d computes in double, the i32 comparison in
  // long long; the cast of bf is stored before it broadcasts, and the
  // product with x, f32 throughout, reads float4.
  int integers = 0;
  for (const auto& k : ks)
    integers += k.source.find("__device__ __forceinline__ long long " + k.name + "_body") != std::string::npos;
  CHECK(ks.size() == 10);
  CHECK(halves == 5);
  CHECK(doubles == 1);
  CHECK(integers == 1);
  CHECK(vectorized == 1);
}

TEST_CASE("Every fusable elementwise op compiles with NVRTC for sm_80 and sm_90") {
  std::size_t outputs = 0;
  auto ks = sources_of(elementwise_ops(outputs));
  // One kernel per output (each is stored), every op's semantics inside one.
  CHECK(ks.size() == outputs);
  compiles_for_both(ks);
  CHECK(compiler().compiled() >= 2 * outputs);
}

TEST_CASE("Reductions - softmax - log-softmax and layer_norm compile with NVRTC") {
  auto ks = sources_of(reductions());
  compiles_for_both(ks);
  int warp_reductions = 0;
  for (const auto& k : ks) warp_reductions += k.source.find("__shfl_xor_sync") != std::string::npos;
  CHECK(warp_reductions >= 16);
  int doubles = 0, products = 0, halves = 0;
  for (const auto& k : ks) {
    doubles += k.source.find("double acc = 0x0p+0;") != std::string::npos;
    products += k.source.find("acc = acc * x;") != std::string::npos;
    halves += k.source.find("out[o] = sat_f2h((float)(") != std::string::npos;
  }
  CHECK(doubles == 2);   // f64's sum and log-sum-exp's shifted sum
  CHECK(products == 2);  // f32's and f16's reduce_prod
  CHECK(halves == 1);    // reduce_prod's (softmax's f16 result is its own kernel's)
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

TEST_CASE("Generated kernels compute what their loop kernels mean - run on the host emulator") {
  SECTION("every fusable elementwise op - finite values") {
    std::size_t outputs = 0;
    const ir::Graph g = elementwise_ops(outputs);
    CHECK(emulated_kernels_match(g, "ops") == static_cast<int>(outputs));
  }
  SECTION("every fusable elementwise op - with infinities and NaN") {
    std::size_t outputs = 0;
    const ir::Graph g = elementwise_ops(outputs);
    CHECK(emulated_kernels_match(g, "ops-special", special_values) == static_cast<int>(outputs));
  }
  SECTION("reductions - softmax - log-softmax - layer_norm") {
    CHECK(emulated_kernels_match(reductions(), "reductions") >= 9);
    CHECK(emulated_kernels_match(reductions(), "reductions-special", special_values) >= 9);
  }
  SECTION("bool and integer leaves - bool results - finite values and NaN") {
    CHECK(emulated_kernels_match(typed_kernels(), "typed") == 8);
    CHECK(emulated_kernels_match(typed_kernels(), "typed-special", special_values) == 8);
  }
  SECTION("f16 - bf16 and f64 leaves and results - f64 arithmetic") {
    CHECK(emulated_kernels_match(wide_typed_kernels(), "wide") == 10);
    CHECK(emulated_kernels_match(wide_typed_kernels(), "wide-special", special_values) == 10);
  }
  SECTION("integer arithmetic in i64 - wrapping to i8 - i64 comparisons - where over integers") {
    models::GraphBuilder b("ints");
    std::string x = b.input("x", {3, 8}, ir::DType::I8), y = b.input("y", {1, 8}, ir::DType::I8);
    std::string k = b.input("k", {3, 8}, ir::DType::I64), m = b.input("m", {3, 1}, ir::DType::Bool);
    std::string sum = b.op("mul", {b.op("add", {x, y}), b.op("sub", {x, y})});
    const ir::Graph g =
        b.finish({b.op("where", {m, b.op("max", {sum, b.op("neg", {x})}), b.op("abs", {b.op("min", {x, y})})}),
                  b.op("less", {k, b.op("neg", {k})}), b.op("equal", {k, b.fill({}, 2, ir::DType::I64)})});
    const auto sources = sources_of(g);
    compiles_for_both(sources);
    int ints = 0;
    for (const auto& src : sources) ints += src.source.find("long long t") != std::string::npos;
    CHECK(ints >= 2);
    CHECK(emulated_kernels_match(g, "ints") == static_cast<int>(sources.size()));
  }
  SECTION("float to integer results - truncated - saturated - wrapped - NaN 0") {
    models::GraphBuilder b("to_int");
    std::string x = b.input("x", {4, 9}), d = b.input("d", {4, 9}, ir::DType::F64);
    std::string n = b.input("n", {1, 9}, ir::DType::I32);
    auto cast = [&](const std::string& v, const char* to) {
      ir::Attrs a;
      a.set("to", std::string(to));
      return b.op("cast", {v}, a);
    };
    const ir::Graph g =
        b.finish({cast(b.op("mul", {x, b.fill({}, 3e9)}), "i32"),   // wraps
                  cast(b.op("mul", {x, b.fill({}, 1e19)}), "i64"),  // saturates
                  cast(b.op("mul", {x, b.fill({}, 150.0)}), "u8"),  // wraps
                  cast(b.op("mul", {d, b.fill({}, 1e3, ir::DType::F64)}), "i8"), b.op("pow", {n, b.op("abs", {x})})});
    const auto sources = sources_of(g);
    compiles_for_both(sources);
    int converted = 0;
    for (const auto& src : sources) converted += src.source.find(")sat_f2ll((double)(") != std::string::npos;
    CHECK(converted == 5);
    // (|x| is stored first: the power computes in double.)
    CHECK(emulated_kernels_match(g, "to-int") == 6);
    CHECK(emulated_kernels_match(g, "to-int-special", special_values) == 6);
  }
  SECTION("integer division - both modulos - power - a fault flag instead of a trap") {
    models::GraphBuilder b("int_division");
    std::string x = b.input("x", {3, 8}, ir::DType::I32), y = b.input("y", {1, 8}, ir::DType::I32);
    std::string k = b.input("k", {3, 8}, ir::DType::I64), d = b.input("d", {3, 8}, ir::DType::I64);
    ir::Attrs c_mod;
    c_mod.set("fmod", std::int64_t{1});
    const ir::Graph g = b.finish({b.op("div", {k, d}), b.op("mod", {x, y}), b.op("mod", {x, y}, c_mod),
                                  b.op("pow", {x, y}), b.op("add", {b.op("div", {b.op("mul", {x, x}), y}), x})});
    const auto sources = sources_of(g);
    const auto kernels = kernels_of(g);
    compiles_for_both(sources);
    // (x * x is stored, wrapped to i32, before it is divided.)
    int faulting = 0;
    std::size_t k_by_d = kernels.size();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      INFO(sources[i].source);
      const bool divides = kernels[i].fault >= 0;
      faulting += divides;
      CHECK((sources[i].source.find("unsigned* __restrict__ fault, ") != std::string::npos) == divides);
      if (kernels[i].leaves.size() == 2 && kernels[i].leaves[0].dtype == ir::DType::I64) k_by_d = i;
    }
    CHECK(faulting == 5);
    CHECK(emulated_kernels_match(g, "int-division") == 6);
    // k / d on a zero divisor and on INT64_MIN / -1.
    REQUIRE(k_by_d < kernels.size());
    auto emu = test::CudaHostEmulator::build({sources[k_by_d]}, test::emulator_dir("int-division-fault"));
    if (!emu) FAIL(emu.error().message);
    const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    std::vector<std::int64_t> num(24, 7), den(24, 2);
    num[1] = lowest;
    den[1] = -1;
    num[2] = -7;
    // (The leaves are in the DAG's order: find the numerator's.)
    const lower::LoopKernel& kd = kernels[k_by_d];
    const ir::SymNode& quotient = kd.ctx->node(kd.body);
    REQUIRE(quotient.op == ir::SymOp::IntDiv);
    const bool num_first = kd.leaf_vars[0] == quotient.a;
    auto leaves = [&](std::uint32_t* flag) -> std::vector<const void*> {
      if (num_first) return {num.data(), den.data(), flag};
      return {den.data(), num.data(), flag};
    };
    std::uint32_t fault = 0;
    std::vector<float> got(24);
    REQUIRE(emu->run(0, leaves(&fault), got, ir::DType::I64) == "");
    CHECK(fault == 0);
    CHECK(got[0] == 3.0f);
    CHECK(got[1] == static_cast<float>(lowest));  // wraps, as ir::int_quotient
    CHECK(got[2] == -3.0f);                       // truncated toward zero
    den[5] = 0;
    REQUIRE(emu->run(0, leaves(&fault), got, ir::DType::I64) == "");
    CHECK(fault == 1);  // the kernel's one division's bit
    CHECK(kd.fault_bits.at(kd.body) == 1);
  }
  SECTION("each dividing node of a kernel sets its own fault bit") {
    models::GraphBuilder b("int_division_bits");
    std::string k = b.input("k", {8}, ir::DType::I64), d = b.input("d", {8}, ir::DType::I64);
    // k / d faults where d = 0, k mod (d - 1) where d = 1.
    const ir::Graph g = b.finish(
        {b.op("add", {b.op("div", {k, d}), b.op("mod", {k, b.op("sub", {d, b.fill({}, 1, ir::DType::I64)})})})});
    auto program = lower::compile_cpu(g);
    if (!program) FAIL(program.error().to_string());
    const lower::Program& p = **program;
    REQUIRE(p.kernels->size() == 1);
    const lower::LoopKernel& kk = p.kernels->at(0);
    const std::vector<lower::CudaKernelSource> sources{lower::cuda_kernel_source(kk, 0)};
    std::uint32_t div_bit = 0, rem_bit = 0;
    for (const auto& [site, bit] : kk.fault_bits)
      (kk.ctx->node(site).op == ir::SymOp::IntDiv ? div_bit : rem_bit) |= bit;
    CHECK(div_bit == 1);  // the first node's, as the interpreter fails in the first
    CHECK(rem_bit == 2);
    CHECK(sources[0].source.find("fault, 2u)") != std::string::npos);
    auto emu = test::CudaHostEmulator::build(sources, test::emulator_dir("int-division-bits"));
    if (!emu) FAIL(emu.error().message);
    auto fault_with = [&](std::vector<std::int64_t> ds) {
      const std::vector<std::int64_t> ks{2, 3, 4, 5, 6, 7, 8, 9}, one{1};
      std::vector<std::vector<float>> values;  // each leaf's: k, d or the constant 1
      std::vector<const void*> leaves;
      for (const lower::Leaf& l : kk.leaves) {
        const lower::Buffer& buffer = p.buffers[static_cast<std::size_t>(l.buffer)];
        const std::vector<std::int64_t>& v = buffer.kind != lower::BufferKind::Input ? one
                                             : buffer.input_index == 0               ? ks
                                                                                     : ds;
        values.emplace_back(v.begin(), v.end());
        leaves.push_back(v.data());
      }
      std::uint32_t fault = 0;
      leaves.push_back(&fault);
      std::vector<float> got(8);
      REQUIRE(emu->run(0, leaves, got, ir::DType::I64) == "");
      std::uint32_t want = 0;
      test::reference_kernel(kk, values, &want);
      CHECK(fault == want);
      return fault;
    };
    CHECK(fault_with({2, 3, 4, 5, 6, 7, 8, 9}) == 0);
    CHECK(fault_with({2, 3, 0, 5, 6, 7, 8, 9}) == div_bit);
    CHECK(fault_with({2, 3, 4, 5, 1, 7, 8, 9}) == rem_bit);
    CHECK(fault_with({0, 3, 4, 5, 1, 7, 8, 9}) == (div_bit | rem_bit));
  }
  SECTION("every f16 and bf16 value widens exactly - f32 narrows to nearest even as the interpreter does") {
    const std::int64_t n = 65536;
    std::vector<lower::LoopKernel> ks = {
        cast_kernel(ir::DType::F16, ir::DType::F32, n), cast_kernel(ir::DType::BF16, ir::DType::F32, n),
        cast_kernel(ir::DType::F32, ir::DType::F16, n), cast_kernel(ir::DType::F32, ir::DType::BF16, n)};
    std::vector<lower::CudaKernelSource> src;
    for (std::size_t i = 0; i < ks.size(); ++i) src.push_back(lower::cuda_kernel_source(ks[i], static_cast<int>(i)));
    auto emu = test::CudaHostEmulator::build(src, test::emulator_dir("halves"));
    if (!emu) FAIL(emu.error().message);
    std::vector<std::uint16_t> bits(n);
    for (std::int64_t b = 0; b < n; ++b) bits[static_cast<std::size_t>(b)] = static_cast<std::uint16_t>(b);
    // f32 values around every rounding boundary of both: each half and
    // bf16 value, the midpoints to the next one, and a hair either side.
    std::vector<float> wide;
    for (std::int64_t b = 0; b < n / 4; ++b) {
      const float lo = ir::half_to_float(static_cast<std::uint16_t>(b * 2)),
                  hi = ir::half_to_float(static_cast<std::uint16_t>(b * 2 + 1));
      const float mid = lo + (hi - lo) / 2;
      for (float v : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) wide.push_back(v);
    }
    wide.resize(static_cast<std::size_t>(n));
    wide[0] = NAN, wide[1] = INFINITY, wide[2] = -3.4e38f, wide[3] = 65520.0f, wide[4] = 65519.99f;
    wide[5] = 0x1p-25f, wide[6] = std::nextafter(0x1p-25f, 1.0f), wide[7] = 1 + 0x1p-8f, wide[8] = 1 + 3 * 0x1p-8f;
    std::vector<float> got(static_cast<std::size_t>(n));
    for (int which = 0; which < 2; ++which) {
      const bool f16 = which == 0;
      INFO((f16 ? "f16" : "bf16"));
      CHECK(emu->run(static_cast<std::size_t>(which), {bits.data()}, got, ir::DType::F32, 8, 256) == "");
      int wrong = 0;
      for (std::int64_t b = 0; b < n; ++b) {
        const auto h = static_cast<std::uint16_t>(b);
        wrong += !same_value(got[static_cast<std::size_t>(b)], f16 ? ir::half_to_float(h) : ir::bf16_to_float(h));
      }
      CHECK(wrong == 0);
      CHECK(emu->run(static_cast<std::size_t>(2 + which), {wide.data()}, got, f16 ? ir::DType::F16 : ir::DType::BF16, 8,
                     256) == "");
      wrong = 0;
      for (std::size_t i = 0; i < wide.size(); ++i) {
        const float want =
            f16 ? ir::half_to_float(ir::float_to_half(wide[i])) : ir::bf16_to_float(ir::float_to_bf16(wide[i]));
        wrong += !same_value(got[i], want);
      }
      CHECK(wrong == 0);
    }
  }
  SECTION("float4 rows with broadcast rows - columns and scalars") {
    models::GraphBuilder b("vec");
    std::string x = b.input("x", {6, 16});
    std::string row = b.input("row", {16});
    std::string col = b.input("col", {6, 1});
    std::string s = b.input("s", {1});
    ir::Graph g = b.finish({b.op("mul", {b.op("add", {b.op("sub", {x, col}), row}), s})});
    REQUIRE(sources_of(g).at(0).vectorized);
    CHECK(emulated_kernels_match(g, "vec") == 1);
  }
  SECTION("rows off a 16-byte boundary or reversed - one element per thread") {
    // Loop kernels as a slice would give them: x [4 12] read from element 1
    // (x[:, 1:9]), and read with its rows reversed (x[:, 8:0:-1]).
    for (const auto& [offset, stride] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {8, -1}}) {
      lower::LoopKernel k;
      k.name = "exp of a strided view";
      k.ctx = std::make_shared<ir::SymContext>();
      const ir::Sym v = k.ctx->var("x");
      k.body = ir::scalar::exp(v).id();
      k.leaf_vars = {v.id()};
      k.leaves = {lower::Leaf{0, offset, {12, stride}}};
      k.dims = {4, 8};
      const lower::CudaKernelSource src = lower::cuda_kernel_source(k, 0);
      CHECK_FALSE(src.vectorized);
      auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("offset" + std::to_string(offset)));
      if (!emu) FAIL(emu.error().message);
      auto inputs = test::leaf_inputs(k, 3);
      std::vector<float> got(32);
      CHECK(emu->run(0, {inputs[0].data()}, got) == "");
      CHECK(test::first_mismatch(got, test::reference_kernel(k, inputs)) == "");
    }
  }
  SECTION("transposed and odd-sized reads") {
    models::GraphBuilder b("strided");
    std::string x = b.input("x", {6, 13});
    std::string y = b.input("y", {13, 6});
    std::string t = b.op("transpose", {x}, models::ints_attr("perm", {1, 0}));
    ir::Graph g =
        b.finish({b.op("add", {t, y}), b.op("neg", {b.op("transpose", {y}, models::ints_attr("perm", {1, 0}))})});
    CHECK(emulated_kernels_match(g, "strided") == 2);
  }
  SECTION("reductions over a middle axis and over all axes") {
    models::GraphBuilder b("axes");
    std::string x = b.input("x", {5, 37, 3});
    ir::Graph g = b.finish({b.op("reduce_sum", {x}, models::ints_attr("axes", {1})),
                            b.op("reduce_max", {x}, models::ints_attr("axes", {0, 1, 2}))});
    CHECK(emulated_kernels_match(g, "axes") == 2);
  }
  SECTION("more elements than the launch has threads - the grid-stride loop") {
    models::GraphBuilder b("big");
    std::string x = b.input("x", {301, 257});
    std::string row = b.input("row", {257});
    ir::Graph g =
        b.finish({b.op("tanh", {b.op("add", {x, row})}), b.op("reduce_sum", {x}, models::ints_attr("axes", {1}))});
    CHECK(emulated_kernels_match(g, "big") == 2);
  }
}

TEST_CASE("cuDNN's max pooling is corrected where it gives -FLT_MAX - windows of -inf or of no input element") {
  // cuDNN starts a maximum at -FLT_MAX: a window of -inf, or one lying in
  // the padding, gives -FLT_MAX where the reference gives -inf.
  ir::Attrs a;
  a.set("kernel_shape", std::vector<std::int64_t>{2, 2});
  a.set("strides", std::vector<std::int64_t>{2, 2});
  a.set("pads", std::vector<std::int64_t>{2, 0, 0, 0});  // the first output row lies in the padding
  const ir::PoolWindow p = ir::pool_window(a, {1, 1, 4, 4}, true);
  REQUIRE(p.w.out == std::vector<std::int64_t>{3, 2});
  lower::CudaKernelSource src = lower::cuda_pool_source(p, ir::DType::F32, false, 0, true);
  compiles_for_both({src});
  auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("pool-correct"));
  if (!emu) FAIL(emu.error().message);
  const float inf = std::numeric_limits<float>::infinity(), lowest = -std::numeric_limits<float>::max();
  // Output row 0 lies in the padding, row 1 reads rows 0-1, row 2 rows 2-3.
  std::vector<float> x = {-inf,   -inf, 0, 0,     //
                          -inf,   -inf, 5, -inf,  //
                          -inf,   -inf, 1, 2,     //
                          lowest, -inf, 3, 4};
  // cuDNN's result: -FLT_MAX for the empty windows, the -inf one and the
  // one whose maximum is -FLT_MAX itself. The others (given here as values
  // no window has, 50 and 40) are left as they are: nothing but -FLT_MAX
  // is computed again.
  std::vector<float> got = {lowest, lowest, lowest, 50, lowest, 40};
  const std::vector<const void*> ptrs{x.data()};
  REQUIRE(emu->run(0, ptrs, got, ir::DType::F32, 2, 64, true) == "");
  CHECK(got == std::vector<float>{-inf, -inf, -inf, 50, lowest, 40});
}

TEST_CASE("Random elementwise graphs of every type - their kernels on the host emulator") {
  // The graphs test_cpu_codegen runs against the interpreter; here their
  // kernels, as CUDA C, against the loop kernels' meaning (one emulator).
  std::vector<lower::LoopKernel> kernels;
  std::vector<std::string> where;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    const test::RandomGraph r = test::random_elementwise_graph(seed);
    for (const lower::LoopKernel& k : kernels_of(r.graph)) {
      kernels.push_back(k);
      where.push_back("seed " + std::to_string(seed) + " (" + r.text + ")");
    }
  }
  CHECK(kernels.size() > 150);
  const auto sources = [&] {
    std::vector<lower::CudaKernelSource> out;
    for (std::size_t i = 0; i < kernels.size(); i += 25) out.push_back(lower::cuda_kernel_source(kernels[i], 0));
    return out;
  }();
  compiles_for_both(sources);  // a sample through NVRTC
  const std::vector<std::string> wrong = test::emulation_failures(kernels, where, "random", special_values);
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
}

TEST_CASE("The host emulator reports what a device would reject - and a wrong kernel does not match") {
  models::GraphBuilder b("sum");
  std::string x = b.input("x", {4, 40});
  const std::vector<lower::LoopKernel> ks =
      kernels_of(b.finish({b.op("reduce_sum", {x}, models::ints_attr("axes", {1}))}));
  REQUIRE(ks.size() == 1);
  lower::CudaKernelSource src = lower::cuda_kernel_source(ks[0], 0);
  auto inputs = test::leaf_inputs(ks[0], 1);
  const std::vector<const void*> ptrs{inputs[0].data()};
  std::vector<float> got(4);
  auto mutated = [&](const std::string& from, const std::string& to, const std::string& tag) {
    lower::CudaKernelSource m = src;
    const std::size_t at = m.source.find(from);
    REQUIRE(at != std::string::npos);
    m.source.replace(at, from.size(), to);
    auto emu = test::CudaHostEmulator::build({m}, test::emulator_dir(tag));
    if (!emu) FAIL(emu.error().message);
    return emu->run(0, ptrs, got);
  };
  SECTION("the kernel as generated matches") {
    CHECK(mutated("", "", "as-is") == "");
    CHECK(test::first_mismatch(got, test::reference_kernel(ks[0], inputs)) == "");
  }
  SECTION("a reduction reading one element too few") {
    CHECK(mutated("j < 40LL", "j < 39LL", "short") == "");
    CHECK(test::first_mismatch(got, test::reference_kernel(ks[0], inputs)).find("element 0") == 0);
  }
  SECTION("lanes that leave before the shuffle") {
    CHECK(mutated("    for (int m = 16;", "    if (lane == 3) return;\n    for (int m = 16;", "diverge")
              .find("divergence") != std::string::npos);
  }
  SECTION("an output element never written") {
    CHECK(mutated("if (lane == 0) out[o]", "if (lane == 0 && o != 2) out[o]", "unwritten") ==
          "output element 2 was never written");
  }
  SECTION("a write past the end") {
    CHECK(mutated("if (lane == 0) out[o]", "if (lane == 0) out[o + 1]", "past").find("past the end") !=
          std::string::npos);
  }
  SECTION("a float4 load that is not aligned") {
    models::GraphBuilder v("vec");
    std::string y = v.input("y", {2, 8});
    const std::vector<lower::LoopKernel> vk = kernels_of(v.finish({v.op("exp", {y})}));
    lower::CudaKernelSource vs = lower::cuda_kernel_source(vk.at(0), 0);
    REQUIRE(vs.vectorized);
    auto emu = test::CudaHostEmulator::build({vs}, test::emulator_dir("misaligned"));
    if (!emu) FAIL(emu.error().message);
    std::vector<float> in(17, 1.0f), out(16);
    CHECK(emu->run(0, {in.data()}, out) == "");
    CHECK(emu->run(0, {in.data() + 1}, out).find("not 16-byte aligned") != std::string::npos);
  }
}

TEST_CASE("NVRTC errors name the kernel and carry the log - and the cache compiles a source once") {
  device::CudaCompiler c;
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
  CHECK(device::CudaCompiler::version().find('.') != std::string::npos);
}

TEST_CASE("The compiler's disk cache gives the next process the same PTX without NVRTC - per architecture") {
  namespace fs = std::filesystem;
  const fs::path dir = saturn::test::scratch_dir() / "ptx";
  fs::remove_all(dir);
  const std::string src = "extern \"C\" __global__ void twice(float* p) { p[threadIdx.x] *= 2.0f; }";
  std::string first;
  {
    device::CudaCompiler c(dir.string());
    auto ptx = c.ptx(src, "twice", "compute_90");
    REQUIRE(ptx);
    first = *ptx;
    CHECK(c.compiled() == 1);
    CHECK(c.disk_hits() == 0);
  }
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".ptx";
  CHECK(files == 1);
  device::CudaCompiler next(dir.string());  // as a later run would
  auto again = next.ptx(src, "twice", "compute_90");
  REQUIRE(again);
  CHECK(*again == first);
  CHECK(next.compiled() == 0);
  CHECK(next.disk_hits() == 1);
  REQUIRE(next.ptx(src, "twice", "compute_80"));  // another architecture is another file
  CHECK(next.compiled() == 1);
  // A folder that cannot be written only makes compiling slower.
  device::CudaCompiler nowhere("/proc/saturn-cannot-write-here");
  CHECK(nowhere.ptx(src, "twice", "compute_90"));
  fs::remove_all(dir);
}

TEST_CASE("Gather kernels copy the rows the indices pick and flag indices out of range - on the host emulator") {
  SECTION("f32 rows as words - i64 indices - a middle axis") {
    // data [3 5 4] gathered along axis 1 by {-1, 0, 4, 2}: result [3 4 4].
    const ir::GatherRows g = ir::gather_rows({3, 5, 4}, 1, 4, 4);
    const lower::CudaKernelSource src = lower::cuda_gather_source(g, true, 0);
    compiles_for_both({src});
    CHECK(src.source.find("const unsigned int* __restrict__ data") != std::string::npos);
    CHECK(src.elements == 48);
    auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("gather-words"));
    if (!emu) FAIL(emu.error().message);
    std::vector<float> data(60);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 7.0f;
    std::vector<std::int64_t> idx{-1, 0, 4, 2};
    std::int32_t bad = 0;
    std::vector<float> got(48);
    REQUIRE(emu->run(0, {data.data(), idx.data(), &bad}, got) == "");
    CHECK(bad == 0);
    const std::int64_t picked[] = {4, 0, 4, 2};
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j)
        for (std::int64_t k = 0; k < 4; ++k)
          CHECK(got[static_cast<std::size_t>((i * 4 + j) * 4 + k)] ==
                data[static_cast<std::size_t>((i * 5 + picked[j]) * 4 + k)]);
    idx[2] = 5;  // out of range: flagged, its rows left unwritten
    CHECK(emu->run(0, {data.data(), idx.data(), &bad}, got).find("never written") != std::string::npos);
    CHECK(bad == 1);
  }
  SECTION("bool rows as bytes - i32 indices - the first axis") {
    // data [4 3] bool gathered along axis 0 by {3, -4, 1}: rows of 3 bytes.
    const ir::GatherRows g = ir::gather_rows({4, 3}, 0, 3, 1);
    const lower::CudaKernelSource src = lower::cuda_gather_source(g, false, 1);
    compiles_for_both({src});
    CHECK(src.source.find("const unsigned char* __restrict__ data") != std::string::npos);
    auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("gather-bytes"));
    if (!emu) FAIL(emu.error().message);
    const std::vector<std::uint8_t> data{1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1};
    const std::vector<std::int32_t> idx{3, -4, 1};
    std::int32_t bad = 0;
    std::vector<float> got(9);
    REQUIRE(emu->run(0, {data.data(), idx.data(), &bad}, got, ir::DType::Bool) == "");
    CHECK(bad == 0);
    CHECK(got == std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0});
  }
}

TEST_CASE("GatherElements kernels copy the elements the indices pick - on the host emulator") {
  SECTION("f32 - i64 indices - a middle axis - indices shorter off the axis") {
    // data [2 4 3] gathered along axis 1 by indices [2 2 2] (the last axis cut to 2).
    const ir::GatherElements g = ir::gather_elements_geometry({2, 4, 3}, {2, 2, 2}, 1, 4);
    const lower::CudaKernelSource src = lower::cuda_gather_elements_source(g, true, 0);
    compiles_for_both({src});
    CHECK(src.elements == 8);
    auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("gather-elements-f32"));
    if (!emu) FAIL(emu.error().message);
    std::vector<float> data(24);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 3.0f;
    std::vector<std::int64_t> idx{0, 3, -1, 1, 2, -4, 3, 0};
    std::int32_t bad = 0;
    std::vector<float> got(8);
    REQUIRE(emu->run(0, {data.data(), idx.data(), &bad}, got) == "");
    CHECK(bad == 0);
    // Spelled out: result[a][b][c] = data[a][idx[a][b][c]][c].
    for (std::size_t a = 0; a < 2; ++a)
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t c = 0; c < 2; ++c) {
          std::int64_t k = idx[(a * 2 + b) * 2 + c];
          if (k < 0) k += 4;
          CHECK(got[(a * 2 + b) * 2 + c] == data[(a * 4 + static_cast<std::size_t>(k)) * 3 + c]);
        }
    idx[5] = 4;  // out of range: flagged, its element left unwritten
    CHECK(emu->run(0, {data.data(), idx.data(), &bad}, got).find("never written") != std::string::npos);
    CHECK(bad == 1);
  }
  SECTION("bool - i32 indices - the last axis") {
    const ir::GatherElements g = ir::gather_elements_geometry({2, 3}, {2, 2}, 1, 1);
    const lower::CudaKernelSource src = lower::cuda_gather_elements_source(g, false, 1);
    compiles_for_both({src});
    CHECK(src.source.find("const unsigned char* __restrict__ data") != std::string::npos);
    auto emu = test::CudaHostEmulator::build({src}, test::emulator_dir("gather-elements-bool"));
    if (!emu) FAIL(emu.error().message);
    const std::vector<std::uint8_t> data{1, 0, 0, 0, 1, 1};
    const std::vector<std::int32_t> idx{2, 0, -1, 0};
    std::int32_t bad = 0;
    std::vector<float> got(4);
    REQUIRE(emu->run(0, {data.data(), idx.data(), &bad}, got, ir::DType::Bool) == "");
    CHECK(bad == 0);
    CHECK(got == std::vector<float>{0, 1, 1, 0});
  }
}

TEST_CASE("Pad and trilu kernels compute their geometry's copies - every pad mode - on the host emulator") {
  std::vector<float> x(60);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 5.0f;
  const auto* x_bytes = reinterpret_cast<const std::uint8_t*>(x.data());
  // Every kernel goes into one emulator (each build is a host compile).
  std::vector<lower::CudaKernelSource> sources;
  std::vector<ir::PadRows> pads;
  for (const ir::PadMode mode : {ir::PadMode::Constant, ir::PadMode::Edge, ir::PadMode::Reflect, ir::PadMode::Wrap}) {
    // f32 words, cropping; wrap pads by more than the axis.
    const Dims by = mode == ir::PadMode::Wrap ? Dims{1, 0, 7, 2, 1, 3} : Dims{1, -1, 3, 2, 1, 2};
    pads.push_back(ir::pad_rows({3, 4, 5}, by, mode, 4));
    const float fill = -2.5f;
    std::uint32_t bits = 0;
    std::memcpy(&bits, &fill, 4);
    sources.push_back(lower::cuda_pad_source(pads.back(), bits, static_cast<int>(sources.size())));
  }
  // Bool bytes, constant true.
  const ir::PadRows bool_pad = ir::pad_rows({3, 4}, {1, 2, 0, 1}, ir::PadMode::Constant, 1);
  sources.push_back(lower::cuda_pad_source(bool_pad, 1, static_cast<int>(sources.size())));
  CHECK(sources.back().source.find("const unsigned char* __restrict__ in") != std::string::npos);
  std::vector<ir::TriluRows> trilus;
  for (const std::int64_t k : {-3, -1, 0, 2, 5})
    for (const bool upper : {true, false}) {
      trilus.push_back(ir::trilu_rows({3, 4, 5}, k, upper, 4));
      sources.push_back(lower::cuda_trilu_source(trilus.back(), static_cast<int>(sources.size())));
    }
  compiles_for_both(sources);
  auto emu = test::CudaHostEmulator::build(sources, test::emulator_dir("pad-trilu"));
  if (!emu) FAIL(emu.error().message);
  std::size_t index = 0;
  for (const ir::PadRows& p : pads) {
    INFO("pad mode " << static_cast<int>(p.mode));
    const float fill = -2.5f;
    std::vector<float> want(static_cast<std::size_t>(sources[index].elements)), got(want.size());
    ir::pad_copy(p, x_bytes, reinterpret_cast<const std::uint8_t*>(&fill), reinterpret_cast<std::uint8_t*>(want.data()),
                 0, p.rows());
    REQUIRE(emu->run(index++, {x.data()}, got) == "");
    CHECK(got == want);
  }
  {
    const std::vector<std::uint8_t> m{1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0, 1};
    std::vector<float> got(static_cast<std::size_t>(sources[index].elements));
    REQUIRE(emu->run(index++, {m.data()}, got, ir::DType::Bool) == "");
    // [4 7]: a row of true, then each row as 1 1 m m m m 1.
    const std::vector<float> want{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1};
    CHECK(got == want);
  }
  for (const ir::TriluRows& t : trilus) {
    INFO("trilu k " << t.k << " upper " << t.upper);
    std::vector<float> got(60);
    REQUIRE(emu->run(index++, {x.data()}, got) == "");
    for (std::int64_t e = 0; e < 60; ++e) {
      const std::int64_t j = e % 5, i = e / 5 % 4;
      CHECK(got[static_cast<std::size_t>(e)] ==
            ((t.upper ? j - i >= t.k : j - i <= t.k) ? x[static_cast<std::size_t>(e)] : 0.0f));
    }
  }
}

TEST_CASE("Argmax and argmin kernels - a warp per result - ties - NaN - integer values - on the host emulator") {
  // [2 40 3]: columns of 40 along the middle axis (more than a warp's 32).
  const Dims dims{2, 40, 3};
  std::vector<double> v(240);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 13) - 6.0;  // ties
  std::vector<double> fv = v;
  fv[0] = std::nan("");   // wins its column
  fv[13] = std::nan("");  // never does
  const std::vector<float> f(fv.begin(), fv.end());
  const std::vector<std::int64_t> l(v.begin(), v.end());
  const std::vector<std::int32_t> s(v.begin(), v.end());
  struct Case {
    ir::DType t;
    ir::ArgReduce g;
  };
  std::vector<Case> cases;
  std::vector<lower::CudaKernelSource> sources;
  // Every axis for f32; the integers along the middle one (the emulated
  // warp barriers are slow).
  for (const ir::DType t : {ir::DType::F32, ir::DType::I64, ir::DType::I32})
    for (const std::size_t axis : {0u, 1u, 2u})
      for (const bool max : {true, false})
        for (const bool last : {false, true}) {
          if (t != ir::DType::F32 && axis != 1) continue;
          cases.push_back({t, ir::arg_reduce_geometry(dims, axis, max, last)});
          sources.push_back(lower::cuda_arg_reduce_source(cases.back().g, t, static_cast<int>(sources.size())));
        }
  compiles_for_both(sources);
  auto emu = test::CudaHostEmulator::build(sources, test::emulator_dir("arg-reduce"));
  if (!emu) FAIL(emu.error().message);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const ir::ArgReduce& g = cases[c].g;
    const ir::DType t = cases[c].t;
    INFO(ir::dtype_name(t) << " case " << c << " max " << g.max << " last " << g.last);
    const std::vector<double>& values = t == ir::DType::F32 ? fv : v;
    std::vector<std::int64_t> want(g.results());
    ir::arg_reduce(
        g, [&](std::size_t i) { return values[i]; }, want.data(), 0, g.outer);
    const void* data = t == ir::DType::F32   ? static_cast<const void*>(f.data())
                       : t == ir::DType::I64 ? static_cast<const void*>(l.data())
                                             : static_cast<const void*>(s.data());
    std::vector<float> got(g.results());
    REQUIRE(emu->run(c, {data}, got, ir::DType::I64) == "");
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<float>(want[i]));
  }
}

TEST_CASE("Resize kernels compute their passes - taps as tables - copies of any type - on the host emulator") {
  struct Case {
    const char* mode;
    const char* transform;
    std::vector<std::int64_t> sizes;
    int antialias;
    ir::DType dtype;
  };
  const std::vector<Case> cases = {{"linear", "half_pixel", {2, 9, 12}, 0, ir::DType::F32},
                                   {"cubic", "align_corners", {2, 4, 3}, 1, ir::DType::F32},
                                   {"nearest", "tf_crop_and_resize", {2, 8, 9}, 0, ir::DType::F32},
                                   {"nearest", "half_pixel", {2, 3, 11}, 0, ir::DType::I64},
                                   {"nearest", "tf_crop_and_resize", {2, 8, 9}, 0, ir::DType::U8}};
  const std::vector<std::int64_t> in{2, 5, 7};
  int passes_run = 0;
  for (const Case& c : cases) {
    INFO(c.mode << " " << c.transform << " " << ir::dtype_name(c.dtype));
    ir::Attrs a = models::ints_attr("sizes", c.sizes);
    a.set("mode", std::string(c.mode));
    a.set("coordinate_transformation_mode", std::string(c.transform));
    a.set("antialias", std::int64_t{c.antialias});
    a.set("roi", std::vector<double>{0, -0.2, 0.1, 1, 1.3, 0.8});
    a.set("extrapolation_value", 3.0);
    const ir::ResizeSpec spec = ir::resize_spec(a, in);
    const std::vector<ir::ResizePass> passes = ir::resize_passes(spec, in);
    REQUIRE(passes.size() == 2);
    std::vector<lower::CudaKernelSource> sources;
    for (std::size_t k = 0; k < passes.size(); ++k) {
      // (The extrapolation value 3 as the element's bits: f32's, or the integer's.)
      const std::uint64_t three = c.dtype == ir::DType::F32 ? 0x40400000u : 3u;
      sources.push_back(lower::cuda_resize_source(passes[k], ir::dtype_size(c.dtype), three, static_cast<int>(k)));
    }
    compiles_for_both(sources);
    auto emu = test::CudaHostEmulator::build(sources, test::emulator_dir(std::string("resize-") + c.mode));
    if (!emu) FAIL(emu.error().message);
    // The input's values (small integers, so every type holds them), and
    // each pass's expected result from the op kernel's own pass.
    std::vector<float> x(static_cast<std::size_t>(ir::numel(in)));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 11);
    std::vector<std::int64_t> dims = in;
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const ir::ResizePass& p = passes[k];
      std::vector<float> want(p.rows() * static_cast<std::size_t>(p.inner));
      ir::resize_pass_rows<float, float>(p, x.data(), want.data(), 3.0f, 0, p.rows());
      ir::Tensor stored(c.dtype, {static_cast<std::int64_t>(x.size())});
      for (std::size_t i = 0; i < x.size(); ++i) stored.set(i, x[i]);
      std::vector<float> got(want.size());
      CHECK(emu->run(k, {stored.bytes()}, got, c.dtype, 3, 64) == "");
      CHECK(test::first_mismatch(got, want) == "");
      x = want;
      ++passes_run;
    }
  }
  CHECK(passes_run == 10);
}

TEST_CASE("Pool kernels walk any window - indices - ceil_mode - one-sided pads - any type - on the host emulator") {
  struct Case {
    const char* what;
    Dims x;
    std::vector<std::pair<std::string, Dims>> ints;
    bool max, indices;
    ir::DType dtype;
  };
  const std::vector<Case> cases = {
      {"f32 max, dilated, one-sided pads, indices",
       {2, 3, 7, 6},
       {{"kernel_shape", {3, 2}}, {"strides", {2, 2}}, {"pads", {1, 0, 0, 1}}, {"dilations", {1, 2}}},
       true,
       true,
       ir::DType::F32},
      {"f32 avg, ceil_mode past the padding, count_include_pad",
       {2, 3, 7, 6},
       {{"kernel_shape", {3, 3}},
        {"strides", {2, 2}},
        {"pads", {1, 1, 0, 0}},
        {"ceil_mode", {1}},
        {"count_include_pad", {1}}},
       false,
       false,
       ir::DType::F32},
      {"f64 avg, 3-D",
       {1, 2, 5, 4, 3},
       {{"kernel_shape", {2, 2, 2}}, {"pads", {1, 0, 1, 0, 1, 0}}},
       false,
       false,
       ir::DType::F64},
      {"u8 max, 1-D, ceil_mode",
       {1, 2, 9},
       {{"kernel_shape", {3}}, {"strides", {2}}, {"pads", {1, 1}}, {"ceil_mode", {1}}},
       true,
       false,
       ir::DType::U8},
      {"f16 max, column-major indices",
       {1, 2, 6, 5},
       {{"kernel_shape", {2, 3}}, {"pads", {0, 1, 1, 0}}, {"storage_order", {1}}},
       true,
       true,
       ir::DType::F16},
      {"i64 max, indices",
       {2, 2, 6, 6},
       {{"kernel_shape", {3, 3}}, {"strides", {2, 1}}, {"pads", {1, 1, 1, 1}}},
       true,
       true,
       ir::DType::I64},
      {"bf16 avg, dilated",
       {1, 2, 8, 7},
       {{"kernel_shape", {2, 2}}, {"dilations", {2, 3}}},
       false,
       false,
       ir::DType::BF16}};
  std::vector<ir::PoolWindow> windows;
  std::vector<lower::CudaKernelSource> sources;
  for (const Case& c : cases) {
    ir::Attrs a;
    for (const auto& [name, v] : c.ints) {
      if (name == "ceil_mode" || name == "count_include_pad" || name == "storage_order")
        a.set(name, v[0]);
      else
        a.set(name, v);
    }
    windows.push_back(ir::pool_window(a, c.x, c.max));
    sources.push_back(lower::cuda_pool_source(windows.back(), c.dtype, c.indices, static_cast<int>(sources.size())));
  }
  CHECK(sources[0].source.find("long long* __restrict__ idx") != std::string::npos);
  CHECK(sources[0].source.find("k1 * 2LL") != std::string::npos);  // the dilation, a constant
  CHECK(sources[2].source.find("double sum") != std::string::npos);
  CHECK(sources[4].source.find("sat_h2f(xp[") != std::string::npos);
  compiles_for_both(sources);
  auto emu = test::CudaHostEmulator::build(sources, test::emulator_dir("pool"));
  if (!emu) FAIL(emu.error().message);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    INFO(cases[c].what);
    const ir::PoolWindow& p = windows[c];
    const ir::DType t = cases[c].dtype;
    // Small integers (ties for max) with NaN and infinities among the floats.
    std::vector<float> x(static_cast<std::size_t>(ir::numel(p.x_dims)));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 11) - (t == ir::DType::U8 ? 0 : 5);
    if (ir::is_float(t)) special_values(x);
    ir::Tensor stored(t, {static_cast<std::int64_t>(x.size())});
    for (std::size_t i = 0; i < x.size(); ++i) stored.set(i, x[i]);
    const std::size_t n = static_cast<std::size_t>(p.planes() * p.out_plane());
    std::vector<float> want(n), got(n);
    std::vector<std::int64_t> want_idx(n), got_idx(n, -7);
    if (t == ir::DType::F64) {
      std::vector<double> xd(x.begin(), x.end()), wd(n);
      ir::pool_planes<double>(p, xd.data(), wd.data(), want_idx.data(), 0, static_cast<std::size_t>(p.planes()));
      want.assign(wd.begin(), wd.end());
    } else if (ir::is_float(t)) {  // f16 / bf16 hold these values exactly
      ir::pool_planes<float>(p, x.data(), want.data(), want_idx.data(), 0, static_cast<std::size_t>(p.planes()));
    } else {
      std::vector<std::int64_t> xi(x.begin(), x.end()), wi(n);
      ir::pool_planes<std::int64_t>(p, xi.data(), wi.data(), want_idx.data(), 0, static_cast<std::size_t>(p.planes()));
      want.assign(wi.begin(), wi.end());
    }
    std::vector<const void*> leaves{stored.bytes()};
    if (cases[c].indices) leaves.push_back(got_idx.data());
    REQUIRE(emu->run(c, leaves, got, t, 3, 64) == "");
    CHECK(test::first_mismatch(got, want, t) == "");
    if (cases[c].indices) CHECK(got_idx == want_idx);
  }
}
