// The CPU backend's generated kernels against the reference interpreter:
// fused elementwise chains on odd shapes (1, primes, sizes that are not a
// multiple of the vector width), broadcasts, transposed reads, reductions
// along every axis, softmax / layer_norm, matrix products with transposed
// and batched operands; plus the inline exp / tanh / erf against the C
// library, the fusion of an 8-op chain into one kernel, and vector code in
// the generated IR.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <regex>
#include <tuple>

#include "bench/models.hpp"
#include "ir/sat_format.hpp"
#include "lower/loop_kernel.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"
#include "tests/library_calls.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
using Dims = std::vector<std::int64_t>;
using test::random_tensor;

namespace {

std::shared_ptr<const lower::Program> check_against_interpreter(const ir::Graph& g, std::vector<ir::Tensor> inputs,
                                                                double rtol = 1e-5, double atol = 1e-5);

// Runs g on the CPU target and in the interpreter, on random inputs of the
// graph's input types; returns the CPU program.
std::shared_ptr<const lower::Program> check_against_interpreter(const ir::Graph& g, double rtol = 1e-5,
                                                                double atol = 1e-5) {
  std::vector<ir::Tensor> inputs;
  std::uint32_t seed = 1;
  for (const ir::GraphValue& in : g.inputs)
    inputs.push_back(random_tensor(ir::static_dims(in.type.shape), seed++, -3, 3, in.type.dtype));
  return check_against_interpreter(g, std::move(inputs), rtol, atol);
}

std::shared_ptr<const lower::Program> check_program(const ir::Graph& g, const std::vector<ir::Tensor>& inputs,
                                                    const std::vector<ir::Tensor>& want, double rtol, double atol);

// The same on the given inputs, for the graph as written (Saturn's loop
// nests) and with the library calls the CPU rules substitute; returns the
// program of the latter.
std::shared_ptr<const lower::Program> check_against_interpreter(const ir::Graph& g, std::vector<ir::Tensor> inputs,
                                                                double rtol, double atol) {
  auto want = runtime::interpret(g, inputs);
  REQUIRE(want);
  const ir::Graph library = test::as_library_calls(g, "cpu");
  {
    INFO("the graph as written");
    check_program(g, inputs, *want, rtol, atol);
  }
  INFO("with library calls");
  return check_program(library, inputs, *want, rtol, atol);
}

std::shared_ptr<const lower::Program> check_program(const ir::Graph& g, const std::vector<ir::Tensor>& inputs,
                                                    const std::vector<ir::Tensor>& want, double rtol, double atol) {
  runtime::CpuExecutorOptions o;
  o.threads = 2;
  o.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
  o.lowering.keep_ir = true;
  auto exec = runtime::CpuExecutor::create(g, o);
  if (!exec) FAIL(exec.error().to_string());
  auto got = (*exec)->run(inputs);
  if (!got) FAIL(got.error().to_string());
  REQUIRE(got->size() == want.size());
  for (std::size_t k = 0; k < got->size(); ++k) {
    const ir::Tensor& a = (*got)[k];
    const ir::Tensor& b = want[k];
    REQUIRE(a.dims() == b.dims());
    REQUIRE(a.dtype() == b.dtype());
    for (std::size_t i = 0; i < a.numel(); ++i) {
      INFO("output " << k << " element " << i << " of " << a.summary());
      if (std::isnan(b.at(i)))
        CHECK(std::isnan(a.at(i)));
      else
        CHECK(a.at(i) == Approx(b.at(i)).epsilon(rtol).margin(atol));
    }
  }
  std::shared_ptr<runtime::CpuExecutor> owner = std::move(*exec);
  // Each output is a buffer of its own, exactly its size.
  const lower::Program& program = owner->program();
  REQUIRE(program.outputs.size() == program.output_dims.size());
  for (std::size_t k = 0; k < program.outputs.size(); ++k) {
    const lower::Buffer& out = program.buffers[static_cast<std::size_t>(program.outputs[k])];
    CHECK(out.bytes == static_cast<std::size_t>(ir::numel(program.output_dims[k])) * ir::dtype_size(out.dtype));
  }
  return std::shared_ptr<const lower::Program>(owner, &owner->program());
}

// Nothing of p runs a reference kernel.
void check_native(const lower::Program& p) {
  CHECK(p.reference_ops.empty());
  CHECK(std::none_of(p.steps.begin(), p.steps.end(),
                     [](const lower::Step& s) { return s.kind == lower::StepKind::Reference; }));
}

int steps_with(const lower::Program& p, const std::string& text) {
  int n = 0;
  for (const lower::Step& s : p.steps) n += s.label.find(text) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("Fused elementwise chains match the interpreter on odd shapes and broadcasts") {
  for (const Dims& dims : std::vector<Dims>{{1}, {7}, {1031}, {17, 13}, {3, 1, 31}, {2, 5, 7, 3}, {4, 67}}) {
    INFO("shape of size " << dims.size() << " last " << dims.back());
    models::GraphBuilder b("chain");
    std::string x = b.input("x", dims);
    std::string y = b.input("y", {dims.back()});  // broadcast along the last axis
    std::string s = b.input("s", {});             // a scalar
    std::string t = b.op("mul", {b.op("add", {x, y}), s});
    t = b.op("gelu", {t});
    t = b.op("sub", {t, b.op("tanh", {x})});
    t = b.op("div", {t, b.op("add", {b.op("exp", {y}), s})});
    t = b.op("sigmoid", {b.op("max", {t, b.op("neg", {x})})});
    auto p = check_against_interpreter(b.finish({t}));
    // exp(y) + s has y's shape: computed once by a kernel of its own, then
    // read broadcast (not recomputed per row) unless it has the result's shape.
    CHECK(p->fused_kernels == (dims.size() == 1 ? 1 : 2));
  }
}

TEST_CASE("A chain of 8 elementwise ops is one kernel that reads its input once") {
  models::GraphBuilder b("chain8");
  std::string x = b.input("x", {64, 1000});
  std::string t = x;
  for (const char* op : {"relu", "exp", "neg", "sigmoid", "sqrt", "tanh", "abs", "erf"}) t = b.op(op, {t});
  auto p = check_against_interpreter(b.finish({t}));
  CHECK(p->fused_kernels == 1);
  CHECK(p->fused_ops == 8);
  CHECK(p->steps.size() == 1);
  // Vectorized by LLVM for the host (AVX-512 or AVX2 lanes).
  CHECK((p->ir_text.find("<16 x float>") != std::string::npos || p->ir_text.find("<8 x float>") != std::string::npos));
}

TEST_CASE("Rows of one to four vectors keep vector code - a channel scale of NHWC data - sums of short rows") {
  // LLVM unrolls loops this short before it vectorizes; the kernel keeps
  // them loops, so each row is vector loads (not gathers and scatters
  // across rows, nor scalar code).
  auto vector_loads = [](const std::string& ir) {
    return ir.find("load <16 x float>") != std::string::npos || ir.find("load <8 x float>") != std::string::npos;
  };
  for (std::int64_t channels : {16, 24, 32, 40}) {
    INFO(channels << " channels");
    models::GraphBuilder b("channel_scale");  // a squeeze-and-excitation scale
    std::string x = b.input("x", {1, 9, 11, channels});
    std::string s = b.input("s", {1, 1, 1, channels});
    auto p = check_against_interpreter(b.finish({b.op("mul", {x, s})}));
    REQUIRE(p->fused_kernels == 1);
    CHECK(vector_loads(p->ir_text));
    CHECK(p->ir_text.find("masked.scatter") == std::string::npos);
    CHECK(p->ir_text.find("masked.gather") == std::string::npos);
  }
  for (std::int64_t n : {16, 32, 50, 64}) {
    INFO("rows of " << n);
    models::GraphBuilder b("row_sums");
    std::string x = b.input("x", {37, n});
    ir::Attrs a = models::ints_attr("axes", {1});
    auto p = check_against_interpreter(b.finish({b.op("reduce_sum", {x}, a)}), 1e-5, 1e-5);
    CHECK(vector_loads(p->ir_text));
  }
}

namespace {

// Six rows of n values of type t for a maximum's and a minimum's edge
// cases: NaN first (row 0), NaN last (row 1: in the last lanes), all equal
// (row 2), +inf last and -inf at a third (row 3), alternating signed zeros
// (row 4), random values (row 5).
ir::Tensor extreme_rows(std::int64_t n, ir::DType t) {
  ir::Tensor in = random_tensor({6, n}, 5, -3, 3, t);
  auto at = [n](std::int64_t row, std::int64_t j) { return static_cast<std::size_t>(row * n + j); };
  in.set(at(0, 0), NAN);
  in.set(at(1, n - 1), NAN);
  for (std::int64_t j = 0; j < n; ++j) in.set(at(2, j), 1.5);
  in.set(at(3, n - 1), INFINITY);
  in.set(at(3, n / 3), -INFINITY);
  for (std::int64_t j = 0; j < n; ++j) in.set(at(4, j), j % 2 ? 0.0 : -0.0);
  return in;
}

// Runs g, whose first two results are the maximum and the minimum of
// extreme_rows' rows, and checks their exact values: NaN where the row has
// one, the extremes, and a zero for the signed zeros (either sign: they
// are equal).
void check_extremes(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  auto exec = runtime::CpuExecutor::create(g, runtime::CpuExecutorOptions{});
  REQUIRE(exec);
  auto got = (*exec)->run(inputs);
  REQUIRE(got);
  const ir::Tensor& mx = (*got)[0];
  const ir::Tensor& mn = (*got)[1];
  CHECK(std::isnan(mx.at(0)));
  CHECK(std::isnan(mn.at(1)));
  CHECK(mx.at(2) == 1.5);
  CHECK(mn.at(2) == 1.5);
  CHECK(mx.at(3) == INFINITY);
  CHECK(mn.at(3) == -INFINITY);
  CHECK(mx.at(4) == 0.0);
  CHECK(mn.at(4) == 0.0);
}

}  // namespace

TEST_CASE("A maximum or minimum of a fused body is vector lanes over the row computed first - NaN in the tail") {
  // A masked softmax's x + mask: the row's values are computed into a
  // buffer, then taken in lanes (half a vector below 128 elements); the
  // elements the lanes do not divide are taken one by one.
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    for (std::int64_t n : {16, 17, 50, 127, 128, 200}) {
      INFO(ir::dtype_name(t) << " rows of " << n);
      models::GraphBuilder b("masked_rows");
      std::string x = b.input("x", {6, n}, t);
      std::string mask = b.input("mask", {n}, t);    // zeros
      std::string scale = b.input("scale", {n}, t);  // ones
      auto over = [&](const char* op, const std::string& v) {
        ir::Attrs a = models::ints_attr("axes", {1});
        a.set("keepdims", std::int64_t{0});
        return b.op(op, {v}, a);
      };
      ir::Attrs last;
      last.set("axis", std::int64_t{-1});
      const std::string masked = b.op("add", {x, mask});
      const ir::Graph g = b.finish(
          {over("reduce_max", masked), over("reduce_min", b.op("mul", {x, scale})), b.op("softmax", {masked}, last)});
      const ir::Tensor in = extreme_rows(n, t);  // (row 1's NaN in the tail where n % lanes != 0)
      ir::Tensor zeros(t, {n}), ones(t, {n});
      for (std::int64_t j = 0; j < n; ++j) ones.set(static_cast<std::size_t>(j), 1.0);
      check_against_interpreter(g, {in, zeros, ones});
      {  // the maximum alone: its lanes halved by shuffles at the end
        models::GraphBuilder m("masked_max");
        std::string mx = m.input("x", {6, n}, t);
        const std::string sum = m.op("add", {mx, m.input("mask", {n}, t)});
        auto p = check_against_interpreter(m.finish({m.op("reduce_max", {sum}, models::ints_attr("axes", {1}))}),
                                           {in, zeros});
        const std::string lanes = t == ir::DType::F64 ? (n >= 128 ? "<8 x double>" : "<4 x double>")
                                                      : (n >= 128 ? "<16 x float>" : "<8 x float>");
        CHECK(p->ir_text.find("shufflevector " + lanes) != std::string::npos);
      }
      check_extremes(g, {in, zeros, ones});
    }
  }
}

TEST_CASE("A reduction over channels-last data reduces by columns - vectorized - NaN kept") {
  // A global average pool of NHWC data seen as NCHW (as oneDNN leaves it):
  // the kept channels are contiguous, the reduced H and W are not.
  for (std::int64_t channels : {64, 24, 12}) {
    INFO(channels << " channels");
    models::GraphBuilder b("pool_nhwc");
    std::string x = b.input("x", {2, 5, 7, channels});
    ir::Attrs perm = models::ints_attr("perm", {0, 3, 1, 2});
    std::string nchw = b.op("transpose", {x}, perm);
    auto over = [&](const char* op, const std::string& v) {
      ir::Attrs a = models::ints_attr("axes", {2, 3});
      a.set("keepdims", std::int64_t{1});
      return b.op(op, {v}, a);
    };
    const ir::Graph g = b.finish({over("reduce_mean", nchw), over("reduce_max", nchw), over("reduce_min", nchw),
                                  over("reduce_sum", nchw), over("reduce_sum", b.op("exp", {nchw}))});
    ir::Tensor in = random_tensor({2, 5, 7, channels}, 3, -3, 3);
    in.set(5, NAN);  // one channel's max, min, sum and mean are NaN
    auto p = check_against_interpreter(g, {in});
    // Blocks of 8 to 64 channels: each step of the reduction loads a block's
    // columns as vectors (the SLP vectorizer's, of the unrolled loop over
    // them), and the sum of exp (fused into the reduction) is a loop over
    // the block's columns (c.post, after the accumulators); 12 channels keep
    // a row per result.
    const bool columns = channels % 8 == 0;
    CHECK((p->ir_text.find("c.post") != std::string::npos) == columns);
    if (columns) CHECK(std::regex_search(p->ir_text, std::regex("= load <(8|16|32|64) x float>")));
  }
}

TEST_CASE("A cheap expression fused into a reduction by columns is computed as vectors - the same values") {
  // A ReLU fused into the global average pool of channels-last data (a
  // convolution's result followed by ReLU and reduce_mean, as SqueezeNet's
  // last layer is extracted): the columns' bodies are unrolled into scalar
  // operations, which only the SLP vectorizer makes vector ones again
  // (PassBuilder leaves it off unless asked). Scalar, SqueezeNet's [1 13 13
  // 1000] pool took 24-54 us; as vectors, 5-10.
  for (std::int64_t channels : {64, 8}) {
    INFO(channels << " channels");
    models::GraphBuilder b("relu_pool_nhwc");
    std::string x = b.input("x", {1, 6, 5, channels});
    std::string nchw = b.op("transpose", {x}, models::ints_attr("perm", {0, 3, 1, 2}));
    ir::Attrs a = models::ints_attr("axes", {2, 3});
    a.set("keepdims", std::int64_t{1});
    const ir::Graph g = b.finish({b.op("reduce_mean", {b.op("relu", {nchw})}, a)});
    auto p = check_against_interpreter(g, {random_tensor({1, 6, 5, channels}, 7, -3, 3)});
    const std::regex vector_relu("fcmp [a-z]+ <(8|16|32|64) x float>");
    CHECK(std::regex_search(p->ir_text, vector_relu));
  }
}

TEST_CASE("A large reduction by columns is split in parts the threads share - the same values - NaN kept") {
  // A global pool of channels-last data, 64 channels over 32x40 pixels:
  // each of the two threads reduces half the pixels (the half its core
  // wrote, where a split of the channels had each read every pixel), and
  // a second kernel reduces the two parts with the op's own ending (the
  // mean's division, l2's square root, log_sum's log). An odd pixel count
  // splits in the fewest equal parts (33x41: three), a prime one not at
  // all, and a small pool is not worth a second kernel.
  for (const auto& [h, w, split] :
       {std::tuple{32, 40, true}, std::tuple{33, 41, true}, std::tuple{1, 1031, false}, std::tuple{4, 8, false}}) {
    INFO(h << "x" << w);
    models::GraphBuilder b("pool_parts");
    std::string x = b.input("x", {1, h, w, 64});
    std::string nchw = b.op("transpose", {x}, models::ints_attr("perm", {0, 3, 1, 2}));
    auto over = [&](const char* op, const std::string& v) {
      ir::Attrs a = models::ints_attr("axes", {2, 3});
      a.set("keepdims", std::int64_t{1});
      return b.op(op, {v}, a);
    };
    const ir::Graph g =
        b.finish({over("reduce_mean", nchw), over("reduce_max", nchw), over("reduce_min", nchw),
                  over("reduce_l2", nchw), over("reduce_log_sum", b.op("exp", {nchw})), over("reduce_prod", nchw)});
    ir::Tensor in = random_tensor({1, h, w, 64}, 5, 0.5, 1.5);
    in.set(64 * (h * w - 1) + 3, NAN);  // channel 3's last pixel: in the second part
    auto p = check_against_interpreter(g, {in}, 1e-4, 1e-5);
    int parts = 0;
    for (const lower::Step& s : p->steps) parts += s.label.find("(parts)") != std::string::npos;
    CHECK(parts == (split ? 6 : 0));
  }
}

TEST_CASE("A maximum or minimum along contiguous rows is vector lanes - NaN anywhere - ties - softmax - f64") {
  // Rows of one vector, of two, of lengths the lanes do not divide (the
  // last lanes are taken again) and shorter than a vector (one accumulator).
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    for (std::int64_t n : {16, 32, 17, 50, 129, 7}) {
      INFO(ir::dtype_name(t) << " rows of " << n);
      models::GraphBuilder b("rows");
      std::string x = b.input("x", {6, n}, t);
      auto over = [&](const char* op) {
        ir::Attrs a = models::ints_attr("axes", {1});
        a.set("keepdims", std::int64_t{0});
        return b.op(op, {x}, a);
      };
      ir::Attrs last;
      last.set("axis", std::int64_t{-1});
      const ir::Graph g = b.finish({over("reduce_max"), over("reduce_min"), b.op("softmax", {x}, last)});
      const ir::Tensor in = extreme_rows(n, t);  // (row 1's NaN in the lanes taken again)
      check_against_interpreter(g, {in});
      if (n >= (t == ir::DType::F64 ? 8 : 16)) {  // the maximum alone loads vectors
        models::GraphBuilder m("max");
        const ir::Graph one = m.finish({m.op("reduce_max", {m.input("x", {6, n}, t)}, models::ints_attr("axes", {1}))});
        auto p = check_against_interpreter(one, {in});
        CHECK(p->ir_text.find(t == ir::DType::F64 ? "load <8 x double>" : "load <16 x float>") != std::string::npos);
      }
      check_extremes(g, {in});
    }
  }
}

TEST_CASE("Transposed and expanded operands are read in place") {
  models::GraphBuilder b("views");
  std::string x = b.input("x", {5, 3, 7});
  std::string y = b.input("y", {7, 3, 5});
  std::string z = b.input("z", {3, 1});
  std::string xt = b.op("transpose", {x}, models::ints_attr("perm", {2, 1, 0}));
  std::string e = b.op("expand", {z}, models::ints_attr("shape", {7, 3, 5}));
  std::string out = b.op("add", {b.op("mul", {xt, y}), e});
  auto p = check_against_interpreter(b.finish({out}));
  CHECK(p->fused_kernels == 1);
  SECTION("a perm counted from the end, and the default perm") {
    // perm [-1 0 1] is [2 0 1] (ir::transpose_perm, shared by the op, the
    // lowering's view and the cost model).
    models::GraphBuilder c("negative_perm");
    std::string v = c.input("v", {5, 3, 7});
    std::string back = c.op("transpose", {v}, models::ints_attr("perm", {-1, 0, 1}));
    std::string rev = c.op("transpose", {c.input("w", {3, 5, 7})}, ir::Attrs{});
    check_against_interpreter(c.finish({c.op("add", {back, rev})}));
  }
}

TEST_CASE("Slices and splits are read in place - strided - reversed - of fused values - into products and reshapes") {
  auto slice = [](std::vector<std::int64_t> starts, std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                  std::vector<std::int64_t> steps) {
    ir::Attrs a = models::ints_attr("starts", std::move(starts));
    a.set("ends", std::move(ends));
    a.set("axes", std::move(axes));
    a.set("steps", std::move(steps));
    return a;
  };
  models::GraphBuilder b("slices");
  std::string x = b.input("x", {6, 9});
  std::string y = b.input("y", {4, 4});
  std::string w = b.input("w", {5, 3});
  // Rows 1..4, every other column from 1; the columns reversed; of exp(x).
  std::string strided = b.op("slice", {x}, slice({1, 1}, {5, 9}, {0, 1}, {1, 2}));
  std::string reversed = b.op("slice", {x}, slice({-1, 4}, {-100, 0}, {1, 0}, {-2, -1}));
  std::string of_fused = b.op("slice", {b.op("exp", {x})}, slice({2}, {5}, {1}, {1}));
  std::string a = b.op("add", {strided, y});
  std::string r = b.op("neg", {reversed});
  // Into a product: a strided operand is read in place, a reversed one copied.
  std::string m1 = b.op("matmul", {b.op("slice", {x}, slice({0, 2}, {4, 7}, {0, 1}, {1, 1})), w});
  std::string m2 = b.op("matmul", {b.op("slice", {x}, slice({5, 8}, {1, 3}, {0, 1}, {-1, -1})), w});
  // Straight to an output, into a reshape, and an empty slice.
  std::string out = b.op("slice", {x}, slice({1}, {3}, {0}, {1}));
  std::string flat = b.op("reshape", {strided}, models::ints_attr("shape", {16}));
  std::string empty = b.op("relu", {b.op("slice", {x}, slice({7}, {9}, {0}, {1}))});
  // A split into uneven parts along the columns of a fused value, one part unused.
  ir::Attrs parts = models::ints_attr("split", {2, 3, 4});
  parts.set("axis", std::int64_t{1});
  auto split = b.op_results("split", {b.op("tanh", {x})}, 3, parts);
  std::string joined = b.op("add", {b.op("slice", {split[1]}, slice({0}, {2}, {1}, {1})), split[0]});
  auto p = check_against_interpreter(b.finish({a, r, of_fused, m1, m2, out, flat, empty, joined, split[2]}));
  CHECK(p->reference_ops.empty());
  // add, neg, exp (stored whole, then sliced), m2's copy, out's copy, flat's
  // copy, relu, tanh, the second add, split[2]'s copy.
  CHECK(p->fused_kernels <= 11);
}

TEST_CASE("Concat is block copies of any element type - along every axis - of views and fused values") {
  for (std::int64_t axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    models::GraphBuilder b("concat");
    std::string x = b.input("x", {3, 4, 5});
    std::string y = b.input("y", {3, 4, 5});
    ir::Attrs a;
    a.set("axis", axis);
    // A fused value, a transposed view (copied contiguous first), an input,
    // a constant, and an empty operand.
    std::string t = b.op("transpose", {b.op("transpose", {y}, models::ints_attr("perm", {1, 0, 2}))},
                         models::ints_attr("perm", {1, 0, 2}));
    Dims empty_dims{3, 4, 5};
    empty_dims[static_cast<std::size_t>(axis < 0 ? axis + 3 : axis)] = 0;
    std::string joined =
        b.op("concat", {b.op("tanh", {x}), t, y, b.weight({3, 4, 5}, 1.0), b.input("e", empty_dims)}, a);
    auto p = check_against_interpreter(b.finish({b.op("neg", {joined})}));
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "concat (4 block copies)") == 1);
  }
  SECTION("operands in different orders, a fused value after them") {
    // The transposed view ends the search for a shared order before the
    // tanh is computed: the concat is row-major, and the tanh stored for it.
    models::GraphBuilder b("orders");
    ir::Attrs a;
    a.set("axis", std::int64_t{0});
    std::string t = b.op("transpose", {b.input("y", {4, 3})}, models::ints_attr("perm", {1, 0}));
    std::string joined = b.op("concat", {b.input("x", {2, 4}), t, b.op("tanh", {b.input("z", {5, 4})})}, a);
    auto p = check_against_interpreter(b.finish({b.op("neg", {joined})}));
    CHECK(steps_with(*p, "concat (3 block copies)") == 1);
  }
  SECTION("large enough to split over the pool") {
    models::GraphBuilder b("big");
    ir::Attrs a;
    a.set("axis", std::int64_t{1});
    std::string joined = b.op("concat", {b.input("x", {64, 600}), b.input("y", {64, 500})}, a);  // 275 KiB
    auto p = check_against_interpreter(b.finish({b.op("neg", {joined})}));
    CHECK(steps_with(*p, "concat (2 block copies)") == 1);
  }
  SECTION("stacks along a new innermost axis interleave their operands") {
    // Blocks of one element: a typed loop, not a memcpy per element; two
    // contiguous f32 operands, and three i64 ones (one a transposed view,
    // copied first), each element to its place.
    models::GraphBuilder b("stack");
    ir::Attrs last;
    last.set("axis", std::int64_t{2});
    std::string f = b.op("concat", {b.input("x", {3, 40, 1}), b.op("tanh", {b.input("y", {3, 40, 1})})}, last);
    ir::Attrs to_i64, to_f32;
    to_i64.set("to", std::string("i64"));
    to_f32.set("to", std::string("f32"));
    std::string i = b.op("cast", {b.input("z", {3, 40, 1})}, to_i64);
    std::string t =
        b.op("transpose", {b.op("cast", {b.input("w", {40, 3, 1})}, to_i64)}, models::ints_attr("perm", {1, 0, 2}));
    std::string ints = b.op("cast", {b.op("concat", {i, t, i}, last)}, to_f32);
    auto p = check_against_interpreter(b.finish({b.op("neg", {f}), ints}));
    CHECK(steps_with(*p, "concat (2 block copies) (interleaved)") == 1);
    CHECK(steps_with(*p, "concat (3 block copies) (interleaved)") == 1);
  }
  SECTION("integers") {
    models::GraphBuilder b("ints");
    std::string x = b.input("x", {2, 3});
    ir::Attrs cast;
    cast.set("to", std::string("i64"));
    ir::Attrs a;
    a.set("axis", std::int64_t{1});
    std::string i = b.op("cast", {x}, cast);
    std::string joined = b.op("concat", {i, i}, a);
    ir::Attrs back;
    back.set("to", std::string("f32"));
    auto p = check_against_interpreter(b.finish({b.op("cast", {joined}, back)}));
    CHECK(steps_with(*p, "concat (2 block copies)") == 1);
  }
}

TEST_CASE("Chains of softmax and layer_norm stay linear - kernels read few values - repeated kernels compile once") {
  // Each softmax reads its operand in three kernels; a pending operand
  // recomputed in each would nest every earlier softmax in each kernel.
  for (const char* op : {"softmax", "layer_norm"}) {
    INFO(op);
    models::GraphBuilder b("chain");
    std::string t = b.input("x", {3, 16});
    for (int i = 0; i < 60; ++i) t = std::string(op) == "softmax" ? b.op("softmax", {t}) : b.layer_norm(t, 16);
    auto p = check_against_interpreter(b.finish({t}), 1e-4, 1e-5);
    std::size_t most = 0;
    for (const lower::LoopKernel& k : *p->kernels) most = std::max(most, k.leaves.size());
    CHECK(most <= 32);  // bounded, whatever the length (nesting all: 60 softmaxes, 120 leaves)
    // The kernels repeat: LLVM compiles each distinct one once.
    CHECK(static_cast<int>(p->kernels->size()) > 100);
    CHECK(std::count(p->ir_text.begin(), p->ir_text.end(), '\n') < 20000);
  }
  // A long elementwise chain: kernels of at most kMaxFusedOps ops.
  models::GraphBuilder b("long");
  std::string t = b.input("x", {4, 8});
  for (int i = 0; i < 1000; ++i) t = b.op(i % 2 ? "sin" : "neg", {t});
  auto p = check_against_interpreter(b.finish({t}));
  CHECK(p->fused_ops == 1000);
  CHECK(p->fused_kernels == 4);  // 256 + 256 + 256 + 232
}

TEST_CASE("Reductions along every axis, softmax and layer_norm match the interpreter") {
  const Dims dims = {3, 5, 7};
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_l2"}) {
    for (const Dims& axes : std::vector<Dims>{{0}, {1}, {2}, {0, 2}, {}}) {
      for (std::int64_t keep : {0, 1}) {
        INFO(op << " over " << axes.size() << " axes, keepdims " << keep);
        models::GraphBuilder b("reduce");
        std::string x = b.input("x", dims);
        ir::Attrs a;
        if (!axes.empty()) a.set("axes", axes);
        a.set("keepdims", keep);
        std::string r = b.op(op, {b.op("exp", {x})}, a);
        check_against_interpreter(b.finish({r}));
      }
    }
  }
  for (std::int64_t axis : {0, 1, -1}) {
    models::GraphBuilder b("softmax");
    std::string x = b.input("x", dims);
    ir::Attrs a;
    a.set("axis", axis);
    std::string s = b.op("softmax", {x}, a);
    std::string l = b.op("log_softmax", {x}, a);
    check_against_interpreter(b.finish({s, l}));
  }
  models::GraphBuilder b("layer_norm");
  std::string x = b.input("x", {2, 9, 33});
  check_against_interpreter(b.finish({b.layer_norm(b.op("add", {x, x}), 33)}));
  // With its mean and inverse standard deviation as results too (ONNX's
  // optional outputs), over the last two axes; the inverse is used twice.
  models::GraphBuilder c("layer_norm_stats");
  std::string y = c.input("y", {2, 9, 33});
  ir::Attrs a;
  a.set("axis", std::int64_t{1});
  auto r = c.op_results("layer_norm", {c.op("exp", {y}), c.weight({9, 33}, 1.0), c.weight({33}, 1.0)}, 3, a);
  auto p = check_against_interpreter(c.finish({r[0], r[1], c.op("mul", {r[2], r[2]}), c.op("neg", {r[2]})}));
  CHECK(p->reference_ops.empty());
}

TEST_CASE("Einsum is one loop kernel - products - diagonals - traces - transposes - broadcasts - any float type") {
  struct Case {
    const char* equation;
    std::vector<Dims> shapes;
    ir::DType dtype;
  };
  const std::vector<Case> cases = {{"ij,jk->ik", {{3, 4}, {4, 5}}, ir::DType::F32},
                                   {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, ir::DType::F64},
                                   {"ii->i", {{4, 4}}, ir::DType::F32},
                                   {"ii", {{5, 5}}, ir::DType::F64},
                                   {"i,i", {{6}, {6}}, ir::DType::F32},
                                   {"...ij->...ji", {{2, 3, 4}}, ir::DType::F32},
                                   {"ij->", {{3, 4}}, ir::DType::F32},
                                   {"ij,kj->ikj", {{3, 1}, {2, 4}}, ir::DType::F32},
                                   {"ab,bc->ac", {{3, 8}, {8, 2}}, ir::DType::F16},
                                   {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, ir::DType::BF16}};
  for (const Case& c : cases) {
    INFO(c.equation << " " << ir::dtype_name(c.dtype));
    models::GraphBuilder b("einsum");
    std::vector<std::string> ins;
    const char* names[] = {"x0", "x1", "x2"};
    for (std::size_t k = 0; k < c.shapes.size(); ++k) ins.push_back(b.input(names[k], c.shapes[k], c.dtype));
    ir::Attrs a;
    a.set("equation", std::string(c.equation));
    const double tol = c.dtype == ir::DType::F16 ? 2e-3 : c.dtype == ir::DType::BF16 ? 1.6e-2 : 1e-5;
    auto p = check_against_interpreter(b.finish({b.op("einsum", ins, a)}), tol, tol);
    CHECK(p->reference_ops.empty());
    CHECK(p->kernels->size() == 1);
  }
}

TEST_CASE("Reductions and softmax of f64 - f16 and bf16 values - prod - log_sum - log_sum_exp - empty axes") {
  const std::vector<const char*> ops = {"reduce_prod", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum",
                                        "reduce_mean", "reduce_max",     "reduce_l2"};
  for (const ir::DType t : {ir::DType::F32, ir::DType::F64, ir::DType::F16, ir::DType::BF16})
    for (const Dims& axes : std::vector<Dims>{{1}, {0, 2}, {}})
      for (std::int64_t keep : {0, 1}) {
        INFO(ir::dtype_name(t) << " over " << axes.size() << " axes, keepdims " << keep);
        models::GraphBuilder b("reduce");
        std::string x = b.input("x", {3, 5, 7}, t);
        ir::Attrs a;
        if (!axes.empty()) a.set("axes", axes);
        a.set("keepdims", keep);
        std::vector<std::string> outs;
        for (const char* op : ops) outs.push_back(b.op(op, {x}, a));
        // Halves: f32 sums may round to the other neighbour.
        const double tol = t == ir::DType::F16 ? 2e-3 : t == ir::DType::BF16 ? 1.6e-2 : 1e-5;
        auto p = check_against_interpreter(b.finish(outs), tol, tol);
        CHECK(p->reference_ops.empty());
        CHECK(static_cast<int>(p->kernels->size()) == static_cast<int>(ops.size()) + 2);  // log_sum_exp: 3
      }
  // softmax / log_softmax of the same types: max and sum kept in f32 (f64).
  for (const ir::DType t : {ir::DType::F64, ir::DType::F16, ir::DType::BF16}) {
    INFO("softmax of " << ir::dtype_name(t));
    models::GraphBuilder b("softmax");
    std::string x = b.input("x", {3, 5, 7}, t);
    ir::Attrs middle;
    middle.set("axis", std::int64_t{1});
    const double tol = t == ir::DType::F16 ? 2e-3 : t == ir::DType::BF16 ? 1.6e-2 : 1e-5;
    auto p = check_against_interpreter(b.finish({b.op("softmax", {x}, middle), b.op("log_softmax", {x})}), tol, tol);
    CHECK(p->reference_ops.empty());
  }
  {  // Bools: reduce_max is any, reduce_min all.
    models::GraphBuilder b("logic");
    std::string m = b.input("m", {4, 6}, ir::DType::Bool);
    auto p = check_against_interpreter(b.finish({b.op("reduce_max", {m}, models::ints_attr("axes", {1})),
                                                 b.op("reduce_min", {m}, models::ints_attr("axes", {0}))}));
    CHECK(p->reference_ops.empty());
  }
  // An empty reduced axis: 1 for prod, -inf for log_sum and log_sum_exp.
  for (const ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    models::GraphBuilder b("empty");
    std::string x = b.input("x", {3, 0, 2}, t);
    std::vector<std::string> outs;
    for (const char* op : ops) outs.push_back(b.op(op, {x}, models::ints_attr("axes", {1})));
    auto p = check_against_interpreter(b.finish(outs));
    CHECK(p->reference_ops.empty());
  }
}

TEST_CASE("Instance norm and LRN are kernels - LRN's channel window a view of a zero-padded copy") {
  models::GraphBuilder b("norms");
  std::string x = b.input("x", {2, 6, 5, 4});
  std::string t = b.input("t", {2, 4, 7});
  ir::Attrs eps;
  eps.set("epsilon", 1e-3);
  std::vector<std::string> outs{b.op("instance_norm", {b.op("exp", {x}), b.weight({6}, 1.0), b.weight({6}, 1.0)}, eps),
                                b.op("instance_norm", {t, b.weight({4}, 1.0), b.weight({4}, 1.0)})};
  for (const std::int64_t size : {1, 3, 4, 5}) {  // even sizes look one channel further up
    ir::Attrs a;
    a.set("size", size);
    a.set("alpha", 0.02 * static_cast<double>(size));
    a.set("beta", 0.6);
    a.set("bias", 1.5);
    outs.push_back(b.op("lrn", {x}, a));
  }
  outs.push_back(b.op("lrn", {t}));  // the defaults, 3-D
  auto p = check_against_interpreter(b.finish(outs));
  CHECK(p->reference_ops.empty());
  CHECK(steps_with(*p, "pad (constant") == 5);
}

TEST_CASE("Convolutions - gemm - pooling and norms of f16 and bf16 values run over f32 copies - rounded once") {
  for (const ir::DType t : {ir::DType::F16, ir::DType::BF16}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("halves");
    std::string x = b.input("x", {2, 3, 8, 7}, t);
    std::string w = b.input("w", {4, 3, 3, 3}, t);
    std::string bias = b.input("bias", {4}, t);
    std::string a = b.input("a", {5, 6}, t);
    std::string g = b.input("g", {6, 4}, t);
    std::string c = b.input("c", {4}, t);
    std::string s = b.input("s", {3}, t);
    ir::Attrs pads = models::ints_attr("pads", {1, 0, 0, 1});
    ir::Attrs pool = models::ints_attr("kernel_shape", {2, 2});
    ir::Attrs ln;
    ln.set("axis", std::int64_t{-1});
    std::vector<std::string> outs{b.op("relu", {b.op("conv", {x, w, bias}, pads)}),
                                  b.op("gemm", {a, g, c}),
                                  b.op("max_pool", {x}, pool),
                                  b.op("avg_pool", {x}, pool),
                                  b.op("global_avg_pool", {x}),
                                  b.op("instance_norm", {x, s, s}),
                                  b.op("layer_norm", {x, b.input("lw", {7}, t), b.input("lb", {7}, t)}, ln),
                                  b.op("conv_transpose", {x, b.input("wt", {3, 2, 2, 2}, t)})};
    const double tol = t == ir::DType::F16 ? 2e-3 : 1.6e-2;
    auto p = check_against_interpreter(b.finish(outs), tol, tol);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls >= 5);  // conv, gemm, both pools, conv_transpose: oneDNN and OpenBLAS
  }
}

TEST_CASE("Matrix products: batched, broadcast, transposed operands, gemm with alpha and beta") {
  {
    models::GraphBuilder b("bmm");
    std::string q = b.input("q", {2, 3, 5, 4});
    std::string k = b.input("k", {2, 3, 4, 5});
    std::string w = b.input("w", {4, 6});
    std::string kt = b.op("transpose", {k}, models::ints_attr("perm", {0, 1, 3, 2}));  // [2 3 5 4]
    std::string s = b.op("matmul", {q, b.op("transpose", {kt}, models::ints_attr("perm", {0, 1, 3, 2}))});
    std::string m = b.op("matmul", {q, w});  // batch folded into M
    auto p = check_against_interpreter(b.finish({s, m}));
    CHECK(p->library_calls == 2);
  }
  {
    models::GraphBuilder b("gemm");
    std::string a = b.input("a", {7, 5});
    std::string w = b.input("w", {3, 7});
    std::string c = b.input("c", {3});
    ir::Attrs at;
    at.set("transA", std::int64_t{1});
    at.set("transB", std::int64_t{1});
    at.set("alpha", 0.5);
    at.set("beta", 2.0);
    check_against_interpreter(b.finish({b.op("gemm", {a, w, c}, at)}));
  }
}

TEST_CASE("Matrix products of 1-D operands - of f16 and bf16 through f32 - of f64 in double") {
  SECTION("1-D operands are matrices of one row or column") {
    models::GraphBuilder b("vec");
    std::string v = b.input("v", {4});
    std::string u = b.input("u", {5});
    std::string m = b.input("m", {2, 3, 4, 5});
    std::string k = b.input("k", {5, 4});
    auto p = check_against_interpreter(b.finish({b.op("matmul", {v, b.op("exp", {v})}), b.op("matmul", {v, m}),
                                                 b.op("matmul", {m, u}), b.op("matmul", {k, v})}));
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 4);
  }
  for (const ir::DType t : {ir::DType::F16, ir::DType::BF16, ir::DType::F64}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("typed");
    std::string q = b.input("q", {2, 3, 5, 4}, t);
    std::string k = b.input("k", {2, 3, 5, 4}, t);
    std::string w = b.input("w", {4, 6}, t);
    std::string v = b.input("v", {6}, t);
    std::string kt = b.op("transpose", {k}, models::ints_attr("perm", {0, 1, 3, 2}));
    std::string s = b.op("matmul", {q, kt});                // a transposed operand
    std::string h = b.op("matmul", {b.op("neg", {q}), w});  // a broadcast one, of a fused value
    // A constant weight of the type (folded at compile time): converted to
    // f32 once, then packed as f32 weights are.
    ir::Attrs to;
    to.set("to", std::string(ir::dtype_name(t)));
    std::string wc = b.op("cast", {b.weight({4, 6}, 0.5)}, to);
    const double tol = t == ir::DType::F16 ? 2e-3 : t == ir::DType::BF16 ? 1.6e-2 : 1e-12;
    auto p = check_against_interpreter(b.finish({s, h, b.op("matmul", {h, v}), b.op("matmul", {q, wc})}), tol, tol);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == (t == ir::DType::F64 ? 0 : 4));
    if (t != ir::DType::F64) CHECK(steps_with(*p, "(packed") == 1);
  }
}

TEST_CASE("Matrix products split over the pool and products with constant weights packed for oneDNN") {
  {
    // Large enough that sgemm's rows are shared out (a row-major and a transposed A).
    models::GraphBuilder b("split");
    std::string x = b.input("x", {67, 257});
    std::string xt = b.input("xt", {257, 67});
    std::string y = b.input("y", {257, 131});
    ir::Attrs at;
    at.set("transA", std::int64_t{1});
    std::string c = b.op("gemm", {xt, y}, at);
    auto p = check_against_interpreter(b.finish({b.op("matmul", {x, y}), c}), 1e-4, 1e-4);
    CHECK(steps_with(*p, "sgemm 67x131x257") == 2);
  }
  {
    // Constant B: packed once, with alpha, a transposed B, and a batch
    // folded into M; products under 2^18 flops made for one thread (run
    // without a parallel region), a larger one for the team.
    models::GraphBuilder b("packed");
    std::string q = b.input("q", {2, 3, 5, 4});
    std::string a = b.input("a", {7, 5});
    std::string big = b.input("big", {64, 128});
    ir::Attrs at;
    at.set("transB", std::int64_t{1});
    at.set("alpha", 0.5);
    std::string g = b.op("gemm", {a, b.weight({3, 5}, 1.0), b.weight({3}, 1.0)}, at);
    auto p = check_against_interpreter(
        b.finish({b.op("matmul", {q, b.weight({4, 6}, 1.0)}), g, b.op("matmul", {big, b.weight({128, 64}, 0.1)})}),
        1e-4, 1e-4);
    CHECK(steps_with(*p, "oneDNN matmul 30x6x4 (packed, one thread)") == 1);
    CHECK(steps_with(*p, "oneDNN matmul 7x3x5 (packed, one thread)") == 1);
    CHECK(steps_with(*p, "oneDNN matmul 64x64x128 (packed)") == 1);
  }
}

TEST_CASE("Products of one row run as sgemv - unpacked when other products read their weight - packed when not") {
  // The weights' 520 columns are shared out in blocks of 16 between the
  // two threads (the last block shorter); B as stored and transposed.
  models::GraphBuilder b("one_row");
  std::string x1 = b.input("x1", {1, 300});
  std::string x2 = b.input("x2", {1, 300});
  std::string m = b.input("m", {300, 520});
  std::string w = b.weight({300, 520}, 0.1);   // read by two products: a recurrent weight's use
  std::string wt = b.weight({520, 300}, 0.2);  // the same, transposed (gemm's transB)
  std::string once = b.weight({300, 40}, 0.3);
  ir::Attrs tb;
  tb.set("transB", std::int64_t{1});
  auto p = check_against_interpreter(
      b.finish({b.op("matmul", {x1, w}), b.op("matmul", {x2, w}), b.op("gemm", {x1, wt}, tb),
                b.op("gemm", {b.op("tanh", {x2}), wt}, tb), b.op("matmul", {x1, once}), b.op("matmul", {x2, m})}),
      1e-4, 1e-4);
  CHECK(steps_with(*p, "sgemv 1x520x300") == 5);
  CHECK(steps_with(*p, "oneDNN matmul 1x40x300 (packed, one thread)") == 1);
  CHECK(steps_with(*p, "sgemm") == 0);
}

namespace {

// Distance in f32 steps between two finite floats of either sign.
std::int64_t ulps_between(float a, float b) {
  auto ordered = [](float v) {
    std::int32_t i;
    std::memcpy(&i, &v, sizeof i);
    return i < 0 ? std::int64_t{INT32_MIN} - i : std::int64_t{i};
  };
  return std::abs(ordered(a) - ordered(b));
}

}  // namespace

TEST_CASE("Inline exp, tanh and erf agree with the C library") {
  const std::size_t n = 20011;
  models::GraphBuilder b("math");
  std::string x = b.input("x", {static_cast<std::int64_t>(n)});
  ir::Graph g = b.finish({b.op("exp", {x}), b.op("tanh", {x}), b.op("erf", {x})});
  ir::Tensor in(ir::DType::F32, {static_cast<std::int64_t>(n)});
  for (std::size_t i = 0; i < n - 5; ++i) in.set(i, -110.0 + 220.0 * static_cast<double>(i) / static_cast<double>(n));
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {0.0, 1e-30, -inf, inf, std::nan("")};
  for (std::size_t i = 0; i < 5; ++i) in.set(n - 5 + i, specials[i]);
  auto exec = runtime::CpuExecutor::create(g);
  REQUIRE(exec);
  std::vector<ir::Tensor> inputs{in};
  auto got = (*exec)->run(inputs);
  REQUIRE(got);
  double (*ref[])(double) = {[](double v) { return std::exp(v); }, [](double v) { return std::tanh(v); },
                             [](double v) { return std::erf(v); }};
  for (std::size_t f = 0; f < 3; ++f) {
    for (std::size_t i = 0; i < n; ++i) {
      double v = in.at(i), want = static_cast<float>(ref[f](v)), have = (*got)[f].at(i);
      INFO("function " << f << " at " << v);
      if (std::isnan(want)) {
        CHECK(std::isnan(have));
      } else if (std::isinf(want)) {
        CHECK(have == want);
      } else {
        CHECK(have == Approx(want).epsilon(2e-6).margin(f == 2 ? 2e-7 : 1e-38));
        // exp faithful (within 1 ulp), erf within 5 (its rational form)
        if (f != 1) CHECK(ulps_between(static_cast<float>(have), static_cast<float>(want)) <= (f == 0 ? 1 : 5));
      }
    }
  }
}

TEST_CASE(
    "Inline log - log2 - exp2 and softplus (log1p) are within 1-3 ulps of the C library - subnormals - specials") {
  std::vector<float> xs;
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> positive(1, 0x7f7fffffu);  // every positive finite float
  for (int i = 0; i < 20000; ++i) {
    const std::uint32_t bits = positive(rng);
    float v;
    std::memcpy(&v, &bits, sizeof v);
    xs.push_back(v);
  }
  for (int k = -300; k <= 300; ++k) xs.push_back(1.0f + static_cast<float>(k) * 0x1p-23f);  // around 1
  for (double e = -30; e <= 2.2; e += 0.01) {  // small ones, and exp2's and softplus's range
    xs.push_back(static_cast<float>(std::pow(10.0, e)));
    xs.push_back(static_cast<float>(-std::pow(10.0, e)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, -1.0f, -2.0f, -1e-30f, inf, -inf, std::nanf(""), 1.0f, 2.0f, 8.0f, 0.5f, 1024.0f,
                  0x1p-149f, 0x1p-126f, 3.4e38f})
    xs.push_back(v);
  const auto n = static_cast<std::int64_t>(xs.size());
  models::GraphBuilder b("logs");
  std::string x = b.input("x", {n});
  ir::Graph g = b.finish({b.op("log", {x}), b.op("log2", {x}), b.op("softplus", {x}), b.op("exp2", {x})});
  ir::Tensor in(ir::DType::F32, {n});
  for (std::int64_t i = 0; i < n; ++i) in.set(static_cast<std::size_t>(i), xs[static_cast<std::size_t>(i)]);
  auto exec = runtime::CpuExecutor::create(g);
  if (!exec) FAIL(exec.error().to_string());
  std::vector<ir::Tensor> inputs{in};
  auto got = (*exec)->run(inputs);
  REQUIRE(got);
  double (*ref[])(double) = {[](double v) { return std::log(v); }, [](double v) { return std::log2(v); },
                             [](double v) { return v > 30 ? v : std::log1p(std::exp(v)); },
                             [](double v) { return std::exp2(v); }};
  // (softplus adds exp's error to log1p's.)
  const std::int64_t limit[] = {1, 1, 3, 1};
  for (std::size_t f = 0; f < 4; ++f) {
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto want = static_cast<float>(ref[f](xs[i]));
      const auto have = static_cast<float>((*got)[f].at(i));
      INFO("function " << f << " at " << xs[i] << ": " << have << ", the C library " << want);
      if (std::isnan(want)) {
        CHECK(std::isnan(have));
      } else if (std::isinf(want)) {
        CHECK(have == want);
      } else {
        REQUIRE(std::isfinite(have));
        CHECK(ulps_between(have, want) <= limit[f]);
      }
    }
  }
  // Exact where the C library is: log 1, log2 and exp2 at powers of two.
  CHECK((*got)[0].at(xs.size() - 8) == 0.0);
  CHECK((*got)[1].at(xs.size() - 6) == 3.0);
  CHECK((*got)[1].at(xs.size() - 3) == -149.0);
  CHECK((*got)[3].at(xs.size() - 6) == 256.0);
}

namespace {

std::string conv(models::GraphBuilder& b, const std::string& x, std::int64_t cin, std::int64_t cout, std::int64_t k,
                 std::int64_t stride, const std::string& auto_pad = "") {
  ir::Attrs a;
  a.set("kernel_shape", std::vector<std::int64_t>{k, k});
  a.set("strides", std::vector<std::int64_t>{stride, stride});
  if (auto_pad.empty())
    a.set("pads", std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2});
  else
    a.set("auto_pad", auto_pad);
  return b.op("conv", {x, b.weight({cout, cin, k, k}, 0.3), b.weight({cout}, 0.3)}, a);
}

// Channels [start, start + count) of x (ShuffleNet's halves).
std::string channel_slice(models::GraphBuilder& b, const std::string& x, std::int64_t start, std::int64_t count) {
  ir::Attrs a;
  a.set("axes", std::vector<std::int64_t>{1});
  a.set("starts", std::vector<std::int64_t>{start});
  a.set("ends", std::vector<std::int64_t>{start + count});
  return b.op("slice", {x}, a);
}

}  // namespace

TEST_CASE("Convolutions keep oneDNN's layout between them and take residual adds and ReLUs as post-ops") {
  models::GraphBuilder b("residual");
  std::string x = b.input("x", {1, 16, 9, 9});
  // A basic block whose skip is the graph input (copied into the result).
  std::string y = b.op("relu", {conv(b, x, 16, 16, 3, 1)});
  y = b.op("relu", {b.op("add", {conv(b, y, 16, 16, 3, 1), x})});
  // One whose skip dies at the add (its storage becomes the result's).
  std::string z = b.op("relu", {conv(b, y, 16, 16, 3, 1)});
  z = b.op("relu", {b.op("add", {y, conv(b, z, 16, 16, 3, 1)})});
  // A downsampling block: the skip conv runs after the main path's last conv
  // and takes the add itself.
  std::string m = conv(b, b.op("relu", {conv(b, z, 16, 32, 3, 2)}), 32, 32, 3, 1);
  std::string d = conv(b, z, 16, 32, 1, 2);
  std::string w = b.op("relu", {b.op("add", {m, d})});
  // An elementwise epilogue between convolutions is written in their layout.
  std::string v = conv(b, b.op("sigmoid", {w}), 32, 8, 3, 1);
  auto p = check_against_interpreter(b.finish({v}), 1e-4, 1e-4);
  CHECK(p->library_calls == 8);
  CHECK(steps_with(*p, "+sum +relu") == 3);
  CHECK(steps_with(*p, "add") == 0);   // every add went into a convolution
  CHECK(steps_with(*p, "relu") == 6);  // ... and every relu (labels of the convs that took them)
  bool shared = false;
  for (const auto& [result, operand] : p->in_place)
    for (const lower::Step& s : p->steps)
      if (s.label.find("+sum") != std::string::npos && s.writes[0] == result) shared = true;
  CHECK(shared);
  // When oneDNN keeps results plain (NHWC on AVX-512 machines), no
  // convolution after the first converts its source.
  if (steps_with(*p, "(dst reordered)") == 0) {
    CHECK(steps_with(*p, "(src reordered)") <= 1);
    CHECK(p->fused_kernels == 1);  // the sigmoid
    // The NHWC result into the NCHW output: a transposing copy, so a reorder.
    CHECK(steps_with(*p, "output copy (oneDNN reorder)") == 1);
  }
}

TEST_CASE("Winograd convolutions match the interpreter - ReLU and sum post-ops - one oneDNN cannot make runs direct") {
  models::GraphBuilder b("winograd");
  std::string x = b.input("x", {1, 16, 12, 12});
  auto attrs = [](std::int64_t stride, std::int64_t pad) {
    ir::Attrs a;
    a.set("kernel_shape", Dims{3, 3});
    a.set("strides", Dims{stride, stride});
    a.set("pads", Dims{pad, pad, pad, pad});
    return a;
  };
  auto w = [&](std::int64_t out) { return b.weight({out, 16, 3, 3}, 0.3); };
  std::string y = b.op("dnnl.wino_conv_relu", {x, w(16), b.weight({16}, 0.3)}, attrs(1, 1));
  y = b.op("dnnl.wino_conv_add_relu", {y, w(16), b.weight({16}, 0.3), x}, attrs(1, 1));
  std::string unpadded = b.op("dnnl.wino_conv", {y, w(8), ""}, attrs(1, 0));
  std::string added = b.op("dnnl.wino_conv_add", {y, w(16), b.weight({16}, 0.3), y}, attrs(1, 1));
  // Stride 2: no Winograd kernel in oneDNN 2.6, so the direct one.
  std::string strided = b.op("dnnl.wino_conv", {y, w(8), b.weight({8}, 0.3)}, attrs(2, 1));
  const ir::Graph g = b.finish({unpadded, added, strided});
  std::vector<ir::Tensor> inputs{random_tensor({1, 16, 12, 12}, 7, -3, 3)};
  auto want = runtime::interpret(g, inputs);
  REQUIRE(want);
  // F(2x2, 3x3) and F(4x4, 3x3) round differently from the direct sum.
  auto p = check_program(g, inputs, *want, 1e-4, 1e-4);
  check_native(*p);
  CHECK(p->library_calls == 5);
  CHECK(steps_with(*p, "oneDNN Winograd conv") == 4);
  CHECK(steps_with(*p, "Winograd conv 1x16x12x12 * 16x16x3x3 +sum +relu") == 1);
  CHECK(steps_with(*p, "Winograd conv 1x16x12x12 * 16x16x3x3 +sum") == 2);
  CHECK(steps_with(*p, "oneDNN conv 1x16x12x12 * 8x16x3x3") == 1);  // the strided one

  // Winograd's transforms turn one infinity into NaN over its tile, where
  // the direct sum has one infinite term per window that reads it: such runs
  // take the direct convolution and give the reference's infinities (and
  // NaN where the input holds one).
  models::GraphBuilder one("winograd_special");
  std::string in = one.input("x", {1, 16, 12, 12});
  const ir::Graph single =
      one.finish({one.op("dnnl.wino_conv", {in, one.weight({8, 16, 3, 3}, 0.3), ""}, attrs(1, 1))});
  for (const double odd : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    INFO("an input element " << odd);
    ir::Tensor special = random_tensor({1, 16, 12, 12}, 8, -3, 3);
    special.set(5 * 12 + 6, odd);
    std::vector<ir::Tensor> special_inputs{special};
    auto special_want = runtime::interpret(single, special_inputs);
    REQUIRE(special_want);
    std::size_t infinite = 0;
    for (std::size_t i = 0; i < (*special_want)[0].numel(); ++i) infinite += std::isinf((*special_want)[0].at(i));
    CHECK(infinite == (std::isinf(odd) ? 8u * 9u : 0u));
    auto q = check_program(single, special_inputs, *special_want, 1e-4, 1e-4);
    CHECK(steps_with(*q, "oneDNN Winograd conv") == 1);
  }
  // One program, run on special then on finite inputs: each run decides.
  auto exec = runtime::CpuExecutor::create(single);
  REQUIRE(exec);
  ir::Tensor special = random_tensor({1, 16, 12, 12}, 8, -3, 3);
  special.set(5 * 12 + 6, std::numeric_limits<double>::infinity());
  for (const ir::Tensor& x_in : {special, inputs[0], special}) {
    std::vector<ir::Tensor> run_in{x_in};
    auto got = (*exec)->run(run_in);
    auto expected = runtime::interpret(single, run_in);
    REQUIRE(got);
    REQUIRE(expected);
    std::size_t nan_got = 0, nan_want = 0;
    for (std::size_t i = 0; i < (*got)[0].numel(); ++i) {
      nan_got += std::isnan((*got)[0].at(i));
      nan_want += std::isnan((*expected)[0].at(i));
    }
    CHECK(nan_got == nan_want);
  }
}

TEST_CASE("Channels-last grouped convolutions match the interpreter without reorders - epilogues - 1-D and 3-D") {
  models::GraphBuilder b("grouped");
  std::string x = b.input("x", {1, 32, 10, 10});
  auto attrs = [](std::vector<std::int64_t> kernel, std::int64_t groups) {
    ir::Attrs a;
    a.set("kernel_shape", kernel);
    a.set("pads", std::vector<std::int64_t>(2 * kernel.size(), 1));
    a.set("group", groups);
    return a;
  };
  auto w = [&](std::int64_t out, std::int64_t in, std::vector<std::int64_t> kernel) {
    std::vector<std::int64_t> d{out, in};
    d.insert(d.end(), kernel.begin(), kernel.end());
    return b.weight(d, 0.3);
  };
  // A 1x1 convolution first, so that the grouped ones read a channels-last
  // value, as in a model.
  ir::Attrs one;
  one.set("kernel_shape", std::vector<std::int64_t>{1, 1});
  std::string h = b.op("dnnl.conv", {x, w(32, 32, {1, 1}), ""}, one);
  std::string y = b.op("dnnl.cl_conv_relu", {h, w(32, 16, {3, 3}), b.weight({32}, 0.3)}, attrs({3, 3}, 2));
  y = b.op("dnnl.cl_conv_add_relu", {y, w(32, 8, {3, 3}), b.weight({32}, 0.3), h}, attrs({3, 3}, 4));
  std::string added = b.op("dnnl.cl_conv_add", {y, w(32, 8, {3, 3}), "", y}, attrs({3, 3}, 4));
  ir::Attrs clip = attrs({3, 3}, 2);
  clip.set("min", 0.0);
  clip.set("max", 6.0);
  std::string clipped = b.op("dnnl.cl_conv_clip", {y, w(32, 16, {3, 3}), b.weight({32}, 0.3)}, clip);
  std::string plain = b.op("dnnl.cl_conv", {y, w(16, 16, {3, 3}), b.weight({16}, 0.3)}, attrs({3, 3}, 2));
  std::string line = b.input("line", {1, 16, 20});
  std::string one_d = b.op("dnnl.cl_conv", {line, w(16, 4, {3}), ""}, attrs({3}, 4));
  std::string cube = b.input("cube", {1, 16, 4, 5, 6});
  std::string three_d = b.op("dnnl.cl_conv_relu", {cube, w(16, 8, {3, 3, 3}), ""}, attrs({3, 3, 3}, 2));
  const ir::Graph g = b.finish({added, clipped, plain, one_d, three_d});
  std::vector<ir::Tensor> inputs{random_tensor({1, 32, 10, 10}, 7, -3, 3), random_tensor({1, 16, 20}, 8, -3, 3),
                                 random_tensor({1, 16, 4, 5, 6}, 9, -3, 3)};
  auto want = runtime::interpret(g, inputs);
  REQUIRE(want);
  auto p = check_program(g, inputs, *want, 1e-4, 1e-4);
  check_native(*p);
  CHECK(p->library_calls == 8);
  CHECK(steps_with(*p, "oneDNN channels-last conv 1x32x10x10 * 32x16x3x3 +relu") == 1);
  CHECK(steps_with(*p, "oneDNN channels-last conv 1x32x10x10 * 32x8x3x3 +sum +relu") == 1);
  CHECK(steps_with(*p, "oneDNN channels-last conv 1x32x10x10 * 32x16x3x3 +clip") == 1);
  CHECK(steps_with(*p, "oneDNN channels-last conv") == 7);
  // Neither source nor result goes through oneDNN's blocked layout; only
  // the graph's own inputs (NCHW, NCW, NCDHW) are reordered, by the first
  // call that reads each.
  CHECK(steps_with(*p, "(dst reordered)") == 0);
  CHECK(steps_with(*p, "(src reordered)") == 3);
}

TEST_CASE("Concatenated convolution results keep oneDNN's layout - mixed layouts concatenate row-major") {
  models::GraphBuilder b("fire");
  std::string x = b.input("x", {1, 8, 9, 9});
  // SqueezeNet's fire module: two expansions of one squeeze, side by side,
  // into the next convolution.
  std::string s = b.op("relu", {conv(b, x, 8, 4, 1, 1)});
  std::string e1 = b.op("relu", {conv(b, s, 4, 6, 1, 1)}), e3 = b.op("relu", {conv(b, s, 4, 10, 3, 1)});
  ir::Attrs channels;
  channels.set("axis", std::int64_t{1});
  std::string fire = b.op("concat", {e1, e3}, channels);
  std::string next = conv(b, fire, 16, 8, 3, 1);
  // A fused epilogue of a convolution is stored in the convolution's layout
  // and concatenates with it; the graph input x (NCHW) does not share it.
  std::string mixed = b.op("concat", {b.op("sigmoid", {next}), next}, channels);
  std::string with_input = b.op("concat", {conv(b, mixed, 16, 8, 1, 1), x}, channels);
  auto p = check_against_interpreter(b.finish({next, mixed, with_input}), 1e-4, 1e-4);
  CHECK(p->library_calls == 5);
  CHECK(steps_with(*p, "concat") == 3);
  if (steps_with(*p, "(dst reordered)") == 0) {
    // Only the first convolution (of the NCHW input) converts its source;
    // only the mixed concat (and the NHWC outputs) convert anything else.
    CHECK(steps_with(*p, "(src reordered)") == 1);
    // The last convolution's result, row-major for the concat with x; the
    // NHWC outputs `next` and `mixed`, copied into their NCHW outputs.
    CHECK(steps_with(*p, "copy (oneDNN reorder)") == 3);
    CHECK(steps_with(*p, "output copy (oneDNN reorder)") == 2);
  }
}

TEST_CASE("A channel shuffle of convolution results stays in their layout - one copy - slices read in place") {
  models::GraphBuilder b("shuffle");
  std::string x = b.input("x", {1, 8, 7, 7});
  ir::Attrs channels;
  channels.set("axis", std::int64_t{1});
  std::string y = b.op("concat", {conv(b, x, 8, 6, 1, 1), conv(b, x, 8, 6, 3, 1)}, channels);
  // ShuffleNet's shuffle: [1 2 6 7 7], swap the group axes, back to 12
  // channels; then its split into halves, each into a convolution.
  ir::Attrs split, swap, merge;
  split.set("shape", std::vector<std::int64_t>{1, 2, 6, 7, 7});
  swap.set("perm", std::vector<std::int64_t>{0, 2, 1, 3, 4});
  merge.set("shape", std::vector<std::int64_t>{1, 12, 7, 7});
  y = b.op("reshape", {b.op("transpose", {b.op("reshape", {y}, split)}, swap)}, merge);
  std::string out =
      b.op("add", {conv(b, channel_slice(b, y, 0, 6), 6, 4, 1, 1), conv(b, channel_slice(b, y, 6, 6), 6, 4, 3, 1)});
  auto p = check_against_interpreter(b.finish({out}), 1e-4, 1e-4);
  CHECK(p->library_calls == 4);
  if (steps_with(*p, "(dst reordered)") == 0) {
    CHECK(steps_with(*p, "(src reordered)") <= 2);  // only the convolutions of the NCHW input x
    // The shuffle, and each half (a strided channel slice of it) made
    // dense for oneDNN in its own NHWC order, not reordered.
    CHECK(steps_with(*p, "copy") - steps_with(*p, "output copy") == 3);
  }
}

TEST_CASE("A channel shuffle as a stack of two halves is one interleaving copy - the merge reads it in place") {
  // The shuffle after rulesets/views.rules' shuffle-as-stack: each half
  // [1 6 7 7] as [1 6 1 7 7], stacked along axis 2, merged to 12
  // channels. Stored with the new axis inside the channels (the halves'
  // NHWC order), the stack is the shuffled NHWC value, which the merge and
  // the next convolution read where it is. Then a ShuffleNet block: the
  // first half of the shuffled channels passes on into the next stack,
  // the second half feeds a convolution; each is a strided slice, copied
  // dense first.
  models::GraphBuilder b("stack");
  std::string x = b.input("x", {1, 8, 7, 7});
  ir::Attrs unit, stack, merge;
  unit.set("shape", std::vector<std::int64_t>{1, 6, 1, 7, 7});
  stack.set("axis", std::int64_t{2});
  merge.set("shape", std::vector<std::int64_t>{1, 12, 7, 7});
  auto shuffle = [&](const std::string& a, const std::string& c) {
    return b.op("reshape", {b.op("concat", {b.op("reshape", {a}, unit), b.op("reshape", {c}, unit)}, stack)}, merge);
  };
  std::string y = shuffle(conv(b, x, 8, 6, 1, 1), conv(b, x, 8, 6, 3, 1));
  std::string next = shuffle(channel_slice(b, y, 0, 6), conv(b, channel_slice(b, y, 6, 6), 6, 6, 1, 1));
  auto p = check_against_interpreter(b.finish({conv(b, y, 12, 4, 1, 1), conv(b, next, 12, 4, 1, 1)}), 1e-4, 1e-4);
  CHECK(p->library_calls == 5);
  CHECK(steps_with(*p, "concat (2 block copies) (interleaved)") == 2);
  // Two copies, one per half; no reorder.
  if (steps_with(*p, "(dst reordered)") == 0) {
    CHECK(steps_with(*p, "copy") - steps_with(*p, "output copy") == 2);
    CHECK(steps_with(*p, "copy (oneDNN reorder)") == steps_with(*p, "output copy"));
  }
}

TEST_CASE("A DenseNet block's concats share one buffer - each copies only its new features") {
  models::GraphBuilder b("dense");
  std::string x = b.input("x", {1, 8, 6, 6});
  ir::Attrs channels;
  channels.set("axis", std::int64_t{1});
  // Each layer reads every earlier layer's features: flat concats whose
  // operands extend the previous one's, and one that concatenates the
  // previous concat's result (as the e-graph's nested concats do).
  std::string x0 = b.op("relu", {conv(b, x, 8, 8, 1, 1)});
  std::string y1 = conv(b, b.op("relu", {x0}), 8, 4, 3, 1);
  std::string c1 = b.op("concat", {x0, y1}, channels);
  std::string y2 = conv(b, b.op("relu", {c1}), 12, 4, 3, 1);
  std::string c2 = b.op("concat", {x0, y1, y2}, channels);
  std::string y3 = conv(b, b.op("relu", {c2}), 16, 4, 3, 1);
  std::string c3 = b.op("concat", {c2, y3}, channels);
  std::string out = conv(b, b.op("relu", {c3}), 20, 4, 1, 1);
  // c1 read again after c2 and c3 wrote the rest of the buffer.
  std::string late = b.op("sigmoid", {c1});
  // A concat of weights, folded at load time, is no part of a chain: the
  // concat extending it copies every operand.
  std::string folded = b.op("concat", {b.weight({1, 2, 6, 6}, 1.0), b.weight({1, 3, 6, 6}, 1.0)}, channels);
  std::string after_folded = b.op("concat", {folded, x0}, channels);
  // A graph output keeps its own buffer.
  std::string returned = b.op("concat", {x0, y3}, channels);
  std::string extends_returned = b.op("concat", {x0, y3, y1}, channels);
  auto p = check_against_interpreter(
      b.finish({out, late, b.op("tanh", {after_folded}), returned, b.op("tanh", {extends_returned})}), 1e-4, 1e-4);
  CHECK(steps_with(*p, "concat (") == 6);
  // c1 copies x0 and y1, c2 only y2, c3 only y3: one buffer of 20 channels.
  CHECK(steps_with(*p, "concat (2 block copies, into a shared buffer)") == 1);
  CHECK(steps_with(*p, "concat (1 block copies, into a shared buffer)") == 2);
  CHECK(steps_with(*p, "concat (2 block copies)") == 2);  // after_folded and returned
  CHECK(steps_with(*p, "concat (3 block copies)") == 1);  // extends_returned
  if (steps_with(*p, "(dst reordered)") == 0) {
    // The ReLUs of c1 and c2 (views of the start of c3's NHWC buffer) are
    // stored NHWC too: only the convolution of the NCHW input x converts.
    CHECK(steps_with(*p, "(src reordered)") == 1);
  }
}

TEST_CASE("A concat reads slices of an NHWC result where they are - ShuffleNet's half of the last block's channels") {
  models::GraphBuilder b("shuffle");
  std::string x = b.input("x", {1, 8, 6, 6});
  std::string y = b.op("relu", {conv(b, x, 8, 8, 1, 1)});
  // ShuffleNet's block: half the channels pass, the other half go through
  // a branch, and the two are concatenated. The half that passes is a
  // channel slice of y's NHWC buffer: a pixel's 4 channels, 8 apart.
  ir::Attrs halves = models::ints_attr("split", {4, 4});
  halves.set("axis", std::int64_t{1});
  auto parts = b.op_results("split", {y}, 2, halves);
  std::string branch = b.op("relu", {conv(b, parts[1], 4, 4, 3, 1)});
  ir::Attrs channels;
  channels.set("axis", std::int64_t{1});
  std::string joined = b.op("concat", {parts[0], branch}, channels);
  // Rows of y from row 2 on, twice along the rows: each a whole block at
  // an offset of y's buffer.
  ir::Attrs rows;
  rows.set("axis", std::int64_t{2});
  ir::Attrs from_row_2 = models::ints_attr("starts", {2});
  from_row_2.set("ends", std::vector<std::int64_t>{6});
  from_row_2.set("axes", std::vector<std::int64_t>{2});
  std::string lower_rows = b.op("slice", {y}, from_row_2);
  std::string stacked = b.op("concat", {lower_rows, lower_rows}, rows);
  auto p = check_against_interpreter(b.finish({conv(b, joined, 8, 8, 1, 1), b.op("tanh", {stacked})}), 1e-4, 1e-4);
  CHECK(steps_with(*p, "concat (2 block copies)") == 2);
  if (steps_with(*p, "(dst reordered)") == 0) {
    // y is NHWC: neither concat copies an operand first (the branch's
    // convolution reads its half through a copy of its own).
    CHECK(std::count_if(p->steps.begin(), p->steps.end(), [](const lower::Step& s) { return s.label == "copy"; }) == 1);
    CHECK(p->fused_kernels <= 2);  // the branch's half, and the tanh
  }
}

TEST_CASE("Weights given at run time are reordered at every run - epilogues stay separate on reference convolutions") {
  SECTION("run-time and computed weights and bias - with the residual epilogue") {
    models::GraphBuilder b("runtime");
    std::string x = b.input("x", {1, 4, 6, 6});
    std::string w = b.input("w", {4, 4, 3, 3});
    std::string bias = b.input("bias", {4});
    // Graph-input weights and bias, and weights computed by a fused kernel.
    std::string y =
        b.op("relu", {b.op("add", {b.op("conv", {x, w, bias}, models::ints_attr("pads", {1, 1, 1, 1})), x})});
    std::string w2 = b.op("mul", {w, b.fill({}, 0.5)});
    std::string z = b.op("relu", {b.op("conv", {y, w2}, models::ints_attr("pads", {1, 1, 1, 1}))});
    // The conv's own input as the skip: read all over by the conv, so never shared.
    std::string t = b.op("sigmoid", {z});
    std::string u = b.op("relu", {b.op("add", {conv(b, t, 4, 4, 3, 1), t})});
    // A transposed one with run-time weights, transposed in the graph.
    ir::Attrs perm;
    perm.set("perm", Dims{1, 0, 2, 3});
    std::string v = b.op("conv_transpose", {u, b.op("transpose", {w}, perm)}, models::ints_attr("strides", {2, 2}));
    auto p = check_against_interpreter(b.finish({v}), 1e-4, 1e-4);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 4);
    CHECK(steps_with(*p, "(weights at run time)") == 3);
    CHECK(steps_with(*p, "+sum +relu") == 2);
    for (const auto& [result, operand] : p->in_place)
      for (const lower::Step& s : p->steps)
        CHECK_FALSE((s.label.find("+sum") != std::string::npos && s.writes[0] == result));
  }
  SECTION("a 4-D convolution oneDNN does not take runs Saturn's loops and its add and ReLU lower as nodes") {
    models::GraphBuilder b("fallback");
    std::string x = b.input("x", {1, 2, 3, 3, 3, 3});
    ir::Attrs same;
    same.set("auto_pad", std::string("SAME_UPPER"));
    std::string y = b.op("relu", {b.op("add", {b.op("conv", {x, b.weight({2, 2, 3, 3, 3, 3}, 0.1)}, same), x})});
    auto p = check_against_interpreter(b.finish({y}), 1e-4, 1e-4);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 0);
    CHECK(steps_with(*p, "conv (loops)") == 1);
    CHECK(p->fused_kernels == 2);  // the convolution's loops, then the add and the relu
  }
}

TEST_CASE("1-D and 3-D convolutions and pooling - auto_pad - dilated pooling - go to oneDNN") {
  auto attrs = [](const std::vector<std::pair<std::string, Dims>>& ints, const std::string& auto_pad = "") {
    ir::Attrs a;
    for (const auto& [name, v] : ints) a.set(name, v);
    if (!auto_pad.empty()) a.set("auto_pad", auto_pad);
    return a;
  };
  SECTION("1-D - groups - dilation - SAME_LOWER - with the residual and ReLU epilogue") {
    models::GraphBuilder b("conv1d");
    std::string x = b.input("x", {2, 4, 17});
    std::string y = b.op("conv", {x, b.weight({6, 2, 3}, 0.3), b.weight({6}, 0.3)}, [&] {
      ir::Attrs a = attrs({{"strides", {2}}, {"dilations", {2}}}, "SAME_LOWER");
      a.set("group", std::int64_t{2});
      return a;
    }());
    std::string z = b.op("conv", {x, b.weight({6, 4, 4}, 0.3)}, attrs({{"pads", {1, 2}}, {"strides", {2}}}));
    std::string r =
        b.op("relu", {b.op("add", {b.op("conv", {y, b.weight({6, 6, 3}, 0.3)}, attrs({{"pads", {1, 1}}})), y})});
    std::string m =
        b.op("max_pool", {x}, attrs({{"kernel_shape", {3}}, {"strides", {2}}, {"dilations", {2}}, {"pads", {1, 1}}}));
    std::string a = b.op("avg_pool", {x}, attrs({{"kernel_shape", {4}}, {"strides", {3}}}, "SAME_UPPER"));
    auto p = check_against_interpreter(b.finish({y, z, r, m, a}), 1e-4, 1e-4);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 5);
    CHECK(steps_with(*p, "+sum +relu") == 1);
  }
  SECTION("3-D - strides and asymmetric pads - dilated average pooling - ceil_mode") {
    models::GraphBuilder b("conv3d");
    std::string x = b.input("x", {1, 3, 7, 6, 5});
    std::string y = b.op("conv", {x, b.weight({4, 3, 3, 2, 3}, 0.3), b.weight({4}, 0.3)},
                         attrs({{"strides", {2, 1, 2}}, {"pads", {1, 0, 1, 0, 1, 2}}}));
    std::string m = b.op("max_pool", {x}, attrs({{"kernel_shape", {2, 3, 2}}, {"strides", {2, 2, 1}}}, "VALID"));
    ir::Attrs ceil = attrs({{"kernel_shape", {3, 2, 2}}, {"strides", {2, 2, 2}}, {"dilations", {2, 1, 2}}});
    ceil.set("ceil_mode", std::int64_t{1});
    std::string a = b.op("avg_pool", {x}, ceil);
    auto p = check_against_interpreter(b.finish({y, m, a}), 1e-4, 1e-4);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 3);
    CHECK(steps_with(*p, "oneDNN conv 1x3x7x6x5 * 4x3x3x2x3") == 1);
  }
  SECTION("counting padding that no window reaches (maxvit_t's 3x3 pooling by 2, padded 1, of an even size)") {
    models::GraphBuilder b("avg_include_pad");
    std::string x = b.input("x", {1, 4, 12, 10});
    ir::Attrs a = attrs({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}});
    a.set("count_include_pad", std::int64_t{1});
    auto p = check_against_interpreter(b.finish({b.op("avg_pool", {x}, a)}), 1e-5, 1e-5);
    CHECK(p->reference_ops.empty());
    CHECK(p->library_calls == 1);
    CHECK(steps_with(*p, "oneDNN avg pool") == 1);
  }
}

TEST_CASE("Pooling oneDNN does not take runs the op's own kernel - indices - integers - f64 - ceil_mode") {
  auto attrs = [](const std::vector<std::pair<std::string, Dims>>& ints) {
    ir::Attrs a;
    for (const auto& [name, v] : ints) {
      if (v.size() == 1 && (name == "ceil_mode" || name == "count_include_pad" || name == "storage_order"))
        a.set(name, v[0]);
      else
        a.set(name, v);
    }
    return a;
  };
  models::GraphBuilder b("pools");
  std::string x = b.input("x", {2, 3, 7, 6});
  std::string i = b.input("i", {1, 2, 6, 6}, ir::DType::I32);  // values -3..3: ties everywhere
  std::string k = b.input("k", {1, 2, 9}, ir::DType::I8);
  std::string d = b.input("d", {1, 2, 5, 4, 3}, ir::DType::F64);
  // One-sided pads, a dilation, column-major indices.
  auto mx = b.op_results("max_pool", {x}, 2,
                         attrs({{"kernel_shape", {3, 2}},
                                {"strides", {2, 2}},
                                {"pads", {1, 0, 0, 1}},
                                {"dilations", {1, 2}},
                                {"storage_order", {1}}}));
  auto mi =
      b.op_results("max_pool", {i}, 2, attrs({{"kernel_shape", {3, 3}}, {"strides", {2, 1}}, {"pads", {1, 1, 1, 1}}}));
  // ceil_mode's last window passes the declared padding, which count_include_pad counts.
  std::string a = b.op("avg_pool", {x},
                       attrs({{"kernel_shape", {3, 3}},
                              {"strides", {2, 2}},
                              {"pads", {1, 1, 0, 0}},
                              {"ceil_mode", {1}},
                              {"count_include_pad", {1}}}));
  std::string m8 =
      b.op("max_pool", {k}, attrs({{"kernel_shape", {3}}, {"strides", {2}}, {"pads", {1, 1}}, {"ceil_mode", {1}}}));
  std::string a64 = b.op("avg_pool", {d}, attrs({{"kernel_shape", {2, 2, 2}}, {"pads", {1, 0, 1, 0, 1, 0}}}));
  auto p = check_against_interpreter(b.finish({mx[0], mx[1], mi[0], mi[1], a, m8, a64}));
  CHECK(p->reference_ops.empty());
  CHECK(steps_with(*p, "max_pool (window 3 2, indices)") == 1);
  CHECK(steps_with(*p, "max_pool (window 3 3, indices)") == 1);
  CHECK(steps_with(*p, "avg_pool (window 3 3)") == 1);
  CHECK(steps_with(*p, "max_pool (window 3)") == 1);
  CHECK(steps_with(*p, "avg_pool (window 2 2 2)") == 1);
}

TEST_CASE("max_pool as written is a loop over a strided view of its windows - in its operand's layout - NaN kept") {
  // x NHWC (the layout oneDNN's convolutions leave), seen as NCHW.
  models::GraphBuilder b("pool_loops");
  std::string x = b.op("transpose", {b.input("x", {2, 9, 9, 16})}, models::ints_attr("perm", {0, 3, 1, 2}));
  std::string y = b.input("y", {1, 8, 11, 11});  // NCHW
  std::string z = b.op("transpose", {b.input("z", {2, 13, 24})}, models::ints_attr("perm", {0, 2, 1}));
  std::string v = b.op("transpose", {b.input("v", {1, 5, 6, 7, 8})}, models::ints_attr("perm", {0, 4, 1, 2, 3}));
  auto pool = [](const std::vector<std::pair<std::string, Dims>>& ints) {
    ir::Attrs a;
    for (const auto& [name, d] : ints)
      if (name == "ceil_mode")
        a.set(name, d[0]);
      else
        a.set(name, d);
    return a;
  };
  const ir::Graph g = b.finish({
      b.op("max_pool", {x}, pool({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}})),  // windows inside x
      b.op("max_pool", {x}, pool({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}})),
      b.op("max_pool", {x}, pool({{"kernel_shape", {2, 2}}, {"strides", {2, 2}}, {"ceil_mode", {1}}})),
      b.op("max_pool", {y},
           pool({{"kernel_shape", {2, 3}}, {"strides", {1, 2}}, {"dilations", {2, 1}}, {"pads", {0, 1, 1, 0}}})),
      b.op("max_pool", {z}, pool({{"kernel_shape", {3}}, {"strides", {2}}, {"pads", {1, 1}}, {"ceil_mode", {1}}})),
      b.op("max_pool", {v}, pool({{"kernel_shape", {2, 2, 2}}, {"strides", {2, 2, 2}}})),
  });
  std::vector<ir::Tensor> in;
  std::uint32_t seed = 11;
  for (const ir::GraphValue& i : g.inputs) {
    in.push_back(random_tensor(ir::static_dims(i.type.shape), seed++, -3, 3));
    // NaN wins a window and infinities hold theirs, as in the reference.
    in.back().set(5, NAN);
    in.back().set(17, INFINITY);
    in.back().set(40, -INFINITY);
    in.back().set(41, -INFINITY);
  }
  auto want = runtime::interpret(g, in);
  REQUIRE(want);
  auto p = check_program(g, in, *want, 0, 0);
  check_native(*p);
  CHECK(steps_with(*p, "max_pool loop (window") == 6);
  CHECK(steps_with(*p, "oneDNN max pool") == 0);
  CHECK(steps_with(*p, "max_pool (window") == 0);  // (the host's pooling step)
  // The padded ones pad a copy of their operand (-inf) in its layout, in
  // rows of its innermost padded axis and those inside it: x's [2 11 11 16]
  // (padding 1) and [2 10 10 16] (ceil_mode's last window) as 22 and 20
  // rows of W C, z's [2 15 24] as 2 rows, y's NCHW [1 8 12 12] as 96 of W.
  CHECK(steps_with(*p, "pad (constant, 22 rows)") == 1);
  CHECK(steps_with(*p, "pad (constant, 20 rows)") == 1);
  CHECK(steps_with(*p, "pad (constant, 2 rows)") == 1);
  CHECK(steps_with(*p, "pad (constant, 96 rows)") == 1);
  // Each result in its operand's layout: NHWC's pools write [N OH OW C]
  // (then the reduced axes), the NCHW one [N C OH OW], z's [N OL C].
  std::vector<Dims> written;
  for (const lower::Step& s : p->steps)
    if (s.label.find("max_pool loop") != std::string::npos)
      written.push_back(p->buffers[static_cast<std::size_t>(s.writes[0])].dims);
  REQUIRE(written.size() == 6);
  CHECK(written[0] == Dims{2, 4, 4, 16, 1, 1});
  CHECK(written[1] == Dims{2, 5, 5, 16, 1, 1});
  CHECK(written[2] == Dims{2, 5, 5, 16, 1, 1});
  CHECK(written[3] == Dims{1, 8, 10, 5, 1, 1});
  CHECK(written[4] == Dims{2, 7, 24, 1});
  CHECK(written[5] == Dims{1, 2, 3, 3, 8, 1, 1, 1});
  // A windows op itself is the same view: reduce_max of it reads x in place.
  models::GraphBuilder w("windows_view");
  std::string t = w.op("transpose", {w.input("t", {1, 7, 7, 16})}, models::ints_attr("perm", {0, 3, 1, 2}));
  ir::Attrs win = models::ints_attr("kernel_shape", {3, 3});
  win.set("strides", Dims{2, 2});
  ir::Attrs last = models::ints_attr("axes", {4, 5});
  last.set("keepdims", std::int64_t{0});
  auto q = check_against_interpreter(w.finish({w.op("reduce_max", {w.op("windows", {t}, win)}, last)}));
  check_native(*q);
  CHECK(std::none_of(q->steps.begin(), q->steps.end(), [](const lower::Step& s) {
    return s.kind == lower::StepKind::Copy && s.label.find("output") == std::string::npos;
  }));
}

TEST_CASE("Transposed convolutions go to oneDNN - 1-D to 3-D - groups - dilations - output_padding - output_shape") {
  struct Case {
    Dims x, w;
    std::vector<std::pair<std::string, Dims>> ints;
    std::string auto_pad;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 3, 7, 6}, {3, 4, 3, 3}, {{"strides", {2, 2}}, {"pads", {1, 0, 1, 1}}}, "", true},
      {{2, 4, 9}, {4, 3, 3}, {{"strides", {3}}, {"output_padding", {2}}, {"group", {2}}}, "", true},
      {{1, 2, 5, 5}, {2, 2, 3, 3}, {{"dilations", {2, 2}}, {"strides", {2, 1}}, {"output_padding", {1, 0}}}, "", false},
      {{1, 2, 4, 5}, {2, 3, 3, 3}, {{"strides", {2, 2}}}, "SAME_UPPER", true},
      {{1, 2, 4, 5}, {2, 3, 3, 3}, {{"strides", {3, 2}}, {"output_shape", {13, 11}}}, "", false},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {{"strides", {2, 1, 2}}, {"pads", {0, 1, 1, 1, 0, 0}}}, "", true}};
  for (const Case& c : cases) {
    INFO("x " << c.x.size() << "-d, " << c.ints.size() << " attributes, auto_pad " << c.auto_pad);
    models::GraphBuilder b("deconv");
    std::string x = b.input("x", c.x);
    ir::Attrs a;
    for (const auto& [name, v] : c.ints) {
      if (name == "group")
        a.set(name, v[0]);
      else
        a.set(name, v);
    }
    if (!c.auto_pad.empty()) a.set("auto_pad", c.auto_pad);
    const std::int64_t group = a.i("group", 1);
    std::vector<std::string> operands{x, b.weight(c.w, 0.3)};
    if (c.bias) operands.push_back(b.weight({c.w[1] * group}, 0.3));
    // (The library op `saturn opt` substitutes lowers alike.)
    const char* op = (&c - cases.data()) % 2 ? "dnnl.conv_transpose" : "conv_transpose";
    auto p = check_against_interpreter(b.finish({b.op("relu", {b.op(op, operands, a)})}), 1e-4, 1e-4);
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "oneDNN conv_transpose") == 1);
    CHECK(steps_with(*p, "+relu") == 0);  // a kernel: no post-op (slower in oneDNN)
    CHECK(p->fused_kernels == 1);
  }
}

TEST_CASE("Comparisons - logic - where and casts fuse with f32 arithmetic across element types") {
  ir::Attrs to_f32, to_bool;
  to_f32.set("to", std::string("f32"));
  to_bool.set("to", std::string("bool"));
  SECTION("where on a comparison of fused values") {
    models::GraphBuilder b("where");
    std::string x = b.input("x", {4, 7}), y = b.input("y", {4, 7});
    std::string c = b.op("less", {b.op("mul", {x, y}), b.op("sub", {y, x})});
    auto p = check_against_interpreter(b.finish({b.op("where", {c, b.op("exp", {x}), b.op("neg", {y})})}));
    CHECK(p->reference_ops.empty());
    CHECK(p->fused_kernels == 1);
  }
  SECTION("a broadcast bool mask before a softmax") {
    models::GraphBuilder b("mask");
    std::string x = b.input("x", {3, 5, 9});
    std::string m = b.input("m", {5, 9}, ir::DType::Bool);
    ir::Attrs sm;
    sm.set("axis", std::int64_t{-1});
    auto p = check_against_interpreter(b.finish({b.op("softmax", {b.op("where", {m, x, b.fill({}, -1e9)})}, sm)}));
    CHECK(p->reference_ops.empty());
  }
  SECTION("integer inputs cast to f32 and to bool") {
    for (ir::DType t : {ir::DType::I64, ir::DType::I32, ir::DType::I8, ir::DType::U8}) {
      INFO(ir::dtype_name(t));
      models::GraphBuilder b("ints");
      std::string x = b.input("x", {6, 5});
      std::string k = b.input("k", {1, 5}, t);
      std::string pad = b.op("mul", {b.op("sub", {b.fill({}, 1.0), b.op("cast", {k}, to_f32)}), b.fill({}, -100.0)});
      std::string keep = b.op("where", {b.op("cast", {k}, to_bool), x, pad});
      auto p = check_against_interpreter(b.finish({b.op("add", {keep, pad})}));
      CHECK(p->reference_ops.empty());
      // pad (two uses) and the [1 5] bool (broadcast) are stored, each by a
      // kernel of its own; where+add is the third.
      CHECK(p->fused_kernels == 3);
      CHECK(steps_with(*p, "where+add") == 1);
    }
  }
  SECTION("an i64 beyond 2^53 is rounded through double as the reference cast does") {
    models::GraphBuilder b("big");
    std::string k = b.input("k", {4}, ir::DType::I64);
    ir::Tensor v(ir::DType::I64, {4});
    // 2^53 + 2^29 + 1: f32 from double gives 2^53, straight to f32 2^53 + 2^30.
    const std::vector<std::int64_t> vals{9007199791611905LL, 16777217LL, -9007199791611905LL, 3};
    for (std::size_t i = 0; i < 4; ++i) v.set_int(i, vals[i]);
    // Exactly: the two roundings differ by one f32 ulp.
    auto p =
        check_against_interpreter(b.finish({b.op("mul", {b.op("cast", {k}, to_f32), b.fill({}, 1.0)})}), {v}, 0, 0);
    CHECK(p->reference_ops.empty());
  }
  SECTION("bool results - logic - a bool output and a bool operand of a reduction") {
    models::GraphBuilder b("logic");
    std::string x = b.input("x", {5, 6}), y = b.input("y", {5, 6});
    std::string m = b.input("m", {1, 6}, ir::DType::Bool);
    std::string g = b.op("greater", {x, y});
    std::string l = b.op("xor", {b.op("and", {b.op("not", {m}), g}), b.op("or", {m, b.op("equal", {x, x})})});
    // l is a graph output (a bool kernel result) and an operand of
    // reduce_max (of bools: any), which reads it stored.
    auto p = check_against_interpreter(
        b.finish({l, b.op("reduce_max", {l}, models::ints_attr("axes", {1})), b.op("less_equal", {x, y})}));
    CHECK(p->reference_ops.empty());
  }
  SECTION("to bool - zero is false and NaN is true") {
    models::GraphBuilder b("nan");
    std::string x = b.input("x", {3, 4});
    std::string zero = b.op("mul", {x, b.fill({}, 0.0)});
    std::string nan = b.op("div", {zero, zero});
    auto p = check_against_interpreter(
        b.finish({b.op("cast", {zero}, to_bool), b.op("cast", {nan}, to_bool), b.op("equal", {nan, nan})}));
    CHECK(p->reference_ops.empty());
  }
  SECTION("comparisons of i64 values fuse - in i64 - exact beyond 2^53") {
    models::GraphBuilder b("cmp");
    std::string k = b.input("k", {3}, ir::DType::I64), j = b.input("j", {3}, ir::DType::I64);
    ir::Tensor kv(ir::DType::I64, {3}), jv(ir::DType::I64, {3});
    // 2^60 + 1 and 2^60 are one double.
    const std::vector<std::int64_t> ks{(std::int64_t{1} << 60) + 1, -5, 7}, js{std::int64_t{1} << 60, -5, 8};
    for (std::size_t i = 0; i < 3; ++i) {
      kv.set_int(i, ks[i]);
      jv.set_int(i, js[i]);
    }
    auto p = check_against_interpreter(b.finish({b.op("less", {j, k}), b.op("equal", {k, j})}), {kv, jv}, 0, 0);
    CHECK(p->reference_ops.empty());
    for (const lower::LoopKernel& kernel : *p->kernels) CHECK(kernel.compute == ir::DType::I64);
  }
  SECTION("comparisons of 8- and 32-bit integers fuse - in f64 - where f32 would round") {
    models::GraphBuilder b("cmp32");
    std::string k = b.input("k", {4}, ir::DType::I32), j = b.input("j", {4}, ir::DType::I32);
    std::string c = b.input("c", {4}, ir::DType::I8);
    ir::Tensor kv(ir::DType::I32, {4}), jv(ir::DType::I32, {4}), cv(ir::DType::I8, {4});
    // 2^24 + 1 and 2^24 are one f32.
    const std::vector<std::int64_t> ks{16777217, -16777217, 5, 2147483647}, js{16777216, -16777216, 5, 2147483646};
    for (std::size_t i = 0; i < 4; ++i) {
      kv.set_int(i, ks[i]);
      jv.set_int(i, js[i]);
      cv.set_int(i, static_cast<std::int64_t>(i) * 60 - 100);
    }
    auto p = check_against_interpreter(
        b.finish({b.op("equal", {k, j}), b.op("less", {j, k}), b.op("greater", {c, b.fill({}, 10, ir::DType::I8)})}),
        {kv, jv, cv}, 0, 0);
    CHECK(p->reference_ops.empty());
  }
}

TEST_CASE("f16 - bf16 and f64 values are kernels too - rounded once when stored - f64 computed in f64") {
  auto cast_to = [](const char* t) {
    ir::Attrs a;
    a.set("to", std::string(t));
    return a;
  };
  SECTION("f32 to f16 and back rounds to nearest even - overflow - subnormals - NaN") {
    for (const char* narrow : {"f16", "bf16"}) {
      INFO(narrow);
      models::GraphBuilder b("narrow");
      std::string x = b.input("x", {14});
      // The f16 value is stored before the cast back (a fused kernel would
      // keep x's f32 bits, and these inputs tell the difference).
      std::string y = b.op("cast", {b.op("mul", {x, b.fill({}, 1.0)})}, cast_to(narrow));
      std::string back = b.op("add", {b.op("cast", {y}, cast_to("f32")), b.fill({}, 0.0)});
      ir::Tensor xv(ir::DType::F32, {14});
      const std::vector<double> vals{1 + 0x1p-11,
                                     1 + 3 * 0x1p-11,
                                     1 + 0x1p-8,
                                     1 + 3 * 0x1p-8,
                                     65519.0,
                                     65520.0,
                                     0x1p-25,
                                     0x1p-25 + 0x1p-40,
                                     3e-5,
                                     -0.0,
                                     std::numeric_limits<double>::quiet_NaN(),
                                     3.4e38,
                                     -1e39,
                                     0.1};
      for (std::size_t i = 0; i < vals.size(); ++i) xv.set(i, vals[i]);
      auto p = check_against_interpreter(b.finish({back}), {xv}, 0, 0);
      CHECK(p->reference_ops.empty());
      CHECK(p->fused_kernels == 2);
    }
  }
  SECTION("f16 and bf16 arithmetic computes in f32 and rounds each result") {
    for (ir::DType t : {ir::DType::F16, ir::DType::BF16}) {
      INFO(ir::dtype_name(t));
      models::GraphBuilder b("half");
      std::string x = b.input("x", {3, 17}, t), y = b.input("y", {1, 17}, t);
      std::string s = b.op("add", {b.op("mul", {x, y}), b.op("max", {x, y})});
      auto p = check_against_interpreter(b.finish({b.op("tanh", {s}), b.op("cast", {s}, cast_to("f32"))}), 1e-2, 1e-2);
      CHECK(p->reference_ops.empty());
    }
  }
  SECTION("f64 arithmetic keeps f64 precision") {
    models::GraphBuilder b("double");
    std::string x = b.input("x", {2, 9}, ir::DType::F64);
    std::string tiny = b.fill({}, 1e-12, ir::DType::F64);
    // x + 1e-12 - x is 0 in f32 and 1e-12 in f64; exp, tanh and erf from the C library.
    std::string d = b.op("sub", {b.op("add", {x, tiny}), x});
    std::string e = b.op("add", {b.op("exp", {x}), b.op("mul", {b.op("tanh", {x}), b.op("erf", {x})})});
    std::string ne = b.op("equal", {b.op("add", {x, tiny}), x});
    auto p = check_against_interpreter(b.finish({d, e, ne, b.op("cast", {e}, cast_to("f32"))}), 1e-13, 1e-20);
    CHECK(p->reference_ops.empty());
    // (The cast to f32 rounds an f64 leaf: f32 arithmetic.)
    for (const lower::LoopKernel& k : *p->kernels)
      CHECK(k.compute == (k.out_dtype == ir::DType::F32 ? ir::DType::F32 : ir::DType::F64));
  }
  SECTION("casts between f64 - f32 - f16 - integers and bool") {
    models::GraphBuilder b("casts");
    std::string x = b.input("x", {3, 5}, ir::DType::F64);
    std::string k = b.input("k", {3, 5}, ir::DType::I32);
    std::string tiny = b.op("mul", {x, b.fill({}, 1e-50, ir::DType::F64)});
    auto p =
        check_against_interpreter(b.finish({b.op("cast", {x}, cast_to("f32")), b.op("cast", {x}, cast_to("f16")),
                                            b.op("cast", {tiny}, cast_to("bool")), b.op("cast", {k}, cast_to("f64")),
                                            b.op("cast", {b.op("cast", {x}, cast_to("f32"))}, cast_to("f64")),
                                            b.op("cast", {k}, cast_to("bf16"))}),
                                  0, 0);
    CHECK(p->reference_ops.empty());
  }
}

TEST_CASE("Gather copies whole rows of any element type - along any axis - negative indices - range errors") {
  auto indices = [](ir::DType t, const std::vector<std::int64_t>& v, const Dims& dims) {
    ir::Tensor i(t, dims);
    for (std::size_t k = 0; k < v.size(); ++k) i.set_int(k, v[k]);
    return i;
  };
  SECTION("an embedding lookup feeding a fused kernel") {
    models::GraphBuilder b("embed");
    std::string ids = b.input("ids", {2, 7}, ir::DType::I64);
    std::string x = b.input("x", {2, 7, 16});
    std::string e = b.op("gather", {b.weight({50, 16}, 1.0), ids});
    auto p =
        check_against_interpreter(b.finish({b.op("add", {e, x})}),
                                  {indices(ir::DType::I64, {0, 49, -1, -50, 7, 7, 3, 12, 0, 1, 2, 3, 4, 5}, {2, 7}),
                                   random_tensor({2, 7, 16}, 3)});
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "gather (14 rows of 64 B)") == 1);
  }
  SECTION("a middle axis with i32 indices - a fused operand") {
    models::GraphBuilder b("mid");
    std::string x = b.input("x", {3, 5, 4});
    std::string ids = b.input("ids", {4}, ir::DType::I32);
    ir::Attrs a;
    a.set("axis", std::int64_t{1});
    const ir::Graph g = b.finish({b.op("gather", {b.op("exp", {x}), ids}, a)});
    const std::vector<ir::Tensor> in{random_tensor({3, 5, 4}, 1), indices(ir::DType::I32, {-1, 0, 4, 2}, {4})};
    auto p = check_against_interpreter(g, in);
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "gather (12 rows of 16 B)") == 1);
    // Spelled out too: the interpreter's kernel shares the lowering's geometry.
    auto got = (*runtime::CpuExecutor::create(g))->run(in);
    REQUIRE(got);
    const std::int64_t picked[] = {4, 0, 4, 2};
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j)
        for (std::int64_t k = 0; k < 4; ++k)
          CHECK((*got)[0].at(static_cast<std::size_t>((i * 4 + j) * 4 + k)) ==
                Approx(std::exp(in[0].at(static_cast<std::size_t>((i * 5 + picked[j]) * 4 + k)))));
  }
  SECTION("integer and bool data - scalar indices - the last axis") {
    models::GraphBuilder b("types");
    std::string k = b.input("k", {4, 6}, ir::DType::I64);
    std::string m = b.input("m", {4, 6}, ir::DType::Bool);
    std::string ids = b.input("ids", {}, ir::DType::I64);
    ir::Attrs last;
    last.set("axis", std::int64_t{-1});
    auto p =
        check_against_interpreter(b.finish({b.op("gather", {k, ids}), b.op("gather", {m, ids}, last)}),
                                  {random_tensor({4, 6}, 1, -9, 9, ir::DType::I64),
                                   random_tensor({4, 6}, 2, 0, 1, ir::DType::Bool), indices(ir::DType::I64, {-2}, {})});
    CHECK(p->reference_ops.empty());
  }
  SECTION("large enough to split over the pool") {
    models::GraphBuilder b("big");
    std::string ids = b.input("ids", {300}, ir::DType::I64);
    std::vector<std::int64_t> v;
    for (std::int64_t i = 0; i < 300; ++i) v.push_back((i * 37) % 1000 - 500);
    auto p = check_against_interpreter(b.finish({b.op("gather", {b.weight({1000, 256}, 1.0), ids})}),
                                       {indices(ir::DType::I64, v, {300})});
    CHECK(steps_with(*p, "gather (300 rows of 1024 B)") == 1);
  }
  SECTION("an index out of range fails the run naming the node") {
    models::GraphBuilder b("range");
    std::string ids = b.input("ids", {3}, ir::DType::I64);
    const ir::Graph g = b.finish({b.op("gather", {b.weight({5, 2}, 1.0), ids})});
    auto exec = runtime::CpuExecutor::create(g);
    REQUIRE(exec);
    for (std::int64_t bad : {5, -6}) {
      const std::vector<ir::Tensor> in{indices(ir::DType::I64, {0, bad, 1}, {3})};
      auto got = (*exec)->run(in);
      REQUIRE_FALSE(got);
      CHECK(got.error().message.find("gather") != std::string::npos);
      CHECK(got.error().message.find("index " + std::to_string(bad) + " out of range for axis of size 5") !=
            std::string::npos);
    }
  }
}

namespace {

// Pad's meaning spelled out per element, apart from ir/pad.hpp (which the
// interpreter's kernel shares with the lowering): numpy.pad's modes as
// repeated reflection, repeated wrapping and clamping.
ir::Tensor padded_by_definition(const ir::Tensor& x, const Dims& pads, const std::string& mode, double value) {
  const std::size_t rank = x.rank();
  Dims od = x.dims();
  for (std::size_t d = 0; d < rank; ++d) od[d] += pads[d] + pads[d + rank];
  ir::Tensor out(x.dtype(), od);
  for (std::size_t i = 0; i < out.numel(); ++i) {
    std::size_t rest = i, src = 0, stride = 1;
    bool fill = false;
    for (std::size_t d = rank; d-- > 0;) {
      const auto n = x.dims()[d];
      std::int64_t v = static_cast<std::int64_t>(rest % static_cast<std::size_t>(od[d])) - pads[d];
      rest /= static_cast<std::size_t>(od[d]);
      if (v < 0 || v >= n) {
        if (mode == "constant" || n == 0) fill = true;
        if (mode == "edge") v = v < 0 ? 0 : n - 1;
        while (mode == "wrap" && (v < 0 || v >= n)) v += v < 0 ? n : -n;
        while (mode == "reflect" && n > 1 && (v < 0 || v >= n)) v = v < 0 ? -v : 2 * (n - 1) - v;
        if (mode == "reflect" && n == 1) v = 0;
      }
      src += static_cast<std::size_t>(v) * stride;
      stride *= static_cast<std::size_t>(n);
    }
    out.set(i, fill ? value : x.at(src));
  }
  return out;
}

void check_equal(const ir::Tensor& got, const ir::Tensor& want) {
  REQUIRE(got.dims() == want.dims());
  REQUIRE(got.dtype() == want.dtype());
  for (std::size_t i = 0; i < got.numel(); ++i) {
    INFO("element " << i << " of " << got.summary());
    CHECK(got.at(i) == want.at(i));
  }
}

ir::Attrs pad_attrs(const Dims& pads, const std::string& mode, double value = 0.0) {
  ir::Attrs a;
  a.set("pads", pads);
  a.set("mode", mode);
  a.set("value", value);
  return a;
}

}  // namespace

TEST_CASE("GatherElements copies elements of any element type - every axis - shorter indices - range errors") {
  auto indices = [](ir::DType t, const std::vector<std::int64_t>& v, const Dims& dims) {
    ir::Tensor i(t, dims);
    for (std::size_t k = 0; k < v.size(); ++k) i.set_int(k, v[k]);
    return i;
  };
  auto axis = [](std::int64_t a) {
    ir::Attrs at;
    at.set("axis", a);
    return at;
  };
  SECTION("the last axis - negative indices - spelled out") {
    models::GraphBuilder b("last");
    const ir::Graph g =
        b.finish({b.op("gather_elements", {b.input("x", {3, 4}), b.input("i", {3, 2}, ir::DType::I64)}, axis(-1))});
    const std::vector<ir::Tensor> in{random_tensor({3, 4}, 1), indices(ir::DType::I64, {0, -1, 3, 1, 2, -4}, {3, 2})};
    auto p = check_against_interpreter(g, in);
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "gather_elements (6 elements)") == 1);
    auto got = (*runtime::CpuExecutor::create(g))->run(in);
    REQUIRE(got);
    const std::size_t picked[3][2] = {{0, 3}, {3, 1}, {2, 0}};
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 0; c < 2; ++c) CHECK((*got)[0].at(r * 2 + c) == in[0].at(r * 4 + picked[r][c]));
  }
  SECTION("the first axis of a fused value - i32 indices shorter off the axis") {
    models::GraphBuilder b("first");
    std::string x = b.op("exp", {b.input("x", {4, 5})});
    auto p = check_against_interpreter(
        b.finish({b.op("gather_elements", {x, b.input("i", {2, 3}, ir::DType::I32)}, axis(0))}),
        {random_tensor({4, 5}, 2), indices(ir::DType::I32, {3, 0, -1, 1, 2, -4}, {2, 3})});
    CHECK(p->reference_ops.empty());
  }
  SECTION("a middle axis of integer and bool data") {
    models::GraphBuilder b("types");
    std::string i = b.input("i", {2, 2, 3}, ir::DType::I64);  // (the first input)
    auto p = check_against_interpreter(
        b.finish({b.op("gather_elements", {b.input("k", {2, 4, 3}, ir::DType::I64), i}, axis(1)),
                  b.op("gather_elements", {b.input("m", {2, 4, 3}, ir::DType::Bool), i}, axis(1))}),
        {indices(ir::DType::I64, {0, 1, 2, 3, -1, -2, -3, -4, 0, 3, 3, 1}, {2, 2, 3}),
         random_tensor({2, 4, 3}, 3, -9, 9, ir::DType::I64), random_tensor({2, 4, 3}, 4, 0, 1, ir::DType::Bool)});
    CHECK(p->reference_ops.empty());
  }
  SECTION("large enough to split over the pool") {
    models::GraphBuilder b("big");
    std::vector<std::int64_t> v;
    for (std::int64_t k = 0; k < 64 * 1024; ++k) v.push_back((k * 37) % 2048 - 1024);
    auto p = check_against_interpreter(
        b.finish(
            {b.op("gather_elements", {b.input("x", {64, 1024}), b.input("i", {64, 1024}, ir::DType::I64)}, axis(1))}),
        {random_tensor({64, 1024}, 5), indices(ir::DType::I64, v, {64, 1024})});
    CHECK(steps_with(*p, "gather_elements (65536 elements)") == 1);
  }
  SECTION("an index out of range fails the run naming the node") {
    models::GraphBuilder b("range");
    const ir::Graph g =
        b.finish({b.op("gather_elements", {b.weight({2, 5}, 1.0), b.input("i", {2, 1}, ir::DType::I64)}, axis(1))});
    auto exec = runtime::CpuExecutor::create(g);
    REQUIRE(exec);
    for (std::int64_t bad : {5, -6}) {
      const std::vector<ir::Tensor> in{indices(ir::DType::I64, {0, bad}, {2, 1})};
      auto got = (*exec)->run(in);
      REQUIRE_FALSE(got);
      CHECK(got.error().message.find("gather_elements") != std::string::npos);
      CHECK(got.error().message.find("index " + std::to_string(bad) + " out of range for axis of size 5") !=
            std::string::npos);
    }
  }
}

TEST_CASE("Pad is row copies of any element type - every mode - cropping - empty axes") {
  SECTION("every mode on f32 - a fused operand and a fused consumer") {
    for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
      INFO(mode);
      // wrap pads by more than the axis (twice round); reflect by at most n - 1.
      const Dims pads = mode == "wrap" ? Dims{1, 0, 7, 2, 1, 3} : Dims{1, 0, 3, 2, 1, 2};
      models::GraphBuilder b("pad");
      std::string x = b.input("x", {3, 4, 5});
      const ir::Graph g = b.finish({b.op("relu", {b.op("pad", {b.op("exp", {x})}, pad_attrs(pads, mode, -2.5))})});
      const std::vector<ir::Tensor> in{random_tensor({3, 4, 5}, 7)};
      auto p = check_against_interpreter(g, in);
      CHECK(p->reference_ops.empty());
      CHECK(steps_with(*p, "pad (" + mode) == 1);
      auto got = (*runtime::CpuExecutor::create(g))->run(in);
      REQUIRE(got);
      ir::Tensor e(ir::DType::F32, {3, 4, 5});
      for (std::size_t i = 0; i < e.numel(); ++i) e.set(i, std::exp(in[0].at(i)));
      ir::Tensor want = padded_by_definition(e, pads, mode, -2.5);
      for (std::size_t i = 0; i < want.numel(); ++i) want.set(i, std::max(0.0, want.at(i)));
      REQUIRE((*got)[0].dims() == want.dims());
      for (std::size_t i = 0; i < want.numel(); ++i) CHECK((*got)[0].at(i) == Approx(want.at(i)));
    }
  }
  SECTION("negative pads crop - bool and i64 data - an axis with no elements") {
    models::GraphBuilder b("crop");
    std::string m = b.input("m", {4, 6}, ir::DType::Bool);
    std::string k = b.input("k", {3, 5}, ir::DType::I64);
    std::string z = b.input("z", {2, 0, 3});
    const ir::Graph g = b.finish({b.op("pad", {m}, pad_attrs({-1, 2, 1, -3}, "constant", 1.0)),
                                  b.op("pad", {k}, pad_attrs({2, -1, -1, 3}, "reflect")),
                                  b.op("pad", {k}, pad_attrs({0, 2, 1, 0}, "constant", 7.0)),
                                  b.op("pad", {z}, pad_attrs({0, 1, 0, 0, 1, 1}, "edge", 4.0))});
    const std::vector<ir::Tensor> in{random_tensor({4, 6}, 1, 0, 1, ir::DType::Bool),
                                     random_tensor({3, 5}, 2, -9, 9, ir::DType::I64),
                                     ir::Tensor(ir::DType::F32, {2, 0, 3})};
    auto p = check_against_interpreter(g, in);
    CHECK(p->reference_ops.empty());
    auto got = (*runtime::CpuExecutor::create(g))->run(in);
    REQUIRE(got);
    check_equal((*got)[0], padded_by_definition(in[0], {-1, 2, 1, -3}, "constant", 1.0));
    check_equal((*got)[1], padded_by_definition(in[1], {2, -1, -1, 3}, "reflect", 0.0));
    check_equal((*got)[2], padded_by_definition(in[1], {0, 2, 1, 0}, "constant", 7.0));
    check_equal((*got)[3], padded_by_definition(in[2], {0, 1, 0, 0, 1, 1}, "edge", 4.0));
    CHECK((*got)[3].dims() == Dims{2, 2, 4});
    CHECK((*got)[3].at(5) == 4.0);
  }
  SECTION("large enough to split over the pool") {
    models::GraphBuilder b("big");
    std::string x = b.input("x", {8, 130, 130});
    auto p = check_against_interpreter(b.finish({b.op("pad", {x}, pad_attrs({0, 1, 1, 0, 1, 1}, "edge"))}));
    CHECK(steps_with(*p, "pad (edge, 1056 rows)") == 1);
  }
}

TEST_CASE("Trilu is row copies - both triangles - diagonals in and out of range - any element type") {
  for (const std::int64_t k : {-4, -1, 0, 2, 6}) {
    for (const bool upper : {true, false}) {
      INFO("k " << k << " upper " << upper);
      models::GraphBuilder b("trilu");
      std::string x = b.input("x", {2, 3, 5});
      std::string m = b.input("m", {5, 4}, ir::DType::I64);
      ir::Attrs a;
      a.set("k", k);
      a.set("upper", std::int64_t{upper});
      const ir::Graph g = b.finish({b.op("trilu", {b.op("neg", {x})}, a), b.op("trilu", {m}, a)});
      const std::vector<ir::Tensor> in{random_tensor({2, 3, 5}, 3), random_tensor({5, 4}, 4, -9, 9, ir::DType::I64)};
      auto p = check_against_interpreter(g, in);
      CHECK(p->reference_ops.empty());
      auto got = (*runtime::CpuExecutor::create(g))->run(in);
      REQUIRE(got);
      for (std::size_t t = 0; t < 2; ++t) {
        const ir::Tensor& y = (*got)[t];
        const std::int64_t rows = y.dims()[y.rank() - 2], cols = y.dims()[y.rank() - 1];
        for (std::size_t e = 0; e < y.numel(); ++e) {
          const std::int64_t j = static_cast<std::int64_t>(e) % cols, i = static_cast<std::int64_t>(e) / cols % rows;
          const bool keep = upper ? j - i >= k : j - i <= k;
          const double x_e = t == 0 ? -in[0].at(e) : in[1].at(e);
          INFO("result " << t << " element " << e);
          CHECK(y.at(e) == (keep ? x_e : 0.0));
        }
      }
    }
  }
}

TEST_CASE("Argmax and argmin run natively - every axis - ties - NaN - integer values") {
  // The ops' meaning spelled out, apart from ir/arg_reduce.hpp: the first
  // element starts as the best; a later one replaces it when strictly
  // better (or equal, selecting the last index); NaN compares false.
  auto by_definition = [](const ir::Tensor& x, std::size_t axis, bool max, bool last) {
    const Dims& d = x.dims();
    std::size_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < d.size(); ++k) {
      if (k < axis) outer *= static_cast<std::size_t>(d[k]);
      if (k > axis) inner *= static_cast<std::size_t>(d[k]);
    }
    const auto n = static_cast<std::size_t>(d[axis]);
    std::vector<double> want;
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t j = 0; j < inner; ++j) {
        std::size_t best = 0;
        for (std::size_t k = 1; k < n; ++k) {
          const double v = x.at((o * n + k) * inner + j), b = x.at((o * n + best) * inner + j);
          if ((max ? v > b : v < b) || (last && v == b)) best = k;
        }
        want.push_back(static_cast<double>(best));
      }
    return want;
  };
  ir::Tensor x = random_tensor({4, 5, 6}, 9, -2, 2);
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, std::round(x.at(i) * 2) / 2);  // ties
  x.set(0, std::nan(""));   // a NaN first element wins its column
  x.set(37, std::nan(""));  // a later one never does
  const ir::Tensor k = random_tensor({3, 7}, 4, -3, 3, ir::DType::I64);
  const ir::Tensor m = random_tensor({3, 7}, 5, -3, 3, ir::DType::I32);
  for (const std::int64_t axis : {0, 1, -1})
    for (const bool max : {true, false})
      for (const bool last : {false, true}) {
        INFO("axis " << axis << " max " << max << " last " << last);
        models::GraphBuilder b("arg");
        std::string xs = b.input("x", {4, 5, 6});
        std::string ks = b.input("k", {3, 7}, ir::DType::I64);
        std::string ms = b.input("m", {3, 7}, ir::DType::I32);
        ir::Attrs a;
        a.set("axis", axis);
        a.set("select_last_index", std::int64_t{last});
        ir::Attrs flat = a;
        flat.set("keepdims", std::int64_t{0});
        flat.set("axis", std::int64_t{axis == 1 ? 1 : 0});
        const char* op = max ? "argmax" : "argmin";
        const ir::Graph g = b.finish({b.op(op, {b.op("neg", {xs})}, a), b.op(op, {ks}, flat), b.op(op, {ms}, flat)});
        auto p = check_against_interpreter(g, {x, k, m});
        CHECK(p->reference_ops.empty());
        CHECK(steps_with(*p, op) == 3);
        auto got = (*runtime::CpuExecutor::create(g))->run(std::vector<ir::Tensor>{x, k, m});
        REQUIRE(got);
        ir::Tensor nx(ir::DType::F32, {4, 5, 6});
        for (std::size_t i = 0; i < nx.numel(); ++i) nx.set(i, -x.at(i));
        const std::vector<double> want0 = by_definition(nx, static_cast<std::size_t>((axis + 3) % 3), max, last);
        const std::vector<double> want1 = by_definition(k, axis == 1 ? 1 : 0, max, last);
        const std::vector<double> want2 = by_definition(m, axis == 1 ? 1 : 0, max, last);
        REQUIRE((*got)[0].numel() == want0.size());
        for (std::size_t i = 0; i < want0.size(); ++i) CHECK((*got)[0].at(i) == want0[i]);
        for (std::size_t i = 0; i < want1.size(); ++i) CHECK((*got)[1].at(i) == want1[i]);
        for (std::size_t i = 0; i < want2.size(); ++i) CHECK((*got)[2].at(i) == want2[i]);
      }
}

TEST_CASE("Transposing copies are oneDNN reorders - so are short rows - broadcasts and reversed reads stay kernels") {
  models::GraphBuilder b("reorder");
  std::string x = b.input("x", {3, 37, 64});
  ir::Attrs perm;
  perm.set("perm", Dims{2, 0, 1});
  ir::Attrs last2;
  last2.set("perm", Dims{0, 2, 1});
  // A slice (an offset) of a transpose, a plain transpose, a reversed slice
  // and a broadcast: graph outputs, so each is copied out.
  ir::Attrs part = models::ints_attr("starts", {1});
  part.set("ends", Dims{3});
  part.set("axes", Dims{0});
  ir::Attrs reversed = models::ints_attr("starts", {-1});
  reversed.set("ends", Dims{-1000});
  reversed.set("axes", Dims{2});
  reversed.set("steps", Dims{-1});
  const ir::Graph g = b.finish(
      {b.op("transpose", {b.op("slice", {x}, part)}, last2), b.op("transpose", {x}, perm), b.op("slice", {x}, reversed),
       b.op("expand", {b.input("r", {1, 64})}, models::ints_attr("shape", {5, 64})),
       // Rows of 2 (a pixel shuffle's): a reorder; a small one stays a kernel.
       b.op("transpose", {b.input("s", {8, 16, 16, 2})}, models::ints_attr("perm", {0, 2, 1, 3})),
       b.op("transpose", {b.input("t", {4, 4, 2})}, models::ints_attr("perm", {1, 0, 2}))});
  auto p = check_against_interpreter(g);
  CHECK(steps_with(*p, "(oneDNN reorder)") == 3);
  CHECK(p->fused_kernels == 3);  // the reversed slice, the broadcast and the small shuffle
  // Spelled out too: element (c, a, w) of the second output is x[a, w, c].
  const std::vector<ir::Tensor> in{random_tensor({3, 37, 64}, 1), random_tensor({1, 64}, 2),
                                   random_tensor({8, 16, 16, 2}, 3), random_tensor({4, 4, 2}, 4)};
  auto got = (*runtime::CpuExecutor::create(g))->run(in);
  REQUIRE(got);
  for (std::size_t c = 0; c < 64; ++c)
    for (std::size_t a = 0; a < 3; ++a)
      for (std::size_t w = 0; w < 37; ++w) CHECK((*got)[1].at((c * 3 + a) * 37 + w) == in[0].at((a * 37 + w) * 64 + c));
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t c = 0; c < 64; ++c)
      for (std::size_t w = 0; w < 37; ++w)
        CHECK((*got)[0].at((a * 64 + c) * 37 + w) == in[0].at(((a + 1) * 37 + w) * 64 + c));
}

TEST_CASE("Movement ops of integer and bool values are views too") {
  models::GraphBuilder b("typed_views");
  std::string k = b.input("k", {3, 4}, ir::DType::I64);
  std::string m = b.input("m", {1, 4}, ir::DType::Bool);
  ir::Attrs perm;
  perm.set("perm", Dims{1, 0});
  ir::Attrs part = models::ints_attr("starts", {1});
  part.set("ends", Dims{4});
  part.set("axes", Dims{1});
  auto rows = [&](std::int64_t from, std::int64_t to) {
    ir::Attrs a = models::ints_attr("starts", {from});
    a.set("ends", Dims{to});
    a.set("axes", Dims{0});
    return b.op("slice", {k}, a);
  };
  const std::vector<std::string> parts{rows(0, 1), rows(1, 3)};
  // The bool mask broadcast into a where; i64 views as outputs and as a
  // reference op's operand.
  const ir::Graph g = b.finish(
      {b.op("transpose", {k}, perm), b.op("slice", {k}, part), parts[1],
       b.op("where", {b.op("expand", {m}, models::ints_attr("shape", {3, 4})), b.input("x", {3, 4}), b.fill({}, -1.0)}),
       b.op("mul", {b.op("expand", {b.op("slice", {k}, part)}, models::ints_attr("shape", {2, 3, 3})),
                    b.op("slice", {parts[0]}, part)})});
  const std::vector<ir::Tensor> in{random_tensor({3, 4}, 1, -9, 9, ir::DType::I64),
                                   random_tensor({1, 4}, 2, 0, 1, ir::DType::Bool), random_tensor({3, 4}, 3)};
  auto p = check_against_interpreter(g, in);
  // The i64 views copied out are loop kernels (lower::is_copy), and so is
  // the integer product (i64 arithmetic).
  check_native(*p);
  auto got = (*runtime::CpuExecutor::create(g))->run(in);
  REQUIRE(got);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK((*got)[0].at_int(j * 3 + i) == in[0].at_int(i * 4 + j));
      if (j > 0) CHECK((*got)[1].at_int(i * 3 + j - 1) == in[0].at_int(i * 4 + j));
      if (i > 0) CHECK((*got)[2].at_int((i - 1) * 4 + j) == in[0].at_int(i * 4 + j));
      CHECK((*got)[3].at(i * 4 + j) == (in[1].at(j) != 0 ? in[2].at(i * 4 + j) : -1.0));
    }
}

TEST_CASE("Copies of integer views are loop kernels - reversed - transposed then reshaped - every integer type") {
  for (ir::DType t : {ir::DType::I64, ir::DType::I32, ir::DType::I8, ir::DType::U8}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("int_copies");
    std::string k = b.input("k", {5, 7}, t);
    ir::Attrs reversed = models::ints_attr("starts", {-1});
    reversed.set("ends", Dims{-100});
    reversed.set("axes", Dims{1});
    reversed.set("steps", Dims{-2});
    // (A reshape of a transposed view needs the copy; it used to run the
    // reference reshape on integers.)
    const ir::Graph g = b.finish(
        {b.op("slice", {k}, reversed), b.op("reshape", {b.op("transpose", {k}, models::ints_attr("perm", {1, 0}))},
                                            models::ints_attr("shape", {35}))});
    const std::vector<ir::Tensor> in{random_tensor({5, 7}, 4, t == ir::DType::U8 ? 0 : -100, 100, t)};
    auto p = check_against_interpreter(g, in, 0, 0);
    check_native(*p);
    CHECK(p->fused_kernels == 2);
  }
}

TEST_CASE("Resize runs natively - a step per axis - nearest of any type - linear - cubic - antialias - extrapolation") {
  struct Case {
    const char* mode;
    const char* transform;
    std::vector<std::int64_t> sizes;
    int antialias = 0;
    int steps = 2;
  };
  const std::vector<Case> cases = {
      {"nearest", "half_pixel", {2, 3, 14, 10}},
      {"nearest", "asymmetric", {2, 3, 7, 15}, 0, 1},
      {"linear", "half_pixel", {2, 3, 15, 4}},
      {"linear", "align_corners", {2, 3, 9, 11}},
      {"cubic", "pytorch_half_pixel", {2, 3, 3, 16}},
      {"cubic", "half_pixel", {2, 3, 4, 3}, 1},
      {"linear", "half_pixel_symmetric", {2, 3, 5, 6}, 1},
  };
  for (const Case& c : cases) {
    INFO(c.mode << " " << c.transform << " antialias " << c.antialias);
    models::GraphBuilder b("resize");
    std::string x = b.input("x", {2, 3, 7, 5});
    ir::Attrs a = models::ints_attr("sizes", c.sizes);
    a.set("mode", std::string(c.mode));
    a.set("coordinate_transformation_mode", std::string(c.transform));
    a.set("antialias", std::int64_t{c.antialias});
    auto p = check_against_interpreter(b.finish({b.op("resize", {x}, a)}), 1e-5, 1e-5);
    CHECK(p->reference_ops.empty());
    CHECK(steps_with(*p, "resize") == c.steps);
  }
  SECTION("nearest copies i64, f16 and bool exactly - tf_crop_and_resize extrapolates") {
    for (ir::DType t : {ir::DType::I64, ir::DType::F16, ir::DType::Bool, ir::DType::U8}) {
      INFO(ir::dtype_name(t));
      models::GraphBuilder b("resize_typed");
      std::string x = b.input("x", {3, 6}, t);
      ir::Attrs a = models::ints_attr("sizes", {5, 4});
      a.set("mode", std::string("nearest"));
      a.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
      a.set("roi", std::vector<double>{-0.5, 0.2, 1.5, 0.9});
      a.set("extrapolation_value", 1.0);
      auto p = check_against_interpreter(b.finish({b.op("resize", {x}, a)}), 0, 0);
      CHECK(p->reference_ops.empty());
    }
  }
  SECTION("linear along the last axis, a row at a time - tf_crop_and_resize extrapolates there") {
    // The last axis's two-tap pass (its own vectorized loop): long rows, a
    // split over the pool (from 256 KiB), and elements outside the roi.
    for (std::int64_t rows : {3, 300}) {
      INFO(rows << " rows");
      models::GraphBuilder b("resize_lerp");
      std::string x = b.input("x", {rows, 37});
      ir::Attrs a = models::ints_attr("sizes", {rows, 301});
      a.set("mode", std::string("linear"));
      a.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
      a.set("roi", std::vector<double>{0.0, -0.25, 1.0, 1.25});
      a.set("extrapolation_value", -7.0);
      auto p = check_against_interpreter(b.finish({b.op("resize", {x}, a)}), 1e-5, 1e-5);
      CHECK(p->reference_ops.empty());
      CHECK(steps_with(*p, "resize linear axis 1") == 1);
    }
  }
  SECTION("an integer interpolation runs the reference kernel") {
    models::GraphBuilder b("resize_int");
    std::string x = b.input("x", {3, 6}, ir::DType::I32);
    ir::Attrs a = models::ints_attr("sizes", {5, 4});
    a.set("mode", std::string("linear"));
    auto p = check_against_interpreter(b.finish({b.op("resize", {x}, a)}), 0, 0);
    CHECK(p->reference_ops == std::vector<std::string>{"resize"});
  }
}

TEST_CASE("Integer arithmetic runs in i64 kernels - wrapping to the result's width as the reference does") {
  for (ir::DType t : {ir::DType::I8, ir::DType::U8, ir::DType::I32, ir::DType::I64}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("ints");
    std::string x = b.input("x", {4, 9}, t), y = b.input("y", {1, 9}, t);
    std::string m = b.input("m", {4, 1}, ir::DType::Bool);
    ir::Attrs clip;
    clip.set("min", 3.0);
    clip.set("max", 100.0);
    ir::Attrs to_bool;
    to_bool.set("to", std::string("bool"));
    // add/sub/mul overflow (values up to 200), max/min/abs/neg, where and
    // clip fused; a comparison and a cast to bool of integers.
    std::string sum = b.op("mul", {b.op("add", {x, y}), b.op("sub", {x, y})});
    std::string mixed = b.op("where", {m, b.op("max", {sum, b.op("neg", {x})}), b.op("abs", {b.op("min", {x, y})})});
    auto p = check_against_interpreter(
        b.finish({mixed, b.op("clip", {sum}, clip), b.op("less", {sum, x}), b.op("cast", {sum}, to_bool)}),
        {random_tensor({4, 9}, 7, t == ir::DType::U8 ? 0 : -200, 200, t),
         random_tensor({1, 9}, 8, t == ir::DType::U8 ? 0 : -200, 200, t),
         random_tensor({4, 1}, 9, 0, 1, ir::DType::Bool)},
        0, 0);
    check_native(*p);
  }
  SECTION("division - both modulos - power fuse into i64 kernels") {
    for (ir::DType t : {ir::DType::I8, ir::DType::U8, ir::DType::I32, ir::DType::I64}) {
      INFO(ir::dtype_name(t));
      const bool is_unsigned = t == ir::DType::U8;
      models::GraphBuilder b("int_division");
      std::string x = b.input("x", {4, 6}, t), y = b.input("y", {1, 6}, t), e = b.input("e", {4, 1}, t);
      ir::Attrs c_mod;
      c_mod.set("fmod", std::int64_t{1});
      // Truncating division, floor and C modulo of mixed signs, powers
      // (negative ones truncate, i8 ones wrap), and a fused chain.
      const ir::Graph g =
          b.finish({b.op("div", {x, y}), b.op("mod", {x, y}), b.op("mod", {x, y}, c_mod), b.op("pow", {x, e}),
                    b.op("add", {b.op("div", {b.op("mul", {x, x}), y}), b.op("mod", {x, e})})});
      ir::Tensor divisor = random_tensor({1, 6}, 2, is_unsigned ? 1 : -7, 7, t);
      ir::Tensor exponent = random_tensor({4, 1}, 3, is_unsigned ? 1 : -2, 5, t);
      for (ir::Tensor* d : {&divisor, &exponent})
        for (std::size_t i = 0; i < d->numel(); ++i)
          if (d->at_int(i) == 0) d->set_int(i, 3);
      auto p = check_against_interpreter(
          g, {random_tensor({4, 6}, 1, is_unsigned ? 0 : -100, 100, t), divisor, exponent}, 0, 0);
      check_native(*p);
    }
  }
  SECTION("an overflowing narrow sum is wrapped before a comparison - max - division - widening cast") {
    for (ir::DType t : {ir::DType::I8, ir::DType::U8, ir::DType::I32}) {
      INFO(ir::dtype_name(t));
      models::GraphBuilder b("wrap");
      std::string x = b.input("x", {16}, t), y = b.input("y", {16}, t);
      ir::Attrs wide;
      wide.set("to", std::string("i64"));
      // Each sum is used once, so it is pending (unwrapped) when read.
      auto sum = [&] { return b.op("mul", {b.op("add", {x, y}), x}); };
      const ir::Graph g =
          b.finish({b.op("less", {sum(), x}), b.op("max", {sum(), y}), b.op("div", {sum(), b.fill({}, 3, t)}),
                    b.op("cast", {sum()}, wide), b.op("sub", {sum(), y})});
      const double lo = t == ir::DType::U8 ? 0 : t == ir::DType::I8 ? -128 : -2e9;
      const double hi = t == ir::DType::U8 ? 255 : t == ir::DType::I8 ? 127 : 2e9;
      auto p =
          check_against_interpreter(g, {random_tensor({16}, 5, lo, hi, t), random_tensor({16}, 6, lo, hi, t)}, 0, 0);
      CHECK(p->reference_ops == std::vector<std::string>{});
    }
  }
  SECTION("INT64_MIN divided by -1 wraps as the reference does") {
    models::GraphBuilder b("int_min");
    std::string x = b.input("x", {4}, ir::DType::I64), y = b.input("y", {4}, ir::DType::I64);
    const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    ir::Tensor xs(ir::DType::I64, {4}), ys(ir::DType::I64, {4});
    const std::int64_t xv[] = {lowest, lowest, 7, -7}, yv[] = {-1, 1, -1, 2};
    for (std::size_t i = 0; i < 4; ++i) {
      xs.set_int(i, xv[i]);
      ys.set_int(i, yv[i]);
    }
    const ir::Graph g = b.finish({b.op("div", {x, y}), b.op("mod", {x, y})});
    auto p = check_against_interpreter(g, {xs, ys}, 0, 0);
    auto got = runtime::interpret(g, std::vector<ir::Tensor>{xs, ys});
    REQUIRE(got);
    CHECK((*got)[0].at_int(0) == lowest);
    CHECK((*got)[0].at_int(2) == -7);
    CHECK(p->reference_ops.empty());
  }
  SECTION("a zero divisor or 0 to a negative power fails the run naming the node") {
    models::GraphBuilder b("int_zero");
    std::string x = b.input("x", {3}, ir::DType::I32), y = b.input("y", {3}, ir::DType::I32);
    const ir::Graph g = b.finish({b.op("add", {b.op("mod", {x, y}), x}), b.op("pow", {x, y})});
    auto exec = runtime::CpuExecutor::create(g);
    REQUIRE(exec);
    auto tensor = [](std::vector<std::int64_t> v) {
      ir::Tensor t(ir::DType::I32, {3});
      for (std::size_t i = 0; i < 3; ++i) t.set_int(i, v[i]);
      return t;
    };
    auto zero = (*exec)->run(std::vector<ir::Tensor>{tensor({4, 5, 6}), tensor({1, 0, 2})});
    REQUIRE_FALSE(zero);
    CHECK(zero.error().message.find("(mod): integer division by zero") != std::string::npos);
    auto power = (*exec)->run(std::vector<ir::Tensor>{tensor({4, 0, 6}), tensor({1, -2, 2})});
    REQUIRE_FALSE(power);
    CHECK(power.error().message.find("(pow): integer 0 to a negative power") != std::string::npos);
    // The flag is cleared before each run.
    auto fine = (*exec)->run(std::vector<ir::Tensor>{tensor({4, 5, -6}), tensor({1, 3, 4})});
    REQUIRE(fine);
    CHECK((*fine)[0].at_int(1) == 7);   // 5 mod 3 + 5
    CHECK((*fine)[0].at_int(2) == -4);  // -6 mod 4 = 2 (the divisor's sign), + -6
    CHECK((*fine)[1].at_int(2) == 1296);
  }
  SECTION("a kernel holding several divisions names the first node that failed - as the interpreter") {
    models::GraphBuilder b("int_zeros");
    std::string x = b.input("x", {3}, ir::DType::I64), y = b.input("y", {3}, ir::DType::I64);
    std::string z = b.input("z", {3}, ir::DType::I64);
    const std::string q = b.op("div", {x, y}), r = b.op("mod", {x, z});
    const ir::Graph g = b.finish({b.op("add", {q, r})});
    auto exec = runtime::CpuExecutor::create(g);
    REQUIRE(exec);
    CHECK((*exec)->program().fused_kernels == 1);
    auto tensor = [](std::vector<std::int64_t> v) {
      ir::Tensor t(ir::DType::I64, {3});
      for (std::size_t i = 0; i < 3; ++i) t.set_int(i, v[i]);
      return t;
    };
    auto error_of = [&](std::vector<std::int64_t> ys, std::vector<std::int64_t> zs) {
      const std::vector<ir::Tensor> in{tensor({4, 5, 6}), tensor(ys), tensor(zs)};
      auto got = (*exec)->run(in);
      auto want = runtime::interpret(g, in);
      REQUIRE_FALSE(got);
      REQUIRE_FALSE(want);
      CHECK(got.error().message == want.error().message);
      return got.error().message;
    };
    CHECK(error_of({1, 0, 2}, {1, 1, 1}).find("node '" + q + "' (div)") != std::string::npos);
    CHECK(error_of({1, 1, 2}, {1, 0, 1}).find("node '" + r + "' (mod)") != std::string::npos);
    CHECK(error_of({0, 1, 2}, {1, 1, 0}).find("node '" + q + "' (div)") != std::string::npos);  // both: the first
  }
  SECTION("the 32nd and later dividing nodes of a kernel share the last fault bit") {
    models::GraphBuilder b("int_many_zeros");
    std::string x = b.input("x", {2}, ir::DType::I64), y = b.input("y", {2}, ir::DType::I64);
    std::string t = x;
    std::vector<std::string> divs;
    for (int k = 0; k < 34; ++k) {  // t / (y - k): y = k divides by zero in division k only
      divs.push_back(b.op("div", {t, b.op("sub", {y, b.fill({}, k, ir::DType::I64)})}));
      t = b.op("add", {divs.back(), x});
    }
    const ir::Graph g = b.finish({t});
    auto exec = runtime::CpuExecutor::create(g);
    REQUIRE(exec);
    REQUIRE((*exec)->program().fused_kernels == 1);
    auto error_of = [&](std::int64_t k) {
      ir::Tensor xs(ir::DType::I64, {2}), ys(ir::DType::I64, {2});
      xs.set_int(0, 1000);
      xs.set_int(1, 1000);
      ys.set_int(0, 100);
      ys.set_int(1, k);
      auto got = (*exec)->run(std::vector<ir::Tensor>{xs, ys});
      REQUIRE_FALSE(got);
      return got.error().message;
    };
    CHECK(error_of(0).find("node '" + divs[0] + "' (div): integer division by zero") != std::string::npos);
    CHECK(error_of(30).find("node '" + divs[30] + "' (div): integer division by zero") != std::string::npos);
    for (int k : {31, 33}) {
      const std::string e = error_of(k);
      CHECK(e.find("integer division by zero (or 0 to a negative power) in ") != std::string::npos);
      for (int i : {31, 32, 33}) CHECK(e.find("node '" + divs[static_cast<std::size_t>(i)] + "'") != std::string::npos);
      CHECK(e.find("node '" + divs[30] + "'") == std::string::npos);
    }
  }
}

TEST_CASE("Float to integer results fuse - truncated - NaN 0 - saturated then wrapped as the reference") {
  const double big = 0x1p63;
  const std::vector<double> values = {2.7,   -2.7, -0.5, 300.0, -129.0,   3e9,       -3e9,    1e20,
                                      -1e20, big,  -big, NAN,   INFINITY, -INFINITY, 65504.0, 1e-3};
  for (ir::DType from : {ir::DType::F32, ir::DType::F64, ir::DType::F16}) {
    INFO(ir::dtype_name(from));
    models::GraphBuilder b("to_int");
    std::string x = b.input("x", {static_cast<std::int64_t>(values.size())}, from);
    std::vector<std::string> outs;
    for (const char* to : {"i64", "i32", "i8", "u8"}) {
      ir::Attrs a;
      a.set("to", std::string(to));
      outs.push_back(b.op("cast", {b.op("mul", {x, x})}, a));  // fused with the arithmetic before it
    }
    // An integer to a float power: computed in double, truncated.
    std::string n = b.input("n", {static_cast<std::int64_t>(values.size())}, ir::DType::I32);
    outs.push_back(b.op("pow", {n, b.op("abs", {x})}));
    // Converted integers read again: saturated (1e20 is INT64_MAX) and
    // wrapped (3e9 is negative as an i32) first.
    auto cast = [&](const std::string& v, const char* to) {
      ir::Attrs a;
      a.set("to", std::string(to));
      return b.op("cast", {v}, a);
    };
    outs.push_back(cast(cast(b.op("neg", {x}), "i64"), "f32"));
    outs.push_back(b.op("less", {cast(b.op("neg", {x}), "i32"), n}));
    ir::Tensor xs(from, {static_cast<std::int64_t>(values.size())}), ns(ir::DType::I32, xs.dims());
    for (std::size_t i = 0; i < values.size(); ++i) {
      xs.set(i, from == ir::DType::F16 ? std::clamp(values[i], -65504.0, 65504.0) : values[i]);
      ns.set_int(i, static_cast<std::int64_t>(i % 5) - 2);
    }
    auto p = check_against_interpreter(b.finish(outs), {xs, ns}, 0, 0);
    CHECK(p->reference_ops == std::vector<std::string>{});
  }
}

TEST_CASE("oneDNN max pooling and relu keep NaN and -inf - as the reference") {
  // oneDNN lets a NaN lose to a number; found by tools/fuzz_targets.py --family nn.
  models::GraphBuilder b("pool_nan");
  std::string x = b.input("x", {1, 3, 6, 7});
  ir::Attrs pool = models::ints_attr("kernel_shape", {2, 3});
  pool.set("strides", Dims{2, 1});
  pool.set("pads", Dims{1, 1, 0, 1});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  // Pooled directly, and after a convolution (its result in oneDNN's layout).
  std::string c = b.op("conv", {x, b.weight({3, 3, 3, 3}, 0.3)}, pads);
  // (And relu keeps NaN, fused into the convolution as oneDNN's or not.)
  const ir::Graph g = b.finish(
      {b.op("max_pool", {x}, pool), b.op("max_pool", {c}, pool), b.op("relu", {c}), b.op("relu", {b.op("neg", {x})})});
  ir::Tensor in = random_tensor({1, 3, 6, 7}, 3);
  for (std::size_t i : {0u, 9u, 20u, 47u, 100u}) in.set(i, NAN);  // first taps, last taps, middles
  auto p = check_against_interpreter(g, {in}, 1e-5, 1e-5);
  CHECK(steps_with(*p, "oneDNN max pool") == 2);
  // Without NaN nothing changes (and the results are the reference's).
  check_against_interpreter(g, {random_tensor({1, 3, 6, 7}, 4)}, 1e-5, 1e-5);
  // A large input is scanned in blocks over the pool: one NaN in the last.
  models::GraphBuilder big("pool_nan_big");
  std::string y = big.input("y", {1, 4, 128, 128});
  const ir::Graph h = big.finish({big.op("max_pool", {y}, models::ints_attr("kernel_shape", {2, 2}))});
  ir::Tensor many = random_tensor({1, 4, 128, 128}, 5);
  many.set(many.numel() - 3, NAN);
  auto q = check_against_interpreter(h, {many}, 1e-5, 1e-5);
  CHECK(steps_with(*q, "oneDNN max pool") == 1);
  // oneDNN gives -FLT_MAX for a window of -inf (found by fuzz_targets.py --opt).
  ir::Tensor low = random_tensor({1, 3, 6, 7}, 6);
  for (std::size_t i : {0u, 1u, 7u, 8u, 41u}) low.set(i, -INFINITY);  // the first window's taps are 0 and 1
  check_against_interpreter(g, {low}, 1e-5, 1e-5);
  models::GraphBuilder one("pool_1x1");
  std::string z = one.input("z", {1, 2, 2, 3});
  const ir::Graph k1 = one.finish({one.op("max_pool", {z}, models::ints_attr("kernel_shape", {1, 1}))});
  ir::Tensor ones = random_tensor({1, 2, 2, 3}, 7);
  ones.set(4, -INFINITY);
  ones.set(5, INFINITY);
  auto r = check_against_interpreter(k1, {ones}, 0, 0);
  CHECK(steps_with(*r, "oneDNN max pool") == 1);
  // A dilated window in the padding holds no element: -inf, as the
  // reference (oneDNN gave -FLT_MAX; found by fuzz_targets.py --opt).
  models::GraphBuilder pad("pool_empty");
  std::string e = pad.input("e", {2, 3, 1});
  ir::Attrs win = models::ints_attr("kernel_shape", {2});
  win.set("strides", Dims{2});
  win.set("pads", Dims{1, 1});
  win.set("dilations", Dims{2});
  win.set("ceil_mode", std::int64_t{1});
  ir::Attrs with_pad = win;
  with_pad.set("count_include_pad", std::int64_t{1});
  const ir::Graph empty =
      pad.finish({pad.op("max_pool", {e}, win), pad.op("avg_pool", {e}, win), pad.op("avg_pool", {e}, with_pad)});
  auto q2 = check_against_interpreter(empty, {random_tensor({2, 3, 1}, 8)}, 0, 0);
  CHECK(steps_with(*q2, "oneDNN max pool") == 1);  // (oneDNN refuses these average pools)
}

TEST_CASE("A clip fused into a oneDNN convolution keeps NaN - and its bounds") {
  // oneDNN's clip post-op is max and min in the vector unit's sense, which
  // turn a NaN into a bound.
  models::GraphBuilder b("conv_clip_nan");
  std::string x = b.input("x", {1, 3, 6, 7});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  ir::Attrs relu6, above;
  relu6.set("min", 0.0);
  relu6.set("max", 6.0);
  above.set("min", -0.25);  // no max
  const ir::Graph g =
      b.finish({b.op("clip", {b.op("conv", {x, b.weight({4, 3, 3, 3}, 2.0), b.weight({4}, 0.5)}, pads)}, relu6),
                b.op("clip", {b.op("conv", {x, b.weight({4, 3, 3, 3}, 2.0)}, pads)}, above)});
  auto check_with = [&](std::uint32_t seed, std::vector<std::pair<std::size_t, float>> special) {
    ir::Tensor in = random_tensor({1, 3, 6, 7}, seed);
    for (auto [i, v] : special) in.set(i, v);
    auto p = check_against_interpreter(g, {in}, 1e-5, 1e-5);
    CHECK(steps_with(*p, "+clip") == 2);
    CHECK(steps_with(*p, "clip") == 2);  // no clip of its own
  };
  SECTION("finite operands - both bounds reached") { check_with(1, {}); }
  SECTION("a NaN in the source") { check_with(2, {{17, NAN}}); }
  SECTION("infinities in the source") { check_with(3, {{40, INFINITY}, {41, -INFINITY}}); }
}

TEST_CASE(
    "Guarded convolutions trust the bounds their source's writers publish - and read it where those prove nothing") {
  // conv+clip -> conv+clip -> conv -> conv+relu, a pool and a concat
  // between: each guarded call's source written by a oneDNN call, a max
  // pooling loop or a concat of them. A NaN or an infinity in x reaches
  // every result as the reference computes it: a writer that saw one
  // publishes nothing, and its readers read their source again.
  models::GraphBuilder b("bounds_chain");
  std::string x = b.input("x", {1, 3, 8, 8});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  ir::Attrs relu6;
  relu6.set("min", 0.0);
  relu6.set("max", 6.0);
  ir::Attrs pool = models::ints_attr("kernel_shape", {2, 2});
  pool.set("strides", Dims{2, 2});
  ir::Attrs channels = models::ints_attr("axis", {1});
  channels.set("axis", std::int64_t{1});
  auto conv = [&](const std::string& in, std::int64_t cin, std::int64_t cout, double scale) {
    return b.op("conv", {in, b.weight({cout, cin, 3, 3}, scale), b.weight({cout}, 0.5)}, pads);
  };
  const std::string a = b.op("clip", {conv(x, 3, 8, 2.0)}, relu6);
  const std::string c = b.op("clip", {conv(a, 8, 8, 2.0)}, relu6);
  const std::string d = conv(c, 8, 8, 1.0);
  const std::string e = b.op("relu", {conv(d, 8, 8, 1.0)});
  const std::string f = b.op("relu", {conv(b.op("max_pool", {e}, pool), 8, 4, 1.0)});
  const std::string h = b.op("relu", {conv(b.op("concat", {a, e}, channels), 16, 4, 1.0)});
  // Weights large enough that the bounds overflow: the call reads its source.
  const std::string big = b.op("relu", {conv(f, 4, 4, 1e30)});
  const ir::Graph g = b.finish({a, c, e, f, h, big});
  auto check_with = [&](std::uint32_t seed, std::vector<std::pair<std::size_t, float>> special) {
    ir::Tensor in = random_tensor({1, 3, 8, 8}, seed);
    for (auto [i, v] : special) in.set(i, v);
    auto p = check_against_interpreter(g, {in}, 1e-3, 1e-4);  // (rounding along five convolutions)
    CHECK(steps_with(*p, "+clip") == 2);
    CHECK(steps_with(*p, "+relu") == 4);
  };
  SECTION("finite operands") { check_with(1, {}); }
  SECTION("a NaN in x") { check_with(2, {{17, NAN}}); }
  SECTION("infinities in x") { check_with(3, {{40, INFINITY}, {100, -INFINITY}}); }
}

TEST_CASE("SiLU and hard swish fused into oneDNN convolutions keep NaN and infinities - with no guard") {
  // oneDNN's swish and hardswish post-ops end multiplying by the result:
  // -inf and NaN give NaN, inf gives inf, as the reference's mul does; the
  // step runs the fused primitive alone (no scan of its source).
  models::GraphBuilder b("conv_silu_nan");
  std::string x = b.input("x", {1, 3, 6, 7});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  const std::string y = b.op("conv", {x, b.weight({4, 3, 3, 3}, 2.0), b.weight({4}, 0.5)}, pads);
  const ir::Graph g = b.finish({b.op("mul", {y, b.op("sigmoid", {y})}),
                                b.op("hard_swish", {b.op("conv", {x, b.weight({4, 3, 3, 3}, 2.0)}, pads)})});
  auto check_with = [&](std::uint32_t seed, std::vector<std::pair<std::size_t, float>> special) {
    ir::Tensor in = random_tensor({1, 3, 6, 7}, seed);
    for (auto [i, v] : special) in.set(i, v);
    auto p = check_against_interpreter(g, {in}, 1e-5, 1e-5);
    CHECK(steps_with(*p, "+silu") == 1);
    CHECK(steps_with(*p, "+hard_swish") == 1);
    CHECK(steps_with(*p, "sigmoid") == 0);  // no kernel of its own
  };
  SECTION("finite operands") { check_with(1, {}); }
  SECTION("a NaN in the source") { check_with(2, {{17, NAN}}); }
  SECTION("infinities in the source") { check_with(3, {{40, INFINITY}, {41, -INFINITY}, {3, INFINITY}}); }
}

TEST_CASE("A ReLU fused into a oneDNN convolution keeps NaN") {
  // oneDNN's ReLU post-op maps NaN to 0; found by tools/fuzz_targets.py --family nn.
  models::GraphBuilder b("conv_relu_nan");
  std::string x = b.input("x", {1, 3, 6, 7}), skip = b.input("skip", {1, 4, 6, 7}), w = b.input("w", {4, 3, 3, 3});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  auto conv = [&](const std::string& weights, bool bias) {
    std::vector<std::string> in{x, weights};
    if (bias) in.push_back(b.weight({4}, 0.5));
    return b.op("conv", in, pads);
  };
  const ir::Graph g = b.finish({b.op("relu", {conv(b.weight({4, 3, 3, 3}, 0.3), true)}),  // constant weights
                                b.op("relu", {b.op("add", {conv(b.weight({4, 3, 3, 3}, 0.3), false), skip})}),
                                b.op("relu", {conv(w, false)})});  // run-time weights
  auto inputs = [](std::uint32_t seed) {
    return std::vector<ir::Tensor>{random_tensor({1, 3, 6, 7}, seed), random_tensor({1, 4, 6, 7}, seed + 1),
                                   random_tensor({4, 3, 3, 3}, seed + 2)};
  };
  // g run with `special` values ({input, element, value}) put into the
  // inputs from `seed`: the fused primitives are still the steps.
  auto check_with = [&](std::uint32_t seed, std::vector<std::tuple<std::size_t, std::size_t, float>> special) {
    auto in = inputs(seed);
    for (auto [k, i, v] : special) in[k].set(i, v);
    auto p = check_against_interpreter(g, in, 1e-5, 1e-5);
    CHECK(steps_with(*p, "+relu") == 3);
    CHECK(steps_with(*p, "+sum +relu") == 1);
  };
  SECTION("finite operands - the fused primitive") { check_with(1, {}); }
  SECTION("a NaN in the source") { check_with(2, {{0, 17, NAN}}); }
  SECTION("an infinity in the source - inf times a negative weight") {
    check_with(3, {{0, 40, INFINITY}, {0, 41, -INFINITY}});
  }
  SECTION("a NaN in the residual") { check_with(4, {{1, 100, NAN}}); }
  SECTION("a NaN in the run-time weights") { check_with(6, {{2, 5, NAN}}); }
  SECTION("finite operands whose products overflow") {
    // The reference sums in double: compared with the same convolution
    // unfused (its result an output too). (With FMA, as here, an f32 sum of
    // finite products goes to inf and stays there; one split into partial
    // sums could give inf - inf = NaN, which the step's bound excludes.)
    models::GraphBuilder o("conv_relu_overflow");
    std::string big = o.input("big", {1, 3, 6, 7}), k = o.weight({4, 3, 3, 3}, 2.0);
    const ir::Graph h = o.finish({o.op("relu", {o.op("conv", {big, k}, pads)}), o.op("conv", {big, k}, pads)});
    ir::Tensor in = random_tensor({1, 3, 6, 7}, 5, 1e38, 3e38);
    runtime::CpuExecutorOptions opts;
    opts.threads = 2;
    opts.adapt_team = false;  // (two threads whatever the load: their parallel paths are under test)
    auto exec = runtime::CpuExecutor::create(test::as_library_calls(h, "cpu"), opts);
    REQUIRE(exec);
    auto got = (*exec)->run(std::vector<ir::Tensor>{in});
    REQUIRE(got);
    CHECK(steps_with((*exec)->program(), "+relu") == 1);
    const ir::Tensor &relu = (*got)[0], &raw = (*got)[1];
    int infinite = 0;
    for (std::size_t i = 0; i < raw.numel(); ++i) {
      INFO("element " << i << " conv " << raw.at(i));
      infinite += std::isinf(raw.at(i));
      if (std::isnan(raw.at(i)))
        CHECK(std::isnan(relu.at(i)));
      else
        CHECK(relu.at(i) == std::max(raw.at(i), 0.0));
    }
    CHECK(infinite > 0);
  }
}

TEST_CASE("An output that is a prefix of its buffer gets a buffer of its own") {
  // slice [0, 3) of a 4-element result is contiguous from offset 0: it used
  // to become the output as the whole 4-element buffer (a heap overflow).
  models::GraphBuilder b("prefix");
  std::string x = b.input("x", {4, 1}, ir::DType::I64), f = b.input("f", {4, 2});
  ir::Attrs red = models::ints_attr("axes", {1});
  red.set("keepdims", std::int64_t{0});
  auto first3 = [&](const std::string& v) {
    ir::Attrs a = models::ints_attr("starts", {0});
    a.set("ends", Dims{3});
    a.set("axes", Dims{0});
    return b.op("slice", {v}, a);
  };
  auto p = check_against_interpreter(
      b.finish({first3(b.op("reduce_min", {x}, red)), first3(b.op("add", {f, f})), b.op("transpose", {x})}),
      {random_tensor({4, 1}, 1, -9, 9, ir::DType::I64), random_tensor({4, 2}, 2)}, 0, 0);
  CHECK(p->outputs.size() == 3);
}

TEST_CASE("Dead nodes are not lowered - a dead add does not take a live conv's result") {
  models::GraphBuilder b("dead");
  std::string x = b.input("x", {1, 3, 8, 8});
  std::string skip = b.input("skip", {1, 4, 8, 8});
  ir::Attrs pads = models::ints_attr("pads", {1, 1, 1, 1});
  std::string y = b.op("conv", {x, b.weight({4, 3, 3, 3}, 0.3)}, pads);
  b.op("relu", {b.op("add", {y, skip})});                                         // dead: its result is no output
  b.op("matmul", {b.weight({64, 64}, 1.0), b.weight({64, 64}, 1.0)});             // dead and constant
  b.op("div", {b.fill({4}, 1, ir::DType::I32), b.fill({4}, 0, ir::DType::I32)});  // dead, and would fail
  auto p = check_against_interpreter(b.finish({y}), 1e-5, 1e-5);
  std::string labels;
  for (const lower::Step& s : p->steps) labels += s.label + "; ";
  INFO(labels);
  CHECK(p->library_calls == 1);  // the convolution, without the add and relu, and no product
  CHECK(labels.find("relu") == std::string::npos);
  CHECK(labels.find("add") == std::string::npos);
  CHECK(p->reference_ops.empty());
}

TEST_CASE("Random elementwise graphs of every type match the interpreter - or fail where it fails") {
  int failing = 0;
  for (std::uint32_t seed = 1; seed <= 160; ++seed) {
    const test::RandomGraph r = test::random_elementwise_graph(seed);
    INFO("seed " << seed << ": " << r.text);
    auto want = runtime::interpret(r.graph, r.inputs);
    runtime::CpuExecutorOptions o;
    o.threads = 1;
    auto exec = runtime::CpuExecutor::create(r.graph, o);
    if (!exec) FAIL(exec.error().to_string());
    failing += test::check_same_as_interpreter((*exec)->run(r.inputs), want);  // (a division by zero)
  }
  CHECK(failing > 0);  // some graphs divide by zero
}

TEST_CASE("Float modulo fuses - C fmod and floor modulo exactly as the reference") {
  for (ir::DType t : {ir::DType::F32, ir::DType::F64, ir::DType::F16}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("float_mod");
    std::string x = b.input("x", {5, 8}, t), y = b.input("y", {1, 8}, t);
    ir::Attrs c_mod;
    c_mod.set("fmod", std::int64_t{1});
    const ir::Graph g = b.finish({b.op("mod", {x, y}), b.op("mul", {b.op("mod", {x, y}, c_mod), x})});
    auto p =
        check_against_interpreter(g, {random_tensor({5, 8}, 1, -50, 50, t), random_tensor({1, 8}, 2, 0.5, 3, t)}, 0, 0);
    check_native(*p);
  }
}

TEST_CASE("Tile is a copy of a broadcast view - any element type - of views") {
  for (ir::DType t : {ir::DType::F32, ir::DType::I64, ir::DType::Bool}) {
    INFO(ir::dtype_name(t));
    models::GraphBuilder b("tile");
    std::string x = b.input("x", {3, 4}, t);
    // Tiled as it is, and transposed first (a strided operand).
    const ir::Graph g = b.finish({b.op("tile", {x}, models::ints_attr("repeats", {2, 3})),
                                  b.op("tile", {b.op("transpose", {x}, models::ints_attr("perm", {1, 0}))},
                                       models::ints_attr("repeats", {1, 2}))});
    auto p = check_against_interpreter(g, {random_tensor({3, 4}, 12, -9, 9, t)}, 0, 0);
    CHECK(p->reference_ops.empty());
    CHECK(p->fused_kernels == 2);
  }
}

TEST_CASE("Plain f16 convolutions and gemms with a bias round once - as the reference - their loop nests sum in f32") {
  // Found by tools/fuzz_targets.py --family nn: a sum rounded to f16 before
  // a bias that nearly cancels it was 4 ulps off.
  auto g = ir::read_sat(R"((graph round_once
    (input x f16 [1 3 2 2])
    (input p f16 [2 3])
    (init w f16 [1 3 1 1] [0.7 0.5 0.2])
    (init b f16 [1] [-1.2602418568524327])
    (init q f16 [1 3] [0.7 0.5 0.2])
    (init c f16 [1] [-1.2602418568524327])
    (node n1 conv (y) (x w b) :kernel_shape [1 1])
    (node n2 gemm (z) (p q c) :transB 1)
    (output y z)))",
                        "round_once.sat");
  REQUIRE(g);
  std::vector<ir::Tensor> in{ir::Tensor(ir::DType::F16, {1, 3, 2, 2}), ir::Tensor(ir::DType::F16, {2, 3})};
  for (ir::Tensor& t : in)
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, 1.0);
  check_against_interpreter(*g, in, 1e-4, 0);
}
