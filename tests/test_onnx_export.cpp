// ONNX export (ir/onnx_export.cpp, ir/onnx_write.cpp): every library call
// is written as the ONNX ops it stands for, and the file is protobuf's own
// serialization of the model although the initializers' bytes are streamed
// from the graph's tensors.
#include <onnx/onnx_pb.h>

#include <unistd.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ir/onnx_import.hpp"
#include "ir/op.hpp"
#include "random_graphs.hpp"
#include "runtime/interp.hpp"
#include "scratch.hpp"

using namespace saturn;
using saturn::test::random_tensor;

TEST_CASE("every convolution call exports as the Conv (and Add, Relu, Clip) it stands for - values kept") {
  int calls = 0;
  for (const ir::OpDef* def : ir::OpRegistry::get().all()) {
    if (def->kind != ir::OpKind::Library || def->semantics() != "conv") continue;
    INFO(def->name);
    ++calls;
    // A 3x3 stride-1 convolution: within every call's limits (Winograd's too).
    models::GraphBuilder b("calls");
    std::vector<std::string> operands{b.input("x", {1, 4, 6, 6}), b.weight({4, 4, 3, 3}, 0.5), b.weight({4}, 0.5)};
    if (def->sum_epilogue) operands.push_back(b.input("skip", {1, 4, 6, 6}));
    ir::Attrs a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    if (def->activation == ir::Activation::Clip) {
      a.set("min", 0.0);
      a.set("max", 0.5);
    }
    const ir::Graph g = b.finish({b.op(def->name, operands, a)});
    auto bytes = ir::export_onnx_bytes(g);
    if (!bytes) FAIL(bytes.error().to_string());
    auto back = ir::import_onnx_bytes(*bytes, "calls.onnx");
    if (!back) FAIL(back.error().to_string());
    for (const ir::Node& n : back->nodes) CHECK(n.op.find('.') == std::string::npos);
    std::vector<ir::Tensor> inputs;
    for (std::size_t k = 0; k < g.inputs.size(); ++k) inputs.push_back(random_tensor({1, 4, 6, 6}, 7 + k));
    CHECK_FALSE(test::check_same_as_interpreter(runtime::interpret(*back, inputs), runtime::interpret(g, inputs)));
  }
  CHECK(calls >= 20);  // dnnl's direct, Winograd and channels-last calls, cuDNN's
}

TEST_CASE("the written model is protobuf's own serialization - the initializers in order - the file the same bytes") {
  ir::Graph g;
  g.name = "streamed";
  g.inputs.push_back({"x", {ir::DType::F32, ir::shape_of({2, 3})}});
  g.declared_inputs.push_back("x");
  // Sizes whose length prefixes take one, two and three bytes, an empty
  // tensor, a scalar, and a packed sub-byte type.
  g.initializers["big"] = random_tensor({100, 200}, 1);
  g.initializers["mid"] = random_tensor({2, 3}, 2);
  g.initializers["empty"] = ir::Tensor(ir::DType::F32, {0});
  g.initializers["one"] = ir::Tensor::scalar(ir::DType::U8, 200);
  g.initializers["i4"] = ir::Tensor::of_ints(ir::DType::I4, {3}, {-8, 7, 1});
  g.initializers["row"] = random_tensor({40}, 3);
  // The reshape's shape becomes an initializer the exporter adds after the graph's.
  ir::Attrs shape;
  shape.set("shape", std::vector<std::int64_t>{3, 2});
  g.nodes.push_back(ir::Node{"sum", "add", {"x", "mid"}, {"s"}, {}, ""});
  g.nodes.push_back(ir::Node{"flip", "reshape", {"s"}, {"y"}, shape, ""});
  g.outputs = {"y", "big", "empty", "one", "i4", "row"};

  auto bytes = ir::export_onnx_bytes(g);
  if (!bytes) FAIL(bytes.error().to_string());
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(*bytes));
  // Serialized again by protobuf: the same bytes, so the fields are in
  // protobuf's order and every length prefix is right.
  CHECK(m.SerializeAsString() == *bytes);
  REQUIRE(m.graph().initializer_size() == 7);
  std::vector<std::string> names;
  for (const auto& t : m.graph().initializer()) names.push_back(t.name());
  CHECK(names == std::vector<std::string>{"big", "empty", "i4", "mid", "one", "row", "y__c0"});
  const auto& big = m.graph().initializer(0);
  REQUIRE(big.raw_data().size() == g.initializers["big"].nbytes());
  CHECK(std::memcmp(big.raw_data().data(), g.initializers["big"].bytes(), big.raw_data().size()) == 0);
  CHECK(m.graph().initializer(1).has_raw_data());  // written, empty
  CHECK(m.graph().initializer(2).raw_data() == std::string{static_cast<char>(0x78), 0x01});
  CHECK(m.graph().node_size() == 2);
  CHECK(m.graph().output_size() == 6);
  CHECK(m.opset_import_size() == 1);

  auto path = saturn::test::scratch_file("export.onnx");
  REQUIRE(ir::export_onnx_file(g, path.string()));
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove(path);
  CHECK(file == *bytes);

  auto back = ir::import_onnx_bytes(*bytes, "streamed.onnx");
  if (!back) FAIL(back.error().to_string());
  const std::vector<ir::Tensor> x{random_tensor({2, 3}, 4)};
  CHECK_FALSE(test::check_same_as_interpreter(runtime::interpret(*back, x), runtime::interpret(g, x)));
}
