// The .sat text format: reading, writing, exact round trips, errors.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "ir/sat_format.hpp"
#include "ir/sexpr.hpp"
#include "runtime/interp.hpp"
#include "scratch.hpp"

using namespace saturn;
using namespace saturn::ir;

namespace {
const char* kModel = R"((graph mlp
  (input x f32 [N 3])
  (init w f32 [3 2] [0.5 -1.0 2.0 0.25 1e-07 3.4028235e+38])
  (init b f32 [2] [0.1 nan])
  (node mm matmul (h) (x w))
  (node "add bias" add (y) (h b))
  (node "" relu (z) (y))
  (output z))
)";
}

TEST_CASE("a .sat graph reads - checks and runs") {
  auto g = read_sat(kModel, "mlp.sat");
  INFO((g ? "" : g.error().to_string()));
  REQUIRE(g);
  CHECK(g->nodes.size() == 3);
  CHECK(g->nodes[1].name == "add bias");
  CHECK(to_string(g->inputs[0].type.shape) == "[N 3]");
  auto out = runtime::interpret(*g, std::vector<Tensor>{Tensor::of_doubles(DType::F32, {1, 3}, {1, 1, 1})});
  REQUIRE(out);
  CHECK((*out)[0].at(0) == Approx(0.5 + 2.0 + 1e-07 + 0.1));
}

TEST_CASE("write then read is exact - values included") {
  auto g = read_sat(kModel, "mlp.sat");
  REQUIRE(g);
  std::string text = write_sat(*g);
  auto again = read_sat(text, "again.sat");
  REQUIRE(again);
  CHECK(write_sat(*again) == text);
  const Tensor& w = again->initializers.at("w");
  CHECK(w.at(4) == static_cast<double>(1e-07f));  // the float, not a decimal approximation
  CHECK(w.at(5) == static_cast<double>(3.4028235e+38f));
  CHECK(std::isnan(again->initializers.at("b").at(1)));
  // Attributes keep their kinds: integer, real, string, lists, tensors.
  Graph a;
  a.name = "attrs";
  a.inputs.push_back(GraphValue{"x", ValueType{DType::F32, shape_of({1, 1, 4, 4})}});
  Node n{"p", "max_pool", {"x"}, {"y"}, {}, ""};
  n.attrs.set("kernel_shape", std::vector<std::int64_t>{2, 2});
  n.attrs.set("auto_pad", std::string("SAME_UPPER"));
  n.attrs.set("ceil_mode", std::int64_t{0});
  a.nodes.push_back(n);
  a.outputs.push_back("y");
  std::string t = write_sat(a);
  CHECK(t.find(":kernel_shape [2 2]") != std::string::npos);
  CHECK(t.find(":auto_pad \"SAME_UPPER\"") != std::string::npos);
  auto ra = read_sat(t, "a.sat");
  REQUIRE(ra);
  CHECK(write_sat(*ra) == t);
}

TEST_CASE(".sat errors name file:line:col or the node") {
  auto unknown = read_sat("(graph g\n  (input x f32 [2])\n  (node n frob (y) (x))\n  (output y))", "e.sat");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().to_string() == "e.sat:3:11: error: unknown op 'frob'");
  auto count = read_sat("(graph g (init w f32 [2] [1.0]) (output w))", "c.sat");
  REQUIRE_FALSE(count);
  CHECK(count.error().to_string() == "c.sat:1:26: error: expected 2 values for shape [2], found 1");
  auto shape = read_sat("(graph g (input a f32 [2]) (input b f32 [3]) (node n add (y) (a b)) (output y))", "s.sat");
  REQUIRE_FALSE(shape);
  CHECK(shape.error().to_string() == "s.sat: error: node 'n' (add): add: shapes [2] and [3] do not broadcast");
  auto type = read_sat("(graph g (input x f128 [2]) (output x))", "t.sat");
  REQUIRE_FALSE(type);
  CHECK(type.error().loc.col == 19);
  CHECK_FALSE(read_sat("(graph g (input x f32 [2])", "u.sat"));
}

TEST_CASE("element counts past 2^48 are errors - never a wrapped count") {
  // 2^62 * 4 wraps to 0 in 64 bits: the empty value list must not fit it.
  auto init = read_sat("(graph g (init w f32 [4611686018427387904 4] []) (output w))", "i.sat");
  REQUIRE_FALSE(init);
  CHECK(init.error().to_string() == "i.sat:1:22: error: shape [4611686018427387904 4] has more than 2^48 elements");
  auto input = read_sat("(graph g (input x f32 [4294967296 4294967296]) (node n relu (y) (x)) (output y))", "x.sat");
  REQUIRE_FALSE(input);
  CHECK(input.error().message.find("input 'x' has shape [4294967296 4294967296]: more than 2^48 elements") !=
        std::string::npos);
  // A result that would overflow: per axis, and in the product.
  auto axis = read_sat(
      "(graph g (input x f32 [2 2]) (node t tile (y) (x) :repeats [4611686018427387904 1]) (output y))", "a.sat");
  REQUIRE_FALSE(axis);
  CHECK(axis.error().message.find("node 't' (tile): tile: axis 0 would have more than 2^48 elements") !=
        std::string::npos);
  auto product = read_sat(
      "(graph g (input x f32 [2 2]) (node t tile (y) (x) :repeats [4294967296 4294967296]) (output y))", "p.sat");
  REQUIRE_FALSE(product);
  CHECK(product.error().message.find("would have more than 2^48 elements") != std::string::npos);
  CHECK(saturn::ir::checked_numel({1 << 24, 1 << 24}) == std::int64_t{1} << 48);
  CHECK_FALSE(saturn::ir::checked_numel({(1 << 24) + 1, 1 << 24}));
  CHECK(saturn::ir::checked_numel({0, std::int64_t{1} << 62, 4}) == 0);
}

TEST_CASE("integer initializers out of their type's range are errors - never wrapped") {
  auto i8 = read_sat("(graph g (init w i8 [2] [1 300]) (output w))", "w.sat");
  REQUIRE_FALSE(i8);
  CHECK(i8.error().to_string() == "w.sat:1:28: error: 300 is out of range for i8 [-128, 127]");
  auto u8 = read_sat("(graph g (init w u8 [1] [-1]) (output w))", "u.sat");
  REQUIRE_FALSE(u8);
  CHECK(u8.error().message == "-1 is out of range for u8 [0, 255]");
  CHECK_FALSE(read_sat("(graph g (init w i32 [1] [2147483648]) (output w))", "i.sat"));
  auto i4 = read_sat("(graph g (init w i4 [1] [8]) (output w))", "n.sat");
  REQUIRE_FALSE(i4);
  CHECK(i4.error().message == "8 is out of range for i4 [-8, 7]");
  auto u16 = read_sat("(graph g (init w u16 [1] [65536]) (output w))", "n.sat");
  REQUIRE_FALSE(u16);
  CHECK(u16.error().message == "65536 is out of range for u16 [0, 65535]");
  auto narrow = read_sat("(graph g (init w u2 [2] [0 3]) (init v i16 [1] [-32768]) (output w v))", "n.sat");
  if (!narrow) FAIL(narrow.error().to_string());
  auto edges = read_sat("(graph g (init w i8 [2] [-128 127]) (init v i32 [1] [-2147483648]) (output w v))", "e.sat");
  REQUIRE(edges);
  CHECK(edges->initializers.at("w").at_int(0) == -128);
  CHECK(edges->initializers.at("v").at_int(0) == -2147483648LL);
}

TEST_CASE("single assignment - a name defined twice is an error - never last writer wins") {
  auto twice = read_sat("(graph g (input x f32 [2]) (node a relu (y) (x)) (node b neg (y) (x)) (output y))", "t.sat");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message ==
        "node 'b' (neg): value 'y' is already defined (by a graph input, an initializer or another node)");
  auto shadow = read_sat("(graph g (input x f32 [2]) (node a relu (x) (x)) (output x))", "s.sat");
  REQUIRE_FALSE(shadow);
  CHECK(shadow.error().message.find("value 'x' is already defined") != std::string::npos);
  auto init = read_sat("(graph g (init w f32 [1] [1]) (init w f32 [1] [2]) (output w))", "i.sat");
  REQUIRE_FALSE(init);
  CHECK(init.error().to_string() == "i.sat:1:37: error: 'w' is declared twice (as an input or initializer)");
  auto input = read_sat("(graph g (input x f32 [1]) (init x f32 [1] [2]) (output x))", "x.sat");
  REQUIRE_FALSE(input);
  CHECK(input.error().message == "'x' is declared twice (as an input or initializer)");
}

TEST_CASE("dimensions spelled wrong are errors at their place - never an internal error") {
  for (const char* dim : {"N*2", "2*N+99999999999999999999", "x*N", "2*N+k", "2*N-"}) {
    INFO(dim);
    auto g = read_sat(std::string("(graph g (input x f32 [") + dim + "]) (output x))", "d.sat");
    REQUIRE_FALSE(g);
    CHECK(g.error().to_string() ==
          std::string("d.sat:1:24: error: expected a dimension (a number, or c*SYMBOL+k), found '") + dim + "'");
  }
  auto ok = read_sat("(graph g (input x f32 [2*N-1 M+2 -K]) (output x))", "d.sat");
  REQUIRE(ok);
  CHECK(to_string(ok->inputs[0].type.shape) == "[2*N-1 M+2 -K]");
}

TEST_CASE("an attribute the op does not declare is an error naming it - a misspelling never leaves the default") {
  auto typo = read_sat("(graph g (input x f32 [4]) (node r leaky_relu (y) (x) :alpah 0.5) (output y))", "a.sat");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().to_string() == "a.sat:1:55: error: op 'leaky_relu' has no attribute 'alpah' (it takes alpha)");
  auto none = read_sat("(graph g (input x f32 [4]) (node r relu (y) (x) :alpha 0.5) (output y))", "b.sat");
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "op 'relu' has no attribute 'alpha' (it takes none)");
  CHECK(read_sat("(graph g (input x f32 [4]) (node r leaky_relu (y) (x) :alpha 0.5) (output y))", "c.sat"));
}

TEST_CASE("an exception a reader's checks let through names the file - memory as such - the rest as Saturn's bug") {
  using saturn::SourceLoc;
  const auto oom = saturn::stray_exception(SourceLoc{"m.sat", 0, 0}, std::bad_alloc(), "the graph");
  CHECK(oom.to_string() == "m.sat: error: the graph does not fit in memory");
  const auto bug =
      saturn::stray_exception(SourceLoc{"m.onnx", 0, 0}, std::out_of_range("vector::_M_range_check"), "the model");
  CHECK(bug.to_string().rfind("m.onnx: error: internal error reading the model (vector::_M_range_check)", 0) == 0);
  CHECK(bug.message.find("please report it") != std::string::npos);
}

TEST_CASE("large weights go to a data file beside the .sat - and read back bit for bit") {
  namespace fs = std::filesystem;
  const fs::path dir = saturn::test::scratch_dir() / "sat-data";
  fs::create_directories(dir);
  Graph g;
  g.name = "data";
  g.inputs.push_back(GraphValue{"x", ValueType{DType::F32, shape_of({2, 3})}});
  Tensor big(DType::F32, {3, 40}), odd(DType::I64, {7}), small(DType::F32, {2});
  for (std::size_t i = 0; i < big.numel(); ++i) big.set(i, 0.1 * static_cast<double>(i) - 3);
  big.set(5, NAN);
  for (std::size_t i = 0; i < odd.numel(); ++i) odd.set_int(i, -static_cast<std::int64_t>(i) * 1000003);
  small.set(0, 1.5);
  g.initializers = {{"big", big}, {"odd", odd}, {"small", small}};
  g.nodes.push_back(Node{"mm", "matmul", {"x", "big"}, {"y"}, {}, ""});
  g.outputs = {"y", "odd", "small"};
  const std::string path = (dir / "m.sat").string();
  SatFileOptions o;
  o.external_above = 16;  // bytes: big and odd go out, small stays in the text
  REQUIRE(write_sat_file(g, path, o));
  const std::string text = *read_file(path);
  CHECK(text.find("(init big f32 [3 40] (data m.sat.data 0))") != std::string::npos);
  CHECK(text.find("(init odd i64 [7] (data m.sat.data 512))") != std::string::npos);  // aligned to 64
  CHECK(text.find("(init small f32 [2] [1.5 0.0])") != std::string::npos);
  CHECK(fs::file_size(dir / "m.sat.data") == 512 + 64);
  auto back = read_sat_file(path);
  if (!back) FAIL(back.error().to_string());
  for (const char* name : {"big", "odd", "small"}) {
    const Tensor &a = g.initializers.at(name), &b = back->initializers.at(name);
    CHECK(a.dims() == b.dims());
    CHECK(a.dtype() == b.dtype());
    CHECK(std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);
  }
  // Every value in the text when asked (the same text as write_sat).
  o.external_above = SIZE_MAX;
  REQUIRE(write_sat_file(g, (dir / "inline.sat").string(), o));
  CHECK(*read_file((dir / "inline.sat").string()) == write_sat(g));
  CHECK_FALSE(fs::exists(dir / "inline.sat.data"));
  // Written again without a data file, a .sat leaves none of its earlier write behind.
  REQUIRE(write_sat_file(g, (dir / "again.sat").string(), SatFileOptions{16}));
  REQUIRE(fs::exists(dir / "again.sat.data"));
  REQUIRE(write_sat_file(g, (dir / "again.sat").string(), o));
  CHECK_FALSE(fs::exists(dir / "again.sat.data"));

  SECTION("a data file that is missing or too short is an error at its place") {
    fs::resize_file(dir / "m.sat.data", 100);
    auto short_file = read_sat_file(path);
    REQUIRE_FALSE(short_file);
    CHECK(short_file.error().to_string().find("m.sat.data' holds 100 bytes; the tensor needs 480 from offset 0") !=
          std::string::npos);
    CHECK(short_file.error().loc.line == 3);
    fs::remove(dir / "m.sat.data");
    auto missing = read_sat_file(path);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().to_string().find("cannot open the data file") != std::string::npos);
    auto negative = read_sat("(graph g (init w f32 [2] (data w.bin -8)) (output w))", (dir / "n.sat").string());
    REQUIRE_FALSE(negative);
    CHECK(negative.error().to_string().find("n.sat:1:38: error: negative offset") != std::string::npos);
    auto malformed = read_sat("(graph g (init w f32 [2] (data w.bin)) (output w))", (dir / "n.sat").string());
    REQUIRE_FALSE(malformed);
    CHECK(malformed.error().to_string().find("expected (data FILE OFFSET)") != std::string::npos);
  }
  fs::remove_all(dir);
}
