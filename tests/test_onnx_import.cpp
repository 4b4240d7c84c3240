// ONNX import: models built in code, opset handling, constant folding of
// shape subgraphs, errors that name node, op and opset, malformed files.
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "ir/npy.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "onnx_model_builder.hpp"
#include "runtime/interp.hpp"
#include "scratch.hpp"

using namespace saturn;
using namespace saturn::ir;
using saturn::test::attr_int;
using saturn::test::ModelBuilder;

TEST_CASE("a shape-computing subgraph folds into the reshape") {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1]))
  ModelBuilder b(13);
  b.input("x", 1, {"2", "3", "4"});
  b.init_ints("zero", {0});
  b.init_ints("minus1", {-1});
  b.node("Shape", {"x"}, {"s"});
  attr_int(b.node("Gather", {"s", "zero"}, {"d0"}), "axis", 0);
  attr_int(b.node("Concat", {"d0", "minus1"}, {"shape"}), "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  auto g = b.import();
  INFO((g ? "" : g.error().to_string()));
  REQUIRE(g);
  REQUIRE(g->nodes.size() == 1);  // only the reshape is left
  CHECK(g->nodes[0].op == "reshape");
  CHECK(g->nodes[0].attrs.ints("shape") == std::vector<std::int64_t>{2, -1});
  auto types = infer_types(*g);
  REQUIRE(types);
  CHECK(to_string(types->at("y").shape) == "[2 12]");
}

TEST_CASE("Size of a statically shaped value is a constant - it folds into what uses it") {
  // y = x * Cast(Size(x)): Size(x) is 24, whatever x holds.
  ModelBuilder b(13);
  b.input("x", 1, {"2", "3", "4"});
  b.node("Size", {"x"}, {"n"});
  attr_int(b.node("Cast", {"n"}, {"nf"}), "to", 1);
  b.node("Mul", {"x", "nf"}, {"y"});
  b.output("y");
  auto g = b.import();
  INFO((g ? "" : g.error().to_string()));
  REQUIRE(g);
  REQUIRE(g->nodes.size() == 1);  // only the mul is left, by 24
  CHECK(g->nodes[0].op == "mul");
  std::vector<ir::Tensor> x{ir::Tensor(ir::DType::F32, {2, 3, 4})};
  for (std::size_t i = 0; i < x[0].numel(); ++i) x[0].set(i, static_cast<double>(i));
  auto y = runtime::interpret(*g, x);
  REQUIRE(y);
  CHECK((*y)[0].at(5) == 120.0);
}

TEST_CASE("errors name the node - the op and the opset") {
  ModelBuilder b(17);
  b.input("x", 1, {"2"});
  b.node("Frobnicate", {"x"}, {"y"}, "weird");
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().to_string() ==
        "built.onnx: error: node 'weird' (Frobnicate, opset 17): op Frobnicate is not supported");

  ModelBuilder m(17);
  m.input("a", 1, {"2", "3"});
  m.input("b", 1, {"4", "5"});
  m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  m.output("y");
  auto bad = m.import();
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "node 'mm' (MatMul, opset 17): matmul: inner dimensions differ: [2 3] x [4 5]");
}

TEST_CASE("a constant folded while importing that exceeds the machine's memory is refused naming the node") {
  // Checked before anything is allocated (under AddressSanitizer too, whose
  // allocator aborts on such a size; elsewhere it may succeed, overcommitted).
  ModelBuilder b(17);
  b.input("x", 1, {"2"});
  b.init_ints("shape", {1 << 20, 1 << 20, 64});
  b.node("ConstantOfShape", {"shape"}, {"big"}, "huge_fill");
  b.node("Add", {"x", "big"}, {"y"}, "sum");
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.rfind("node 'huge_fill' (ConstantOfShape, opset 17): out of memory: 'big' (f32[1048576 "
                                "1048576 64]) needs 262144 GiB, more than this machine's ",
                                0) == 0);

  // A broadcast of a scalar constant, as large.
  ModelBuilder e(17);
  e.input("x", 1, {"2"});
  e.init_scalar("one", 1, 1.0);
  e.init_ints("to", {1 << 16, 1 << 16, 1 << 12});
  e.node("Expand", {"one", "to"}, {"wide"}, "wide_expand");
  e.node("Add", {"x", "wide"}, {"y"}, "sum");
  e.output("y");
  auto w = e.import();
  REQUIRE_FALSE(w);
  CHECK(w.error().message.rfind(
            "node 'wide_expand' (Expand, opset 17): out of memory: 'wide' (f32[65536 65536 4096]) needs 65536 GiB",
            0) == 0);

  // Within the memory it folds as before.
  ModelBuilder ok(17);
  ok.input("x", 1, {"2"});
  ok.init_ints("shape", {2});
  ok.node("ConstantOfShape", {"shape"}, {"zeros"}, "fill");
  ok.node("Add", {"x", "zeros"}, {"y"}, "sum");
  ok.output("y");
  auto fine = ok.import();
  REQUIRE(fine);
  CHECK(fine->nodes.size() == 1);
}

TEST_CASE("a reshape target computed from an input binds that input") {
  ModelBuilder b(14);
  b.input("x", 1, {"6"});
  b.input("shape", 7, {"2"});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  auto plain = b.import();
  REQUIRE_FALSE(plain);
  CHECK(input_needed_as_constant(plain.error()) == "shape");
  auto path = saturn::test::scratch_file("bind.onnx").string();
  {
    std::ofstream out(path, std::ios::binary);
    b.m.SerializeToOstream(&out);
  }
  std::vector<Tensor> inputs{Tensor::of_doubles(DType::F32, {6}, {1, 2, 3, 4, 5, 6}),
                             Tensor::of_ints(DType::I64, {2}, {3, 2})};
  auto g = import_onnx_for_inputs(path, inputs);
  REQUIRE(g);
  CHECK(g->bound_inputs == std::vector<std::string>{"shape"});
  auto out = runtime::interpret(*g, runtime_inputs(*g, inputs));
  REQUIRE(out);
  CHECK((*out)[0].dims() == std::vector<std::int64_t>{3, 2});
}

TEST_CASE("symbolic input dims bind consistently in the interpreter") {
  ModelBuilder b(17);
  b.input("a", 1, {"N", "2"});
  b.input("c", 1, {"N", "2"});
  b.node("Add", {"a", "c"}, {"y"});
  b.output("y");
  auto g = b.import();
  REQUIRE(g);
  CHECK(to_string(g->inputs[0].type.shape) == "[N 2]");
  Tensor three(DType::F32, {3, 2}), four(DType::F32, {4, 2});
  CHECK(runtime::interpret(*g, std::vector<Tensor>{three, three}));
  auto bad = runtime::interpret(*g, std::vector<Tensor>{three, four});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "input 1 ('c'): symbol N is 3 elsewhere but 4 here");
  auto wrong_type = runtime::interpret(*g, std::vector<Tensor>{Tensor(DType::F64, {3, 2}), three});
  REQUIRE_FALSE(wrong_type);
  CHECK(wrong_type.error().message == "input 0 ('a') is f64, the model expects f32");
}

TEST_CASE("malformed files are errors - never crashes") {
  CHECK_FALSE(import_onnx_bytes("this is not protobuf", "junk.onnx"));
  ModelBuilder b(17);
  b.input("x", 1, {"2"});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  std::string bytes = b.m.SerializeAsString();
  for (std::size_t cut = 1; cut < bytes.size(); cut += 3) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), "cut.onnx");
    (void)g;  // either an error or a valid prefix model: must not crash
  }
  // Nodes with too few, too many or absent required operands (found by
  // fuzzing: a Conv left with one input crashed the importer's shape rule).
  // Up to opset 17 ONNX's schema (libonnx) counts them; past what libonnx
  // knows, the op registry's own check does.
  const std::vector<std::tuple<int, std::vector<std::string>, std::string>> arity = {
      {17, {"x"}, "Conv takes 2 to 3 operands, given 1"},
      {17, {"x", ""}, "Conv takes 2 to 3 operands, given 1"},
      {17, {"x", "x", "x", "x"}, "Conv takes 2 to 3 operands, given 4"},
      {19, {"x"}, "conv takes 2 to 3 operands, given 1"},
      {19, {"x", ""}, "conv: operand 1 is required, and absent"},
      {19, {"x", "x", "x", "x"}, "conv takes 2 to 3 operands, given 4"}};
  for (const auto& [opset, ins, message] : arity) {
    INFO(message);
    ModelBuilder c(opset);
    c.input("x", 1, {"1", "1", "4", "4"});
    c.node("Conv", ins, {"y"});
    c.output("y");
    auto g = c.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message.find(message) != std::string::npos);
    CHECK(g.error().message.find("Conv") != std::string::npos);  // the node
  }
  onnx::TensorProto t;
  t.set_data_type(1);
  t.add_dims(1000000000);
  t.add_dims(1000000000);
  auto path = saturn::test::scratch_file("huge.pb").string();
  {
    std::ofstream out(path, std::ios::binary);
    t.SerializeToOstream(&out);
  }
  auto r = read_tensor_pb(path);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("too large") != std::string::npos);
  CHECK_FALSE(read_npy(path));
}

TEST_CASE("opset-dependent attributes that became operands") {
  // ReduceSum keeps axes as an attribute before opset 13, an operand after.
  for (int opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", 1, {"2", "3"});
    auto* n =
        b.node("ReduceSum", opset < 13 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "axes"}, {"y"});
    if (opset < 13) {
      auto* a = n->add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(1);
    } else {
      b.init_ints("axes", {1});
    }
    attr_int(n, "keepdims", 0);
    b.output("y");
    auto g = b.import();
    INFO("opset " << opset);
    REQUIRE(g);
    auto types = infer_types(*g);
    REQUIRE(types);
    CHECK(to_string(types->at("y").shape) == "[2]");
  }
}

TEST_CASE("an attribute the importer does not understand is an error - not a silent skip") {
  ModelBuilder b(17);
  b.input("x", 1, {"2"});
  attr_int(b.node("Relu", {"x"}, {"y"}, "r"), "mystery", 1);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message == "node 'r' (Relu, opset 17): attribute 'mystery' is not supported");
}

TEST_CASE("an attribute of the wrong kind is an error naming it - never read as 0") {
  // Softmax's axis given as FLOAT 1.0 would read as INT 0.
  ModelBuilder b(17);
  b.input("x", 1, {"2", "3"});
  auto* a = b.node("Softmax", {"x"}, {"y"}, "sm")->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.0F);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message == "node 'sm' (Softmax, opset 17): attribute 'axis' is FLOAT, expected INT");
  // The right kind imports.
  ModelBuilder ok(17);
  ok.input("x", 1, {"2", "3"});
  attr_int(ok.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  ok.output("y");
  CHECK(ok.import());
}

TEST_CASE("single assignment - two producers of a name or a duplicate initializer are errors") {
  ModelBuilder b(17);
  b.input("x", 1, {"2"});
  b.node("Relu", {"x"}, {"y"}, "first");
  b.node("Neg", {"x"}, {"y"}, "second");
  b.output("y");
  auto twice = b.import();
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message ==
        "node 'second' (Neg, opset 17): value 'y' is already defined (by a graph input, an initializer or another "
        "node)");
  ModelBuilder s(17);
  s.input("x", 1, {"2"});
  s.node("Relu", {"x"}, {"x"}, "shadow");
  s.output("x");
  CHECK_FALSE(s.import());
  ModelBuilder d(17);
  d.input("x", 7, {"1"});
  d.init_ints("w", {1});
  d.init_ints("w", {2});
  d.node("Add", {"x", "w"}, {"y"}, "add");
  d.output("y");
  auto dup = d.import();
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "initializer 'w' is defined twice");
}

TEST_CASE("the default domain's opset must be a known version - and be declared - and a graph has outputs") {
  for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1} << 40}) {
    INFO(v);
    ModelBuilder b(17);
    b.m.mutable_opset_import(0)->set_version(v);
    b.input("x", 1, {"2"});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    auto g = b.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message.find("opset " + std::to_string(v)) == 0);
  }
  ModelBuilder none(17);
  none.m.clear_opset_import();
  none.input("x", 1, {"2"});
  none.node("Relu", {"x"}, {"y"});
  none.output("y");
  auto g = none.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message == "the model imports no opset of the default domain (opset_import)");
  none.m.set_ir_version(2);  // before opset_import existed: opset 1
  CHECK(none.import());
  ModelBuilder empty(17);
  empty.input("x", 1, {"2"});
  empty.node("Relu", {"x"}, {"y"});
  auto no_outputs = empty.import();
  REQUIRE_FALSE(no_outputs);
  CHECK(no_outputs.error().message == "the graph has no outputs: nothing to compute");
}

TEST_CASE("operand and result counts follow ONNX's schema - an extra Reshape operand is an error") {
  ModelBuilder b(17);
  b.input("x", 1, {"2", "3"});
  b.init_ints("s", {3, 2});
  b.node("Reshape", {"x", "s", "s"}, {"y"}, "rs");
  b.output("y");
  auto extra = b.import();
  REQUIRE_FALSE(extra);
  CHECK(extra.error().message == "node 'rs' (Reshape, opset 17): Reshape takes 2 operands, given 3");
  ModelBuilder r(17);
  r.input("x", 1, {"2"});
  r.node("Relu", {"x"}, {"y", "z"}, "two");
  r.output("y");
  auto results = r.import();
  REQUIRE_FALSE(results);
  CHECK(results.error().message == "node 'two' (Relu, opset 17): Relu has 1 results, the node names 2");
}

TEST_CASE("a declared output type that contradicts the computed one is an error") {
  const auto declared = [](int elem, std::vector<std::int64_t> dims) {
    ModelBuilder b(17);
    b.input("x", 1, {"2", "3"});
    b.node("Relu", {"x"}, {"y"}, "r");
    auto* out = b.m.mutable_graph()->add_output();
    out->set_name("y");
    auto* tt = out->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (auto d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    return b.import();
  };
  auto type = declared(7, {2, 3});
  REQUIRE_FALSE(type);
  CHECK(type.error().message == "graph output 'y' is declared INT64, the graph computes f32");
  auto shape = declared(1, {3, 3});
  REQUIRE_FALSE(shape);
  CHECK(shape.error().message == "graph output 'y' is declared with shape dimension 0 = 3, the graph computes [2 3]");
  CHECK(declared(1, {2, 3}));
  CHECK(declared(1, {}));  // no shape declared: nothing to contradict
}

TEST_CASE("RMSNormalization imports as its function body - f32 and f16 - axis - epsilon") {
  for (const int elem : {1, 10}) {  // FLOAT, FLOAT16
    for (const std::int64_t axis : {-1, 1}) {
      INFO("elem " << elem << " axis " << axis);
      ModelBuilder b(23);
      b.input("x", elem, {"2", "3", "4"});
      b.input("scale", elem, axis == -1 ? std::vector<std::string>{"4"} : std::vector<std::string>{"3", "4"});
      auto* n = b.node("RMSNormalization", {"x", "scale"}, {"y"});
      attr_int(n, "axis", axis);
      auto* eps = n->add_attribute();
      eps->set_name("epsilon");
      eps->set_type(onnx::AttributeProto::FLOAT);
      eps->set_f(0.25f);
      b.output("y");
      auto g = b.import();
      if (!g) FAIL(g.error().to_string());
      const DType t = elem == 1 ? DType::F32 : DType::F16;
      Tensor x(t, {2, 3, 4}), scale(t, axis == -1 ? std::vector<std::int64_t>{4} : std::vector<std::int64_t>{3, 4});
      for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 7) - 3.0);
      for (std::size_t i = 0; i < scale.numel(); ++i) scale.set(i, 0.5 + static_cast<double>(i));
      auto got = runtime::interpret(*g, std::vector<Tensor>{x, scale});
      REQUIRE(got);
      REQUIRE((*got)[0].dtype() == t);
      // y = x / sqrt(mean(x^2 over the axes) + 0.25) * scale, spelled out.
      const std::size_t group = axis == -1 ? 4 : 12;
      for (std::size_t i = 0; i < x.numel(); ++i) {
        const std::size_t first = i / group * group;
        double ms = 0;
        for (std::size_t j = first; j < first + group; ++j) ms += x.at(j) * x.at(j);
        const double want = x.at(i) / std::sqrt(ms / static_cast<double>(group) + 0.25) * scale.at(i % group);
        CHECK((*got)[0].at(i) == Approx(want).epsilon(elem == 1 ? 1e-6 : 2e-3).margin(1e-3));
      }
    }
  }
  ModelBuilder b(23);
  b.input("x", 1, {"2", "3"});
  b.input("scale", 1, {"3"});
  attr_int(b.node("RMSNormalization", {"x", "scale"}, {"y"}), "axis", 2);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.find("axis 2 is out of range for rank 2") != std::string::npos);
}

TEST_CASE(
    "Attention imports as its function body - 3-D heads - grouped queries - past - causal - bool mask - softcap") {
  // Q [1 3 4*2], K [1 2 2*2], V [1 2 2*3], one past position: 4 query heads
  // of size 2 share 2 key/value heads (value size 3); 3 keys in all.
  ModelBuilder b(23);
  b.input("Q", 1, {"1", "3", "8"});
  b.input("K", 1, {"1", "2", "4"});
  b.input("V", 1, {"1", "2", "6"});
  b.input("mask", 9, {"3", "3"});
  b.input("past_key", 1, {"1", "2", "1", "2"});
  b.input("past_value", 1, {"1", "2", "1", "3"});
  auto* n = b.node("Attention", {"Q", "K", "V", "mask", "past_key", "past_value"}, {"Y", "pk", "pv", "qk"});
  attr_int(n, "q_num_heads", 4);
  attr_int(n, "kv_num_heads", 2);
  attr_int(n, "is_causal", 1);
  attr_int(n, "qk_matmul_output_mode", 2);
  for (const auto& [name, value] : {std::pair<const char*, float>{"scale", 0.7f}, {"softcap", 1.5f}}) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  for (const char* o : {"Y", "pk", "pv", "qk"}) b.output(o);
  auto g = b.import();
  if (!g) FAIL(g.error().to_string());
  auto fill = [](Tensor t, double step) {
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, std::sin(static_cast<double>(i) * step) * 1.5);
    return t;
  };
  const Tensor q = fill(Tensor(DType::F32, {1, 3, 8}), 0.7), k = fill(Tensor(DType::F32, {1, 2, 4}), 1.3),
               v = fill(Tensor(DType::F32, {1, 2, 6}), 0.9), pk = fill(Tensor(DType::F32, {1, 2, 1, 2}), 2.1),
               pv = fill(Tensor(DType::F32, {1, 2, 1, 3}), 1.7);
  Tensor mask(DType::Bool, {3, 3});
  for (std::size_t i = 0; i < 9; ++i) mask.set(i, i == 0 || i == 5 ? 0.0 : 1.0);
  auto got = runtime::interpret(*g, std::vector<Tensor>{q, k, v, mask, pk, pv});
  if (!got) FAIL(got.error().to_string());
  REQUIRE(got->size() == 4);
  // The definition, spelled out: keys and values are the past one then the
  // new ones; query head h reads key/value head h / 2.
  auto key = [&](std::size_t kv, std::size_t t, std::size_t d) {
    return t == 0 ? pk.at(kv * 2 + d) : k.at((t - 1) * 4 + kv * 2 + d);
  };
  auto value = [&](std::size_t kv, std::size_t t, std::size_t e) {
    return t == 0 ? pv.at(kv * 3 + e) : v.at((t - 1) * 6 + kv * 3 + e);
  };
  for (std::size_t kv = 0; kv < 2; ++kv)
    for (std::size_t t = 0; t < 3; ++t) {
      for (std::size_t d = 0; d < 2; ++d) CHECK((*got)[1].at((kv * 3 + t) * 2 + d) == Approx(key(kv, t, d)));
      for (std::size_t e = 0; e < 3; ++e) CHECK((*got)[2].at((kv * 3 + t) * 3 + e) == Approx(value(kv, t, e)));
    }
  for (std::size_t h = 0; h < 4; ++h)
    for (std::size_t s = 0; s < 3; ++s) {
      double score[3], p[3], sum = 0, top = -INFINITY;
      for (std::size_t t = 0; t < 3; ++t) {
        double dot = 0;
        for (std::size_t d = 0; d < 2; ++d) dot += q.at(s * 8 + h * 2 + d) * key(h / 2, t, d);
        score[t] = 1.5 * std::tanh(0.7 * dot / 1.5);
        if (mask.at(s * 3 + t) == 0 || t > s + 1) score[t] = -INFINITY;  // the bool mask, then causal (past 1)
        top = std::max(top, score[t]);
        const double qk = (*got)[3].at((h * 3 + s) * 3 + t);
        if (std::isinf(score[t]))
          CHECK(qk == score[t]);
        else
          CHECK(qk == Approx(score[t]).epsilon(1e-5));
      }
      for (std::size_t t = 0; t < 3; ++t) sum += p[t] = std::exp(score[t] - top);
      for (std::size_t e = 0; e < 3; ++e) {
        double y = 0;
        for (std::size_t t = 0; t < 3; ++t) y += p[t] / sum * value(h / 2, t, e);
        CHECK((*got)[0].at(s * 12 + h * 3 + e) == Approx(y).epsilon(1e-5));
      }
    }
}

TEST_CASE(
    "what the importer does not take is an error naming the node - Attention's nonpad_kv_seqlen - an unknown pad "
    "mode") {
  ModelBuilder a(24);
  a.input("Q", 1, {"1", "1", "2", "4"});
  a.input("K", 1, {"1", "1", "3", "4"});
  a.input("V", 1, {"1", "1", "3", "4"});
  a.input("lens", 7, {"1"});
  a.node("Attention", {"Q", "K", "V", "", "", "", "lens"}, {"Y"}, "att");
  a.output("Y");
  auto g = a.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.find("node 'att' (Attention, opset 24)") != std::string::npos);
  CHECK(g.error().message.find("nonpad_kv_seqlen is not supported") != std::string::npos);

  ModelBuilder p(18);
  p.input("x", 1, {"2", "3"});
  p.init_ints("pads", {0, 1, 0, 1});
  auto* n = p.node("Pad", {"x", "pads"}, {"y"}, "pad");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("mirror");
  p.output("y");
  auto h = p.import();
  REQUIRE_FALSE(h);
  CHECK(h.error().message.find("node 'pad' (Pad, opset 18)") != std::string::npos);
  CHECK(h.error().message.find("unknown mode 'mirror'") != std::string::npos);
}

TEST_CASE("Resize imports with sizes and scales resolved for every axis - errors name the node") {
  SECTION("sizes for axes 2 and 3 under not_smaller") {
    ModelBuilder b(19);
    b.input("x", 1, {"1", "3", "4", "6"});
    b.init_ints("sizes", {6, 6});
    auto* n = b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
    auto* axes = n->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    axes->add_ints(2);
    axes->add_ints(-1);
    auto* policy = n->add_attribute();
    policy->set_name("keep_aspect_ratio_policy");
    policy->set_type(onnx::AttributeProto::STRING);
    policy->set_s("not_smaller");
    b.output("y");
    auto g = b.import();
    REQUIRE(g);
    // Ratios 1.5 and 1: the larger one for both axes, sizes round(4 * 1.5), round(6 * 1.5).
    CHECK(g->nodes.at(0).attrs.ints("sizes") == std::vector<std::int64_t>{1, 3, 6, 9});
    CHECK(g->nodes.at(0).attrs.floats("scales") == std::vector<double>{1, 1, 1.5, 1.5});
  }
  SECTION("sizes computed at run time") {
    ModelBuilder b(19);
    b.input("x", 1, {"1", "3", "4", "6"});
    b.input("sizes", 7, {"4"});
    b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
    b.output("y");
    auto g = b.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message.rfind("node 'up' (Resize, opset 19): sizes (operand 'sizes') must be a constant", 0) == 0);
  }
  SECTION("an axis out of range") {
    ModelBuilder b(19);
    b.input("x", 1, {"1", "3", "4", "6"});
    b.init_ints("sizes", {8});
    auto* n = b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
    auto* axes = n->add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    axes->add_ints(4);
    b.output("y");
    auto g = b.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message.rfind("node 'up' (Resize, opset 19): ", 0) == 0);
    CHECK(g.error().message.find("axis 4") != std::string::npos);
  }
  SECTION("both scales and sizes") {
    ModelBuilder b(19);
    b.input("x", 1, {"1", "3", "4", "6"});
    b.init_ints("sizes", {1, 3, 8, 12});
    auto* t = b.m.mutable_graph()->add_initializer();
    t->set_name("scales");
    t->set_data_type(1);
    t->add_dims(4);
    for (float v : {1.0f, 1.0f, 2.0f, 2.0f}) t->add_float_data(v);
    b.node("Resize", {"x", "", "scales", "sizes"}, {"y"}, "up");
    b.output("y");
    auto g = b.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message == "node 'up' (Resize, opset 19): resize: give scales or sizes, not both or neither");
  }
}

TEST_CASE("CumSum imports with its axis operand as an attribute - exports back - a computed axis is an error") {
  {
    ModelBuilder b(17);
    b.input("x", 1, {"2", "3"});
    b.init_ints("axis", {-1});
    auto* n = b.node("CumSum", {"x", "axis"}, {"y"}, "running");
    auto* rev = n->add_attribute();
    rev->set_name("reverse");
    rev->set_type(onnx::AttributeProto::INT);
    rev->set_i(1);
    b.output("y");
    auto g = b.import();
    REQUIRE(g);
    REQUIRE(g->nodes.size() == 1);
    CHECK(g->nodes[0].op == "cumsum");
    CHECK(g->nodes[0].attrs.i("axis", 0) == -1);
    CHECK(g->nodes[0].attrs.i("reverse", 0) == 1);
    CHECK(g->nodes[0].attrs.i("exclusive", 1) == 0);
    // Reversed along the rows: [1 2 3] sums to [6 5 3].
    auto y = runtime::interpret(*g, std::vector<Tensor>{Tensor::of_doubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})});
    REQUIRE(y);
    CHECK(y->at(0).at(0) == 6);
    CHECK(y->at(0).at(1) == 5);
    CHECK(y->at(0).at(5) == 6);
    auto bytes = export_onnx_bytes(*g);
    REQUIRE(bytes);
    auto back = import_onnx_bytes(*bytes, "cumsum.onnx");
    REQUIRE(back);
    CHECK(back->nodes.back().op == "cumsum");
    CHECK(back->nodes.back().attrs.i("axis", 0) == -1);
    CHECK(back->nodes.back().attrs.i("reverse", 0) == 1);
  }
  {
    // CumProd the same way: exclusive, integers wrapping as reduce_prod's.
    ModelBuilder b(21);
    b.input("x", 7, {"4"});
    b.init_ints("axis", {0});
    attr_int(b.node("CumProd", {"x", "axis"}, {"y"}, "products"), "exclusive", 1);
    b.output("y");
    auto g = b.import();
    REQUIRE(g);
    CHECK(g->nodes[0].op == "cumprod");
    const std::int64_t big = std::int64_t{1} << 40;
    auto y = runtime::interpret(*g, std::vector<Tensor>{Tensor::of_ints(DType::I64, {4}, {3, big, big, 5})});
    REQUIRE(y);
    CHECK(y->at(0).at_int(0) == 1);
    CHECK(y->at(0).at_int(1) == 3);
    CHECK(y->at(0).at_int(2) == 3 * big);
    CHECK(y->at(0).at_int(3) == static_cast<std::int64_t>(3ULL * static_cast<std::uint64_t>(big) *
                                                          static_cast<std::uint64_t>(big)));  // wrapped
    auto bytes = export_onnx_bytes(*g);
    REQUIRE(bytes);
    auto back = import_onnx_bytes(*bytes, "cumprod.onnx");
    REQUIRE(back);
    CHECK(back->nodes.back().op == "cumprod");
    CHECK(back->nodes.back().attrs.i("exclusive", 0) == 1);
  }
  ModelBuilder b(17);
  b.input("x", 1, {"2", "3"});
  b.input("axis", 7, {});
  b.node("CumSum", {"x", "axis"}, {"y"}, "running");
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.rfind("node 'running' (CumSum, opset 17): axis (operand 'axis') must be a constant", 0) == 0);
}

TEST_CASE("a pixel shuffle that does not fit its operand is an error naming the node") {
  ModelBuilder b(17);
  b.input("x", 1, {"1", "6", "2", "2"});
  auto* n = b.node("DepthToSpace", {"x"}, {"y"}, "shuffle");
  auto* size = n->add_attribute();
  size->set_name("blocksize");
  size->set_type(onnx::AttributeProto::INT);
  size->set_i(2);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message ==
        "node 'shuffle' (DepthToSpace, opset 17): depth_to_space: 6 channels are not a multiple of blocksize^2 = 4");
}

TEST_CASE("Resize exports with the operand that imports back to the same sizes and scales - static shapes only") {
  // Scale 7/3 on [3 4] gives sizes [7 9] (round(9.33)): neither sizes
  // alone (9/4), nor f32 scales, nor not_larger reproduce it; sizes under
  // not_smaller over axes 2 and 3 do.
  auto g = read_sat(R"((graph up
  (input x f32 [1 3 3 4])
  (node r resize (y) (x) :sizes [1 3 7 9] :scales (floats 1.0 1.0 2.3333333333333335 2.3333333333333335) :mode "linear")
  (output y)))",
                    "up.sat");
  REQUIRE(g);
  auto bytes = export_onnx_bytes(*g);
  REQUIRE(bytes);
  auto back = import_onnx_bytes(*bytes, "up.onnx");
  REQUIRE(back);
  CHECK(back->nodes.at(0).attrs.ints("sizes") == std::vector<std::int64_t>{1, 3, 7, 9});
  CHECK(back->nodes.at(0).attrs.floats("scales") == std::vector<double>{1, 1, 7.0 / 3, 7.0 / 3});
  auto sym = read_sat(R"((graph up
  (input x f32 [N 3 4 6])
  (node r resize (y) (x) :sizes [1 3 8 12] :mode "nearest")
  (output y)))",
                      "sym.sat");
  REQUIRE(sym);
  auto err = export_onnx_bytes(*sym);
  REQUIRE_FALSE(err);
  CHECK(err.error().message.find("resize exports with its operand's static shape only") != std::string::npos);
  CHECK(err.error().message.find("'r'") != std::string::npos);
}

TEST_CASE("nodes out of topological order import in dependency order - a cycle names a node on it") {
  // y = relu(x) + 1 and z = neg(y), listed consumers first.
  ModelBuilder b(17);
  b.input("x", 1, {"3"});
  b.node("Neg", {"y"}, {"z"}, "last");
  b.node("Add", {"r", "one"}, {"y"}, "middle");
  b.node("Relu", {"x"}, {"r"}, "first");
  auto* one = b.m.mutable_graph()->add_initializer();
  one->set_name("one");
  one->set_data_type(1);
  one->add_float_data(1.0f);
  b.output("z");
  auto g = b.import();
  REQUIRE(g);
  REQUIRE(g->nodes.size() == 3);
  CHECK(g->nodes[0].name == "first");
  CHECK(g->nodes[1].name == "middle");
  CHECK(g->nodes[2].name == "last");
  Tensor x(DType::F32, {3});
  x.set(0, -2.0);
  x.set(1, 0.5);
  x.set(2, 3.0);
  auto z = runtime::interpret(*g, std::vector<Tensor>{x});
  REQUIRE(z);
  CHECK((*z)[0].at(0) == -1.0);
  CHECK((*z)[0].at(1) == -1.5);
  CHECK((*z)[0].at(2) == -4.0);

  ModelBuilder c(17);
  c.input("x", 1, {"3"});
  c.node("Add", {"x", "q"}, {"p"}, "loop_a");
  c.node("Relu", {"p"}, {"q"}, "loop_b");
  c.output("q");
  auto cyclic = c.import();
  REQUIRE_FALSE(cyclic);
  CHECK(cyclic.error().message.find("is on a cycle") != std::string::npos);
  CHECK(cyclic.error().message.find("node 'loop_") != std::string::npos);
}

TEST_CASE(
    "BatchNormalization's parameters of another type are cast to x's from opset 15 - norms of mixed types are "
    "errors") {
  // f64 scale, bias, mean and var of an f32 x: ONNX's T1 and T2 (opset 15).
  auto batch_norm = [](int opset) {
    ModelBuilder b(opset);
    b.input("x", 1, {"1", "2", "2"});
    const std::vector<std::pair<const char*, std::vector<double>>> params = {
        {"scale", {2.0, 0.5}}, {"bias", {1.0, -1.0}}, {"mean", {0.5, 1.0}}, {"var", {4.0, 0.25}}};
    for (const auto& [name, values] : params) {
      auto* t = b.m.mutable_graph()->add_initializer();
      t->set_name(name);
      t->set_data_type(11);  // DOUBLE
      t->add_dims(2);
      for (double v : values) t->add_double_data(v);
    }
    auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
    auto* eps = n->add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto::FLOAT);
    eps->set_f(0.0f);
    b.output("y");
    return b.import();
  };
  auto g = batch_norm(15);
  if (!g) FAIL(g.error().to_string());
  Tensor x(DType::F32, {1, 2, 2});
  for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i));
  auto got = runtime::interpret(*g, std::vector<Tensor>{x});
  REQUIRE(got);
  REQUIRE((*got)[0].dtype() == DType::F32);
  // (x - mean) / sqrt(var) * scale + bias, channel 0 then channel 1.
  const std::vector<double> want = {(0 - 0.5) / 2 * 2 + 1, (1 - 0.5) / 2 * 2 + 1, (2 - 1.0) / 0.5 * 0.5 - 1,
                                    (3 - 1.0) / 0.5 * 0.5 - 1};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK((*got)[0].at(i) == Approx(want[i]));
  // Before opset 15 every operand is of x's type T.
  auto old = batch_norm(14);
  REQUIRE_FALSE(old);
  CHECK(old.error().message == "node 'bn' (BatchNormalization, opset 14): batch_norm: operand 1 is f64, operand 0 f32");

  ModelBuilder ln(17);
  ln.input("x", 1, {"2", "3"});
  auto* s = ln.m.mutable_graph()->add_initializer();
  s->set_name("gamma");
  s->set_data_type(11);
  s->add_dims(3);
  for (int k = 0; k < 3; ++k) s->add_double_data(1.0);
  ln.node("LayerNormalization", {"x", "gamma"}, {"y"}, "ln");
  ln.output("y");
  auto mixed = ln.import();
  REQUIRE_FALSE(mixed);
  CHECK(mixed.error().message ==
        "node 'ln' (LayerNormalization, opset 17): layer_norm: operand 1 is f64, operand 0 f32");
}

TEST_CASE("Dropout in training mode with ratio 0 is the identity - another ratio is an error naming it") {
  for (const double ratio : {0.0, 0.5}) {
    for (const bool training : {true, false}) {
      INFO("ratio " << ratio << " training " << training);
      ModelBuilder b(17);
      b.input("x", 1, {"2", "3"});
      b.init_scalar("ratio", 1, ratio);
      b.init_scalar("mode", 9, training ? 1 : 0);
      b.node("Dropout", {"x", "ratio", "mode"}, {"y", "mask"}, "drop");
      b.output("y");
      b.output("mask");
      auto g = b.import();
      if (training && ratio != 0) {
        REQUIRE_FALSE(g);
        CHECK(g.error().message ==
              "node 'drop' (Dropout, opset 17): training mode with ratio 0.5 draws a random mask, which is not "
              "supported (only ratio 0, the identity)");
        continue;
      }
      if (!g) FAIL(g.error().to_string());
      Tensor x(DType::F32, {2, 3});
      for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i) - 2.5);
      auto got = runtime::interpret(*g, std::vector<Tensor>{x});
      REQUIRE(got);
      REQUIRE(got->size() == 2);
      for (std::size_t i = 0; i < x.numel(); ++i) {
        CHECK((*got)[0].at(i) == x.at(i));
        CHECK((*got)[1].at_int(i) == 1);  // every element kept
      }
      CHECK((*got)[1].dtype() == DType::Bool);
    }
  }
  // Before opset 12 the ratio is an attribute and is_test (opsets 1-6) the mode.
  ModelBuilder b(6);
  b.input("x", 1, {"2"});
  auto* n = b.node("Dropout", {"x"}, {"y"}, "old");
  attr_int(n, "is_test", 0);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.find("training mode with ratio 0.5") != std::string::npos);
  auto* r = n->add_attribute();
  r->set_name("ratio");
  r->set_type(onnx::AttributeProto::FLOAT);
  r->set_f(0.0f);
  CHECK(b.import());
}

TEST_CASE("sub-byte initializers unpack - from raw_data and int32_data - u32 and u64 from uint64_data - export packs") {
  ModelBuilder b(21);
  auto* i4 = b.m.mutable_graph()->add_initializer();
  i4->set_name("i4");
  i4->set_data_type(22);  // INT4: -8, 7, 1 packed two to an int32_data element, the first in the low nibble
  i4->add_dims(3);
  i4->add_int32_data(0x78);
  i4->add_int32_data(0x01);
  auto* u2 = b.m.mutable_graph()->add_initializer();
  u2->set_name("u2");
  u2->set_data_type(25);  // UINT2: 3, 0, 1, 2, 1 packed four to a byte
  u2->add_dims(5);
  u2->set_raw_data(std::string{static_cast<char>(0b10010011), 0b01});
  auto* u64 = b.m.mutable_graph()->add_initializer();
  u64->set_name("u64");
  u64->set_data_type(13);
  u64->add_dims(2);
  u64->add_uint64_data(std::uint64_t{1} << 63);
  u64->add_uint64_data(5);
  auto* f8 = b.m.mutable_graph()->add_initializer();
  f8->set_name("f8");
  f8->set_data_type(17);  // FLOAT8E4M3FN codes in int32_data
  f8->add_dims(2);
  f8->add_int32_data(0x7e);
  f8->add_int32_data(0xb8);
  for (const char* o : {"i4", "u2", "u64", "f8"}) b.output(o);
  auto g = b.import();
  if (!g) FAIL(g.error().to_string());
  auto check = [](const Graph& graph) {
    auto got = runtime::interpret(graph, std::vector<Tensor>{});
    REQUIRE(got);
    CHECK((*got)[0].to_ints() == std::vector<std::int64_t>{-8, 7, 1});
    CHECK((*got)[1].to_ints() == std::vector<std::int64_t>{3, 0, 1, 2, 1});
    CHECK((*got)[2].dtype() == DType::U64);
    CHECK((*got)[2].at(0) == 0x1p63);
    CHECK((*got)[2].at_int(1) == 5);
    CHECK((*got)[3].at(0) == 448);
    CHECK((*got)[3].at(1) == -1);
  };
  check(*g);
  // Exported (packed in raw_data) and imported again: the same values.
  auto bytes = export_onnx_bytes(*g);
  if (!bytes) FAIL(bytes.error().to_string());
  auto again = import_onnx_bytes(*bytes, "again.onnx");
  if (!again) FAIL(again.error().to_string());
  check(*again);
  // A packed tensor with a byte too few is an error naming what it needs.
  i4->clear_int32_data();
  i4->add_int32_data(0x78);
  auto short_data = b.import();
  REQUIRE_FALSE(short_data);
  CHECK(short_data.error().message.find("holds 1 values, its shape needs 2") != std::string::npos);
}

TEST_CASE("a quantization scale that fits neither per tensor nor per axis is an error naming the node") {
  ModelBuilder b(19);
  b.input("x", 2, {"2", "3"});  // UINT8
  auto* s = b.m.mutable_graph()->add_initializer();
  s->set_name("s");
  s->set_data_type(1);
  s->add_dims(4);
  for (int i = 0; i < 4; ++i) s->add_float_data(0.5f);
  attr_int(b.node("DequantizeLinear", {"x", "s"}, {"y"}, "dq"), "axis", 1);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK(g.error().message ==
        "node 'dq' (DequantizeLinear, opset 19): the scale [4] is neither a scalar nor one value per element of axis "
        "1 (3)");

  // A float8 value's zero point must be 0, as ONNX's reference requires.
  ModelBuilder f(19);
  f.input("x", 17, {"2"});  // FLOAT8E4M3FN
  f.init_scalar("s1", 1, 0.5);
  auto* z = f.m.mutable_graph()->add_initializer();
  z->set_name("z");
  z->set_data_type(17);
  z->add_int32_data(0x38);  // 1.0
  f.node("DequantizeLinear", {"x", "s1", "z"}, {"y"}, "dq8");
  f.output("y");
  auto g8 = f.import();
  REQUIRE_FALSE(g8);
  CHECK(g8.error().message == "node 'dq8' (DequantizeLinear, opset 19): the zero point of a f8e4m3fn value must be 0");
}

TEST_CASE("raw initializers become the graph's constants without a copy - their values kept - short ones too") {
  ModelBuilder b(17);
  std::vector<float> w(4096);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f - 7.0f;
  auto* big = b.m.mutable_graph()->add_initializer();
  big->set_name("w");
  big->set_data_type(1);
  big->add_dims(64);
  big->add_dims(64);
  big->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float)));
  // Four bytes sit in the string object itself (no heap buffer of its own)
  // and move with it: read in place or copied, as their new place is aligned.
  auto* small = b.m.mutable_graph()->add_initializer();
  small->set_name("s");
  small->set_data_type(1);
  small->add_dims(1);
  const float s = 3.25f;
  small->set_raw_data(std::string(reinterpret_cast<const char*>(&s), sizeof s));
  b.output("w");
  b.output("s");
  auto g = b.import();
  if (!g) FAIL(g.error().to_string());
  const Tensor& wt = g->initializers.at("w");
  // Read in place from the parsed file's bytes: a tensor that does not own
  // its storage alone (the copy before took a second 4*N bytes).
  CHECK_FALSE(wt.sole_owner());
  CHECK(reinterpret_cast<std::uintptr_t>(wt.bytes()) % alignof(std::max_align_t) == 0);
  REQUIRE(wt.dims() == std::vector<std::int64_t>{64, 64});
  for (std::size_t i = 0; i < w.size(); i += 97) CHECK(wt.at(i) == w[i]);
  CHECK(g->initializers.at("s").at(0) == 3.25);
  auto got = runtime::interpret(*g, std::vector<Tensor>{});
  REQUIRE(got);
  CHECK((*got)[0].at(4095) == w[4095]);
  // Writing to the constant's tensor copies it first: the bytes it read in
  // place are never changed.
  Tensor copy = wt;
  copy.set(0, 100.0);
  CHECK(copy.at(0) == 100.0);
  CHECK(wt.at(0) == w[0]);
}

TEST_CASE(
    "NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss import as their function bodies - weights - "
    "ignore_index - reductions - errors name the node") {
  // scores [N=2, C=3, d=2], targets [2, 2] with one ignored (-1), weights per class.
  auto scores = [] {
    Tensor x(DType::F32, {2, 3, 2});
    for (std::size_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(static_cast<double>(i) * 0.9) * 2.0);
    return x;
  }();
  const Tensor target = Tensor::of_ints(DType::I64, {2, 2}, {2, -1, 0, 1});
  Tensor weight(DType::F32, {3});
  for (std::size_t c = 0; c < 3; ++c) weight.set(c, 0.5 + static_cast<double>(c));
  auto import_loss = [](const char* op, const char* reduction, bool weighted, bool log_prob) {
    ModelBuilder b(13);
    b.input("x", 1, {"2", "3", "2"});
    b.input("t", 7, {"2", "2"});
    if (weighted) b.input("w", 1, {"3"});
    std::vector<std::string> outs{"loss"};
    if (log_prob) outs.push_back("lp");
    auto* n = b.node(op, {"x", "t", weighted ? "w" : ""}, outs, "loss_node");
    attr_int(n, "ignore_index", -1);
    auto* r = n->add_attribute();
    r->set_name("reduction");
    r->set_type(onnx::AttributeProto::STRING);
    r->set_s(reduction);
    for (const auto& o : outs) b.output(o);
    return b.import();
  };
  // The definitions spelled out: p[n][d] is the input at the target's class
  // (log-softmax over C first for SCE), weighted, 0 where ignored.
  auto expected = [&](bool softmax, bool weighted, const std::string& reduction) {
    std::vector<double> loss;
    double wsum = 0;
    for (std::size_t n = 0; n < 2; ++n)
      for (std::size_t d = 0; d < 2; ++d) {
        const std::int64_t c = target.at_int(n * 2 + d);
        if (c < 0) {
          loss.push_back(0);
          continue;
        }
        double v = scores.at((n * 3 + static_cast<std::size_t>(c)) * 2 + d);
        if (softmax) {
          double z = 0;
          for (std::size_t k = 0; k < 3; ++k) z += std::exp(scores.at((n * 3 + k) * 2 + d));
          v -= std::log(z);
        }
        const double w = weighted ? weight.at(static_cast<std::size_t>(c)) : 1.0;
        loss.push_back(-v * w);
        wsum += w;
      }
    if (reduction == "none") return loss;
    double s = 0;
    for (double v : loss) s += v;
    return std::vector<double>{reduction == "sum" ? s : s / wsum};
  };
  for (const bool sce : {false, true})
    for (const bool weighted : {false, true})
      for (const char* reduction : {"none", "sum", "mean"}) {
        INFO((sce ? "SoftmaxCrossEntropyLoss " : "NegativeLogLikelihoodLoss ")
             << reduction << " weighted " << weighted);
        auto g = import_loss(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", reduction, weighted, sce);
        if (!g) FAIL(g.error().to_string());
        std::vector<Tensor> ins{scores, target};
        if (weighted) ins.push_back(weight);
        auto got = runtime::interpret(*g, ins);
        if (!got) FAIL(got.error().to_string());
        const std::vector<double> want = expected(sce, weighted, reduction);
        REQUIRE((*got)[0].numel() == want.size());
        for (std::size_t k = 0; k < want.size(); ++k) CHECK((*got)[0].at(k) == Approx(want[k]).epsilon(1e-5));
        if (sce) {  // the second result is log_softmax over the classes
          REQUIRE(got->size() == 2);
          for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t d = 0; d < 2; ++d) {
              double z = 0;
              for (std::size_t k = 0; k < 3; ++k) z += std::exp(scores.at((n * 3 + k) * 2 + d));
              for (std::size_t k = 0; k < 3; ++k)
                CHECK((*got)[1].at((n * 3 + k) * 2 + d) ==
                      Approx(scores.at((n * 3 + k) * 2 + d) - std::log(z)).epsilon(1e-5));
            }
        }
      }
  auto bad = import_loss("NegativeLogLikelihoodLoss", "average", false, false);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("node 'loss_node' (NegativeLogLikelihoodLoss, opset 13): reduction "
                                                  "'average' is not none, sum or mean"));
  ModelBuilder b(13);
  b.input("x", 1, {"2", "3"});
  b.input("t", 1, {"2"});
  b.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll");
  b.output("loss");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK_THAT(g.error().message, Catch::Contains("the targets must be int32 or int64, they are f32"));
}

TEST_CASE(
    "ops imported as their definitions - Hardmax - OneHot - EyeLike - ScatterElements - GatherND - "
    "LpNormalization - MeanVarianceNormalization - Swish") {
  auto run = [](ModelBuilder& b, std::vector<Tensor> ins) {
    auto g = b.import();
    if (!g) FAIL(g.error().to_string());
    auto got = runtime::interpret(*g, ins);
    if (!got) FAIL(got.error().to_string());
    return (*got)[0];
  };
  auto floats = [](std::vector<std::int64_t> dims, std::vector<double> v) {
    Tensor t(DType::F32, std::move(dims));
    for (std::size_t i = 0; i < v.size(); ++i) t.set(i, v[i]);
    return t;
  };
  auto values_of = [](const Tensor& t) {
    std::vector<double> v;
    for (std::size_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
    return v;
  };
  SECTION("Hardmax: 1 at the first maximum along the axis") {
    ModelBuilder b(13);
    b.input("x", 1, {"2", "3"});
    attr_int(b.node("Hardmax", {"x"}, {"y"}), "axis", 0);
    b.output("y");
    const Tensor y = run(b, {floats({2, 3}, {1, 5, 2, 3, 5, -1})});
    CHECK(values_of(y) == std::vector<double>{0, 1, 1, 1, 0, 0});
  }
  SECTION("OneHot: negative indices count from depth, out of range is a row of off, axis 0") {
    ModelBuilder b(11);
    b.input("i", 7, {"4"});
    b.init_scalar("depth", 1, 3);
    b.input("v", 1, {"2"});
    attr_int(b.node("OneHot", {"i", "depth", "v"}, {"y"}), "axis", 0);
    b.output("y");
    const Tensor y = run(b, {Tensor::of_ints(DType::I64, {4}, {0, -1, 5, 1}), floats({2}, {-2, 7})});
    CHECK(y.dims() == std::vector<std::int64_t>{3, 4});
    CHECK(values_of(y) == std::vector<double>{7, -2, -2, -2, -2, -2, -2, 7, -2, 7, -2, -2});
  }
  SECTION("EyeLike: ones on diagonal k, in dtype") {
    ModelBuilder b(22);
    b.input("x", 1, {"3", "4"});
    auto* n = b.node("EyeLike", {"x"}, {"y"});
    attr_int(n, "k", -1);
    attr_int(n, "dtype", 6);  // INT32
    b.output("y");
    const Tensor y = run(b, {Tensor(DType::F32, {3, 4})});
    CHECK(y.dtype() == DType::I32);
    CHECK(values_of(y) == std::vector<double>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
  }
  SECTION("ScatterElements: along axis 1, negative indices, duplicates added") {
    ModelBuilder b(18);
    b.input("d", 1, {"2", "3"});
    b.input("i", 7, {"2", "2"});
    b.input("u", 1, {"2", "2"});
    auto* n = b.node("ScatterElements", {"d", "i", "u"}, {"y"});
    attr_int(n, "axis", 1);
    auto* r = n->add_attribute();
    r->set_name("reduction");
    r->set_type(onnx::AttributeProto::STRING);
    r->set_s("add");
    b.output("y");
    const Tensor y = run(b, {floats({2, 3}, {1, 1, 1, 1, 1, 1}), Tensor::of_ints(DType::I64, {2, 2}, {-1, 2, 0, 1}),
                             floats({2, 2}, {10, 20, 30, 40})});
    CHECK(values_of(y) == std::vector<double>{1, 1, 31, 31, 41, 1});
  }
  SECTION("GatherND: batch_dims 1, a negative index; a coordinate out of its own range is an error") {
    ModelBuilder b(13);
    b.input("d", 1, {"2", "3", "2"});
    b.input("i", 7, {"2", "1", "2"});
    attr_int(b.node("GatherND", {"d", "i"}, {"y"}), "batch_dims", 1);
    b.output("y");
    auto g = b.import();
    if (!g) FAIL(g.error().to_string());
    std::vector<double> d;
    for (int k = 0; k < 12; ++k) d.push_back(k);
    const Tensor data = floats({2, 3, 2}, d);
    auto got = runtime::interpret(*g, std::vector<Tensor>{data, Tensor::of_ints(DType::I64, {2, 1, 2}, {2, 1, -3, 0})});
    if (!got) FAIL(got.error().to_string());
    CHECK((*got)[0].dims() == std::vector<std::int64_t>{2, 1});
    CHECK(values_of((*got)[0]) == std::vector<double>{5, 6});  // d[0][2][1], d[1][0][0]
    // [0, 2] of the second row is inside its flattened 3x2 but 2 is past
    // the last axis's 2 elements: refused, not read elsewhere.
    auto bad = runtime::interpret(*g, std::vector<Tensor>{data, Tensor::of_ints(DType::I64, {2, 1, 2}, {0, 0, 0, 2})});
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("out of range"));
  }
  SECTION("LpPool: the p-norm of each window, padding as zeros; ceil_mode is an error") {
    ModelBuilder b(22);
    b.input("x", 1, {"1", "1", "1", "4"});
    auto* n = b.node("LpPool", {"x"}, {"y"}, "lp");
    for (const auto& [name, v] : {std::pair<const char*, std::vector<std::int64_t>>{"kernel_shape", {1, 2}},
                                  {"strides", {1, 2}},
                                  {"pads", {0, 1, 0, 1}}}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      for (auto k : v) a->add_ints(k);
    }
    attr_int(n, "p", 3);
    b.output("y");
    // Padded [0 1 -2 3 4 0], windows of 2 at stride 2: [0 1], [-2 3], [4 0].
    const Tensor y = run(b, {floats({1, 1, 1, 4}, {1, -2, 3, 4})});
    REQUIRE(y.numel() == 3);
    CHECK(y.at(0) == Approx(1.0));
    CHECK(y.at(1) == Approx(std::cbrt(8.0 + 27.0)));
    CHECK(y.at(2) == Approx(4.0));
    attr_int(n, "ceil_mode", 1);
    auto g = b.import();
    REQUIRE_FALSE(g);
    CHECK_THAT(g.error().message, Catch::Contains("node 'lp' (LpPool, opset 22): ceil_mode 1 is not supported"));
  }
  SECTION("LpNormalization: p 1 along the last axis, a row of zeros stays zeros") {
    ModelBuilder b(22);
    b.input("x", 1, {"2", "2"});
    attr_int(b.node("LpNormalization", {"x"}, {"y"}), "p", 1);
    b.output("y");
    const Tensor y = run(b, {floats({2, 2}, {1, -3, 0, 0})});
    CHECK(values_of(y) == std::vector<double>{0.25, -0.75, 0, 0});
  }
  SECTION("MeanVarianceNormalization over axes 0, 2, 3; Swish") {
    ModelBuilder b(13);
    b.input("x", 1, {"2", "1", "1", "2"});
    b.node("MeanVarianceNormalization", {"x"}, {"y"});
    b.output("y");
    const Tensor y = run(b, {floats({2, 1, 1, 2}, {1, 3, 5, 7})});  // mean 4, standard deviation sqrt(5)
    for (std::size_t i = 0; i < 4; ++i) CHECK(y.at(i) == Approx((2.0 * i + 1 - 4) / std::sqrt(5.0)).epsilon(1e-6));
    ModelBuilder s(24);
    s.input("x", 1, {"2"});
    auto* n = s.node("Swish", {"x"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("alpha");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(2.0f);
    s.output("y");
    const Tensor z = run(s, {floats({2}, {1, -0.5})});
    CHECK(z.at(0) == Approx(1 / (1 + std::exp(-2.0))));
    CHECK(z.at(1) == Approx(-0.5 / (1 + std::exp(1.0))));
  }
}

TEST_CASE("GroupNormalization: per channel (opset 21) and per group (opset 18) - half precision in float32 - errors") {
  // x [1 4 1 3] in two groups of two channels; each group normalized over
  // its 6 values, then scaled and shifted.
  const std::vector<double> xv{1, 2, 3, 4, 5, 6, -1, 0, 2, 8, 8, 8};
  auto want = [&](std::size_t i, double scale, double bias) {
    const std::size_t g = i / 6;
    double mean = 0, var = 0;
    for (std::size_t k = 0; k < 6; ++k) mean += xv[g * 6 + k] / 6;
    for (std::size_t k = 0; k < 6; ++k) var += (xv[g * 6 + k] - mean) * (xv[g * 6 + k] - mean) / 6;
    return (xv[i] - mean) / std::sqrt(var + 1e-5) * scale + bias;
  };
  auto build = [&](int opset, int elem, std::vector<std::string> params_dims, std::int64_t groups) {
    ModelBuilder b(opset);
    b.input("x", elem, {"1", "4", "1", "3"});
    b.input("scale", elem, params_dims);
    b.input("bias", elem, params_dims);
    attr_int(b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn"), "num_groups", groups);
    b.output("y");
    return b.import();
  };
  auto run = [](const ir::Graph& g, std::vector<Tensor> ins) {
    auto got = runtime::interpret(g, ins);
    if (!got) FAIL(got.error().to_string());
    return (*got)[0];
  };
  const Tensor x = Tensor::of_doubles(DType::F32, {1, 4, 1, 3}, xv);
  SECTION("per channel") {
    auto g = build(21, 1, {"4"}, 2);
    if (!g) FAIL(g.error().to_string());
    const std::vector<double> sc{1, 2, 0.5, -1}, bi{0, 1, -1, 3};
    const Tensor y = run(*g, {x, Tensor::of_doubles(DType::F32, {4}, sc), Tensor::of_doubles(DType::F32, {4}, bi)});
    for (std::size_t i = 0; i < 12; ++i) CHECK(y.at(i) == Approx(want(i, sc[i / 3], bi[i / 3])).epsilon(1e-5));
  }
  SECTION("per group") {
    auto g = build(18, 1, {"2"}, 2);
    if (!g) FAIL(g.error().to_string());
    const Tensor y =
        run(*g, {x, Tensor::of_doubles(DType::F32, {2}, {2, -1}), Tensor::of_doubles(DType::F32, {2}, {1, 0.5})});
    for (std::size_t i = 0; i < 12; ++i)
      CHECK(y.at(i) == Approx(want(i, i < 6 ? 2 : -1, i < 6 ? 1 : 0.5)).epsilon(1e-5));
  }
  SECTION("float16, normalized in float32") {
    auto g = build(21, 10, {"4"}, 2);
    if (!g) FAIL(g.error().to_string());
    const Tensor y =
        run(*g, {Tensor::of_doubles(DType::F16, {1, 4, 1, 3}, xv), Tensor::of_doubles(DType::F16, {4}, {1, 1, 1, 1}),
                 Tensor::of_doubles(DType::F16, {4}, {0, 0, 0, 0})});
    CHECK(y.dtype() == DType::F16);
    for (std::size_t i = 0; i < 12; ++i) CHECK(y.at(i) == Approx(want(i, 1, 0)).margin(2e-3));
  }
  SECTION("groups that do not divide the channels, parameters of another size") {
    auto three = build(21, 1, {"4"}, 3);
    REQUIRE_FALSE(three);
    CHECK_THAT(
        three.error().message,
        Catch::Contains("node 'gn' (GroupNormalization, opset 21): num_groups 3 does not divide the 4 channels"));
    for (std::vector<std::string> dims : {std::vector<std::string>{"3"}, std::vector<std::string>{}}) {
      auto odd = build(21, 1, dims, 2);  // three values; a scalar
      REQUIRE_FALSE(odd);
      CHECK_THAT(odd.error().message,
                 Catch::Contains("scale and bias must hold one value per channel (4) or per group (2)"));
    }
  }
}

TEST_CASE("TopK: the k largest or smallest along an axis, ties by index, NaN last - exports back - errors") {
  auto build = [](std::int64_t k, std::int64_t axis, std::int64_t largest) {
    ModelBuilder b(11);
    b.input("x", 1, {"2", "4"});
    b.init_ints("K", {k});
    auto* n = b.node("TopK", {"x", "K"}, {"v", "i"}, "top");
    attr_int(n, "axis", axis);
    attr_int(n, "largest", largest);
    b.output("v");
    b.output("i");
    return b.import();
  };
  const Tensor x = Tensor::of_doubles(DType::F32, {2, 4}, {3, NAN, 3, 5, -1, 2, 2, 7});
  auto check = [&](std::int64_t k, std::int64_t axis, std::int64_t largest, std::vector<double> values,
                   std::vector<std::int64_t> indices) {
    INFO("k " << k << " axis " << axis << " largest " << largest);
    auto g = build(k, axis, largest);
    if (!g) FAIL(g.error().to_string());
    for (int round = 0; round < 2; ++round) {  // as imported, then exported and imported back
      auto y = runtime::interpret(*g, std::vector<Tensor>{x});
      if (!y) FAIL(y.error().to_string());
      REQUIRE((*y)[0].numel() == values.size());
      for (std::size_t e = 0; e < values.size(); ++e) {
        if (std::isnan(values[e]))
          CHECK(std::isnan((*y)[0].at(e)));
        else
          CHECK((*y)[0].at(e) == values[e]);
        CHECK((*y)[1].at_int(e) == indices[e]);
      }
      auto bytes = export_onnx_bytes(*g);
      REQUIRE(bytes);
      g = import_onnx_bytes(*bytes, "topk.onnx");
      REQUIRE(g);
    }
  };
  // Rows [3 NaN 3 5] and [-1 2 2 7]: the equal 3s (and 2s) by index, NaN after the numbers.
  check(3, 1, 1, {5, 3, 3, 7, 2, 2}, {3, 0, 2, 3, 1, 2});
  check(4, -1, 0, {3, 3, 5, NAN, -1, 2, 2, 7}, {0, 2, 3, 1, 0, 1, 2, 3});
  check(1, 0, 1, {3, 2, 3, 7}, {0, 1, 0, 1});  // down the columns: [NaN 2] gives 2
  auto g = build(5, 1, 1);
  REQUIRE_FALSE(g);
  CHECK_THAT(g.error().message,
             Catch::Contains("node 'top' (TopK, opset 11): top_k: k 5 is more than the 4 elements along axis 1"));
}

TEST_CASE("RotaryEmbedding imports as its function body - halves and interleaved - partial rotation - errors") {
  // x [batch 1, heads 1, seq 2, head 6], the first 4 features rotated, by
  // the cos/sin rows the position ids pick from a cache of 3 positions.
  for (const bool interleaved : {false, true}) {
    INFO("interleaved " << interleaved);
    ModelBuilder b(23);
    b.input("x", 1, {"1", "1", "2", "6"});
    b.input("cos", 1, {"3", "2"});
    b.input("sin", 1, {"3", "2"});
    b.input("pos", 7, {"1", "2"});
    auto* n = b.node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"}, "rope");
    attr_int(n, "rotary_embedding_dim", 4);
    attr_int(n, "interleaved", interleaved ? 1 : 0);
    b.output("y");
    auto g = b.import();
    if (!g) FAIL(g.error().to_string());
    Tensor x(DType::F32, {1, 1, 2, 6}), cos(DType::F32, {3, 2}), sin(DType::F32, {3, 2});
    for (std::size_t i = 0; i < 12; ++i) x.set(i, static_cast<double>(i) - 5.5);
    for (std::size_t i = 0; i < 6; ++i) {
      cos.set(i, std::cos(0.3 * static_cast<double>(i)));
      sin.set(i, std::sin(0.3 * static_cast<double>(i)));
    }
    const Tensor pos = Tensor::of_ints(DType::I64, {1, 2}, {2, 0});
    auto y = runtime::interpret(*g, std::vector<Tensor>{x, cos, sin, pos});
    if (!y) FAIL(y.error().to_string());
    for (std::size_t s = 0; s < 2; ++s) {
      const auto p = static_cast<std::size_t>(pos.at_int(s));
      for (std::size_t pair = 0; pair < 2; ++pair) {
        // the pair's two features: halves pair and pair + 2, interleaved 2 pair and 2 pair + 1
        const std::size_t a = interleaved ? 2 * pair : pair, c = interleaved ? 2 * pair + 1 : pair + 2;
        const double x1 = x.at(s * 6 + a), x2 = x.at(s * 6 + c), co = cos.at(p * 2 + pair), si = sin.at(p * 2 + pair);
        CHECK((*y)[0].at(s * 6 + a) == Approx(x1 * co - x2 * si));
        CHECK((*y)[0].at(s * 6 + c) == Approx(x1 * si + x2 * co));
      }
      for (std::size_t f = 4; f < 6; ++f) CHECK((*y)[0].at(s * 6 + f) == x.at(s * 6 + f));  // not rotated
    }
  }
  ModelBuilder b(23);
  b.input("x", 1, {"1", "1", "2", "6"});
  b.input("cos", 1, {"3", "2"});
  b.input("sin", 1, {"3", "2"});
  attr_int(b.node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"}, "rope"), "rotary_embedding_dim", 3);
  b.output("y");
  auto g = b.import();
  REQUIRE_FALSE(g);
  CHECK_THAT(g.error().message, Catch::Contains("node 'rope' (RotaryEmbedding, opset 23): rotary_embedding_dim 3 is "
                                                "not even and at most the head size 6"));
}
