// Compiled kernels kept on disk for the next run (ir::DiskCache): PTX on
// cuda (device/cuda_compiler), object files on cpu (lower/llvm_jit). A
// second compile of the same kernels reads them; a damaged or foreign file
// is a miss, never a wrong program.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>

#include "ir/cache_dir.hpp"
#include "ir/sat_format.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/interp.hpp"
#include "scratch.hpp"
#include "tests/random_graphs.hpp"

using namespace saturn;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  auto d = saturn::test::scratch_dir() / "kernel-cache" / name;
  fs::remove_all(d);
  return d;
}

std::vector<fs::path> files_in(const fs::path& d) {
  std::vector<fs::path> out;
  if (fs::exists(d))
    for (const auto& e : fs::directory_iterator(d)) out.push_back(e.path());
  return out;
}

// Flips one byte near the end of a file (inside its value).
void damage(const fs::path& f) {
  std::fstream s(f, std::ios::in | std::ios::out | std::ios::binary);
  s.seekg(-3, std::ios::end);
  char c = 0;
  s.get(c);
  s.seekp(-3, std::ios::end);
  s.put(static_cast<char>(c ^ 0x5a));
}

}  // namespace

TEST_CASE("a disk cache entry is found by its whole key - a damaged one is a miss") {
  const fs::path dir = fresh_dir("entries");
  const ir::DiskCache cache(dir, "t-", ".bin");
  CHECK_FALSE(cache.get("key one"));
  cache.put("key one", std::string("value\0one", 9));
  auto one = cache.get("key one");
  REQUIRE(one);
  CHECK(*one == std::string("value\0one", 9));
  CHECK_FALSE(cache.get("key two"));
  CHECK_FALSE(cache.get("key on"));
  const auto files = files_in(dir);
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("t-", 0) == 0);
  damage(files[0]);
  CHECK_FALSE(cache.get("key one"));
  // No folder: nothing kept.
  const ir::DiskCache none("", "t-", ".bin");
  CHECK_FALSE(none.enabled());
  none.put("k", "v");
  CHECK_FALSE(none.get("k"));
  fs::remove_all(dir.parent_path());
}

TEST_CASE("cpu kernels compiled once are read from the cache - the same results - a damaged object is compiled again") {
  // Enough distinct kernels for several modules (one per compiling thread).
  auto g = ir::read_sat(
      "(graph g (input x f32 [64 33]) (input y f32 [33])"
      " (node a add (a) (x y)) (node b relu (b) (a)) (node c exp (c) (b)) (node d reduce_sum (d) (c) :axes [1])"
      " (node e mul (e) (x x)) (node f reduce_max (f) (e) :axes [0]) (node h tanh (h) (f)) (output d) (output h))",
      "g.sat");
  REQUIRE(g);
  std::vector<ir::Tensor> inputs{test::random_tensor({64, 33}, 1, -2, 2, ir::DType::F32),
                                 test::random_tensor({33}, 2, -2, 2, ir::DType::F32)};
  auto want = runtime::interpret(*g, inputs);
  REQUIRE(want);
  const fs::path dir = fresh_dir("objects");
  auto compile_and_run = [&](int expect_cached) {
    runtime::CpuExecutorOptions o;
    o.threads = 1;
    o.lowering.kernel_cache_dir = dir.string();
    std::vector<std::array<std::size_t, 3>> told;  // the progress the compile reports
    o.lowering.progress = [&](std::size_t done, std::size_t modules, std::size_t kernels) {
      told.push_back({done, modules, kernels});
    };
    auto exec = runtime::CpuExecutor::create(*g, o);
    REQUIRE(exec);
    REQUIRE(told.size() >= 2);
    CHECK(told.front()[0] == 0);
    CHECK(told.back()[0] == told.back()[1]);  // every module done
    CHECK(told.size() == told.back()[1] + 1);
    CHECK(told.back()[2] > 0);
    CHECK((*exec)->program().kernel_modules_cached == expect_cached);
    auto got = (*exec)->run(inputs);
    REQUIRE(got);
    REQUIRE(got->size() == want->size());
    for (std::size_t k = 0; k < got->size(); ++k)
      for (std::size_t i = 0; i < (*got)[k].numel(); ++i) CHECK((*got)[k].at(i) == Approx((*want)[k].at(i)));
  };
  compile_and_run(0);
  const auto objects = files_in(dir);
  REQUIRE_FALSE(objects.empty());
  for (const fs::path& f : objects) CHECK(f.extension() == ".o");
  const int modules = static_cast<int>(objects.size());
  compile_and_run(modules);
  for (const fs::path& f : objects) damage(f);
  compile_and_run(0);        // every object compiled again (and written back whole)
  compile_and_run(modules);  // ... and read again
  fs::remove_all(dir.parent_path());
}
