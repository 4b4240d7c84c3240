// The CUDA target on a device: generated kernels (fused elementwise chains,
// float4 rows with broadcasts, reductions, softmax) run through the driver
// layer and give the interpreter's results. Needs a CUDA driver and device:
// without them the program prints why and exits 77, which ctest reports as
// skipped (never as passed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <iostream>
#include <random>

#include "bench/models.hpp"
#include "lower/cpu_lowering.hpp"
#include "lower/cuda_codegen.hpp"
#include "runtime/cuda_compiler.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/interp.hpp"

using namespace saturn;
namespace cuda = runtime::cuda;

namespace {

// Runs a program whose steps are all loop kernels on the device: one device
// buffer per program buffer, inputs and weights copied in, outputs back.
std::vector<ir::Tensor> run_on_device(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  auto p = lower::compile_cpu(g);
  if (!p) FAIL(p.error().to_string());
  const lower::Program& prog = **p;
  cuda::Context ctx(0);
  cuda::Stream stream;
  static runtime::CudaCompiler compiler;
  std::vector<cuda::DeviceBuffer> mem;
  for (const lower::Buffer& b : prog.buffers) {
    mem.emplace_back(b.bytes);
    if (b.kind == lower::BufferKind::Weight) mem.back().copy_from_host(b.weight->bytes(), b.bytes);
    if (b.kind == lower::BufferKind::Input)
      mem.back().copy_from_host(inputs.at(static_cast<std::size_t>(b.input_index)).bytes(), b.bytes);
  }
  std::size_t next = 0;
  std::vector<std::unique_ptr<cuda::Module>> modules;
  for (const lower::Step& s : prog.steps) {
    REQUIRE(s.kind == lower::StepKind::Kernel);
    const lower::LoopKernel& k = prog.kernels->at(next);
    auto src = lower::cuda_kernel_source(k, static_cast<int>(next++));
    auto ptx = compiler.ptx(src.source, src.name, ctx.device().arch());
    if (!ptx) FAIL(ptx.error().to_string());
    modules.push_back(std::make_unique<cuda::Module>(*ptx));
    std::vector<std::uint64_t> args;
    for (const lower::Leaf& l : k.leaves) args.push_back(mem[static_cast<std::size_t>(l.buffer)].address());
    args.push_back(mem[static_cast<std::size_t>(k.out)].address());
    modules.back()->function(src.name).launch(src.grid, src.block, args, stream);
  }
  stream.synchronize();
  std::vector<ir::Tensor> out;
  for (std::size_t i = 0; i < prog.outputs.size(); ++i) {
    ir::Tensor t(ir::DType::F32, prog.output_dims[i]);
    mem[static_cast<std::size_t>(prog.outputs[i])].copy_to_host(t.bytes(), t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

void check_against_interpreter(const ir::Graph& g) {
  std::vector<ir::Tensor> inputs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  for (const ir::GraphValue& in : g.inputs) {
    ir::Tensor t(ir::DType::F32, ir::static_dims(in.type.shape));
    for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
    inputs.push_back(std::move(t));
  }
  auto want = runtime::interpret(g, inputs);
  REQUIRE(want);
  auto got = run_on_device(g, inputs);
  REQUIRE(got.size() == want->size());
  for (std::size_t k = 0; k < got.size(); ++k)
    for (std::size_t i = 0; i < got[k].numel(); ++i) {
      INFO("output " << k << " element " << i);
      CHECK(got[k].at(i) == Approx((*want)[k].at(i)).epsilon(1e-5).margin(1e-5));
    }
}

}  // namespace

TEST_CASE("Fused elementwise chains run on the device - scalar and float4") {
  {
    models::GraphBuilder b("chain");
    std::string x = b.input("x", {1031});
    check_against_interpreter(b.finish({b.op("gelu", {b.op("add", {b.op("mul", {x, x}), x})})}));
  }
  {
    models::GraphBuilder b("rows");
    std::string x = b.input("x", {64, 256});
    std::string row = b.input("row", {256});
    check_against_interpreter(b.finish({b.op("sigmoid", {b.op("add", {x, row})})}));
  }
  {
    models::GraphBuilder b("transposed");
    std::string x = b.input("x", {6, 12});
    std::string y = b.input("y", {12, 6});
    check_against_interpreter(b.finish({b.op("max", {b.op("transpose", {x}, models::ints_attr("perm", {1, 0})), y})}));
  }
}

TEST_CASE("Reductions and softmax run on the device") {
  models::GraphBuilder b("red");
  std::string x = b.input("x", {7, 333});
  check_against_interpreter(b.finish({b.op("reduce_sum", {x}, models::ints_attr("axes", {1})),
                                      b.op("reduce_max", {x}, models::ints_attr("axes", {0})), b.op("softmax", {x})}));
}

int main(int argc, char** argv) {
  auto driver = cuda::CudaDriver::get();
  if (!driver) {
    std::cout << "SKIPPED: the CUDA device tests need a GPU: " << driver.error().message << "\n";
    return 77;
  }
  const cuda::DeviceInfo& d = (*driver)->device(0);
  std::cout << "CUDA device 0: " << d.name << " (sm_" << d.sm_major << d.sm_minor << ", " << d.memory_bytes / (1 << 20)
            << " MiB), driver " << (*driver)->version() << "\n";
  return Catch::Session().run(argc, argv);
}
