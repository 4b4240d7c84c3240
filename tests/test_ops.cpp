// The op registry: every op is complete, and spot checks of semantics and of
// shape errors that name the mismatching dims.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>

#include "helpers.hpp"
#include "ir/op.hpp"

using namespace saturn::ir;

namespace {
std::vector<Tensor> run(const std::string& op, std::vector<Tensor> args, Attrs a = {}, std::size_t outs = 1) {
  const OpDef* d = OpRegistry::get().find(op);
  REQUIRE(d != nullptr);
  std::vector<TypedInput> ins;
  for (auto& t : args) ins.push_back(TypedInput{{t.dtype(), shape_of(t.dims())}, &t, true});
  auto types = d->infer(a, ins, outs);
  bool given[8] = {true, true, true, true, true, true, true, true};
  auto res = d->eval(a, args, std::span<const bool>(given, args.size()), outs);
  REQUIRE(res.size() >= types.size());
  for (std::size_t k = 0; k < types.size(); ++k) {
    // The shape rule and the semantics agree.
    CHECK(res[k].dtype() == types[k].dtype);
    CHECK(shape_of(res[k].dims()) == types[k].shape);
  }
  return res;
}
std::string shape_error_of(const std::string& op, std::vector<ValueType> types, Attrs a = {}) {
  std::vector<TypedInput> ins;
  for (auto& t : types) ins.push_back(TypedInput{t, nullptr, true});
  try {
    OpRegistry::get().find(op)->infer(a, ins, 1);
  } catch (const ShapeError& e) {
    return e.message;
  }
  return "(no error)";
}
std::vector<double> values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = t.at(i);
  return v;
}
Tensor f32(std::vector<std::int64_t> dims, std::vector<double> v) {
  return Tensor::of_doubles(DType::F32, std::move(dims), v);
}
}  // namespace

TEST_CASE("every op has a shape rule - semantics and documentation") {
  auto all = OpRegistry::get().all();
  CHECK(all.size() >= 80);
  int primitives = 0;
  for (const OpDef* d : all) {
    INFO(d->name);
    CHECK(d->infer);
    CHECK(d->eval);
    CHECK_FALSE(d->doc.empty());
    primitives += d->kind == OpKind::Primitive;
  }
  CHECK(primitives >= 20);
  CHECK(primitives <= 30);
  // Library calls are declared now, with the semantics of what they replace.
  const OpDef* call = OpRegistry::get().find("cudnn.conv");
  REQUIRE(call != nullptr);
  CHECK(call->kind == OpKind::Library);
  CHECK(OpRegistry::get().find("blas.gemm")->min_inputs == OpRegistry::get().find("gemm")->min_inputs);
}

TEST_CASE("docs/ops.md lists every op of the registry") {
  std::ifstream in(saturn::test::source_dir() + "/docs/ops.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  for (const OpDef* d : OpRegistry::get().all()) {
    INFO(d->name);
    CHECK(ss.str().find("| `" + d->name + "` |") != std::string::npos);
  }
}

TEST_CASE("binary ops broadcast numpy-style") {
  auto r = run("add", {f32({2, 1}, {1, 2}), f32({3}, {10, 20, 30})});
  CHECK(r[0].dims() == std::vector<std::int64_t>{2, 3});
  CHECK(r[0].at(0) == 11);
  CHECK(r[0].at(5) == 32);
  auto m = run("mod", {Tensor::of_ints(DType::I64, {2}, {-7, 7}), Tensor::of_ints(DType::I64, {2}, {3, -3})});
  CHECK(m[0].at_int(0) == 2);  // floor modulo: sign of the divisor
  CHECK(m[0].at_int(1) == -2);
  auto eq = run("less", {f32({2}, {1, 5}), f32({1}, {3})});
  CHECK(eq[0].dtype() == DType::Bool);
  CHECK(eq[0].at_int(0) == 1);
  CHECK(eq[0].at_int(1) == 0);
  CHECK(shape_error_of("add", {{DType::F32, shape_of({2, 3})}, {DType::F32, shape_of({4})}}) ==
        "add: shapes [2 3] and [4] do not broadcast");
  CHECK(shape_error_of("add", {{DType::F32, shape_of({2})}, {DType::I64, shape_of({2})}}) ==
        "add: operand types differ (f32 and i64)");
}

TEST_CASE("int64 extremes wrap - never undefined behaviour - and a zero divisor is an error") {
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  auto ints = [](std::vector<std::int64_t> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return Tensor::of_ints(DType::I64, {n}, v);
  };
  CHECK(run("neg", {ints({lo, 5})})[0].to_ints() == std::vector<std::int64_t>{lo, -5});
  CHECK(run("abs", {ints({lo, -5})})[0].to_ints() == std::vector<std::int64_t>{lo, 5});
  CHECK(run("add", {ints({hi, 1}), ints({1, 2})})[0].to_ints() == std::vector<std::int64_t>{lo, 3});
  CHECK(run("div", {ints({lo, -7}), ints({-1, 2})})[0].to_ints() == std::vector<std::int64_t>{lo, -3});
  CHECK(run("mod", {ints({lo, -7}), ints({-1, 2})})[0].to_ints() == std::vector<std::int64_t>{0, 1});
  CHECK(run("pow", {ints({3, -2}), ints({40, 63})})[0].to_ints() ==
        std::vector<std::int64_t>{static_cast<std::int64_t>(12157665459056928801ULL), lo});
  CHECK(run("reduce_sum", {ints({hi, hi, 2})})[0].at_int(0) == 0);
  CHECK(run("reduce_prod", {ints({hi, 2})})[0].at_int(0) == -2);
  CHECK(run("matmul", {Tensor::of_ints(DType::I64, {1, 2}, {hi, 1}), Tensor::of_ints(DType::I64, {2, 1}, {2, 3})})[0]
            .at_int(0) == 1);
  // gemm as matmul (the fusion rules make one of the other), C added
  // wrapping; other alpha and beta scale in double, as ONNX's reference.
  CHECK(run("gemm",
            {Tensor::of_ints(DType::I64, {1, 2}, {hi, 1}), Tensor::of_ints(DType::I64, {2, 1}, {2, 3}), ints({hi})})[0]
            .at_int(0) == lo);
  CHECK(run("gemm", {Tensor::of_ints(DType::I64, {1, 1}, {lo}), Tensor::of_ints(DType::I64, {1, 1}, {lo})})[0].at_int(
            0) == 0);
  Attrs half;
  half.set("alpha", 0.5);
  CHECK(
      run("gemm", {Tensor::of_ints(DType::I64, {1, 1}, {7}), Tensor::of_ints(DType::I64, {1, 1}, {3})}, half)[0].at_int(
          0) == 10);
  for (const char* op : {"div", "mod", "pow"}) {
    INFO(op);
    const OpDef* d = OpRegistry::get().find(op);
    std::vector<Tensor> args{ints({0, 4}), ints({op == std::string("pow") ? -1 : 0, 1})};
    bool given[2] = {true, true};
    CHECK_THROWS_AS(d->eval(Attrs{}, args, std::span<const bool>(given, 2), 1), ShapeError);
  }
  // range's length must be a number.
  Attrs none;
  const OpDef* range = OpRegistry::get().find("range");
  std::vector<Tensor> nan_limit{f32({}, {0}), f32({}, {NAN}), f32({}, {1})};
  std::vector<TypedInput> ins;
  for (auto& t : nan_limit) ins.push_back(TypedInput{{t.dtype(), shape_of(t.dims())}, &t, true});
  CHECK_THROWS_AS(range->infer(none, ins, 1), ShapeError);
}

TEST_CASE("u64 is exact past INT64_MAX - division - comparisons - max - abs - casts by value") {
  const std::int64_t big = std::numeric_limits<std::int64_t>::min();  // 2^63 as u64 bits
  const Tensor a = Tensor::of_ints(DType::U64, {2}, {big, 7}), b = Tensor::of_ints(DType::U64, {2}, {3, 2});
  CHECK(run("div", {a, b})[0].at(0) == 3074457345618258602.0);  // 2^63 / 3, not negative
  CHECK(run("mod", {a, b})[0].at_int(0) == 2);                  // 2^63 = 3 * 3074457345618258602 + 2
  CHECK(run("greater", {a, b})[0].at_int(0) == 1);
  CHECK(run("less", {a, b})[0].at_int(0) == 0);
  CHECK(run("max", {a, b})[0].at_int(0) == big);
  CHECK(run("min", {a, b})[0].at_int(0) == 3);
  CHECK(run("abs", {a})[0].at_int(0) == big);
  CHECK(run("relu", {a})[0].at_int(0) == big);
  CHECK(run("sign", {a})[0].at_int(0) == 1);
  Attrs to_f64;
  to_f64.set("to", std::string("f64"));
  CHECK(run("cast", {a}, to_f64)[0].at(0) == 0x1p63);
  Attrs to_i64;
  to_i64.set("to", std::string("i64"));
  CHECK(run("cast", {a}, to_i64)[0].at_int(0) == big);  // the same bits, as numpy's astype
  const Tensor zero = Tensor::of_ints(DType::U64, {2}, {0, 0});
  CHECK_THROWS(run("div", {a, zero}));
}

TEST_CASE("casts to minifloats saturate - cast_unsaturated overflows - its target must be a minifloat") {
  Attrs to;
  to.set("to", std::string("f8e5m2"));
  const Tensor x = f32({3}, {1e6, -0.3, 60000});
  const Tensor sat = run("cast", {x}, to)[0], unsat = run("cast_unsaturated", {x}, to)[0];
  CHECK(sat.at(0) == 57344);
  CHECK(unsat.at(0) == std::numeric_limits<double>::infinity());
  CHECK(sat.at(1) == -0.3125);
  CHECK(unsat.at(2) == 57344);  // below the midpoint to infinity (61440): the largest finite value
  Attrs to_f32;
  to_f32.set("to", std::string("f32"));
  CHECK(shape_error_of("cast_unsaturated", {{DType::F64, shape_of({2})}}, to_f32) ==
        "cast_unsaturated: the target f32 is not a minifloat (only those saturate; cast converts to the others)");
}

TEST_CASE("ops that take a stores-only type only move - compare or convert its values") {
  // Every op given minifloat or 4-bit operands (default attributes) either
  // refuses them or gives back values among its operands' (or bools,
  // indices, converted values): none rounds arithmetic to 2-4 bits.
  int taken = 0;
  for (DType t : {DType::F8E4M3FN, DType::F4E2M1, DType::I4}) {
    for (const OpDef* d : OpRegistry::get().all()) {
      if (d->name == "cast" || d->name == "cast_unsaturated" || d->min_inputs < 1) continue;
      std::vector<Tensor> args;
      for (int k = 0; k < d->min_inputs; ++k) {
        Tensor x(t, {2, 3});
        for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i) - 2.0);
        args.push_back(std::move(x));
      }
      std::vector<TypedInput> ins;
      for (auto& a : args) ins.push_back(TypedInput{{a.dtype(), shape_of(a.dims())}, &a, true});
      std::vector<ValueType> types;
      try {
        types = d->infer({}, ins, 1);
      } catch (const ShapeError& e) {
        continue;
      }
      INFO(d->name << " of " << dtype_name(t));
      ++taken;
      const auto out = run(d->name, args);
      for (const Tensor& r : out) {
        if (r.dtype() != t) continue;
        for (std::size_t i = 0; i < r.numel(); ++i)
          CHECK((r.at(i) == 0 || (r.at(i) >= -2.0 && r.at(i) <= 3.0 && r.at(i) == std::trunc(r.at(i)))));
      }
    }
  }
  CHECK(taken > 5);  // identity, transpose, comparisons, ...
  CHECK(shape_error_of("add", {{DType::F8E4M3FN, shape_of({2})}, {DType::F8E4M3FN, shape_of({2})}}) ==
        "add does not take f8e4m3fn operands: that type only stores values (cast it to compute)");
}

TEST_CASE("relu keeps NaN - as numpy.maximum - PyTorch - oneDNN and cuDNN") {
  auto r = run("relu", {f32({3}, {NAN, -1, 2})});
  CHECK(std::isnan(r[0].at(0)));
  CHECK(r[0].at(1) == 0);
  CHECK(r[0].at(2) == 2);
}

TEST_CASE("matmul - gemm and softmax") {
  auto mm = run("matmul", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {5, 6})});
  CHECK(mm[0].at(0) == 17);
  CHECK(mm[0].at(1) == 39);
  auto batched = run("matmul", {f32({2, 1, 2}, {1, 0, 0, 1}), f32({2, 2}, {1, 2, 3, 4})});
  CHECK(batched[0].dims() == std::vector<std::int64_t>{2, 1, 2});
  CHECK(batched[0].at(2) == 3);
  CHECK(shape_error_of("matmul", {{DType::F32, shape_of({2, 3})}, {DType::F32, shape_of({4, 5})}}) ==
        "matmul: inner dimensions differ: [2 3] x [4 5]");
  Attrs g;
  g.set("transB", std::int64_t{1});
  g.set("alpha", 2.0);
  auto ge = run("gemm", {f32({1, 2}, {1, 1}), f32({1, 2}, {3, 4}), f32({1}, {0.5})}, g);
  CHECK(ge[0].at(0) == 2 * 7 + 0.5);
  auto sm = run("softmax", {f32({1, 3}, {1, 1, 1})});
  CHECK(sm[0].at(1) == Approx(1.0 / 3));
}

TEST_CASE("movement ops") {
  Attrs p;
  p.set("perm", std::vector<std::int64_t>{1, 0});
  auto t = run("transpose", {f32({2, 3}, {0, 1, 2, 3, 4, 5})}, p);
  CHECK(t[0].at(1) == 3);
  Attrs r;
  r.set("shape", std::vector<std::int64_t>{0, -1});
  CHECK(run("reshape", {f32({2, 3}, {0, 1, 2, 3, 4, 5})}, r)[0].dims() == std::vector<std::int64_t>{2, 3});
  Attrs bad;
  bad.set("shape", std::vector<std::int64_t>{4, 2});
  CHECK(shape_error_of("reshape", {{DType::F32, shape_of({2, 3})}}, bad) ==
        "reshape: [2 3] has 6 elements, target [4 2] has 8");
  // gather_elements: same rank, indices no longer than data off the axis, integer indices.
  Attrs along1;
  along1.set("axis", std::int64_t{1});
  CHECK(shape_error_of("gather_elements", {{DType::F32, shape_of({3, 4})}, {DType::I64, shape_of({3})}}, along1) ==
        "gather_elements: data and indices need the same rank >= 1, got [3 4] and [3]");
  CHECK(shape_error_of("gather_elements", {{DType::F32, shape_of({3, 4})}, {DType::I64, shape_of({4, 9})}}, along1) ==
        "gather_elements: indices [4 9] exceed data [3 4] on axis 0");
  CHECK(shape_error_of("gather_elements", {{DType::F32, shape_of({3, 4})}, {DType::F32, shape_of({3, 4})}}, along1) ==
        "gather_elements: indices must be i32 or i64");
  CHECK(shape_error_of("gather_elements", {{DType::F32, shape_of({3, 4})}, {DType::I32, shape_of({2, 9})}}, along1) ==
        "(no error)");
  // String attributes with a fixed set of values, and pads, are checked.
  const std::vector<ValueType> conv_in{{DType::F32, shape_of({1, 1, 4, 4})}, {DType::F32, shape_of({1, 1, 3, 3})}};
  Attrs middle;
  middle.set("auto_pad", std::string("SAME_MIDDLE"));
  CHECK(shape_error_of("conv", conv_in, middle) ==
        "conv: auto_pad 'SAME_MIDDLE' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  CHECK(shape_error_of("max_pool", {{DType::F32, shape_of({1, 1, 4, 4})}}, middle).find("auto_pad 'SAME_MIDDLE'") !=
        std::string::npos);
  Attrs negative;
  negative.set("pads", std::vector<std::int64_t>{-1, 0, 0, 0});
  CHECK(shape_error_of("conv", conv_in, negative) == "pads must be >= 0, got -1");
  Attrs fast;
  fast.set("approximate", std::string("fast"));
  CHECK(shape_error_of("gelu", {{DType::F32, shape_of({4})}}, fast) ==
        "gelu: approximate 'fast' is not one of none, tanh");
  Attrs tanh_gelu;
  tanh_gelu.set("approximate", std::string("tanh"));
  CHECK(shape_error_of("gelu", {{DType::F32, shape_of({4})}}, tanh_gelu) == "(no error)");
  // Convolutions and Gemm take one element type (ONNX's T).
  CHECK(shape_error_of("conv", {{DType::F64, shape_of({1, 1, 4, 4})}, {DType::F32, shape_of({1, 1, 3, 3})}}) ==
        "conv: operand 1 is f32, operand 0 f64");
  CHECK(shape_error_of("conv", {{DType::F32, shape_of({1, 1, 4, 4})},
                                {DType::F32, shape_of({1, 1, 3, 3})},
                                {DType::F16, shape_of({1})}}) == "conv: operand 2 is f16, operand 0 f32");
  CHECK(shape_error_of("conv", {{DType::F32, shape_of({1, 1, 4, 4})}, {DType::F32, shape_of({1, 1, 3, 3})}}) ==
        "(no error)");
  CHECK(shape_error_of("gemm", {{DType::F32, shape_of({2, 3})}, {DType::F64, shape_of({3, 4})}}) ==
        "gemm: operand 1 is f64, operand 0 f32");
  Attrs sl;
  sl.set("starts", std::vector<std::int64_t>{-1});
  sl.set("ends", std::vector<std::int64_t>{-4});
  sl.set("steps", std::vector<std::int64_t>{-1});
  auto s = run("slice", {f32({3}, {1, 2, 3})}, sl);
  CHECK(s[0].dims() == std::vector<std::int64_t>{3});
  CHECK(s[0].at(0) == 3);
  CHECK(s[0].at(2) == 1);
  // Steps at int64's ends take one element (the count never overflows).
  for (std::int64_t step : {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}) {
    Attrs huge;
    huge.set("starts", std::vector<std::int64_t>{step < 0 ? -1 : 0});
    huge.set("ends", std::vector<std::int64_t>{step < 0 ? std::numeric_limits<std::int64_t>::min() : 3});
    huge.set("steps", std::vector<std::int64_t>{step});
    auto h = run("slice", {f32({3}, {1, 2, 3})}, huge);
    INFO(step);
    CHECK(h[0].dims() == std::vector<std::int64_t>{1});
    CHECK(h[0].at(0) == (step < 0 ? 3 : 1));
  }
  Attrs pad;
  pad.set("pads", std::vector<std::int64_t>{1, 1});
  pad.set("mode", std::string("reflect"));
  auto pd = run("pad", {f32({3}, {1, 2, 3})}, pad);
  CHECK(pd[0].at(0) == 2);
  CHECK(pd[0].at(4) == 2);
}

TEST_CASE("scatter_nd replaces or combines the slices its indices name - in order - errors name the index") {
  const Tensor data = f32({3, 2}, {0, 1, 2, 3, 4, 5});
  // Rows 2 and -3 (row 0) replaced; then the same updates added, multiplied, maxed.
  const Tensor idx = Tensor::of_ints(DType::I64, {2, 1}, {2, -3});
  const Tensor upd = f32({2, 2}, {10, 11, 12, 13});
  auto with = [](const char* how) {
    Attrs a;
    a.set("reduction", std::string(how));
    return a;
  };
  CHECK(values(run("scatter_nd", {data, idx, upd})[0]) == std::vector<double>{12, 13, 2, 3, 10, 11});
  CHECK(values(run("scatter_nd", {data, idx, upd}, with("add"))[0]) == std::vector<double>{12, 14, 2, 3, 14, 16});
  CHECK(values(run("scatter_nd", {data, idx, upd}, with("mul"))[0]) == std::vector<double>{0, 13, 2, 3, 40, 55});
  CHECK(values(run("scatter_nd", {data, idx, upd}, with("min"))[0]) == std::vector<double>{0, 1, 2, 3, 4, 5});
  // Full index tuples address single elements; a repeated one applies in order.
  const Tensor pairs = Tensor::of_ints(DType::I64, {3, 2}, {1, 1, 0, 1, 1, 1});
  const Tensor three = Tensor::of_ints(DType::I64, {3}, {7, 8, 9});
  const Tensor ints = Tensor::of_ints(DType::I64, {3, 2}, {0, 1, 2, 3, 4, 5});
  CHECK(run("scatter_nd", {ints, pairs, three})[0].to_ints() == std::vector<std::int64_t>{0, 8, 2, 9, 4, 5});
  CHECK(run("scatter_nd", {ints, pairs, three}, with("add"))[0].to_ints() ==
        std::vector<std::int64_t>{0, 9, 2, 19, 4, 5});
  // Indices of an empty last dim address the whole tensor, once per tuple.
  const Tensor whole = Tensor::of_ints(DType::I64, {1, 0}, {});
  CHECK(values(run("scatter_nd", {data, whole, f32({1, 3, 2}, {6, 6, 6, 6, 6, 6})})[0]) == std::vector<double>(6, 6.0));
  const OpDef* d = OpRegistry::get().find("scatter_nd");
  const Tensor far = Tensor::of_ints(DType::I64, {1, 1}, {3});
  bool given[3] = {true, true, true};
  try {
    d->eval({}, std::vector<Tensor>{data, far, f32({1, 2}, {0, 0})}, std::span<const bool>(given, 3), 1);
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK(e.message == "scatter_nd: index 3 out of range for axis 0 of size 3");
  }
  CHECK(shape_error_of("scatter_nd", {{DType::F32, shape_of({3, 2})},
                                      {DType::I64, shape_of({2, 1})},
                                      {DType::F32, shape_of({2, 3})}}) == "scatter_nd: updates [2 3] should be [2 2]");
  CHECK(shape_error_of("scatter_nd",
                       {{DType::F32, shape_of({3, 2})}, {DType::I64, shape_of({2, 3})}, {DType::F32, shape_of({2})}}) ==
        "scatter_nd: indices address 3 axes of a rank-2 operand");
}

TEST_CASE("conv and pooling geometry") {
  Attrs c;
  c.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
  Tensor x = f32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), w = f32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  auto y = run("conv", {x, w}, c);
  CHECK(y[0].dims() == std::vector<std::int64_t>{1, 1, 3, 3});
  CHECK(y[0].at(0) == 4);  // corner sees 4 ones
  CHECK(y[0].at(4) == 9);
  Attrs p;
  p.set("kernel_shape", std::vector<std::int64_t>{2, 2});
  p.set("ceil_mode", std::int64_t{1});
  p.set("strides", std::vector<std::int64_t>{2, 2});
  auto mp = run("max_pool", {x}, p, 2);
  CHECK(mp[0].dims() == std::vector<std::int64_t>{1, 1, 2, 2});
  CHECK(mp[1].dtype() == DType::I64);
  CHECK(shape_error_of("conv", {{DType::F32, shape_of({1, 2, 5, 5})}, {DType::F32, shape_of({1, 3, 3, 3})}}) ==
        "conv: x has 2 channels, w expects 3");
}

TEST_CASE("reductions and arg-reductions") {
  Attrs a;
  a.set("axes", std::vector<std::int64_t>{1});
  a.set("keepdims", std::int64_t{0});
  auto s = run("reduce_sum", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, a);
  CHECK(s[0].dims() == std::vector<std::int64_t>{2});
  CHECK(s[0].at(1) == 15);
  auto lse = run("reduce_log_sum_exp", {f32({2}, {1000, 1000})});
  CHECK(lse[0].at(0) == Approx(1000 + std::log(2.0)));  // stable at large values
  Attrs am;
  am.set("axis", std::int64_t{0});
  am.set("select_last_index", std::int64_t{1});
  CHECK(run("argmax", {f32({3}, {5, 1, 5})}, am)[0].at_int(0) == 2);
}

TEST_CASE("empty tensors - a reduction over nothing is its identity - an arg-reduction has no index to give") {
  Attrs a;
  a.set("axes", std::vector<std::int64_t>{1});
  a.set("keepdims", std::int64_t{0});
  const Tensor empty = f32({2, 0}, {});
  CHECK(values(run("reduce_sum", {empty}, a)[0]) == std::vector<double>{0, 0});
  CHECK(values(run("reduce_max", {empty}, a)[0]) == std::vector<double>(2, -INFINITY));
  CHECK(values(run("reduce_log_sum_exp", {empty}, a)[0]) == std::vector<double>(2, -INFINITY));
  Attrs am;
  am.set("axis", std::int64_t{1});
  CHECK(shape_error_of("argmax", {{DType::F32, shape_of({2, 0})}}, am) ==
        "argmax over an empty axis (dim 0) has no index to give");
  // Nothing to give an index for: an empty result.
  CHECK(run("argmin", {f32({0, 0}, {})}, am)[0].dims() == std::vector<std::int64_t>{0, 1});
  // A window that does not fit leaves no window; a kernel dim of 0 is no kernel.
  Attrs w;
  w.set("kernel_shape", std::vector<std::int64_t>{2});
  CHECK(run("windows", {f32({3, 0}, {})}, w)[0].dims() == std::vector<std::int64_t>{3, 0, 2});
  CHECK(run("windows", {f32({1, 1}, {7})}, w)[0].dims() == std::vector<std::int64_t>{1, 0, 2});
  CHECK(shape_error_of("conv", {{DType::F32, shape_of({1, 2, 5})}, {DType::F32, shape_of({1, 2, 0})}}) ==
        "kernel dims must be positive, got 0");
}

TEST_CASE(
    "einsum rejects an ellipsis operand with fewer axes than letters - and instance_norm a scale of the wrong shape") {
  Attrs a;
  a.set("equation", std::string("...ij,jk->...ik"));
  CHECK(shape_error_of("einsum", {{DType::F32, shape_of({3})}, {DType::F32, shape_of({3, 2})}}, a) ==
        "einsum: operand 0 has rank 1, fewer than the equation's 2 letters");
  CHECK(shape_error_of(
            "instance_norm",
            {{DType::F32, shape_of({2, 3, 4})}, {DType::F32, shape_of({2, 3})}, {DType::F32, shape_of({3})}}) ==
        "instance_norm: scale and bias must have shape [3], got [2 3]");
  Attrs ct;
  ct.set("output_shape", std::vector<std::int64_t>{5});  // one entry for two spatial dims (read past it before)
  CHECK(shape_error_of("conv_transpose", {{DType::F32, shape_of({1, 1, 3, 3})}, {DType::F32, shape_of({1, 1, 2, 2})}},
                       ct) == "conv_transpose: output_shape has 1 entries for 2 spatial dims");
  // A negative result dimension is a shape error for every op (it escaped
  // as std::invalid_argument from expand).
  Attrs neg;
  neg.set("shape", std::vector<std::int64_t>{-2, 3});
  CHECK(shape_error_of("expand", {{DType::F32, shape_of({1, 3})}}, neg) ==
        "expand: the result would have a negative dimension [-2 3]");
  // range reads its operands' one value each (it read past an empty one).
  Tensor empty(DType::F32, {0}), one = Tensor::scalar(DType::F32, 1.0);
  std::vector<TypedInput> ins{
      {{DType::F32, shape_of({0})}, &empty, true}, {{DType::F32, {}}, &one, true}, {{DType::F32, {}}, &one, true}};
  std::string what = "(no error)";
  try {
    OpRegistry::get().find("range")->infer(Attrs{}, ins, 1);
  } catch (const ShapeError& e) {
    what = e.message;
  }
  CHECK(what == "range: start, limit and delta must be scalars, got f32[0]");
}

namespace {

// A random operand type for the robustness sweep: mostly f32, ranks 0..4,
// dims 0..3 (empty tensors included).
ValueType random_type(std::mt19937& rng) {
  const DType kinds[] = {DType::F32, DType::F32, DType::F32, DType::I64, DType::Bool};
  std::uniform_int_distribution<int> kind(0, 4), rank(0, 4), dim(0, 3);
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank(rng)));
  for (auto& d : dims) d = dim(rng) == 0 && dim(rng) == 0 ? 0 : 1 + dim(rng) % 3;
  return {kinds[kind(rng)], shape_of(dims)};
}

// A random value for an attribute: absent, or of its type, often odd. Lists
// are often as long as the spatial rank (or twice it, or the rank) of an
// operand of rank `rank`, with small positive values: what windowed ops take.
std::optional<AttrValue> random_attr(const AttrSpec& spec, std::mt19937& rng, std::size_t rank) {
  std::uniform_int_distribution<int> coin(0, 3), small(-3, 4), len(0, 5), pick(0, 9), positive(1, 3);
  if (coin(rng) == 0) return std::nullopt;
  static const char* strings[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER",   "VALID", "constant", "reflect",
                                  "edge",   "wrap",       "f32",          "i64",   "bool",     "none",
                                  "tanh",   "ij,jk->ik",  "...ij->...ji", "ii->i", "i,i",      "->",
                                  "",       "x",          "...,...->..."};
  switch (spec.type) {
    case AttrType::Int:
      return AttrValue(static_cast<std::int64_t>(small(rng)));
    case AttrType::Real:
      return AttrValue(0.5 * small(rng));
    case AttrType::String:
      return AttrValue(
          std::string(strings[std::uniform_int_distribution<std::size_t>(0, std::size(strings) - 1)(rng)]));
    case AttrType::Ints: {
      // One short of the spatial rank too: a list read past its end is the
      // kind of bug this finds.
      const int spatial = std::max(0, static_cast<int>(rank) - 2), p = pick(rng);
      const int n = p < 4   ? spatial
                    : p < 5 ? 2 * spatial
                    : p < 6 ? static_cast<int>(rank)
                    : p < 8 ? std::max(0, spatial - 1)
                            : len(rng);
      std::vector<std::int64_t> v(static_cast<std::size_t>(n));
      const bool valid = pick(rng) < 6;
      for (auto& x : v) x = valid ? positive(rng) : small(rng);
      return AttrValue(v);
    }
    case AttrType::Reals:
      return AttrValue(std::vector<double>(static_cast<std::size_t>(len(rng) % 3), 0.5));
    case AttrType::Tensor:
      return AttrValue(Tensor::scalar(DType::F32, 2.5));
  }
  return std::nullopt;
}

}  // namespace

// Every op, given random operand types and attributes: the shape rule either
// accepts or throws ShapeError (nothing else, no crash), and when it accepts,
// the reference kernel gives results of exactly the inferred types and shapes
// (or rejects the values with ShapeError). Seeded: failures repeat.
TEST_CASE("every op takes random shapes and attributes without crashing - and computes what its shape rule says") {
  std::mt19937 rng(2026);
  for (const OpDef* d : OpRegistry::get().all()) {
    if (d->name == "const") continue;  // its value is the attribute itself
    for (int trial = 0; trial < 1500; ++trial) {
      const int lo = d->min_inputs, hi = d->max_inputs < 0 ? lo + 2 : d->max_inputs;
      const int n = std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
      std::vector<ValueType> types;
      for (int i = 0; i < n; ++i) types.push_back(random_type(rng));
      // Sometimes all operands alike: most ops want that, and it reaches their
      // kernels; sometimes small NCHW tensors of one channel, which
      // convolutions and pooling take, so their attributes get exercised.
      if (n > 1 && trial % 2 == 0)
        for (auto& t : types) t = types[0];
      if (trial % 4 == 1)
        for (auto& t : types) t = {DType::F32, shape_of({1, 1, 1 + trial % 3, 2 + trial % 2})};
      Attrs attrs;
      const std::size_t rank = types.empty() ? 0 : types[0].shape.size();
      for (const AttrSpec& spec : d->attrs)
        if (auto v = random_attr(spec, rng, rank)) attrs.set(spec.name, *v);
      std::vector<Tensor> values;
      for (const ValueType& t : types) {
        Tensor v(t.dtype, static_dims(t.shape));
        for (std::size_t i = 0; i < v.numel(); ++i) v.set(i, std::uniform_int_distribution<int>(-2, 2)(rng));
        values.push_back(std::move(v));
      }
      std::vector<TypedInput> ins;
      for (std::size_t i = 0; i < types.size(); ++i) ins.push_back(TypedInput{types[i], &values[i], true});
      const std::size_t outs = d->num_outputs < 0 ? 1 + static_cast<std::size_t>(trial % 3) : 1;
      std::string what = d->name;
      for (const auto& t : types) what.append(" ").append(dtype_name(t.dtype)).append(to_string(t.shape));
      for (const auto& [k, v] : attrs.all()) what.append(" ").append(k);
      INFO(what);
      std::vector<ValueType> inferred;
      try {
        inferred = d->infer(attrs, ins, outs);
      } catch (const ShapeError&) {
        continue;
      }
      std::size_t elements = 0;
      for (const ValueType& t : inferred)
        if (is_static(t.shape)) elements += static_cast<std::size_t>(numel(static_dims(t.shape)));
      if (elements > 100000) continue;
      auto given = std::make_unique<bool[]>(values.size() + 1);
      for (std::size_t i = 0; i < values.size(); ++i) given[i] = true;
      std::vector<Tensor> res;
      try {
        res = d->eval(attrs, values, std::span<const bool>(given.get(), values.size()), outs);
      } catch (const ShapeError&) {
        continue;
      }
      REQUIRE(res.size() >= std::min(outs, inferred.size()));
      for (std::size_t k = 0; k < std::min(outs, inferred.size()); ++k) {
        INFO("result " << k);
        CHECK(res[k].dtype() == inferred[k].dtype);
        CHECK(res[k].dims() == static_dims(inferred[k].shape));
      }
    }
  }
}

TEST_CASE("kernels given shapes that do not broadcast throw - never crash") {
  // What interpret() meets on a graph nobody type-checked: the kernels are
  // called without their shape rules.
  bool given[2] = {true, true};
  auto eval = [&](const std::string& op, std::vector<Tensor> args, Attrs a = {}) {
    return OpRegistry::get().find(op)->eval(a, args, std::span<const bool>(given, args.size()), 1);
  };
  CHECK_THROWS_AS(eval("mul", {Tensor(DType::F32, {2, 3, 3}), Tensor(DType::F32, {1, 4})}), ShapeError);
  CHECK_THROWS_AS(eval("add", {Tensor(DType::I64, {3}), Tensor(DType::I64, {2})}), ShapeError);
  CHECK_THROWS_AS(eval("matmul", {Tensor(DType::F32, {2, 3, 4}), Tensor(DType::F32, {3, 4, 5})}), ShapeError);
  Attrs to;
  to.set("shape", std::vector<std::int64_t>{5, 3});
  CHECK_THROWS_AS(eval("expand", {Tensor(DType::F32, {2, 3})}, to), ShapeError);
  try {
    eval("mul", {Tensor(DType::F32, {2, 3, 3}), Tensor(DType::F32, {1, 4})});
  } catch (const ShapeError& e) {
    CHECK(e.message.find("[2 3 3] and [1 4] do not broadcast") != std::string::npos);
  }
}

TEST_CASE("resize - nearest copies - linear and tf_crop_and_resize by hand - errors name the attribute") {
  auto attrs = [](std::vector<std::int64_t> sizes, const char* mode, const char* transform) {
    Attrs a;
    a.set("sizes", sizes);
    a.set("mode", std::string(mode));
    a.set("coordinate_transformation_mode", std::string(transform));
    return a;
  };
  SECTION("nearest 2x with asymmetric floor coordinates repeats elements") {
    Attrs a = attrs({1, 1, 4, 4}, "nearest", "asymmetric");
    a.set("nearest_mode", std::string("floor"));
    auto y = run("resize", {f32({1, 1, 2, 2}, {1, 2, 3, 4})}, a)[0];
    CHECK(values(y) == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  }
  SECTION("nearest copies integers exactly - beyond 2^53") {
    Tensor x = Tensor::of_ints(DType::I64, {2}, {(std::int64_t{1} << 60) + 1, -7});
    auto y = run("resize", {x}, attrs({5}, "nearest", "half_pixel"))[0];
    // half_pixel, scale 2.5, round_prefer_floor: sources -0.3, 0.1, 0.5, 0.9, 1.3.
    CHECK(y.to_ints() == std::vector<std::int64_t>{(std::int64_t{1} << 60) + 1, (std::int64_t{1} << 60) + 1,
                                                   (std::int64_t{1} << 60) + 1, -7, -7});
  }
  SECTION("linear - align_corners and half_pixel with edge clamping") {
    CHECK(values(run("resize", {f32({2}, {0, 10})}, attrs({5}, "linear", "align_corners"))[0]) ==
          std::vector<double>{0, 2.5, 5, 7.5, 10});
    // Sources -0.25, 0.25, 0.75, 1.25: the outer ones read the edge twice.
    CHECK(values(run("resize", {f32({2}, {0, 10})}, attrs({4}, "linear", "half_pixel"))[0]) ==
          std::vector<double>{0, 2.5, 7.5, 10});
  }
  SECTION("tf_crop_and_resize - a source outside the input is the extrapolation value") {
    Attrs a = attrs({3}, "linear", "tf_crop_and_resize");
    a.set("roi", std::vector<double>{0.5, 1.5});
    a.set("extrapolation_value", 9.0);
    // Sources 1.5, 3, 4.5 (past the last index, 3).
    CHECK(values(run("resize", {f32({4}, {1, 2, 3, 4})}, a)[0]) == std::vector<double>{2.5, 4, 9});
  }
  SECTION("cubic weights sum to one - a constant stays constant - antialiased too") {
    for (int antialias : {0, 1}) {
      Attrs a = attrs({2, 3}, "cubic", "half_pixel");
      a.set("antialias", std::int64_t{antialias});
      for (double v : values(run("resize", {f32({5, 7}, std::vector<double>(35, 3.25))}, a)[0]))
        CHECK(v == Approx(3.25).epsilon(1e-12));
    }
  }
  SECTION("errors") {
    const ValueType x{DType::F32, shape_of({2, 3})};
    CHECK(shape_error_of("resize", {x}, attrs({4}, "linear", "half_pixel")) ==
          "resize: sizes has 1 dims for an operand of rank 2");
    CHECK(shape_error_of("resize", {x}, attrs({4, 6}, "bicubic", "half_pixel")) ==
          "resize: mode 'bicubic' is not one of nearest, linear, cubic");
    CHECK(shape_error_of("resize", {x}, attrs({4, 6}, "linear", "centered"))
              .rfind("resize: coordinate_transformation_mode 'centered' is not one of half_pixel", 0) == 0);
    Attrs aa = attrs({4, 6}, "nearest", "half_pixel");
    aa.set("antialias", std::int64_t{1});
    CHECK(shape_error_of("resize", {x}, aa) == "resize: antialias needs mode linear or cubic");
  }
}

TEST_CASE("a fused conv_add takes a fourth operand of exactly the convolution's result type") {
  const ValueType x{DType::F32, shape_of({1, 2, 6, 6})}, w{DType::F32, shape_of({3, 2, 3, 3})},
      b{DType::F32, shape_of({3})};
  for (const char* op : {"dnnl.conv_add", "cudnn.conv_add_relu"}) {
    INFO(op);
    CHECK(shape_error_of(op, {x, w, b}) == "conv_add: operand 3, the added value, is required");
    CHECK(shape_error_of(op, {x, w, b, {DType::F32, shape_of({1, 3, 1, 4})}}) ==
          "conv_add: the added operand must have the convolution's result type [1 3 4 4], got [1 3 1 4]");
    CHECK(shape_error_of(op, {x, w, b, {DType::F64, shape_of({1, 3, 4, 4})}}).find("result type") != std::string::npos);
    CHECK(shape_error_of(op, {x, w, b, {DType::F32, shape_of({1, 3, 4, 4})}}) == "(no error)");
  }
  // The values: relu(conv(x, w, b) + skip), checked against the parts.
  Tensor xt = f32({1, 1, 2, 2}, {1, -2, 3, 4}), wt = f32({1, 1, 1, 1}, {2}), bt = f32({1}, {0.5}),
         skip = f32({1, 1, 2, 2}, {-10, 1, 1, -20});
  auto r = run("dnnl.conv_add_relu", {xt, wt, bt, skip});
  CHECK(values(r[0]) == std::vector<double>{0, 0, 7.5, 0});  // 2.5-10, -3.5+1, 6.5+1, 8.5-20
  auto s = run("dnnl.conv_add", {xt, wt, bt, skip});
  CHECK(values(s[0]) == std::vector<double>{-7.5, -2.5, 7.5, -11.5});
}

TEST_CASE("a fused conv_clip is clip(conv(...)) with clip's bounds - either may be absent") {
  Tensor xt = f32({1, 1, 2, 2}, {1, -2, 3, NAN}), wt = f32({1, 1, 1, 1}, {2}), bt = f32({1}, {0.5});
  Attrs both, low, none;
  both.set("min", 0.0);
  both.set("max", 6.0);
  low.set("min", 1.0);
  // conv: 2.5, -3.5, 6.5, NaN
  auto r = run("dnnl.conv_clip", {xt, wt, bt}, both);
  CHECK(values(r[0])[0] == 2.5);
  CHECK(values(r[0])[1] == 0);
  CHECK(values(r[0])[2] == 6);
  CHECK(std::isnan(values(r[0])[3]));  // clip's max and min keep a NaN
  auto l = run("dnnl.conv_clip", {xt, wt, bt}, low);
  CHECK(values(l[0])[1] == 1);
  CHECK(values(l[0])[2] == 6.5);
  auto n = run("dnnl.conv_clip", {xt, wt, bt}, none);
  CHECK(values(n[0])[1] == -3.5);
}
