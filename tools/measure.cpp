#include "tools/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "ir/npy.hpp"
#include "ir/onnx_import.hpp"
#include "runtime/cpu_executor.hpp"
#include "tools/cli_common.hpp"
#ifdef SATURN_HAVE_CUDA
#include "runtime/cuda_executor.hpp"
#endif

namespace saturn::cli {

namespace {

Expected<double> timed(const TimedRun& run) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run();
  if (!r) return r.error();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Where the optimized outputs differ from the written model's: empty when
// every output is within 1e-3 of its largest magnitude (compare_tensors).
std::string first_mismatch(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    double scale = 1;
    for (std::size_t i = 0; i < want[k].numel(); ++i)
      if (std::isfinite(want[k].at(i))) scale = std::max(scale, std::abs(want[k].at(i)));
    if (Mismatch m = compare_tensors(got[k], want[k], 1e-3, 1e-3 * scale); !m.ok)
      return "output " + std::to_string(k) + ": " + m.what;
  }
  return "";
}

}  // namespace

ir::Tensor random_tensor(const ir::ValueType& type, std::uint32_t seed) {
  ir::Tensor t(type.dtype, ir::static_dims(type.shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (std::size_t i = 0; i < t.numel(); ++i) {
    if (ir::is_float(t.dtype()))
      t.set(i, real(rng));
    else if (t.dtype() == ir::DType::Bool)
      t.set(i, small(rng) & 1);
    else
      t.set(i, small(rng));
  }
  return t;
}

double Latency::median_ms() const { return ms.empty() ? 0 : sorted(ms)[ms.size() / 2]; }
double Latency::min_ms() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }

Expected<std::vector<ir::Tensor>> seeded_inputs(const ir::Graph& g, const std::string& flag) {
  std::vector<ir::Tensor> inputs;
  std::uint32_t seed = 1;
  for (const ir::GraphValue& in : g.inputs) {
    if (!ir::is_static(in.type.shape)) {
      Diagnostic d;
      d.loc.file = g.source;
      d.message =
          flag + ": input '" + in.name + "' has shape " + ir::to_string(in.type.shape) + "; give --inputs to run it";
      return d;
    }
    inputs.push_back(random_tensor(in.type, seed++));
  }
  return inputs;
}

Expected<Latency> time_runs(const TimedRun& run, int runs) {
  Latency l;
  if (auto w = run(); !w) return w.error();
  for (int i = 0; i < runs; ++i) {
    auto t = timed(run);
    if (!t) return t.error();
    l.ms.push_back(*t);
  }
  return l;
}

Expected<std::pair<Latency, Latency>> time_interleaved(const TimedRun& a, const TimedRun& b, int runs) {
  std::pair<Latency, Latency> l;
  if (auto w = a(); !w) return w.error();
  if (auto w = b(); !w) return w.error();
  for (int i = 0; i < runs; ++i) {
    const bool a_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_a = (k == 0) == a_first;
      auto t = timed(is_a ? a : b);
      if (!t) return t.error();
      (is_a ? l.first : l.second).ms.push_back(*t);
    }
  }
  return l;
}

namespace {

// The device time of the last run, where the executor has one (cuda).
template <class Executor>
std::optional<double> last_device_ms(const Executor& e) {
  if constexpr (requires { e.device_ms(); })
    return e.device_ms();
  else
    return std::nullopt;
}

// Runs both programs once (checked to agree), then times them interleaved:
// fills `m` and returns whether the optimized one is kept.
template <class Executor>
Expected<bool> compare_programs(Executor& as_written, Executor& opt, const std::vector<ir::Tensor>& inputs, int runs,
                                nlohmann::json& m) {
  auto want = as_written.run(inputs);
  if (!want) return want.error();
  auto got = opt.run(inputs);
  if (!got) return got.error();
  const std::string mismatch = first_mismatch(*got, *want);
  const bool agree = mismatch.empty();
  std::vector<ir::Tensor> out_a, out_b;  // timed runs write here (no allocation per run)
  Latency device_a, device_b;            // cuda: the steps on the device, without the border copies
  const auto timed_run = [&](Executor& e, std::vector<ir::Tensor>& out, Latency& device) {
    return [&e, &out, &device, &inputs]() -> Expected<bool> {
      auto r = e.run_into(inputs, out);
      if (auto d = last_device_ms(e)) device.ms.push_back(*d);
      return r;
    };
  };
  auto times = time_interleaved(timed_run(as_written, out_a, device_a), timed_run(opt, out_b, device_b), runs);
  if (!times) return times.error();
  const Latency& a = times->first;
  const Latency& b = times->second;
  const bool keep = agree && b.median_ms() <= a.median_ms();
  m.update({{"runs", runs},
            {"written_ms", a.median_ms()},
            {"written_min_ms", a.min_ms()},
            {"optimized_ms", b.median_ms()},
            {"optimized_min_ms", b.min_ms()},
            {"speedup", a.median_ms() / std::max(b.median_ms(), 1e-9)},
            {"outputs_agree", agree},
            {"outputs_mismatch", mismatch},
            {"kept", keep ? "optimized" : "written"}});
  if (!device_a.ms.empty()) {
    device_a.ms.erase(device_a.ms.begin());  // the warm-ups (time_interleaved runs each once first)
    device_b.ms.erase(device_b.ms.begin());
    m["written_device_ms"] = device_a.median_ms();
    m["optimized_device_ms"] = device_b.median_ms();
  }
  return keep;
}

}  // namespace

Expected<bool> measure_against_written(const ir::Graph& written, const ir::Graph& optimized, const MeasureOptions& o,
                                       nlohmann::json& report) {
  std::vector<ir::Tensor> inputs;
  for (const std::string& p : o.inputs) {
    auto t = ir::read_tensor_file(p);
    if (!t) return t.error();
    inputs.push_back(std::move(*t));
  }
  if (inputs.empty()) {
    auto seeded = seeded_inputs(written, "--measure");
    if (!seeded) return seeded.error();
    inputs = std::move(*seeded);
  }
  inputs = ir::runtime_inputs(written, inputs);
  if (o.target == "cuda") {
#ifdef SATURN_HAVE_CUDA
    runtime::CudaExecutorOptions co;
    co.lowering = lowering_options();
    auto as_written = runtime::CudaExecutor::create(written, co);
    if (!as_written) return as_written.error();
    auto opt = runtime::CudaExecutor::create(optimized, co);
    if (!opt) return opt.error();
    report["measured"] = {{"target", "cuda"}, {"device", (*opt)->device().name}};
    return compare_programs(**as_written, **opt, inputs, o.runs, report["measured"]);
#else
    return Diagnostic{SourceLoc{}, "--measure: this build has no cuda target"};
#endif
  }
  runtime::CpuExecutorOptions co;
  co.threads = o.threads;
  auto as_written = runtime::CpuExecutor::create(written, co);
  if (!as_written) return as_written.error();
  auto opt = runtime::CpuExecutor::create(optimized, co);
  if (!opt) return opt.error();
  report["measured"] = {{"target", "cpu"}, {"threads", (*opt)->threads()}};
  return compare_programs(**as_written, **opt, inputs, o.runs, report["measured"]);
}

}  // namespace saturn::cli
