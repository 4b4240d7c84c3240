// The facts an op's registry row declares (ir/op.hpp: elementwise, view,
// contraction, unit_work, library_of) are what the lowering and the cost
// models act on: an elementwise op fuses on every compiled target (never its
// reference kernel), a library call lowers as the composite it stands for,
// and the cost models price ops by their declared work.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "extract/cost_model.hpp"
#include "ir/graph.hpp"
#include "ir/op.hpp"
#include "lower/lowering.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
using ir::DType;

namespace {

// One node of `op` over fresh inputs of `dims` (the first bool for where),
// every operand of type t; nullopt when the op does not take t.
std::optional<ir::Graph> single_node(const ir::OpDef& def, DType t, const std::vector<std::int64_t>& dims) {
  ir::Graph g;
  ir::Node n{"n", def.name, {}, {"y"}, {}, {}};
  const char* names[] = {"a", "b", "c"};
  // Quantization takes a float scale and x or its result of type t.
  const bool quantizes = def.name == "quantize_linear" || def.name == "dequantize_linear";
  if (quantizes && (ir::is_float(t) || t == DType::I64 || t == DType::U32 || t == DType::Bool)) return std::nullopt;
  for (int i = 0; i < def.min_inputs && i < 3; ++i) {
    DType ti = def.name == "where" && i == 0 ? DType::Bool : t;
    if (quantizes && (i == 1 || (i == 0 && def.name == "quantize_linear"))) ti = DType::F32;
    g.inputs.push_back({names[i], {ti, ir::shape_of(dims)}});
    n.inputs.push_back(names[i]);
  }
  if (def.name == "cast") n.attrs.set("to", std::string(t == DType::F32 ? "f16" : "f32"));
  g.nodes.push_back(n);
  g.outputs = {"y"};
  if (!ir::infer_types(g)) return std::nullopt;
  return g;
}

// g on the CPU target against the interpreter, on random inputs (values
// in [-3, 3]: zeros and negatives); an error in one (an integer division by
// zero) must be an error in the other. Returns the program.
std::shared_ptr<runtime::CpuExecutor> check_cpu(const ir::Graph& g) {
  std::vector<ir::Tensor> inputs;
  std::uint32_t seed = 7;
  for (const ir::GraphValue& in : g.inputs)
    inputs.push_back(test::random_tensor(ir::static_dims(in.type.shape), seed++, -3, 3, in.type.dtype));
  runtime::CpuExecutorOptions o;
  o.threads = 1;
  auto exec = runtime::CpuExecutor::create(g, o);
  if (!exec) FAIL(exec.error().to_string());
  auto want = runtime::interpret(g, inputs);
  auto got = (*exec)->run(inputs);
  REQUIRE(static_cast<bool>(got) == static_cast<bool>(want));
  if (!want) return std::move(*exec);
  const ir::Tensor &a = got->at(0), &b = want->at(0);
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.dims() == b.dims());
  for (std::size_t i = 0; i < a.numel(); ++i) {
    INFO("element " << i);
    if (std::isnan(b.at(i)))
      CHECK(std::isnan(a.at(i)));
    else
      CHECK(a.at(i) == Approx(b.at(i)).epsilon(1e-3).margin(1e-6));
  }
  return std::move(*exec);
}

}  // namespace

TEST_CASE("No elementwise op runs its reference kernel on a compiled target - any element type it takes") {
  // (The types loop kernels compute with: lower::kernel_value_dtype.)
  const std::vector<DType> types = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                                    DType::I16, DType::U16, DType::U32, DType::I8,   DType::U8,  DType::Bool};
  int checked = 0;
  for (const ir::OpDef* def : ir::OpRegistry::get().all()) {
    if (!def->elementwise) continue;
    int taken = 0;
    for (DType t : types) {
      auto g = single_node(*def, t, {3, 5});
      if (!g) continue;
      ++taken;
      INFO(def->name << " of " << ir::dtype_name(t));
      auto exec = check_cpu(*g);
      CHECK(exec->program().reference_ops.empty());
      CHECK(exec->program().fused_kernels >= 1);
#ifdef SATURN_HAVE_CUDA
      auto cuda = lower::compile_cuda(*g);
      if (!cuda) FAIL(cuda.error().to_string());
      CHECK((*cuda)->reference_ops.empty());
#endif
    }
    INFO(def->name);
    CHECK(taken > 0);  // (an op no type reaches would pass unchecked)
    ++checked;
  }
  CHECK(checked > 40);
}

TEST_CASE("A library call lowers as the composite it stands for - on either target - its values the composite's") {
  struct Case {
    std::vector<std::vector<std::int64_t>> operands;
    ir::Attrs attrs;
  };
  ir::Attrs pool;
  pool.set("kernel_shape", std::vector<std::int64_t>{2, 2});
  const std::map<std::string, Case> cases = {
      {"matmul", {{{4, 8}, {8, 3}}, {}}},           {"gemm", {{{4, 8}, {8, 3}}, {}}},
      {"conv", {{{1, 2, 6, 6}, {3, 2, 3, 3}}, {}}}, {"conv_transpose", {{{1, 2, 5, 5}, {2, 3, 3, 3}}, {}}},
      {"max_pool", {{{1, 2, 6, 6}}, pool}},         {"avg_pool", {{{1, 2, 6, 6}}, pool}},
  };
  int checked = 0;
  for (const ir::OpDef* def : ir::OpRegistry::get().all()) {
    // (dnnl.qconv's and dnnl.qmatmul's quantized operands and constant scales:
    // tests/test_quantization.cpp.)
    if (def->kind != ir::OpKind::Library || def->library_of.rfind("quantized_", 0) == 0) continue;
    INFO(def->name);
    REQUIRE(!def->library_of.empty());
    REQUIRE(ir::OpRegistry::get().find(def->library_of) != nullptr);
    CHECK(def->semantics() == def->library_of);
    REQUIRE(cases.count(def->library_of));
    const Case& c = cases.at(def->library_of);
    ir::Graph g;
    ir::Node n{"n", def->name, {}, {"y"}, c.attrs, {}};
    const char* names[] = {"a", "b"};
    for (std::size_t i = 0; i < c.operands.size(); ++i) {
      g.inputs.push_back({names[i], {DType::F32, ir::shape_of(c.operands[i])}});
      n.inputs.push_back(names[i]);
    }
    if (def->sum_epilogue) {  // no bias, and the added value of the result's type
      g.inputs.push_back({"skip", {DType::F32, ir::shape_of({1, 3, 4, 4})}});
      n.inputs.insert(n.inputs.end(), {"", "skip"});
    }
    g.nodes.push_back(n);
    g.outputs = {"y"};
    auto exec = check_cpu(g);
    CHECK(exec->program().library_calls == 1);
    CHECK(exec->program().reference_ops.empty());
#ifdef SATURN_HAVE_CUDA
    auto cuda = lower::compile_cuda(g);
    if (!cuda) FAIL(cuda.error().to_string());
    CHECK((*cuda)->library_calls == 1);
    CHECK((*cuda)->reference_ops.empty());
#endif
    ++checked;
  }
  CHECK(checked == 32);
}

TEST_CASE("The cost models price an op by its registry row - views - work per element - contractions") {
  const auto cpu = extract::CostModel::for_target("cpu");
  REQUIRE(cpu);
  const ir::OpRegistry& r = ir::OpRegistry::get();
  const ir::ValueType t{DType::F32, ir::shape_of({256, 1024})};
  const std::vector<ir::ValueType> one{t};
  auto cost = [&](const std::string& op) { return cpu->cost(*r.find(op), {}, one, t, false); };
  CHECK(cost("exp") >= cost("neg"));
  for (const char* view : {"reshape", "flatten", "squeeze", "unsqueeze", "identity"}) {
    INFO(view);
    CHECK(r.find(view)->view);
    CHECK(cost(view) == Approx(0.01));
  }
  // On a target bound by arithmetic (1 GFLOP/s, no overheads, memory
  // free), a loop costs its declared operations per element.
  const extract::CostModel slow(extract::TargetSpec{"slow", 1, 0.5, 1, 1e9, 0, 0, {}, {}, {}});
  auto slow_cost = [&](const std::string& op, const std::vector<ir::ValueType>& in) {
    return slow.cost(*r.find(op), {}, in, t, false);
  };
  CHECK(r.find("gelu")->unit_work == 20);
  CHECK(slow_cost("gelu", one) == Approx(20 * slow_cost("neg", one)));
  CHECK(slow_cost("exp", one) == Approx(8 * slow_cost("neg", one)));
  // Contractions run at the naive loop rate (here half the other loops').
  CHECK(r.find("matmul")->contraction);
  CHECK_FALSE(r.find("add")->contraction);
  const ir::ValueType a{DType::F32, ir::shape_of({256, 64})}, b{DType::F32, ir::shape_of({64, 1024})};
  const double flops = r.find("matmul")->flops({}, std::vector<ir::ValueType>{a, b}, one);
  CHECK(slow_cost("matmul", {a, b}) == Approx(flops / 0.5e3));
}

namespace {

// Attributes worth trying per op (by the composite a library call stands
// for), besides none at all: some the op takes with the shapes below, some
// that disagree with them.
std::vector<ir::Attrs> attribute_variants(const std::string& op) {
  using Ints = std::vector<std::int64_t>;
  auto one = [](std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
    ir::Attrs a;
    for (const auto& [k, v] : kv) a.set(k, v);
    return a;
  };
  std::vector<ir::Attrs> v{ir::Attrs{}};
  const std::map<std::string, std::vector<ir::Attrs>> per_op = {
      {"gemm", {one({{"transA", std::int64_t{1}}}), one({{"transB", std::int64_t{1}}})}},
      {"conv", {one({{"group", std::int64_t{2}}}), one({{"kernel_shape", Ints{2, 2}}})}},
      {"conv_transpose", {one({{"group", std::int64_t{2}}})}},
      {"concat",
       {one({{"axis", std::int64_t{1}}}), one({{"axis", std::int64_t{-1}}}), one({{"axis", std::int64_t{5}}})}},
      {"max_pool", {one({{"kernel_shape", Ints{2, 2}}}), one({{"kernel_shape", Ints{2}}})}},
      {"avg_pool", {one({{"kernel_shape", Ints{2, 2}}}), one({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})}},
      {"slice",
       {one({{"starts", Ints{0}}, {"ends", Ints{1}}}),
        one({{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"axes", Ints{0, 1}}}),
        one({{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{0, 1}}})}},
      {"resize", {one({{"sizes", Ints{1, 2, 4, 4}}}), one({{"sizes", Ints{3, 3}}})}},
      {"einsum",
       {one({{"equation", std::string("ij,jk->ik")}}), one({{"equation", std::string("...ij,jk")}}),
        one({{"equation", std::string("bij->bji")}}), one({{"equation", std::string("i,i")}})}},
      {"expand", {one({{"shape", Ints{2, 3}}}), one({{"shape", Ints{3, 3}}})}},
      {"gather_elements", {one({{"axis", std::int64_t{1}}})}},
  };
  if (auto it = per_op.find(op); it != per_op.end()) v.insert(v.end(), it->second.begin(), it->second.end());
  return v;
}

}  // namespace

TEST_CASE("An op's admits never rejects operands its infer takes") {
  // (verify's enumeration trusts it to skip infer: a wrong `false` would
  // silently drop the instances a rule is checked on.)
  using Dims = std::vector<std::int64_t>;
  const std::vector<Dims> shapes = {{},     {1},       {3},          {4},          {2, 3},       {3, 2},
                                    {3, 3}, {2, 3, 3}, {1, 2, 3, 3}, {4, 2, 2, 2}, {4, 1, 2, 2}, {1, 4, 2, 2}};
  std::vector<ir::TypedInput> types;
  for (DType t : {DType::F32, DType::I64, DType::Bool})
    for (const Dims& s : shapes) types.push_back({{t, ir::shape_of(s)}, nullptr, true});
  // Operands past the second cycle through these (absent where optional).
  std::vector<ir::TypedInput> later = {{{DType::F32, ir::shape_of({4})}, nullptr, true},
                                       {{DType::F32, ir::shape_of({1, 4, 2, 2})}, nullptr, true},
                                       {{DType::F32, ir::shape_of({3})}, nullptr, true},
                                       {{DType::I64, ir::shape_of({2, 3})}, nullptr, true},
                                       {{DType::F32, ir::shape_of({2, 3})}, nullptr, true}};
  int ops = 0;
  for (const ir::OpDef* def : ir::OpRegistry::get().all()) {
    if (!def->admits) continue;
    ++ops;
    const int max_ops = def->max_inputs < 0 ? 3 : std::min(def->max_inputs, 4);
    int taken = 0, rejected = 0;
    for (const ir::Attrs& attrs : attribute_variants(def->semantics()))
      for (int n = std::max(def->min_inputs, 1); n <= max_ops; ++n)
        for (std::size_t i = 0; i < types.size(); ++i)
          for (std::size_t j = 0; j < (n > 1 ? types.size() : 1); ++j) {
            std::vector<ir::TypedInput> in{types[i]};
            if (n > 1) in.push_back(types[j]);
            for (int k = 2; k < n; ++k) {
              ir::TypedInput t = later[(i + j + static_cast<std::size_t>(k)) % later.size()];
              if (k >= def->min_inputs && (i + j) % 7 == 0) t = ir::TypedInput{{}, nullptr, false};
              in.push_back(t);
            }
            bool infers = true;
            try {
              def->infer(attrs, in, 1);
            } catch (const ir::ShapeError&) {
              infers = false;
            }
            const bool admitted = def->admits(attrs, in);
            if (infers && !admitted) {
              std::string what;
              for (const auto& t : in)
                what += t.present ? std::string(ir::dtype_name(t.type.dtype)) + ir::to_string(t.type.shape) + " "
                                  : std::string("(absent) ");
              FAIL(def->name << " rejects " << what << "which its infer takes");
            }
            taken += infers;
            rejected += !admitted;
          }
    INFO(def->name);
    CHECK(taken > 0);  // the shapes above reach both answers
    CHECK(rejected > 0);
  }
  CHECK(ops >= 40);  // the broadcasting ops, products, convolutions, pools, concat, slice ...
}
