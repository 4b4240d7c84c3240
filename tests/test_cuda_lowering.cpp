// The CUDA target's lowering without a GPU: how products map onto cuBLAS's
// column-major calls (checked by running the calls' own semantics on the
// host), and what CUDA programs are made of (every kernel through NVRTC,
// products as cuBLAS calls, convolutions and pooling as cuDNN calls, the
// rest on the host only where cuDNN cannot go).

#include <algorithm>
#include <iostream>
#include <random>
#include <set>

#include "bench/models.hpp"
#include "helpers.hpp"
#include "ir/onnx_import.hpp"
#include "lower/cuda_steps.hpp"
#include "lower/lowering.hpp"
#include "pipeline/optimize.hpp"
#include "pipeline/training_step.hpp"
#include "tests/cuda_host_emulator.hpp"
#include "tests/library_calls.hpp"
#include "tests/onnx_cases.hpp"

using namespace saturn;
using Dims = std::vector<std::int64_t>;

namespace {

// cublasSgemmStridedBatched as its documentation defines it, on host arrays:
// column-major, C_i = alpha op(A_i) op(B_i), A_i at A + i stride_a.
void emulate(const lower::CublasGemm& g, const std::vector<float>& a_mem, const std::vector<float>& b_mem,
             std::vector<float>& c_mem) {
  for (std::int64_t i = 0; i < g.batch; ++i)
    for (std::int64_t col = 0; col < g.n; ++col)
      for (std::int64_t row = 0; row < g.m; ++row) {
        double acc = 0;
        for (std::int64_t p = 0; p < g.k; ++p) {
          // op(A)(row, p) and op(B)(p, col).
          const std::int64_t ai = g.trans_a ? p + row * g.lda : row + p * g.lda;
          const std::int64_t bi = g.trans_b ? col + p * g.ldb : p + col * g.ldb;
          acc += static_cast<double>(a_mem.at(static_cast<std::size_t>(g.offset_a + i * g.stride_a + ai))) *
                 b_mem.at(static_cast<std::size_t>(g.offset_b + i * g.stride_b + bi));
        }
        c_mem.at(static_cast<std::size_t>(i * g.stride_c + row + col * g.ldc)) = static_cast<float>(g.alpha * acc);
      }
}

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto x : d) n *= x;
  return n;
}

// A [batch..., rows, cols] operand stored in `mem` at `offset`, row-major or
// with its last two dims swapped in memory, its batch dims broadcast where
// `shared` says.
lower::View operand(Dims batch, std::int64_t rows, std::int64_t cols, bool transposed, std::vector<bool> shared,
                    std::int64_t offset) {
  Dims stored = batch;
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (shared[i]) stored[i] = 1;
  stored.push_back(transposed ? cols : rows);
  stored.push_back(transposed ? rows : cols);
  lower::View v = lower::View::of(0, stored);
  v.offset = offset;
  if (transposed)
    v = v.transposed([&] {
      Dims p;
      for (std::size_t i = 0; i < batch.size(); ++i) p.push_back(static_cast<std::int64_t>(i));
      p.push_back(static_cast<std::int64_t>(batch.size() + 1));
      p.push_back(static_cast<std::int64_t>(batch.size()));
      return p;
    }());
  Dims full = batch;
  full.push_back(rows);
  full.push_back(cols);
  return v.broadcast_to(full);
}

float element(const std::vector<float>& mem, const lower::View& v, const Dims& at) {
  std::int64_t off = v.offset;
  for (std::size_t d = 0; d < at.size(); ++d) off += at[d] * v.strides[d];
  return mem.at(static_cast<std::size_t>(off));
}

}  // namespace

TEST_CASE("products map onto cuBLAS column-major calls - transposes - batches - broadcasts - folding") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  int folded = 0, batched = 0, transposed = 0, total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::uniform_int_distribution<std::int64_t> dim(1, 5), nb(0, 2);
    Dims batch(static_cast<std::size_t>(nb(rng)));
    for (auto& d : batch) d = dim(rng);
    const std::int64_t M = dim(rng), N = dim(rng), K = dim(rng);
    const bool ta = trial % 2, tb = (trial / 2) % 2;
    std::vector<bool> share_a(batch.size()), share_b(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      share_a[i] = trial % 7 == 0 && i == 0;
      share_b[i] = trial % 3 == 0 || (trial % 5 == 0 && i == 0);
    }
    std::vector<float> a_mem(static_cast<std::size_t>(3 + numel(batch) * M * K)),
        b_mem(static_cast<std::size_t>(2 + numel(batch) * K * N));
    for (float& x : a_mem) x = u(rng);
    for (float& x : b_mem) x = u(rng);
    lower::View a = operand(batch, M, K, ta, share_a, 3), b = operand(batch, K, N, tb, share_b, 2);
    Dims out = batch;
    out.push_back(M);
    out.push_back(N);
    INFO("trial " << trial << ": batch " << batch.size() << " M " << M << " N " << N << " K " << K << " ta " << ta
                  << " tb " << tb);
    auto g = lower::cublas_gemm(a, b, out, 0.5);
    if (!g) {
      // Only an operand shared along an outer batch dim but not an inner one
      // has no single batch stride.
      CHECK(batch.size() == 2);
      continue;
    }
    ++total;
    folded += g->batch == 1 && numel(batch) > 1;
    batched += g->batch > 1;
    transposed += g->trans_a || g->trans_b;
    CHECK(g->a == b.buffer);
    std::vector<float> c(static_cast<std::size_t>(numel(out)), NAN);
    emulate(*g, b_mem, a_mem, c);  // cuBLAS's first operand is our B
    for (std::int64_t e = 0; e < numel(out); ++e) {
      Dims at(out.size());
      std::int64_t rest = e;
      for (std::size_t d = out.size(); d-- > 0;) {
        at[d] = rest % out[d];
        rest /= out[d];
      }
      double want = 0;
      for (std::int64_t p = 0; p < K; ++p) {
        Dims ai = at, bi = at;
        ai.back() = p;
        bi[bi.size() - 2] = p;
        want += static_cast<double>(element(a_mem, a, ai)) * element(b_mem, b, bi);
      }
      REQUIRE(c[static_cast<std::size_t>(e)] == Approx(0.5 * want).margin(1e-5));
    }
  }
  // The trials reached every kind of call.
  CHECK(total > 200);
  CHECK(folded > 10);
  CHECK(batched > 10);
  CHECK(transposed > 100);
}

namespace {

// g with the library calls the CUDA rules substitute (tests/library_calls.hpp).
std::shared_ptr<lower::Program> lower_for_cuda(const ir::Graph& g) {
  auto p = lower::compile_cuda(test::as_library_calls(g, "cuda"));
  if (!p) FAIL(p.error().to_string());
  return *p;
}

int count(const lower::Program& p, lower::StepKind k, const std::string& label_part = "") {
  int n = 0;
  for (const lower::Step& s : p.steps) n += s.kind == k && s.label.find(label_part) != std::string::npos;
  return n;
}

ir::Graph optimized(const std::string& name) {
  auto g = ir::import_onnx_file(test::source_dir() + "/docs/examples/models/" + name + ".onnx");
  if (!g) FAIL(g.error().to_string());
  pipeline::OptimizeOptions o;
  o.target = "cuda";
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cuda");
  auto r = pipeline::optimize(*g, o);
  if (!r) FAIL(r.error().to_string());
  return r->graph;
}

}  // namespace

TEST_CASE("Kernels of the bundled models' CUDA programs compute what they mean - run on the host emulator") {
  std::vector<lower::LoopKernel> ks;
  std::vector<std::string> where;
  for (const char* model : {"mlp", "transformer_layer", "resnet_small"}) {
    auto p = lower_for_cuda(optimized(model));
    for (const lower::LoopKernel& k : *p->kernels) {
      ks.push_back(k);
      where.push_back(model);
    }
  }
  const std::vector<std::string> wrong = test::emulation_failures(ks, where, "models");
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
  CHECK(ks.size() >= 10);
}

TEST_CASE("Training steps lower for CUDA - their kernels compute what they mean on the host emulator") {
  // The step graph (docs/training.md) of three bundled models, optimized
  // for cuda as `saturn train --target cuda` does.
  auto grads = rules::load_grad_rules({test::source_dir() + "/rulesets/grad"});
  REQUIRE(grads);
  std::vector<lower::LoopKernel> ks;
  std::vector<std::string> where;
  for (const char* model : {"mlp", "transformer_layer", "resnet_small"}) {
    auto g = ir::import_onnx_file(test::source_dir() + "/docs/examples/models/" + model + ".onnx");
    REQUIRE(g);
    pipeline::TrainingOptions t;
    t.loss = pipeline::LossKind::MeanSquaredError;
    t.optimizer = pipeline::OptimizerKind::Adam;
    t.batch = 2;
    auto step = pipeline::build_training_step(*g, *grads, t);
    if (!step) FAIL(step.error().to_string());
    pipeline::OptimizeOptions o;
    o.target = "cuda";
    o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cuda");
    auto r = pipeline::optimize(step->graph, o);
    if (!r) FAIL(r.error().to_string());
    auto p = lower_for_cuda(r->graph);
    INFO(model << ": on the host: " << p->reference_ops.size());
    CHECK(p->reference_ops.empty());
    CHECK(p->arena_bytes <= p->naive_bytes);
    for (const lower::LoopKernel& k : *p->kernels) {
      ks.push_back(k);
      where.push_back(std::string(model) + " step");
    }
  }
  const std::vector<std::string> wrong = test::emulation_failures(ks, where, "steps");
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
  CHECK(ks.size() >= 30);
}

TEST_CASE(
    "CUDA programs of the bundled models - kernels through NVRTC - cuBLAS and cuDNN calls - nothing on the host") {
  {
    auto p = lower_for_cuda(optimized("transformer_layer"));
    INFO(p->steps.size() << " steps");
    CHECK(p->target_cpu.rfind("cuda compute_", 0) == 0);
    CHECK(p->reference_ops.empty());
    CHECK(count(*p, lower::StepKind::Gemm, "cublas sgemm") >= 4);  // projections, attention, feed-forward
    CHECK(p->fused_kernels == count(*p, lower::StepKind::Kernel));
    CHECK(p->kernels->size() == static_cast<std::size_t>(p->fused_kernels));
    CHECK(p->arena_bytes > 0);
    CHECK(p->arena_bytes <= p->naive_bytes);
    for (const lower::Step& s : p->steps) CHECK(static_cast<bool>(s.run));
  }
  {
    auto p = lower_for_cuda(optimized("resnet_small"));
    std::string host;
    for (const lower::Step& s : p->steps)
      if (s.kind == lower::StepKind::Reference) host.append(s.label).append("; ");
    INFO("on the host: " << host);
    CHECK(p->reference_ops.empty());
    CHECK(count(*p, lower::StepKind::Conv, "cudnn conv") >= 3);
    CHECK(count(*p, lower::StepKind::Conv, "+relu") >= 1);  // conv + ReLU fused into one cuDNN call
  }
  {
    // A 4x64 batch: its products are cheaper as Saturn's kernels than as
    // cuBLAS calls (4 us each in CUDA graphs, measured on an H200;
    // docs/cost-model.md).
    auto p = lower_for_cuda(optimized("mlp"));
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls <= 1);
    CHECK(count(*p, lower::StepKind::Kernel) >= 2);
  }
}

TEST_CASE("plain products and convolutions are device loop kernels - no library call the extractor did not choose") {
  models::GraphBuilder b("loops");
  ir::Attrs conv_attrs = models::ints_attr("pads", {1, 0, 1, 2});
  conv_attrs.set("group", std::int64_t{2});
  conv_attrs.set("strides", std::vector<std::int64_t>{2, 1});
  std::string x = b.input("x", {1, 4, 5, 6});
  std::string c = b.op("conv", {x, b.weight({6, 2, 3, 2}, 0.2), b.weight({6}, 0.1)}, conv_attrs);
  ir::Attrs gemm_attrs;
  gemm_attrs.set("transB", std::int64_t{1});
  gemm_attrs.set("alpha", 0.5);
  std::string m = b.op("matmul", {b.input("a", {2, 3, 4}), b.input("w", {4, 5})});
  std::string g = b.op("gemm", {b.input("p", {3, 4}), b.weight({5, 4}, 0.3), b.weight({5}, 0.2)}, gemm_attrs);
  auto p = lower::compile_cuda(b.finish({c, m, g}));
  REQUIRE(p);
  CHECK((*p)->library_calls == 0);
  CHECK((*p)->reference_ops.empty());
  CHECK(count(**p, lower::StepKind::Kernel, "(loops)") == 3);
  std::vector<std::string> where((*p)->kernels->size(), "loops");
  const std::vector<std::string> wrong = test::emulation_failures(*(*p)->kernels, where, "loops");
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
}

TEST_CASE("a product whose batch no single stride walks is copied out in full - one cuBLAS call") {
  models::GraphBuilder b("bcast");
  // A broadcast along the inner batch dim only: [2 1 3 4] @ [5 4 6] -> [2 5 3 6].
  auto p = lower_for_cuda(b.finish({b.op("matmul", {b.input("a", {2, 1, 3, 4}), b.input("b", {5, 4, 6})})}));
  CHECK(count(*p, lower::StepKind::Gemm, "cublas sgemm") == 1);
  CHECK(count(*p, lower::StepKind::Gemm, "x10") == 1);  // one strided-batched call over the 10 products
  CHECK(p->fused_kernels == 2);                         // the two copies
  CHECK(p->reference_ops.empty());
}

TEST_CASE("slices are strided views on the device too - one kernel and nothing on the host") {
  models::GraphBuilder b("qkv");
  std::string x = b.input("x", {8, 24});
  auto part = [&](std::int64_t start, std::int64_t end, std::int64_t step) {
    ir::Attrs a = models::ints_attr("starts", {start});
    a.set("ends", std::vector<std::int64_t>{end});
    a.set("axes", std::vector<std::int64_t>{1});
    a.set("steps", std::vector<std::int64_t>{step});
    return b.op("slice", {x}, a);
  };
  // q = x[:, 0:8], k reversed = x[:, 15:7:-1], every other column of x[:, 8:24].
  auto p = lower_for_cuda(b.finish({b.op("add", {b.op("mul", {part(0, 8, 1), part(15, 7, -1)}), part(8, 24, 2)})}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(p->fused_kernels == 1);
  REQUIRE(p->kernels->size() == 1);
  CHECK(test::emulation_failures(*p->kernels, {"qkv"}, "qkv").empty());
}

TEST_CASE("copies of integer views and f16 - f64 arithmetic are device kernels - nothing on the host") {
  models::GraphBuilder b("typed");
  std::string ids = b.input("ids", {6, 9}, ir::DType::I64);
  std::string h = b.input("h", {6, 9}, ir::DType::F16);
  std::string d = b.input("d", {6, 9}, ir::DType::F64);
  ir::Attrs to_f64;
  to_f64.set("to", std::string("f64"));
  // Transposed i64 ids reshaped (a copy), f16 arithmetic, f64 arithmetic
  // over a widened f16.
  auto p = lower_for_cuda(b.finish(
      {b.op("reshape", {b.op("transpose", {ids}, models::ints_attr("perm", {1, 0}))}, models::ints_attr("shape", {54})),
       b.op("sigmoid", {b.op("mul", {h, h})}), b.op("add", {b.op("exp", {d}), b.op("cast", {h}, to_f64)})}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  REQUIRE(p->kernels->size() == 4);  // the copy, mul, sigmoid (each f16 result rounded), exp+cast+add
  CHECK(test::emulation_failures(*p->kernels, {"copy", "mul", "sigmoid", "exp"}, "typed").empty());
}

TEST_CASE("resize is a device kernel per changing axis - interpolation and nearest copies - nothing on the host") {
  models::GraphBuilder b("up");
  std::string x = b.input("x", {1, 8, 16, 16});
  std::string ids = b.input("ids", {1, 1, 4, 4}, ir::DType::I64);
  ir::Attrs linear = models::ints_attr("sizes", {1, 8, 32, 32});
  linear.set("mode", std::string("linear"));
  ir::Attrs nearest = models::ints_attr("sizes", {1, 1, 8, 8});
  auto p = lower_for_cuda(b.finish({b.op("resize", {x}, linear), b.op("resize", {ids}, nearest)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Kernel, "resize linear") == 2);
  CHECK(count(*p, lower::StepKind::Copy, "resize nearest") == 2);
}

TEST_CASE("concat is one 2-D device copy per operand - of any element type - nothing on the host") {
  models::GraphBuilder b("concat");
  std::string x = b.input("x", {2, 3, 4});
  std::string y = b.input("y", {2, 5, 4});
  ir::Attrs a;
  a.set("axis", std::int64_t{1});
  auto p = lower_for_cuda(b.finish({b.op("concat", {b.op("exp", {x}), y, x}, a)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Copy, "concat (3 block copies)") == 1);
}

TEST_CASE("Concats that extend one another write into one device buffer - each copying its new operands") {
  models::GraphBuilder b("dense");
  std::string x = b.input("x", {2, 3, 4});
  std::string y = b.input("y", {2, 5, 4});
  ir::Attrs a;
  a.set("axis", std::int64_t{1});
  std::string first = b.op("concat", {b.op("exp", {x}), y}, a);
  std::string second = b.op("concat", {first, b.op("exp", {y})}, a);
  auto p = lower_for_cuda(b.finish({b.op("tanh", {first}), b.op("tanh", {second})}));
  CHECK(count(*p, lower::StepKind::Copy, "concat (2 block copies, into a shared buffer)") == 1);
  CHECK(count(*p, lower::StepKind::Copy, "concat (1 block copies, into a shared buffer)") == 1);
}

TEST_CASE(
    "gather and gather_elements are device kernels with an index check - comparisons and casts are kernels - "
    "nothing on the host") {
  models::GraphBuilder b("embed");
  std::string ids = b.input("ids", {2, 7}, ir::DType::I64);
  std::string mask = b.input("mask", {2, 7}, ir::DType::Bool);
  ir::Attrs to_f32;
  to_f32.set("to", std::string("f32"));
  std::string words = b.op("gather", {b.weight({50, 16}, 1.0), ids});
  std::string keep = b.op("unsqueeze", {b.op("cast", {mask}, to_f32)}, models::ints_attr("axes", {2}));
  ir::Attrs along_rows;
  along_rows.set("axis", std::int64_t{1});
  std::string picked = b.op("gather_elements", {b.weight({2, 9}, 1.0), ids}, along_rows);
  auto p = lower_for_cuda(
      b.finish({b.op("mul", {words, keep}), b.op("greater", {words, b.fill({}, 0.0)}), b.op("neg", {picked})}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Copy, "gather (14 rows of 64 B)") == 1);
  CHECK(count(*p, lower::StepKind::Copy, "gather_elements (14 elements)") == 1);
  CHECK(test::emulation_failures(*p->kernels, std::vector<std::string>(p->kernels->size(), "embed"), "embed").empty());
}

TEST_CASE("pad and trilu are device kernels of any element type - nothing on the host") {
  models::GraphBuilder b("pad");
  std::string x = b.input("x", {2, 3, 4});
  std::string m = b.input("m", {5, 4}, ir::DType::Bool);
  ir::Attrs reflect;
  reflect.set("pads", Dims{0, 1, 2, 0, 1, 1});
  reflect.set("mode", std::string("reflect"));
  ir::Attrs lower_tri;
  lower_tri.set("upper", std::int64_t{0});
  auto p = lower_for_cuda(
      b.finish({b.op("exp", {b.op("pad", {b.op("neg", {x})}, reflect)}), b.op("trilu", {m}, lower_tri)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Copy, "pad (reflect, 10 rows)") == 1);
  CHECK(count(*p, lower::StepKind::Copy, "trilu (lower, 5 rows)") == 1);
}

TEST_CASE("1-D and 3-D convolutions and pooling go to cuDNN - dilated pooling is a kernel of its own") {
  models::GraphBuilder b("nd");
  std::string x1 = b.input("x1", {2, 4, 17});
  std::string x3 = b.input("x3", {1, 3, 7, 6, 5});
  auto attrs = [](const std::vector<std::pair<std::string, Dims>>& ints) {
    ir::Attrs a;
    for (const auto& [name, v] : ints) a.set(name, v);
    return a;
  };
  std::vector<std::string> outs{
      b.op("relu", {b.op("conv", {x1, b.weight({6, 4, 3}, 0.3), b.weight({6}, 0.3)}, attrs({{"pads", {1, 1}}}))}),
      b.op("conv", {x3, b.weight({4, 3, 3, 3, 3}, 0.3)}, attrs({{"strides", {2, 1, 2}}, {"pads", {1, 1, 1, 1, 1, 1}}})),
      b.op("max_pool", {x1}, attrs({{"kernel_shape", {3}}, {"strides", {2}}})),
      b.op("avg_pool", {x3}, attrs({{"kernel_shape", {3, 3, 3}}, {"pads", {1, 1, 1, 1, 1, 1}}})),
      b.op("max_pool", {x1}, attrs({{"kernel_shape", {3}}, {"dilations", {2}}}))};
  auto p = lower_for_cuda(b.finish(outs));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv+bias+relu") == 1);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv") == 2);
  CHECK(count(*p, lower::StepKind::Pool, "cudnn") == 2);
  CHECK(count(*p, lower::StepKind::Pool, "max_pool (window 3)") == 1);  // the dilated one
}

TEST_CASE("convolutions with weights given at run time read them on the device") {
  models::GraphBuilder b("runtime");
  std::string x = b.input("x", {1, 4, 6, 6});
  std::string w = b.input("w", {4, 4, 3, 3});
  ir::Attrs perm;
  perm.set("perm", Dims{1, 0, 2, 3});
  std::string y = b.op("conv", {x, b.op("mul", {w, b.fill({}, 0.5)}), b.input("bias", {4})},
                       models::ints_attr("pads", {1, 1, 1, 1}));
  auto p = lower_for_cuda(b.finish({b.op("conv_transpose", {y, b.op("transpose", {w}, perm)})}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv+bias") == 1);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv_transpose") == 1);
  CHECK(p->fused_kernels == 2);  // the scaled weights and the transposed ones, row-major for cuDNN
}

TEST_CASE("transposed convolutions are cuDNN backward-data calls - one-sided padding a view of the full result") {
  models::GraphBuilder b("deconv");
  std::string x = b.input("x", {1, 3, 7, 6});
  std::string x1 = b.input("x1", {2, 4, 9});
  ir::Attrs sym;
  sym.set("strides", Dims{2, 2});
  sym.set("pads", Dims{1, 1, 1, 1});
  sym.set("output_padding", Dims{1, 0});
  ir::Attrs grouped;
  grouped.set("strides", Dims{3});
  grouped.set("group", std::int64_t{2});
  ir::Attrs one_sided;
  one_sided.set("pads", Dims{0, 1});
  auto p = lower_for_cuda(b.finish({b.op("conv_transpose", {x, b.weight({3, 4, 3, 3}, 0.3), b.weight({4}, 0.3)}, sym),
                                    b.op("cudnn.conv_transpose", {x1, b.weight({4, 3, 3}, 0.3)}, grouped),
                                    b.op("conv_transpose", {x1, b.weight({4, 3, 3}, 0.3)}, one_sided)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv_transpose+bias") == 1);
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv_transpose") == 3);
  // The one-sided one computes the full [2 3 11] result, then reads [.. 0:10] of it.
  bool full = false;
  for (const lower::Buffer& buf : p->buffers) full |= buf.dims == Dims{2, 3, 11};
  CHECK(full);
}

TEST_CASE(
    "f16 attention - f64 and 1-D products - einsum - lrn and instance_norm run on the device - nothing on the host") {
  models::GraphBuilder b("typed");
  std::string q = b.input("q", {2, 4, 8, 16}, ir::DType::F16);
  std::string k = b.input("k", {2, 4, 16, 8}, ir::DType::F16);
  std::string d = b.input("d", {3, 5, 6}, ir::DType::F64);
  std::string v = b.input("v", {6});
  std::string m = b.input("m", {3, 5, 6});
  std::string p16 = b.op("softmax", {b.op("matmul", {q, k})});
  ir::Attrs eq;
  eq.set("equation", std::string("bij,bkj->bik"));
  ir::Attrs trans_b;
  trans_b.set("transB", std::int64_t{1});
  auto p =
      lower_for_cuda(b.finish({p16, b.op("matmul", {d, b.op("transpose", {d}, models::ints_attr("perm", {0, 2, 1}))}),
                               b.op("matmul", {m, v}), b.op("reduce_log_sum_exp", {d}), b.op("einsum", {d, d}, eq),
                               b.op("lrn", {m}), b.op("instance_norm", {m, b.weight({5}, 1.0), b.weight({5}, 1.0)}),
                               b.op("conv", {q, b.input("w16", {3, 4, 3, 3}, ir::DType::F16)}),
                               b.op("gemm",
                                    {b.input("a16", {5, 7}, ir::DType::F16), b.input("b16", {6, 7}, ir::DType::F16),
                                     b.input("c16", {6}, ir::DType::F16)},
                                    trans_b)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Gemm, "cublas sgemm") == 1);     // m v
  CHECK(count(*p, lower::StepKind::Gemm, "cublas gemm f16") == 2);  // q k and the gemm, as they are
  CHECK(count(*p, lower::StepKind::Kernel, "matmul operand as f32") == 0);
  CHECK(count(*p, lower::StepKind::Kernel, "gemm operand as f32") == 1);  // C only
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv") == 1);             // f16 over f32 copies
  CHECK(p->library_calls == 4);
}

TEST_CASE("argmax and argmin are device kernels - of f32 and integer values - nothing on the host") {
  models::GraphBuilder b("arg");
  std::string x = b.input("x", {2, 7, 50});
  std::string k = b.input("k", {6, 4}, ir::DType::I64);
  ir::Attrs last;
  last.set("axis", std::int64_t{-1});
  last.set("keepdims", std::int64_t{0});
  auto p = lower_for_cuda(b.finish({b.op("argmax", {b.op("exp", {x})}, last), b.op("argmin", {k})}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::ArgReduce, "argmax (14 of 50)") == 1);
  CHECK(count(*p, lower::StepKind::ArgReduce, "argmin (4 of 6)") == 1);
}

TEST_CASE("what cuDNN cannot take is padded first or a kernel of Saturn's own - one-sided pads - ceil_mode pooling") {
  models::GraphBuilder b("odd");
  std::string x = b.input("x", {1, 2, 6, 6});
  ir::Attrs conv;
  conv.set("pads", Dims{0, 1, 1, 0});
  ir::Attrs same;  // TensorFlow's SAME with a stride: 0 before, 1 after
  same.set("auto_pad", std::string("SAME_UPPER"));
  same.set("strides", Dims{2, 2});
  ir::Attrs pool;
  pool.set("kernel_shape", Dims{3, 3});
  pool.set("strides", Dims{2, 2});
  pool.set("ceil_mode", std::int64_t{1});
  auto p =
      lower_for_cuda(b.finish({b.op("conv", {x, b.weight({3, 2, 2, 2}, 1.0)}, conv),
                               b.op("conv", {x, b.weight({3, 2, 3, 3}, 1.0)}, same), b.op("max_pool", {x}, pool)}));
  CHECK(p->reference_ops.empty());
  CHECK(count(*p, lower::StepKind::Reference) == 0);
  CHECK(count(*p, lower::StepKind::Copy, "pad (constant, 14 rows)") == 2);  // both inputs [1 2 7 7]
  CHECK(count(*p, lower::StepKind::Conv, "cudnn conv") == 2);
  CHECK(count(*p, lower::StepKind::Pool, "max_pool (window 3 3)") == 1);
}

// The ONNX conformance cases the importer takes lower for the CUDA target:
// each of their kernels compiles with NVRTC (no GPU needed), and no step is
// left without code. Every third case, in order (all of them take a minute
// of NVRTC), and every sixth under AddressSanitizer (test::kCaseStride);
// test_cuda_device runs them all on a GPU. Their distinct kernels also run
// on the host emulator and must compute what they mean.
TEST_CASE("ONNX conformance cases lower for the CUDA target - a sample - kernels compile with NVRTC") {
  constexpr int kEvery = 3 * test::kCaseStride;
  namespace fs = std::filesystem;
  const fs::path root = test::tests_root();
  if (!fs::exists(root)) {
    if (std::getenv("CI")) FAIL("ONNX test data not found at " << root.string());
    WARN("ONNX test data not found at " << root.string());
    return;
  }
  int seen = 0, lowered = 0, kernels = 0, library = 0;
  std::vector<std::string> failures;
  // The distinct kernels (by source), with the case each first came from.
  std::set<std::string> distinct;
  std::vector<lower::LoopKernel> emulated;
  std::vector<std::string> emulated_from;
  for (const char* folder : {"node", "simple", "pytorch-converted", "pytorch-operator"})
    for (const fs::path& c : test::cases_in(root / folder)) {
      if (++seen % kEvery != 0) continue;
      auto data = test::read_data_set(c / "test_data_set_0");
      if (!data) continue;
      auto g = ir::import_onnx_for_inputs((c / "model.onnx").string(), data->inputs);
      if (!g) continue;
      auto p = lower::compile_cuda(test::as_library_calls(*g, "cuda"));
      if (!p) {
        failures.push_back(c.filename().string() + ": " + p.error().message);
        continue;
      }
      ++lowered;
      kernels += (*p)->fused_kernels;
      library += (*p)->library_calls;
      for (const lower::Step& s : (*p)->steps)
        if (!s.run) failures.push_back(c.filename().string() + ": a step without code: " + s.label);
      for (const lower::LoopKernel& k : *(*p)->kernels)
        if (distinct.insert(lower::cuda_kernel_source(k, 0).source).second) {
          emulated.push_back(k);
          emulated_from.push_back(c.filename().string());
        }
    }
  INFO(failures.size() << " failures, first: " << (failures.empty() ? "" : failures[0]));
  CHECK(failures.empty());
  CHECK(lowered > 900 / kEvery);
  CHECK(kernels > 300);
  CHECK(library > 30);

  const std::vector<std::string> wrong = test::emulation_failures(emulated, emulated_from, "conformance");
  INFO(wrong.size() << " kernels wrong, first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());
  CHECK(emulated.size() > 150);
  // Kernels reading bool or integer leaves, or storing bools (comparisons,
  // where, casts) are among them.
  const auto typed = std::count_if(emulated.begin(), emulated.end(), [](const lower::LoopKernel& k) {
    return k.out_dtype != ir::DType::F32 || std::any_of(k.leaves.begin(), k.leaves.end(),
                                                        [](const lower::Leaf& l) { return l.dtype != ir::DType::F32; });
  });
  std::cout << "conformance kernels emulated: " << emulated.size() << ", " << typed << " of them typed\n";
  CHECK(typed > 30 / kEvery);
}
