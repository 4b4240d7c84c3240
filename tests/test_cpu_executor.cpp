// runtime::CpuExecutor's in-place updates: an output written over an input's
// memory only where no later step reads that input, with the same values as
// a run into separate outputs.
#include <catch2/catch.hpp>

#include "ir/sat_format.hpp"
#include "runtime/cpu_executor.hpp"

using namespace saturn;

namespace {

std::unique_ptr<runtime::CpuExecutor> compile(const std::string& text) {
  auto g = ir::read_sat(text, "t.sat");
  if (!g) FAIL(g.error().to_string());
  runtime::CpuExecutorOptions o;
  o.threads = 1;
  auto e = runtime::CpuExecutor::create(*g, o);
  if (!e) FAIL(e.error().to_string());
  return std::move(*e);
}

}  // namespace

TEST_CASE("An update step writes its next weights over the weights it read") {
  // w' = w - 0.5 g, the way an optimizer's update reads each element once.
  auto e = compile(R"((graph sgd (input w f32 [1000]) (input g f32 [1000]) (input lr f32 [])
    (node s mul (step) (g lr)) (node u sub (next) (w step)) (output next)))");
  REQUIRE(e->can_update_in_place(0, 0));
  CHECK_FALSE(e->can_update_in_place(0, 2));  // another size
  CHECK_FALSE(e->can_update_in_place(1, 0));  // no such output
  std::vector<double> w(1000), gv(1000);
  for (int i = 0; i < 1000; ++i) w[i] = i, gv[i] = 2 * i;
  std::vector<ir::Tensor> in = {ir::Tensor::of_doubles(ir::DType::F32, {1000}, w),
                                ir::Tensor::of_doubles(ir::DType::F32, {1000}, gv),
                                ir::Tensor::scalar(ir::DType::F32, 0.5)};
  ir::Tensor original = in[0];  // shares the storage until one is written
  auto separate = e->run(in);
  REQUIRE(separate);
  std::vector<ir::Tensor> outs;
  const std::pair<std::size_t, std::size_t> pairs[] = {{0, 0}};
  for (int step = 1; step <= 3; ++step) {
    REQUIRE(e->run_in_place(in, outs, pairs));
    CHECK(in[0].at(10) == Approx(10 - step * 10.0));
    CHECK(in[0].at(999) == Approx(999 - step * 999.0));
  }
  CHECK(static_cast<const ir::Tensor&>(outs[0]).bytes() == nullptr);  // no memory for the output written elsewhere
  // The copy the caller kept still holds the old values (copy on write).
  CHECK(original.at(10) == 10);
  CHECK((*separate)[0].at(10) == Approx(0));
}

TEST_CASE("An input read after the output is written is not updated in place") {
  // next = w + 1 is written first; y = next * w reads w afterwards.
  auto e = compile(R"((graph late (input w f32 [64]) (init one f32 [] [1.0])
    (node a add (next) (w one)) (node m mul (y) (next w)) (output next y)))");
  CHECK_FALSE(e->can_update_in_place(0, 0));
  std::vector<ir::Tensor> in = {ir::Tensor::of_doubles(ir::DType::F32, {64}, std::vector<double>(64, 3.0))}, outs;
  const std::pair<std::size_t, std::size_t> pairs[] = {{0, 0}};
  auto r = e->run_in_place(in, outs, pairs);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("cannot be written into input 0"));
}
