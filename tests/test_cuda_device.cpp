// The CUDA target on a device: generated kernels (fused elementwise chains,
// float4 rows with broadcasts, reductions, softmax) run through the driver
// layer and give the interpreter's results; so does the whole executor on
// cuBLAS and cuDNN calls, block copies, comparisons and casts across element
// types, gathers (and their index check), pads and trilu, argmax and
// argmin, 1-D / 3-D / transposed convolutions, the bundled models and the ONNX
// conformance cases. Needs a CUDA driver and device:
// without them the program prints why and exits 77, which ctest reports as
// skipped (never as passed).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/models.hpp"
#include "device/cuda_compiler.hpp"
#include "device/cuda_driver.hpp"
#include "ir/onnx_import.hpp"
#include "lower/cuda_codegen.hpp"
#include "lower/lowering.hpp"
#include "pipeline/optimize.hpp"
#include "runtime/cuda_executor.hpp"
#include "runtime/interp.hpp"
#include "tests/catch_session.hpp"
#include "tests/helpers.hpp"
#include "tests/library_calls.hpp"
#include "tests/onnx_cases.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
namespace cuda = device::cuda;

namespace {

// Runs a program whose steps are all loop kernels on the device: one device
// buffer per program buffer, inputs and weights copied in, outputs back.
std::vector<ir::Tensor> run_on_device(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  auto p = lower::compile_cpu(g);
  if (!p) FAIL(p.error().to_string());
  const lower::Program& prog = **p;
  cuda::Context ctx(0);
  cuda::Stream stream;
  static device::CudaCompiler compiler;
  std::vector<cuda::DeviceBuffer> mem;
  for (const lower::Buffer& b : prog.buffers) {
    mem.emplace_back(b.bytes);
    if (b.kind == lower::BufferKind::Weight) mem.back().copy_from_host(b.weight->bytes(), b.bytes);
    if (b.kind == lower::BufferKind::Input)
      mem.back().copy_from_host(inputs.at(static_cast<std::size_t>(b.input_index)).bytes(), b.bytes);
  }
  std::size_t next = 0;
  std::vector<std::unique_ptr<cuda::Module>> modules;
  for (const lower::Step& s : prog.steps) {
    REQUIRE(s.kind == lower::StepKind::Kernel);
    const lower::LoopKernel& k = prog.kernels->at(next);
    auto src = lower::cuda_kernel_source(k, static_cast<int>(next++));
    auto ptx = compiler.ptx(src.source, src.name, ctx.device().arch());
    if (!ptx) FAIL(ptx.error().to_string());
    modules.push_back(std::make_unique<cuda::Module>(*ptx));
    std::vector<std::uint64_t> args;
    for (const lower::Leaf& l : k.leaves) args.push_back(mem[static_cast<std::size_t>(l.buffer)].address());
    args.push_back(mem[static_cast<std::size_t>(k.out)].address());
    modules.back()->function(src.name).launch(src.grid, src.block, args, stream);
  }
  stream.synchronize();
  std::vector<ir::Tensor> out;
  for (std::size_t i = 0; i < prog.outputs.size(); ++i) {
    ir::Tensor t(ir::DType::F32, prog.output_dims[i]);
    mem[static_cast<std::size_t>(prog.outputs[i])].copy_to_host(t.bytes(), t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

void check_against_interpreter(const ir::Graph& g) {
  std::vector<ir::Tensor> inputs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  for (const ir::GraphValue& in : g.inputs) {
    ir::Tensor t(ir::DType::F32, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
    inputs.push_back(std::move(t));
  }
  auto want = runtime::interpret(g, inputs);
  REQUIRE(want);
  auto got = run_on_device(g, inputs);
  REQUIRE(got.size() == want->size());
  for (std::size_t k = 0; k < got.size(); ++k)
    for (std::size_t i = 0; i < got[k].numel(); ++i) {
      INFO("output " << k << " element " << i);
      CHECK(got[k].at(i) == Approx((*want)[k].at(i)).epsilon(1e-5).margin(1e-5));
    }
}

}  // namespace

TEST_CASE("Fused elementwise chains run on the device - scalar and float4") {
  {
    models::GraphBuilder b("chain");
    std::string x = b.input("x", {1031});
    check_against_interpreter(b.finish({b.op("gelu", {b.op("add", {b.op("mul", {x, x}), x})})}));
  }
  {
    models::GraphBuilder b("rows");
    std::string x = b.input("x", {64, 256});
    std::string row = b.input("row", {256});
    check_against_interpreter(b.finish({b.op("sigmoid", {b.op("add", {x, row})})}));
  }
  {
    models::GraphBuilder b("transposed");
    std::string x = b.input("x", {6, 12});
    std::string y = b.input("y", {12, 6});
    check_against_interpreter(b.finish({b.op("max", {b.op("transpose", {x}, models::ints_attr("perm", {1, 0})), y})}));
  }
}

TEST_CASE("Reductions and softmax run on the device") {
  models::GraphBuilder b("red");
  std::string x = b.input("x", {7, 333});
  check_against_interpreter(b.finish({b.op("reduce_sum", {x}, models::ints_attr("axes", {1})),
                                      b.op("reduce_max", {x}, models::ints_attr("axes", {0})), b.op("softmax", {x})}));
}

namespace {

std::vector<ir::Tensor> random_inputs(const ir::Graph& g, std::uint32_t seed) {
  std::vector<ir::Tensor> inputs;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  for (const ir::GraphValue& in : g.inputs) {  // masks: 0 or 1; integers: -2 to 2
    const ir::DType dt = in.type.dtype;
    ir::Tensor t(dt, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < t.numel(); ++i) {
      const double x = u(rng);
      t.set(i, dt == ir::DType::Bool ? static_cast<double>(x > 0) : ir::is_float(dt) ? x : std::round(x));
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// The whole CUDA executor (kernels, cuBLAS, cuDNN, host steps) against the
// interpreter; `rtol` for long sums in other orders.
// NaN must be NaN and an infinity the same infinity.
// Both forms run: the graph as written (Saturn's loop nests) and with the
// library calls the CUDA rules substitute (tests/library_calls.hpp).
// Other values for the float inputs (integer ones, indices say, stay).
std::vector<ir::Tensor> other_values(std::vector<ir::Tensor> inputs) {
  for (ir::Tensor& t : inputs)
    if (ir::is_float(t.dtype()))
      for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, 0.25 - 0.5 * t.at(i));
  return inputs;
}

void check_executor_on(const ir::Graph& written, const std::vector<ir::Tensor>& inputs, double rtol = 1e-4) {
  const std::vector<ir::Tensor> other = other_values(inputs);
  auto want = runtime::interpret(written, inputs);
  REQUIRE(want);
  auto want_other = runtime::interpret(written, other);
  REQUIRE(want_other);
  const ir::Graph library = test::as_library_calls(written, "cuda");
  for (const ir::Graph* form : {&written, &library}) {
    INFO((form == &written ? "as written" : "with library calls"));
    auto exec = runtime::CudaExecutor::create(*form);
    if (!exec) FAIL(exec.error().to_string());
    // Run 0 makes the device state and captures the CUDA graphs; runs 1 and
    // 2 replay them, run 2 on other values (a graph reads the buffers the
    // inputs are copied into).
    for (int run = 0; run < 3; ++run) {
      auto got = (*exec)->run(run == 2 ? other : inputs);
      if (!got) FAIL(got.error().to_string());
      const std::vector<ir::Tensor>& expected = run == 2 ? *want_other : *want;
      REQUIRE(got->size() == expected.size());
      for (std::size_t k = 0; k < got->size(); ++k) {
        REQUIRE((*got)[k].dims() == expected[k].dims());
        for (std::size_t i = 0; i < (*got)[k].numel(); ++i) {
          INFO("run " << run << " output " << k << " element " << i);
          const double w = expected[k].at(i), v = (*got)[k].at(i);
          if (std::isnan(w))
            CHECK(std::isnan(v));
          else if (std::isinf(w))
            CHECK(v == w);
          else
            CHECK(v == Approx(w).epsilon(rtol).margin(1e-4));
        }
      }
    }
    INFO((*exec)->graphs_note());
    CHECK((*exec)->graphs_note().find("outside graphs") == std::string::npos);  // no step failed its capture
  }
}

void check_executor(const ir::Graph& g, double rtol = 1e-4) { check_executor_on(g, random_inputs(g, 11), rtol); }

ir::Attrs conv_attrs(std::vector<std::int64_t> pads, std::vector<std::int64_t> strides, std::int64_t group = 1) {
  ir::Attrs a;
  a.set("pads", pads);
  a.set("strides", strides);
  a.set("group", group);
  return a;
}

}  // namespace

TEST_CASE("cuBLAS products on the device - transposes - batches - broadcast weights - gemm bias") {
  models::GraphBuilder b("products");
  std::string x = b.input("x", {2, 3, 5, 4});
  std::string y = b.input("y", {2, 3, 4, 6});
  std::string w = b.weight({4, 7}, 1.0);
  std::string xt = b.op("transpose", {x}, models::ints_attr("perm", {0, 1, 3, 2}));
  ir::Attrs gemm;
  gemm.set("transA", std::int64_t{1});
  gemm.set("alpha", 0.5);
  std::string a2 = b.input("a2", {4, 5});
  check_executor(b.finish({b.op("matmul", {x, y}), b.op("matmul", {x, w}),
                           b.op("matmul", {b.op("transpose", {xt}, models::ints_attr("perm", {0, 1, 3, 2})), y}),
                           b.op("gemm", {a2, b.weight({4, 3}, 1.0), b.weight({3}, 1.0)}, gemm)}));
}

TEST_CASE("cuDNN convolutions and pooling on the device - bias - ReLU - residual - groups - host fallback") {
  models::GraphBuilder b("convs");
  std::string x = b.input("x", {2, 4, 9, 9});
  std::string c1 = b.op("conv", {x, b.weight({8, 4, 3, 3}, 0.3), b.weight({8}, 0.3)}, conv_attrs({1, 1, 1, 1}, {1, 1}));
  std::string r1 = b.op("relu", {c1});
  std::string c2 = b.op("conv", {r1, b.weight({8, 4, 3, 3}, 0.3)}, conv_attrs({1, 1, 1, 1}, {1, 1}, 2));
  std::string res = b.op("relu", {b.op("add", {c2, r1})});
  ir::Attrs mp;
  mp.set("kernel_shape", std::vector<std::int64_t>{3, 3});
  mp.set("strides", std::vector<std::int64_t>{2, 2});
  mp.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  ir::Attrs ap = mp;
  ap.set("count_include_pad", std::int64_t{1});
  // Asymmetric padding: cuDNN cannot take it, the input is padded first.
  std::string odd = b.op("conv", {x, b.weight({2, 4, 2, 2}, 0.3)}, conv_attrs({0, 1, 1, 0}, {2, 2}));
  // A window cuDNN cannot take (dilated, one-sided pads, ceil_mode) and
  // MaxPool's Indices: Saturn's own pooling kernel.
  ir::Attrs dilated = mp;
  dilated.set("pads", std::vector<std::int64_t>{1, 0, 0, 1});
  dilated.set("dilations", std::vector<std::int64_t>{1, 2});
  dilated.set("ceil_mode", std::int64_t{1});
  auto own = b.op_results("max_pool", {res}, 2, dilated);
  check_executor(b.finish({res, b.op("max_pool", {res}, mp), b.op("avg_pool", {res}, ap), odd, own[0], own[1]}), 1e-3);
}

TEST_CASE("Concat as 2-D device copies and slices and splits as views on the device") {
  models::GraphBuilder b("movement");
  std::string x = b.input("x", {3, 5, 4});
  std::string y = b.input("y", {3, 2, 4});
  ir::Attrs axis1;
  axis1.set("axis", std::int64_t{1});
  ir::Attrs last;
  last.set("axis", std::int64_t{-1});
  ir::Attrs sl = models::ints_attr("starts", {4});
  sl.set("ends", std::vector<std::int64_t>{0});
  sl.set("axes", std::vector<std::int64_t>{2});
  sl.set("steps", std::vector<std::int64_t>{-2});
  std::string joined = b.op("concat", {x, b.op("exp", {y}), y}, axis1);           // [3 9 4]
  std::string xt = b.op("transpose", {x}, models::ints_attr("perm", {0, 2, 1}));  // [3 4 5]
  std::string wide = b.op("concat", {xt, b.op("slice", {xt}, sl)}, last);         // [3 4 7]
  auto parts = b.op_results("split", {joined}, 3, axis1);
  // A concat extending `joined` writes only its last operand into their
  // shared buffer; `joined` is read after it.
  std::string longer = b.op("concat", {joined, b.op("tanh", {x})}, axis1);  // [3 14 4]
  check_executor(
      b.finish({b.op("exp", {longer}), b.op("exp", {joined}), wide, b.op("add", {parts[0], parts[2]}), parts[1]}));
}

TEST_CASE("Comparisons - where and casts across element types run in device kernels") {
  models::GraphBuilder b("typed");
  std::string x = b.input("x", {4, 6, 32});
  std::string causal = b.input("causal", {6, 32}, ir::DType::Bool);
  std::string keep = b.input("keep", {1, 32}, ir::DType::I64);
  ir::Attrs to_f32, to_bool, last;
  to_f32.set("to", std::string("f32"));
  to_bool.set("to", std::string("bool"));
  last.set("axis", std::int64_t{-1});
  std::string pad = b.op("mul", {b.op("sub", {b.fill({}, 1.0), b.op("cast", {keep}, to_f32)}), b.fill({}, -10000.0)});
  std::string masked = b.op("add", {b.op("where", {causal, x, b.fill({}, -1e9)}), pad});
  const ir::Graph g = b.finish({b.op("softmax", {masked}, last), b.op("greater", {x, b.fill({}, 0.5)}),
                                b.op("cast", {b.op("mul", {x, b.fill({}, 0.0)})}, to_bool)});
  auto p = lower::compile_cuda(g);
  if (!p) FAIL(p.error().to_string());
  CHECK((*p)->reference_ops.empty());  // nothing goes to the host
  check_executor(g);
}

TEST_CASE("Gather runs on the device - an index out of range fails the run") {
  models::GraphBuilder b("embed");
  std::string ids = b.input("ids", {2, 9}, ir::DType::I64);
  std::string small = b.input("small", {3, 5}, ir::DType::I32);
  ir::Attrs last;
  last.set("axis", std::int64_t{-1});
  std::string words = b.op("gather", {b.weight({50, 16}, 1.0), ids});
  std::string bytes = b.op("gather", {b.input("m", {4, 3}, ir::DType::Bool), small}, last);  // rows of 1 byte
  const ir::Graph g = b.finish({b.op("add", {words, b.fill({}, 1.0)}), bytes});
  auto p = lower::compile_cuda(g);
  if (!p) FAIL(p.error().to_string());
  CHECK((*p)->reference_ops.empty());
  check_executor(g);  // ids from -2 to 2: negative ones too
  auto exec = runtime::CudaExecutor::create(g);
  REQUIRE(exec);
  auto inputs = random_inputs(g, 3);
  // The first run captures the graphs; the check still runs in later ones
  // (a gather waits for the host: it is left out of them).
  REQUIRE((*exec)->run(inputs));
  auto bad = inputs;
  bad[0].set_int(5, 50);
  auto got = (*exec)->run(bad);
  REQUIRE_FALSE(got);
  CHECK(got.error().message.find("index out of range for axis of size 50") != std::string::npos);
  CHECK((*exec)->run(inputs));
}

TEST_CASE("1-D and 3-D convolutions - transposed ones - run-time weights - and pooling run in cuDNN on the device") {
  models::GraphBuilder b("nd");
  std::string x1 = b.input("x1", {2, 4, 17});
  std::string x3 = b.input("x3", {1, 3, 7, 6, 5});
  auto attrs = [](const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& ints) {
    ir::Attrs a;
    for (const auto& [name, v] : ints) a.set(name, v);
    return a;
  };
  const ir::Graph g = b.finish(
      {b.op("relu", {b.op("conv", {x1, b.weight({6, 4, 3}, 0.3), b.weight({6}, 0.3)}, attrs({{"pads", {1, 1}}}))}),
       b.op("conv", {x3, b.weight({4, 3, 3, 3, 3}, 0.3)},
            attrs({{"strides", {2, 1, 2}}, {"pads", {1, 1, 1, 1, 1, 1}}})),
       b.op("max_pool", {x1}, attrs({{"kernel_shape", {3}}, {"strides", {2}}})),
       b.op("avg_pool", {x3}, attrs({{"kernel_shape", {3, 3, 3}}, {"pads", {1, 1, 1, 1, 1, 1}}})),
       b.op("conv_transpose", {x3, b.weight({3, 2, 3, 2, 3}, 0.3), b.weight({2}, 0.3)},
            attrs({{"strides", {2, 1, 2}}, {"pads", {1, 0, 1, 1, 0, 1}}, {"output_padding", {1, 0, 0}}})),
       b.op("conv_transpose", {x1, b.weight({4, 3, 3}, 0.3)}, attrs({{"strides", {3}}})),
       b.op("conv", {x1, b.input("w", {5, 4, 3}), b.input("bias", {5})}, attrs({{"pads", {1, 1}}})),
       // One-sided pads and output_padding: a view of cuDNN's full result.
       b.op("conv_transpose", {x1, b.weight({4, 3, 4}, 0.3), b.weight({3}, 0.3)},
            attrs({{"strides", {2}}, {"pads", {0, 2}}, {"output_padding", {1}}})),
       b.op("conv", {x1, b.weight({2, 4, 3}, 0.3)}, attrs({{"strides", {2}}, {"pads", {0, 1}}}))});
  // With the library ops the cudnn rules substitute, nothing runs on the host.
  auto p = lower::compile_cuda(test::as_library_calls(g, "cuda"));
  if (!p) FAIL(p.error().to_string());
  CHECK((*p)->reference_ops.empty());
  check_executor(g, 1e-4);
}

TEST_CASE("Argmax and argmin run on the device") {
  models::GraphBuilder b("arg");
  std::string x = b.input("x", {3, 70, 5});
  ir::Attrs mid;
  mid.set("axis", std::int64_t{1});
  mid.set("select_last_index", std::int64_t{1});
  const ir::Graph g = b.finish({b.op("argmax", {x}, mid), b.op("argmin", {b.op("neg", {x})}),
                                b.op("argmax", {b.input("k", {4, 9}, ir::DType::I64)}, mid)});
  auto p = lower::compile_cuda(g);
  if (!p) FAIL(p.error().to_string());
  CHECK((*p)->reference_ops.empty());
  check_executor(g);
}

TEST_CASE("Pad in every mode and trilu run on the device") {
  models::GraphBuilder b("pad");
  std::string x = b.input("x", {2, 3, 5});
  std::vector<std::string> outs;
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    ir::Attrs a;
    a.set("pads", std::vector<std::int64_t>{0, 2, -1, 1, 1, 2});
    a.set("mode", std::string(mode));
    a.set("value", 1.5);
    outs.push_back(b.op("pad", {b.op("exp", {x})}, a));
  }
  ir::Attrs upper;
  upper.set("k", std::int64_t{1});
  outs.push_back(b.op("trilu", {x}, upper));
  outs.push_back(b.op("trilu", {b.input("m", {4, 6}, ir::DType::Bool)}));
  const ir::Graph g = b.finish(outs);
  auto p = lower::compile_cuda(g);
  if (!p) FAIL(p.error().to_string());
  CHECK((*p)->reference_ops.empty());
  check_executor(g);
}

TEST_CASE("f16 attention - f64 products - einsum and reductions - pooling's own kernel on the device") {
  models::GraphBuilder b("typed");
  std::string q = b.input("q", {2, 4, 8, 16}, ir::DType::F16);
  std::string k = b.input("k", {2, 4, 16, 8}, ir::DType::F16);
  std::string d = b.input("d", {3, 5, 6}, ir::DType::F64);
  std::string x = b.input("x", {2, 3, 9, 8});
  ir::Attrs pool;
  pool.set("kernel_shape", std::vector<std::int64_t>{3, 2});
  pool.set("dilations", std::vector<std::int64_t>{2, 1});
  pool.set("pads", std::vector<std::int64_t>{1, 0, 0, 1});
  auto mp = b.op_results("max_pool", {x}, 2, pool);
  ir::Attrs eq;
  eq.set("equation", std::string("bij,bkj->bik"));
  // (f16 results: within a unit in the last place of what the interpreter rounds.)
  check_executor(
      b.finish({b.op("softmax", {b.op("matmul", {q, k})}),
                b.op("matmul", {d, b.op("transpose", {d}, models::ints_attr("perm", {0, 2, 1}))}),
                b.op("reduce_log_sum_exp", {d}, models::ints_attr("axes", {1})),
                b.op("reduce_prod", {x}, models::ints_attr("axes", {3})), mp[0], mp[1], b.op("einsum", {d, d}, eq)}),
      2e-3);
}

TEST_CASE("f16 and bf16 products on tensor cores - batches - an operand at an odd offset") {
  for (ir::DType t : {ir::DType::F16, ir::DType::BF16}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("half");
    std::string x = b.input("x", {3, 37, 70}, t);
    std::string w = b.input("w", {70, 45}, t);
    std::string y = b.input("y", {3, 70, 29}, t);
    std::string w2 = b.input("w2", {69, 33}, t);
    ir::Attrs sl = models::ints_attr("starts", {1});
    sl.set("ends", std::vector<std::int64_t>{70});
    sl.set("axes", std::vector<std::int64_t>{2});
    std::string shifted = b.op("slice", {x}, sl);  // starts one element in: a 2-byte aligned operand
    ir::Attrs gemm;
    gemm.set("transB", std::int64_t{1});
    gemm.set("alpha", 0.5);
    std::string a2 = b.input("a2", {37, 70}, t), c2 = b.input("c2", {45}, t);
    const ir::Graph g = b.finish(
        {b.op("matmul", {x, w}),
         b.op("matmul", {b.op("transpose", {w}), b.op("transpose", {x}, models::ints_attr("perm", {1, 2, 0}))}),
         b.op("matmul", {x, y}), b.op("matmul", {shifted, w2}), b.op("gemm", {a2, b.op("transpose", {w}), c2}, gemm)});
    auto p = runtime::CudaExecutor::create(test::as_library_calls(g, "cuda"));
    if (!p) FAIL(p.error().to_string());
    int half_calls = 0;
    for (const lower::Step& st : (*p)->program().steps)
      half_calls += st.label.find(std::string("cublas gemm ") + ir::dtype_name(t)) == 0;
    CHECK(half_calls == 5);
    // (Results within a unit in the last place of what the interpreter
    // rounds: the f32 sums run in another order.)
    check_executor(g, t == ir::DType::F16 ? 2e-3 : 1e-2);
  }
}

TEST_CASE("NaN and infinities through cuDNN - a fused ReLU keeps NaN - max pooling of -inf is -inf") {
  models::GraphBuilder b("special");
  std::string x = b.input("x", {1, 2, 8, 8});
  std::string skip = b.input("skip", {1, 3, 8, 8});
  std::string c = b.op("conv", {x, b.weight({3, 2, 3, 3}, 0.3), b.weight({3}, 0.3)}, conv_attrs({1, 1, 1, 1}, {1, 1}));
  ir::Attrs mp;
  mp.set("kernel_shape", std::vector<std::int64_t>{2, 2});
  mp.set("strides", std::vector<std::int64_t>{2, 2});
  ir::Attrs one = models::ints_attr("kernel_shape", {1, 1});
  const ir::Graph g = b.finish({b.op("relu", {c}), b.op("relu", {b.op("add", {c, skip})}), b.op("max_pool", {x}, mp),
                                b.op("max_pool", {x}, one), b.op("avg_pool", {x}, mp)});
  std::vector<ir::Tensor> inputs = random_inputs(g, 5);
  const double inf = std::numeric_limits<double>::infinity();
  inputs[0].set(9, std::nan(""));  // channel 0 (1, 1): NaN through the convolution and one pooling window
  for (std::size_t i : {36, 37, 44, 45}) inputs[0].set(i, -inf);  // a 2x2 window of -inf
  inputs[0].set(64 + 20, inf);                                    // inf times weights of either sign
  inputs[1].set(100, std::nan(""));                               // NaN in the residual only
  auto exec = runtime::CudaExecutor::create(g);
  if (!exec) FAIL(exec.error().to_string());
  int fused = 0;
  for (const lower::Step& st : (*exec)->program().steps) fused += st.label.find("relu") != std::string::npos;
  CHECK(fused == 2);  // both ReLUs are cuDNN's activation
  check_executor_on(g, inputs, 1e-4);
}

TEST_CASE("Random elementwise graphs of every type run on the device as the interpreter runs them") {
  int failing = 0;
  for (std::uint32_t seed = 1; seed <= 100; ++seed) {
    const test::RandomGraph r = test::random_elementwise_graph(seed);
    INFO("seed " << seed << ": " << r.text);
    auto want = runtime::interpret(r.graph, r.inputs);
    auto exec = runtime::CudaExecutor::create(r.graph);
    if (!exec) FAIL(exec.error().to_string());
    // (A division by zero: the same node named, through the kernels' fault bits.)
    failing += test::check_same_as_interpreter((*exec)->run(r.inputs), want);
  }
  CHECK(failing > 0);
}

TEST_CASE("Bundled models run on the device and match the interpreter - before and after saturn opt") {
  for (const char* name : {"mlp", "transformer_layer", "resnet_small"}) {
    INFO(name);
    const std::string dir = test::source_dir() + "/docs/examples/models/";
    auto g = ir::import_onnx_file(dir + name + ".onnx");
    REQUIRE(g);
    check_executor(*g, 1e-3);
    pipeline::OptimizeOptions o;
    o.target = "cuda";
    o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cuda");
    auto opt = pipeline::optimize(*g, o);
    if (!opt) FAIL(opt.error().to_string());
    check_executor(opt->graph, 1e-3);
  }
}

TEST_CASE("Later runs replay CUDA graphs - the same values as step by step - SATURN_CUDA_GRAPHS=0 turns them off") {
  for (const char* name : {"transformer_layer", "resnet_small"}) {
    INFO(name);
    auto g = ir::import_onnx_file(test::source_dir() + "/docs/examples/models/" + name + ".onnx");
    REQUIRE(g);
    pipeline::OptimizeOptions o;
    o.target = "cuda";
    o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cuda");
    auto opt = pipeline::optimize(*g, o);
    if (!opt) FAIL(opt.error().to_string());
    const auto inputs = random_inputs(opt->graph, 5);
    runtime::CudaExecutorOptions off;
    off.graphs = false;
    auto direct = runtime::CudaExecutor::create(opt->graph, off);
    auto graphs = runtime::CudaExecutor::create(opt->graph);
    REQUIRE(direct);
    REQUIRE(graphs);
    CHECK((*graphs)->graph_steps() == 0);  // nothing is captured before the first run
    auto want = (*direct)->run(inputs);
    REQUIRE(want);
    for (int run = 0; run < 3; ++run) {
      auto got = (*graphs)->run(inputs);
      REQUIRE(got);
      // The same kernels and library calls in the same order: the same bits.
      for (std::size_t k = 0; k < got->size(); ++k)
        CHECK(std::memcmp((*got)[k].bytes(), (*want)[k].bytes(), (*want)[k].nbytes()) == 0);
    }
    INFO((*graphs)->graphs_note());
    const std::size_t steps = (*graphs)->program().steps.size();
    // Every step is in a graph but those that wait for the host, and one
    // alone between two of them.
    std::size_t capturable = 0, streak = 0;
    for (const lower::Step& st : (*graphs)->program().steps) {
      streak = st.host_sync ? 0 : streak + 1;
      capturable += streak == 2 ? 2 : streak > 2 ? 1 : 0;
    }
    CHECK((*graphs)->graph_steps() == capturable);
    CHECK((*graphs)->graph_steps() > steps / 2);
    CHECK((*direct)->graph_steps() == 0);
    // With graphs, the device waits for no host launch between steps.
    double direct_ms = 1e9, graph_ms = 1e9;
    for (int run = 0; run < 20; ++run) {
      REQUIRE((*direct)->run(inputs));
      direct_ms = std::min(direct_ms, (*direct)->device_ms());
      REQUIRE((*graphs)->run(inputs));
      graph_ms = std::min(graph_ms, (*graphs)->device_ms());
    }
    std::cout << name << ": " << steps << " steps, best device ms step by step " << direct_ms << ", in graphs "
              << graph_ms << "\n";
  }
  ::setenv("SATURN_CUDA_GRAPHS", "0", 1);
  const std::string dir = test::source_dir() + "/docs/examples/models/";
  auto g = ir::import_onnx_file(dir + "mlp.onnx");
  REQUIRE(g);
  auto exec = runtime::CudaExecutor::create(*g);
  ::unsetenv("SATURN_CUDA_GRAPHS");
  REQUIRE(exec);
  const auto inputs = random_inputs(*g, 5);
  REQUIRE((*exec)->run(inputs));
  REQUIRE((*exec)->run(inputs));
  CHECK((*exec)->graph_steps() == 0);
  CHECK((*exec)->graphs_note().find("SATURN_CUDA_GRAPHS=0") != std::string::npos);
}

// ONNX backend conformance on the device: every case the importer takes,
// compiled for the CUDA target and run by its executor, against the case's
// expected outputs (the CPU conformance test's tolerance). Cases whose
// program runs everything on the host are counted apart.
TEST_CASE("saturn calibrate - opt --measure and run --bench measure on the device") {
  namespace fs = std::filesystem;
  const std::string dir = test::source_dir() + "/docs/examples/models/";
  const fs::path cache = test::scratch_file("cuda-calibration.json");
  fs::remove(cache);
  const std::string file = " --calibration-file " + cache.string();
  // Every timed op of the model and of its e-graph measured on the device, once.
  auto cal = test::run_cli("calibrate " + dir + "resnet_small.onnx --target cuda --json" + file);
  REQUIRE(cal.status == 0);
  const auto c = nlohmann::json::parse(cal.out);
  CHECK_THAT(c["machine"].get<std::string>(), Catch::EndsWith(", cuda"));
  const int measured = c["models"][0]["measured"].get<int>();
  CHECK(measured > 3);
  CHECK(c["models"][0]["failed"].empty());
  CHECK(c["entries"].get<int>() == measured);
  const auto saved = nlohmann::json::parse(std::ifstream(cache));
  REQUIRE(saved.at("entries").size() == static_cast<std::size_t>(measured));
  for (const auto& [sig, us] : saved.at("entries").items()) {
    INFO(sig);
    CHECK(us.get<double>() > 0);
    CHECK(us.get<double>() < 1e5);  // well under 0.1 s for a small model's op
  }
  // The next optimization prices every timed op with the measurements.
  auto opt = test::run_cli("opt " + dir + "resnet_small.onnx --target cuda --json" + file);
  REQUIRE(opt.status == 0);
  const auto report = nlohmann::json::parse(opt.out);
  CHECK(report["calibration"]["modeled_ops"] == 0);
  CHECK(report["calibration"]["entries"].get<int>() == measured);
  // --measure: both programs run on the device, agree, and are timed.
  auto m = test::run_cli("opt " + dir + "resnet_small.onnx --target cuda --measure --measure-runs 5 --json --inputs " +
                         dir + "resnet_small.input.pb" + file);
  REQUIRE(m.status == 0);
  const auto mr = nlohmann::json::parse(m.out)["measured"];
  CHECK(mr["target"] == "cuda");
  CHECK(mr["outputs_agree"] == true);
  CHECK(mr["written_ms"].get<double>() > 0);
  CHECK(mr["optimized_device_ms"].get<double>() > 0);
  CHECK(mr["optimized_device_ms"].get<double>() <= mr["optimized_ms"].get<double>());  // the copies are outside
  // run --bench: each run's device time beside the host-to-host one.
  auto run = test::run_cli("run " + dir + "resnet_small.onnx --target cuda --bench 4 --json --inputs " + dir +
                           "resnet_small.input.pb" + file);
  REQUIRE(run.status == 0);
  const auto r = nlohmann::json::parse(run.out);
  REQUIRE(r["device_ms"].size() == 4);
  CHECK(r["device_median_ms"].get<double>() > 0);
  CHECK(r["device_median_ms"].get<double>() <= r["median_ms"].get<double>());
  fs::remove(cache);
}

TEST_CASE("ONNX backend conformance on the CUDA target") {
  namespace fs = std::filesystem;
  const fs::path root = test::tests_root();
  if (!fs::exists(root)) {
    WARN("ONNX test data not found at " << root.string() << ": CUDA conformance not run");
    return;
  }
  // SATURN_TEST_SHARD=K/N runs every Nth case from the Kth (tools/gpu_run.sh
  // runs N processes side by side: one takes minutes of NVRTC compiles).
  int shard = 0, shards = 1;
  if (const char* s = std::getenv("SATURN_TEST_SHARD"))
    if (std::sscanf(s, "%d/%d", &shard, &shards) != 2 || shards < 1 || shard < 0 || shard >= shards)
      FAIL("SATURN_TEST_SHARD must be K/N with 0 <= K < N, got '" << s << "'");
  int on_device = 0, host_only = 0, skipped = 0, index = 0;
  std::vector<std::string> failures;
  for (const char* folder : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    for (const fs::path& c : test::cases_in(root / folder)) {
      if (index++ % shards != shard) continue;
      const fs::path ds = c / "test_data_set_0";
      if (!fs::exists(ds)) continue;
      auto data = test::read_data_set(ds);
      auto g = data ? ir::import_onnx_for_inputs((c / "model.onnx").string(), data->inputs)
                    : Expected<ir::Graph>(Diagnostic{});
      if (!data || !g) {
        ++skipped;
        continue;
      }
      const std::string name = std::string(folder) + "/" + c.filename().string();
      auto exec = runtime::CudaExecutor::create(*g);
      if (!exec) {
        failures.push_back(name + ": compile: " + exec.error().message);
        continue;
      }
      const lower::Program& p = (*exec)->program();
      (p.fused_kernels + p.library_calls > 0 ? on_device : host_only) += 1;
      auto got = (*exec)->run(ir::runtime_inputs(*g, data->inputs));
      if (!got) {
        failures.push_back(name + ": run: " + got.error().message);
        continue;
      }
      if (std::string diff = test::outputs_mismatch(*got, data->expected); !diff.empty())
        failures.push_back(name + ": " + diff);
    }
  }
  std::cout << "\nCUDA conformance: " << on_device << " cases with device kernels or library calls, " << host_only
            << " on the host only, " << skipped << " not imported, " << failures.size() << " failed\n";
  for (const auto& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(on_device > 300 / shards);
  CHECK(failures.empty());
}

int main(int argc, char** argv) {
  auto driver = cuda::CudaDriver::get();
  if (!driver) {
    std::cout << "SKIPPED: the CUDA device tests need a GPU: " << driver.error().message << "\n";
    return 77;
  }
  const cuda::DeviceInfo& d = (*driver)->device(0);
  std::cout << "CUDA device 0: " << d.name << " (sm_" << d.sm_major << d.sm_minor << ", " << d.memory_bytes / (1 << 20)
            << " MiB), driver " << (*driver)->version() << "\n";
  return test::run_catch_session(argc, argv);
}
