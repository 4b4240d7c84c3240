// End to end: `saturn run --target interp` on ONNX test models.
#include <sys/wait.h>
#include <cmath>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "helpers.hpp"
#include "ir/onnx_import.hpp"

namespace fs = std::filesystem;

namespace {

saturn::test::CliResult run_saturn(const std::string& args) { return saturn::test::run_cli(args); }

// The `count` outputs of `saturn run DIR/g.sat --target TARGET` on the
// inputs (paths, each after a space), written into DIR/TARGET.
std::vector<saturn::ir::Tensor> outputs_on(const fs::path& dir, const char* target, const std::string& inputs,
                                           std::size_t count) {
  const fs::path out = dir / target;
  auto r = run_saturn("run " + (dir / "g.sat").string() + " --target " + target + " --no-cache --inputs" + inputs +
                      " -o " + out.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<saturn::ir::Tensor> got;
  for (std::size_t k = 0; k < count; ++k) {
    auto t = saturn::ir::read_tensor_pb((out / ("output_" + std::to_string(k) + ".pb")).string());
    REQUIRE(t);
    got.push_back(std::move(*t));
  }
  return got;
}

fs::path case_dir(const std::string& name) {
  return fs::path(saturn::test::source_dir()) / ".." / "shared" / "onnx-tests" / "node" / name;
}

// A .npy file written by hand (format 1.0).
}  // namespace

TEST_CASE("run writes outputs and checks them against expected ones") {
  fs::path c = case_dir("test_conv_with_strides_padding");
  if (!fs::exists(c)) {
    WARN("ONNX test data not found: skipped");
    return;
  }
  std::string model = (c / "model.onnx").string(), ds = (c / "test_data_set_0").string();
  std::string ins = " --inputs " + ds + "/input_0.pb " + ds + "/input_1.pb";
  auto dir = saturn::test::scratch_dir() / "run-out";
  auto ok = run_saturn("run " + model + ins + " --check " + ds + "/output_0.pb -o " + dir.string());
  INFO(ok.err);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("output 0 'y': f32[1 1 4 3]") != std::string::npos);
  CHECK(ok.out.find("check: all 1 outputs match") != std::string::npos);
  // What was written is what was checked.
  auto written = saturn::ir::read_tensor_pb((dir / "output_0.pb").string());
  auto expected = saturn::ir::read_tensor_pb(ds + "/output_0.pb");
  REQUIRE(written);
  REQUIRE(expected);
  for (std::size_t i = 0; i < written->numel(); ++i) CHECK(written->at(i) == Approx(expected->at(i)));

  // A mismatch exits 1 and names the worst element.
  auto other = saturn::test::scratch_file("run-wrong.pb");
  saturn::ir::Tensor wrong = *expected;
  wrong.set(5, wrong.at(5) + 1);
  REQUIRE(saturn::ir::write_tensor_pb(wrong, other.string()));
  auto bad = run_saturn("run " + model + ins + " --check " + other.string());
  CHECK(bad.status == 1);
  CHECK(bad.err.find("worst element 5") != std::string::npos);
  // Loosening the tolerance accepts it.
  CHECK(run_saturn("run " + model + ins + " --check " + other.string() + " --atol 2").status == 0);
}

TEST_CASE("run reads .npy inputs") {
  fs::path c = case_dir("test_relu");
  if (!fs::exists(c)) {
    WARN("ONNX test data not found: skipped");
    return;
  }
  auto x = saturn::ir::read_tensor_pb((c / "test_data_set_0" / "input_0.pb").string());
  REQUIRE(x);
  auto npy = saturn::test::scratch_file("relu.npy");
  std::string shape = "(";
  for (auto d : x->dims()) shape += std::to_string(d) + ", ";
  shape += ")";
  saturn::test::write_npy(npy, "<f4", shape, std::string(reinterpret_cast<const char*>(x->bytes()), x->nbytes()));
  auto r = run_saturn("run " + (c / "model.onnx").string() + " --inputs " + npy.string() + " --check " +
                      (c / "test_data_set_0" / "output_0.pb").string());
  INFO(r.err);
  CHECK(r.status == 0);
}

TEST_CASE("bad input to run exits 2 with the place named") {
  fs::path c = case_dir("test_relu");
  if (!fs::exists(c)) {
    WARN("ONNX test data not found: skipped");
    return;
  }
  std::string model = (c / "model.onnx").string();
  auto few = run_saturn("run " + model);
  CHECK(few.status == 2);
  CHECK(few.err.find("the model takes 1 inputs, given 0") != std::string::npos);
  // An extra input is refused on every target (the CPU target ignored it).
  const std::string x = (c / "test_data_set_0" / "input_0.pb").string();
  for (const char* target : {"interp", "cpu"}) {
    INFO(target);
    auto extra = run_saturn(std::string("run --target ") + target + " " + model + " --inputs " + x + " " + x);
    CHECK(extra.status == 2);
    CHECK(extra.err.find("the model takes 1 inputs, given 2") != std::string::npos);
  }
  auto junk = saturn::test::scratch_file("junk.onnx");
  std::ofstream(junk) << "garbage";
  auto j = run_saturn("run " + junk.string());
  CHECK(j.status == 2);
  CHECK(j.err.find(junk.string() + ": error: not a valid ONNX model") != std::string::npos);
  // No driver, no device, no toolkit, or no executor yet: each reason names
  // the target and the ones that run.
  auto cuda = run_saturn("run " + model + " --target cuda");
  CHECK(cuda.status == 2);
  CHECK(cuda.err.find("error: ") != std::string::npos);
  CHECK(cuda.err.find("cuda target") != std::string::npos);
  CHECK(cuda.err.find("(use --target cpu or interp)") != std::string::npos);
  CHECK(run_saturn("run /no/such/model.onnx").status == 2);
}

TEST_CASE("an .npy shape too large for int64 is bad input - not an internal error") {
  auto dir = saturn::test::scratch_dir() / "npy-huge";
  fs::create_directories(dir);
  saturn::test::write_npy(dir / "huge.npy", "<f4", "(99999999999999999999999,)", std::string(8, '\0'));
  const std::string model = saturn::test::source_dir() + "/docs/examples/models/mlp.onnx";
  auto r = run_saturn("run " + model + " --inputs " + (dir / "huge.npy").string());
  CHECK(r.status == 2);
  CHECK(r.err.find("huge.npy: error: array too large") != std::string::npos);
  CHECK(r.err.find("internal") == std::string::npos);
}

TEST_CASE("a result larger than the memory of the machine is refused before lowering - not after building tables") {
  // (The CPU target checks before it allocates anything for the value, so
  // this also holds under AddressSanitizer, whose allocator aborts.)
  auto dir = saturn::test::scratch_dir() / "resize-huge";
  fs::create_directories(dir);
  std::ofstream(dir / "r.sat") << "(graph g (input x f32 [1 1 4 4])\n"
                                  "  (node r resize (y) (x) :sizes [1 1 8388608 16777216])\n  (output y))\n";
  saturn::test::write_npy(dir / "x.npy", "<f4", "(1, 1, 4, 4)", std::string(64, '\0'));
  auto r = run_saturn("run --target cpu " + (dir / "r.sat").string() + " --inputs " + (dir / "x.npy").string());
  CHECK(r.status == 2);
  CHECK(r.err.find("error: out of memory: 'y' (f32[1 1 8388608 16777216]) needs 524288 GiB") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("bytes a terminal would not show are escaped in an error - valid UTF-8 is kept") {
  // (A damaged file's names may hold any bytes: seen with tools/mutate_models.py.)
  auto dir = saturn::test::scratch_dir() / "unprintable";
  fs::create_directories(dir);
  std::ofstream(dir / "b.sat") << "(graph g (input x f32 [4]) (node r fr\xff" << '\x01'
                               << "ob\xc3\xa9 (y) (x)) (output y))\n";
  auto r = run_saturn("run --target interp " + (dir / "b.sat").string());
  CHECK(r.status == 2);
  CHECK(r.err.find(":1:36: error: unknown op 'fr\\xff\\x01ob\xc3\xa9'") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a device as a model or an input is bad input - not an endless read") {
  const std::string model = saturn::test::source_dir() + "/docs/examples/models/mlp.onnx";
  for (const std::string& args : {std::string("run /dev/zero"), "run " + model + " --inputs /dev/zero"}) {
    INFO(args);
    auto r = run_saturn(args);
    CHECK(r.status == 2);
    CHECK(r.err.find("/dev/zero: error: is not a regular file") != std::string::npos);
  }
}

TEST_CASE("run takes .sat models - and a wrong count of expected outputs is bad input") {
  auto dir = saturn::test::scratch_dir() / "sat";
  fs::create_directories(dir);
  std::ofstream(dir / "m.sat") << "(graph m\n  (input x f32 [2])\n  (init k f32 [2] [1.5 -2.0])\n"
                                  "  (node n mul (y) (x k))\n  (output y))\n";
  REQUIRE(saturn::ir::write_tensor_pb(saturn::ir::Tensor::of_doubles(saturn::ir::DType::F32, {2}, {2, 3}),
                                      (dir / "x.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(saturn::ir::Tensor::of_doubles(saturn::ir::DType::F32, {2}, {3, -6}),
                                      (dir / "want.pb").string()));
  std::string base = "run " + (dir / "m.sat").string() + " --inputs " + (dir / "x.pb").string();
  auto ok = run_saturn(base + " --check " + (dir / "want.pb").string() + " -o " + (dir / "out").string());
  INFO(ok.err);
  CHECK(ok.status == 0);
  auto got = saturn::ir::read_tensor_pb((dir / "out" / "output_0.pb").string());
  REQUIRE(got);
  CHECK(got->at(0) == 3.0);
  CHECK(got->at(1) == -6.0);
  auto two = run_saturn(base + " --check " + (dir / "want.pb").string() + " " + (dir / "want.pb").string());
  CHECK(two.status == 2);
  CHECK(two.err.find("2 expected outputs given, the model has 1") != std::string::npos);
  std::ofstream(dir / "bad.sat") << "(graph m (input x f32 [2]) (node n nope (y) (x)) (output y))";
  auto bad = run_saturn("run " + (dir / "bad.sat").string() + " --inputs " + (dir / "x.pb").string());
  CHECK(bad.status == 2);
  CHECK(bad.err.find("bad.sat:1:36: error: unknown op 'nope'") != std::string::npos);
}

TEST_CASE("a gather index out of range fails the run with exit 2 naming the node - cpu and interp") {
  auto dir = saturn::test::scratch_dir() / "gather";
  fs::create_directories(dir);
  std::ofstream(dir / "g.sat") << "(graph g\n  (input ids i64 [3])\n  (init t f32 [4 2] [1 2 3 4 5 6 7 8])\n"
                                  "  (node lookup gather (y) (t ids))\n  (output y))\n";
  REQUIRE(saturn::ir::write_tensor_pb(saturn::ir::Tensor::of_doubles(saturn::ir::DType::I64, {3}, {0, 4, -1}),
                                      (dir / "ids.pb").string()));
  for (const char* target : {"cpu", "interp"}) {
    INFO(target);
    auto r = run_saturn("run " + (dir / "g.sat").string() + " --target " + target + " --inputs " +
                        (dir / "ids.pb").string());
    CHECK(r.status == 2);
    CHECK(r.err.find("lookup") != std::string::npos);
    CHECK(r.err.find("index 4 out of range for axis of size 4") != std::string::npos);
  }
}

TEST_CASE("an integer division by zero fails the run naming the node - unless nothing reads it - cpu and interp") {
  auto dir = saturn::test::scratch_dir() / "int-div";
  fs::create_directories(dir);
  // q is an output; r is dead (nothing reads it): its zero divisor is no error.
  std::ofstream(dir / "g.sat") << "(graph g\n  (input a i32 [3])\n  (input b i32 [3])\n"
                                  "  (node quotient div (q) (a b))\n  (node dead mod (r) (b a))\n  (output q))\n";
  auto ints = [](std::vector<std::int64_t> v) { return saturn::ir::Tensor::of_ints(saturn::ir::DType::I32, {3}, v); };
  REQUIRE(saturn::ir::write_tensor_pb(ints({7, -7, 9}), (dir / "a.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(ints({2, 2, 0}), (dir / "zero.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(ints({0, 2, 4}), (dir / "dead_zero.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(ints({0, 0, 0}), (dir / "want.pb").string()));
  for (const char* target : {"cpu", "interp"}) {
    INFO(target);
    const std::string run = "run " + (dir / "g.sat").string() + " --target " + target + " --inputs ";
    auto zero = run_saturn(run + (dir / "a.pb").string() + " " + (dir / "zero.pb").string());
    CHECK(zero.status == 2);
    CHECK(zero.err.find("node 'quotient' (div): integer division by zero") != std::string::npos);
    // a = {0, 2, 4}, b = {7, -7, 9}: q = a / b = {0, 0, 0}; the dead b mod a divides by 0.
    auto dead = run_saturn(run + (dir / "dead_zero.pb").string() + " " + (dir / "a.pb").string() + " --check " +
                           (dir / "want.pb").string());
    INFO(dead.err);
    CHECK(dead.status == 0);
  }
}

TEST_CASE("run --target cpu never runs more threads than the CPUs it may use, and says how many") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  auto r = run_saturn("run " + dir + "mlp.onnx --target cpu --inputs " + dir + "mlp.input.pb --threads 4096 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const int usable = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(j.at("threads").get<int>() >= 1);
  CHECK(j.at("threads").get<int>() <= usable);
  CHECK(j.at("threads_reason").get<std::string>().find("asked for 4096, capped") != std::string::npos);
  // The default: the free CPUs, named as such.
  auto d = run_saturn("run " + dir + "mlp.onnx --target cpu --inputs " + dir + "mlp.input.pb --json");
  REQUIRE(d.status == 0);
  const auto k = nlohmann::json::parse(d.out.substr(d.out.find('{')));
  CHECK(k.at("threads_reason").get<std::string>().find("free CPU") != std::string::npos);
  // Two threads at most adapt to the load; --fixed-threads holds them.
  if (usable >= 2) {
    const std::string two = "run " + dir + "mlp.onnx --target cpu --inputs " + dir + "mlp.input.pb --threads 2 --json";
    for (const bool fixed : {false, true}) {
      auto f = run_saturn(two + (fixed ? " --fixed-threads" : ""));
      REQUIRE(f.status == 0);
      const auto reason = nlohmann::json::parse(f.out.substr(f.out.find('{'))).at("threads_reason").get<std::string>();
      INFO(reason);
      CHECK((reason.find("each run takes as many of 2 as other processes leave free") != std::string::npos) == !fixed);
    }
  }
}

TEST_CASE("run on a compiled target runs the optimized program - --no-opt the graph as written - same outputs") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  const std::string model = dir + "resnet_small.onnx --target cpu --inputs " + dir + "resnet_small.input.pb";
  const std::string out = (saturn::test::scratch_dir() / "run-opt").string();
  auto opt = run_saturn("run " + model + " --json -o " + out + "/opt");
  INFO(opt.err);
  REQUIRE(opt.status == 0);
  const auto o = nlohmann::json::parse(opt.out.substr(opt.out.find('{')));
  CHECK(o.at("optimized").get<bool>());
  CHECK(o.at("nodes_after").get<int>() < o.at("nodes_before").get<int>());  // batch norms folded, epilogues fused
  CHECK(o.at("library_calls").get<int>() > 0);                              // the extractor chose oneDNN's convolutions
  auto plain = run_saturn("run " + model + " --no-opt --json --check " + out + "/opt/output_0.pb");
  INFO(plain.err);
  REQUIRE(plain.status == 0);  // the same outputs, within --check's tolerance
  const auto p = nlohmann::json::parse(plain.out.substr(plain.out.find('{')));
  CHECK_FALSE(p.at("optimized").get<bool>());
  CHECK(p.at("library_calls").get<int>() == 0);  // as written: Saturn's own loops
  CHECK(p.at("reference_ops").size() == 0);
  // The interpreter runs the graph as written: there is nothing to optimize for.
  auto interp = run_saturn("run " + dir + "resnet_small.onnx --inputs " + dir + "resnet_small.input.pb --json");
  REQUIRE(interp.status == 0);
  CHECK_FALSE(nlohmann::json::parse(interp.out.substr(interp.out.find('{'))).at("optimized").get<bool>());
  fs::remove_all(out);
}

TEST_CASE("a second run of the same model reads the optimized graph and kernels from the cache - --no-cache does not") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  const std::string model = dir + "resnet_small.onnx --target cpu --json --inputs " + dir + "resnet_small.input.pb";
  const fs::path cache = saturn::test::temp_path("saturn-run-cache", "cache");
  fs::remove_all(cache);
  const char* before = std::getenv("SATURN_CACHE_DIR");
  const std::string kept = before ? before : "";
  setenv("SATURN_CACHE_DIR", cache.c_str(), 1);  // the child processes' cache folder
  auto summary = [&](const std::string& extra) {
    auto r = run_saturn("run " + model + extra);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out.substr(r.out.find('{')));
  };
  const auto first = summary(" -o " + (cache / "first").string());
  const auto second = summary(" --check " + (cache / "first" / "output_0.pb").string() + " --rtol 0 --atol 0");
  const auto off = summary(" --no-cache");
  if (before)
    setenv("SATURN_CACHE_DIR", kept.c_str(), 1);
  else
    unsetenv("SATURN_CACHE_DIR");
  CHECK(first.at("opt_cache") == "miss");
  CHECK(first.at("kernel_modules_cached") == 0);
  CHECK(second.at("opt_cache") == "hit");  // and its outputs are bit for bit the first run's (--check above)
  CHECK(second.at("kernel_modules_cached").get<int>() > 0);
  CHECK(second.at("nodes_after") == first.at("nodes_after"));
  CHECK(second.at("library_calls") == first.at("library_calls"));
  CHECK(second.at("kernels") == first.at("kernels"));
  CHECK(off.at("opt_cache") == "off");
  CHECK(off.at("kernel_modules_cached") == 0);
  fs::remove_all(cache.parent_path());
}

TEST_CASE("on a terminal run shows the compile's progress - elsewhere nothing") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  const std::string args =
      "run " + dir + "swin_tiny.onnx --target cpu --no-cache --inputs " + dir + "swin_tiny.input.pb";
  auto plain = run_saturn(args);
  REQUIRE(plain.status == 0);
  CHECK(plain.err.find("[compile]") == std::string::npos);
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("no `script` here: the terminal's progress line is not checked");
    return;
  }
  const fs::path out = saturn::test::temp_path("saturn-run-tty", "tty.txt");
  const std::string cmd =
      "script -qec '" + saturn::test::saturn_bin() + " " + args + "' /dev/null >" + out.string() + " 2>&1 </dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  INFO(text);
  CHECK(text.find("[compile] ") != std::string::npos);
  CHECK(text.find(" kernels: 0 of ") != std::string::npos);
  CHECK(text.find("\r\033[K", text.rfind("[compile]")) != std::string::npos);  // cleared before what follows
  fs::remove_all(out.parent_path());
}

TEST_CASE("run on a compiled target with rules that do not load or no rules at all exits 2 naming the place") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  const fs::path rules = saturn::test::scratch_dir() / "run-rules";
  fs::create_directories(rules);
  const std::string model = "run " + dir + "mlp.onnx --target cpu --inputs " + dir + "mlp.input.pb";
  ::setenv("SATURN_RULESETS", rules.string().c_str(), 1);
  auto none = run_saturn(model);
  CHECK(none.status == 2);
  CHECK(none.err.find("no shipped rules in '" + rules.string() + "'") != std::string::npos);
  std::ofstream(rules / "bad.rules")
      << "(defoptimizer bad \"doc\"\n  (rule r (add ?a ?b) => (add ?b ?a) :if (frob ?a)))\n";
  auto bad = run_saturn(model);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("bad.rules:2:") != std::string::npos);  // file:line:col of the unknown guard
  CHECK(bad.err.find("--no-opt") != std::string::npos);
  auto plain = run_saturn(model + " --no-opt");  // the graph as written needs no rules
  CHECK(plain.status == 0);
  ::unsetenv("SATURN_RULESETS");
  fs::remove_all(rules);
}

TEST_CASE(
    "pixel shuffles and ONNX's other activations run optimized on cpu - no reference kernel - the interpreter's "
    "values") {
  auto dir = saturn::test::scratch_dir() / "shuffles";
  fs::create_directories(dir);
  std::ofstream(dir / "g.sat")
      << "(graph g\n  (input x f32 [1 8 16 24])\n"
         "  (node up depth_to_space (u) (x) :blocksize 2)\n"
         "  (node upc depth_to_space (uc) (x) :blocksize 2 :mode \"CRD\")\n"
         "  (node down space_to_depth (d) (u) :blocksize 2)\n"
         "  (node a celu (a) (uc) :alpha 0.7)\n  (node b softsign (b) (a))\n"
         "  (node c shrink (c) (b) :bias 0.1 :lambd 0.2)\n  (node t thresholded_relu (t) (c) :alpha 0.05)\n"
         "  (node m mish (m) (t))\n  (node n tan (n) (m))\n  (output d n))\n";
  std::vector<double> x(8 * 16 * 24);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i)) * 2;
  REQUIRE(saturn::ir::write_tensor_pb(saturn::ir::Tensor::of_doubles(saturn::ir::DType::F32, {1, 8, 16, 24}, x),
                                      (dir / "x.pb").string()));
  const std::string base = "run " + (dir / "g.sat").string() + " --inputs " + (dir / "x.pb").string();
  auto interp = run_saturn(base + " -o " + (dir / "want").string());
  INFO(interp.err);
  REQUIRE(interp.status == 0);
  auto d = saturn::ir::read_tensor_pb((dir / "want" / "output_0.pb").string());
  REQUIRE(d);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(d->at(i) == static_cast<float>(x[i]));  // the inverse
  auto cpu = run_saturn(base + " --target cpu --no-cache --json --rtol 1e-5 --atol 1e-6 --check " +
                        (dir / "want" / "output_0.pb").string() + " " + (dir / "want" / "output_1.pb").string());
  INFO(cpu.err);
  REQUIRE(cpu.status == 0);
  const auto j = nlohmann::json::parse(cpu.out.substr(cpu.out.find('{')));
  // The shuffles as transposes between views, the rest as kernels. (On a
  // few elements the reference kernel is priced cheaper: 48 floats.)
  CHECK(j.at("reference_ops").size() == 0);
  fs::remove_all(dir);
}

TEST_CASE("is_nan and is_inf find NaN and the infinities on cpu as on interp") {
  auto dir = saturn::test::scratch_dir() / "nan";
  fs::create_directories(dir);
  std::ofstream(dir / "g.sat") << "(graph g\n  (input x f32 [6])\n  (node a is_nan (a) (x))\n"
                                  "  (node b is_inf (b) (x))\n  (node c is_inf (c) (x) :detect_negative 0)\n"
                                  "  (output a b c))\n";
  const double inf = std::numeric_limits<double>::infinity();
  REQUIRE(saturn::ir::write_tensor_pb(
      saturn::ir::Tensor::of_doubles(saturn::ir::DType::F32, {6}, {1.5, std::nan(""), inf, -inf, 0, -2}),
      (dir / "x.pb").string()));
  const std::vector<std::vector<int>> want = {{0, 1, 0, 0, 0, 0}, {0, 0, 1, 1, 0, 0}, {0, 0, 1, 0, 0, 0}};
  for (const char* target : {"interp", "cpu"}) {
    INFO(target);
    const auto got = outputs_on(dir, target, " " + (dir / "x.pb").string(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k)
      for (std::size_t i = 0; i < want[k].size(); ++i) CHECK(got[k].at(i) == want[k][i]);
  }
  fs::remove_all(dir);
}

TEST_CASE("hyperbolic functions and their inverses keep float32's precision - near 0, near 1 and past 2^26") {
  // Each output against std:: in double, rounded to float32: the
  // textbook forms lose it (sinh(1e-6) as a difference of exponentials is
  // 1.3% off in float32, asinh(1e-4) as log(1.0001) 1e-4, asinh(1e20)
  // overflows x^2), on the interpreter and in cpu's kernels alike.
  auto dir = saturn::test::scratch_dir() / "hyperbolic";
  fs::create_directories(dir);
  std::ofstream(dir / "g.sat") << "(graph g\n  (input x f32 [12])\n  (input y f32 [6])\n  (input z f32 [6])\n"
                                  "  (node a sinh (a) (x))\n  (node b cosh (b) (x))\n  (node c asinh (c) (x))\n"
                                  "  (node d acosh (d) (y))\n  (node e atanh (e) (z))\n  (output a b c d e))\n";
  const std::vector<double> x{1e-6, -3e-5, 1e-4, 0.1, -0.124, 0.126, -0.5, 3, -7, 20, 1e20, -3e30};
  const std::vector<double> y{1, 1 + 1e-6, 1.01, 2, 1e5, 1e30};
  const std::vector<double> z{1e-6, -1e-4, 0.1, -0.5, 0.9, 0.999};
  auto write = [&](const char* name, const std::vector<double>& v) {
    const auto path = (dir / name).string();
    REQUIRE(saturn::ir::write_tensor_pb(
        saturn::ir::Tensor::of_doubles(saturn::ir::DType::F32, {static_cast<std::int64_t>(v.size())}, v), path));
    return " " + path;
  };
  const std::string inputs = write("x.pb", x) + write("y.pb", y) + write("z.pb", z);
  auto as_f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  const std::vector<std::pair<const std::vector<double>*, double (*)(double)>> want{
      {&x, [](double v) { return std::sinh(v); }},
      {&x, [](double v) { return std::cosh(v); }},
      {&x, [](double v) { return std::asinh(v); }},
      {&y, [](double v) { return std::acosh(v); }},
      {&z, [](double v) { return std::atanh(v); }}};
  for (const char* target : {"interp", "cpu"}) {
    INFO(target);
    const auto got = outputs_on(dir, target, inputs, want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      const auto& in = *want[k].first;
      for (std::size_t i = 0; i < in.size(); ++i) {
        const double w = want[k].second(as_f32(in[i]));
        INFO("output " << k << " at " << in[i] << ": want " << w << ", got " << got[k].at(i));
        if (std::isinf(w) || std::abs(w) > 3.4e38)
          CHECK(std::isinf(got[k].at(i)));
        else
          CHECK(std::abs(got[k].at(i) - w) <= 4e-7 * std::abs(w) + 1e-30);
      }
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("products with an empty dimension run optimized on cpu as on interp - K = 0 gives zeros") {
  auto dir = saturn::test::scratch_dir() / "empty-matmul";
  fs::create_directories(dir);
  // y = a b with a [2 0], b [0 3]: an empty sum, zeros; z = c d with d [4 0]: empty.
  std::ofstream(dir / "g.sat") << "(graph g\n  (input a f32 [2 0])\n  (input b f32 [0 3])\n"
                                  "  (input c f32 [2 4])\n  (input d f32 [4 0])\n"
                                  "  (node inner matmul (y) (a b))\n  (node outer matmul (z) (c d))\n  (output y z))\n";
  using saturn::ir::DType;
  using saturn::ir::Tensor;
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {2, 0}, {}), (dir / "a.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {0, 3}, {}), (dir / "b.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                      (dir / "c.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {4, 0}, {}), (dir / "d.pb").string()));
  REQUIRE(
      saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0}), (dir / "y.pb").string()));
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {2, 0}, {}), (dir / "z.pb").string()));
  for (const char* target : {"cpu", "interp"}) {
    INFO(target);
    auto r =
        run_saturn("run " + (dir / "g.sat").string() + " --target " + target + " --inputs " + (dir / "a.pb").string() +
                   " " + (dir / "b.pb").string() + " " + (dir / "c.pb").string() + " " + (dir / "d.pb").string() +
                   " --check " + (dir / "y.pb").string() + " " + (dir / "z.pb").string());
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.find("refused") == std::string::npos);
  }
}

TEST_CASE("a 20000-op elementwise chain compiles on cpu in kernels of 256 ops - without exhausting the stack") {
  auto dir = saturn::test::scratch_dir() / "long-chain";
  fs::create_directories(dir);
  {
    std::ofstream sat(dir / "chain.sat");
    sat << "(graph chain\n  (input x f32 [4])\n";
    std::string prev = "x";
    for (int i = 0; i < 20000; ++i) {
      const std::string v = saturn::test::numbered("v", i);
      sat << "  (node n" << i << " sin (" << v << ") (" << prev << "))\n";
      prev = v;
    }
    sat << "  (output " << prev << "))\n";
  }
  using saturn::ir::DType;
  using saturn::ir::Tensor;
  REQUIRE(saturn::ir::write_tensor_pb(Tensor::of_doubles(DType::F32, {4}, {1, -0.5, 2, 0}), (dir / "x.pb").string()));
  const std::string model = (dir / "chain.sat").string() + " --inputs " + (dir / "x.pb").string();
  auto reference = run_saturn("run " + model + " --target interp --out " + (dir / "want").string());
  REQUIRE(reference.status == 0);
  auto cpu = run_saturn("run " + model + " --target cpu --no-opt --check " + (dir / "want" / "output_0.pb").string());
  INFO(cpu.err);
  CHECK(cpu.status == 0);
  // (LLVM's instruction selection is superlinear in a kernel's size; the
  // 79 kernels are one function, compiled once.)
  CHECK(cpu.err.find("79 generated kernels for 20000 ops") != std::string::npos);
}

TEST_CASE("run --bench without --inputs times seeded inputs of the declared types - a symbolic shape says why not") {
  const std::string dir = saturn::test::source_dir() + "/docs/examples/models/";
  auto first = run_saturn("run " + dir + "mlp.onnx --target cpu --bench 2 --json");
  INFO(first.err);
  REQUIRE(first.status == 0);
  const auto a = nlohmann::json::parse(first.out);
  CHECK(a.at("inputs") == "seeded random");
  CHECK(a.at("ms").size() == 2);
  // Seeded: the same values, so the same outputs, run after run.
  const std::string out = (saturn::test::scratch_dir() / "seeded").string();
  REQUIRE(run_saturn("run " + dir + "mlp.onnx --target interp --bench 1 -o " + out + "/a").status == 0);
  auto again = run_saturn("run " + dir + "mlp.onnx --target cpu --bench 1 --check " + out + "/a/output_0.pb");
  INFO(again.err);
  CHECK(again.status == 0);
  CHECK_THAT(again.err, Catch::Contains("inputs: seeded random values"));
  // Without --bench (or --profile) the inputs are still the user's to give.
  auto none = run_saturn("run " + dir + "mlp.onnx --target cpu");
  CHECK(none.status == 2);
  CHECK_THAT(none.err, Catch::Contains("takes 1 inputs, given 0"));
  auto sat = saturn::test::scratch_file("sym.sat");
  std::ofstream(sat) << "(graph g\n  (input x f32 [N 3])\n  (node n relu (y) (x))\n  (output y))\n";
  auto sym = run_saturn("run " + sat.string() + " --target cpu --bench 2");
  CHECK(sym.status == 2);
  CHECK_THAT(sym.err, Catch::Contains("--bench: input 'x' has shape [N 3]; give --inputs"));
  fs::remove(sat);
  fs::remove_all(out);
}
