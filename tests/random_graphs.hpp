// Random inputs and random graphs for differential tests: the same graph
// run by the interpreter and a compiled target (test_cpu_codegen), or its
// kernels generated as CUDA C and emulated (test_cuda_codegen).
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/models.hpp"
#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::test {

using Dims = std::vector<std::int64_t>;

// Values uniform in [lo, hi]; for a bool tensor 0 or 1, for integers
// integers in [lo, hi].
inline ir::Tensor random_tensor(const Dims& dims, std::uint32_t seed, double lo = -3, double hi = 3,
                                ir::DType dtype = ir::DType::F32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  ir::Tensor t(dtype, dims);
  for (std::size_t i = 0; i < t.numel(); ++i) {
    const double x = u(rng);
    t.set(i, dtype == ir::DType::Bool ? static_cast<double>(x > 0.5 * (lo + hi))
             : ir::is_float(dtype)    ? x
                                      : std::round(x));
  }
  return t;
}

// A random chain of elementwise ops (arithmetic, division and modulo,
// comparisons feeding where, casts to any type) over inputs of one random
// type, with each type's extremes among the values. Every op in it is
// exact in the kernels'
// arithmetic, so the results must be the same values.
struct RandomGraph {
  ir::Graph graph;
  std::vector<ir::Tensor> inputs;
  std::string text;  // the ops, for the failure message
};

inline RandomGraph random_elementwise_graph(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const ir::DType types[] = {ir::DType::I8,  ir::DType::U8,   ir::DType::I32, ir::DType::I64,
                             ir::DType::F16, ir::DType::BF16, ir::DType::F32, ir::DType::F64};
  const ir::DType t = types[pick(std::size(types))];
  const bool fl = ir::is_float(t);
  models::GraphBuilder b("random");
  std::vector<std::pair<std::string, ir::DType>> values;
  RandomGraph r;
  for (const char* name : {"a", "b", "c"}) values.emplace_back(b.input(name, {2, 5}, t), t);
  const std::string m = b.input("m", {2, 1}, ir::DType::Bool);
  auto extreme = [&](ir::DType d) -> double {
    if (ir::is_float(d)) {
      const double f[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 65504.0, 1e30, -2.5, 3.0};
      return f[pick(std::size(f))];
    }
    const double lo = d == ir::DType::U8    ? 0
                      : d == ir::DType::I8  ? -128
                      : d == ir::DType::I32 ? -2147483648.0
                                            : -0x1p63;
    const double hi = d == ir::DType::U8 ? 255 : d == ir::DType::I8 ? 127 : d == ir::DType::I32 ? 2147483647.0 : 0x1p63;
    const double f[] = {lo, hi - (d == ir::DType::I64 ? 1024 : 0), 0, 1, 2, 3, 7, -1};
    return f[pick(std::size(f))];
  };
  const std::vector<std::string> cast_to = {"i8", "u8", "i32", "i64", "f16", "bf16", "f32", "f64", "bool"};
  const int steps = 3 + static_cast<int>(pick(7));
  for (int k = 0; k < steps; ++k) {
    std::vector<std::size_t> numeric;
    for (std::size_t i = 0; i < values.size(); ++i)
      if (values[i].second != ir::DType::Bool) numeric.push_back(i);
    const auto [x, tx] = values[numeric[pick(numeric.size())]];
    std::vector<std::string> same;
    for (const auto& [v, tv] : values)
      if (tv == tx) same.push_back(v);
    const std::string y = same[pick(same.size())];
    const std::size_t kind = pick(20);
    std::string out;
    if (kind < 9) {
      const char* ops[] = {"add", "sub", "mul", "max", "min", "div", "mod", "pow"};
      std::string op = ops[pick(ir::is_float(tx) ? 7 : 8)];  // (float pow is not exact in f32)
      ir::Attrs a;
      if (op == "mod" && (ir::is_float(tx) || pick(2)))
        a.set("fmod", std::int64_t{ir::is_float(tx) ? 1 - static_cast<int>(pick(2)) : 1});
      if (op == "mod" && ir::is_float(tx) && !a.has("fmod")) a.set("fmod", std::int64_t{1});
      out = b.op(op, {x, y}, a);
      values.emplace_back(out, tx);
    } else if (kind < 12) {
      const char* ops[] = {"neg", "abs", "sign", "relu", "floor", "ceil"};
      const std::string op = ops[pick(ir::is_float(tx) ? 6 : 4)];
      out = b.op(op, {x});
      values.emplace_back(out, tx);
    } else if (kind < 15) {
      const char* ops[] = {"less", "greater", "equal", "less_equal"};
      const std::string cmp = b.op(ops[pick(4)], {x, y});
      out = b.op("where", {cmp, x, y});
      values.emplace_back(cmp, ir::DType::Bool);
      values.emplace_back(out, tx);
    } else if (kind < 17) {
      out = b.op("where", {m, x, y});
      values.emplace_back(out, tx);
    } else {
      const std::string to = cast_to[pick(cast_to.size())];
      ir::Attrs a;
      a.set("to", to);
      out = b.op("cast", {x}, a);
      values.emplace_back(out, *ir::dtype_from_name(to));
    }
  }
  std::vector<std::string> outs;
  for (std::size_t i = values.size() >= 3 ? values.size() - 3 : 0; i < values.size(); ++i)
    outs.push_back(values[i].first);
  r.graph = b.finish(outs);
  for (const ir::Node& n : r.graph.nodes) r.text += n.op + " ";
  for (const ir::GraphValue& in : r.graph.inputs) {
    ir::Tensor v =
        random_tensor({in.type.dtype == ir::DType::Bool ? 2 : 10}, rng(), fl ? -20 : -300, 300, in.type.dtype);
    for (std::size_t i = 0; i < v.numel(); ++i)
      if (in.type.dtype != ir::DType::Bool && pick(3) == 0) v.set(i, extreme(in.type.dtype));
    r.inputs.push_back(v.reshaped(ir::static_dims(in.type.shape)));
  }
  return r;
}

// A compiled target's run of a random graph against the interpreter's: the
// same error text (an integer division by zero, the same node named) or
// the same values exactly (NaN for NaN; -0 and 0 alike: max / min may pick
// either). Returns whether the interpreter failed.
inline bool check_same_as_interpreter(const Expected<std::vector<ir::Tensor>>& got,
                                      const Expected<std::vector<ir::Tensor>>& want) {
  REQUIRE(static_cast<bool>(got) == static_cast<bool>(want));
  if (!want) {
    CHECK(got.error().message == want.error().message);
    return true;
  }
  REQUIRE(got->size() == want->size());
  for (std::size_t k = 0; k < got->size(); ++k) {
    const ir::Tensor &g = (*got)[k], &w = (*want)[k];
    REQUIRE(g.dtype() == w.dtype());
    REQUIRE(g.numel() == w.numel());
    for (std::size_t i = 0; i < g.numel(); ++i) {
      INFO("output " << k << " element " << i << " of " << w.summary());
      if (ir::is_float(w.dtype()) && std::isnan(w.at(i)))
        CHECK(std::isnan(g.at(i)));
      else if (ir::is_float(w.dtype()))
        CHECK(g.at(i) == w.at(i));
      else
        CHECK(g.at_int(i) == w.at_int(i));
    }
  }
  return false;
}

}  // namespace saturn::test
