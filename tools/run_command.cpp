#include "tools/run_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ir/npy.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"
#include "runtime/cpu_executor.hpp"
#ifdef SATURN_HAVE_CUDA
#include "device/cuda_driver.hpp"
#include "runtime/cuda_executor.hpp"
#endif
#include "runtime/interp.hpp"
#include "tools/calibrate.hpp"
#include "tools/cli_common.hpp"
#include "tools/measure.hpp"

namespace saturn::cli {

void add_run_command(CLI::App& app, RunOptions& o) {
  auto* cmd = app.add_subcommand("run", "Run a model on inputs; write its outputs or check them.");
  cmd->add_option("model", o.model, "Model (.onnx or .sat)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--target", o.target, "Where to run it")
      ->check(CLI::IsMember({"interp", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--inputs", o.inputs, "Input tensors (.pb TensorProto or .npy) in graph-input order")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", o.out_dir, "Write outputs as output_0.pb, output_1.pb ... into this folder");
  cmd->add_option("--check", o.check, "Expected outputs (.pb or .npy) to compare with; exit 1 on mismatch")
      ->check(CLI::ExistingFile);
  cmd->add_option("--rtol", o.rtol, "Relative tolerance of --check")->check(non_negative())->capture_default_str();
  cmd->add_option("--atol", o.atol, "Absolute tolerance of --check")->check(non_negative())->capture_default_str();
  cmd->add_option("--bench", o.bench, "Time N runs after a warm-up and print median and min latency")
      ->check(non_negative());
  cmd->add_flag("--json", o.json, "Print the summary as JSON");
  cmd->add_option("--threads", o.threads,
                  "cpu target: the most worker threads (0: every CPU that no other process keeps busy; never more "
                  "than the CPUs this process may use); each run takes fewer while other processes keep CPUs busy")
      ->check(non_negative())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--fixed-threads", o.fixed_threads,
                "cpu target: every run on the --threads team, whatever other processes' load (to time one team)");
  cmd->add_flag("--profile", o.profile, "cpu and cuda targets: print the time of every step (median of 7 runs)");
  cmd->add_flag("--no-fuse", o.no_fuse, "cpu and cuda targets: one kernel per elementwise op (to measure fusion)");
  cmd->add_flag("--no-cache", o.no_cache,
                "cpu and cuda targets: optimize and compile every kernel again (by default the optimized graph and "
                "the compiled kernels are kept in the cache folder, optimized/ and kernels/, and the next run of the "
                "same model reads them)");
  add_calibration_flags(*cmd, o.calibration);
  cmd->add_flag("--no-opt", o.no_opt,
                "cpu and cuda targets: run the graph as written (plain ops as Saturn's own loops, no library call "
                "the extractor did not choose) instead of optimizing it first as saturn opt does");
}

void summarize_program(const lower::Program& p, nlohmann::json& summary) {
  summary["steps"] = p.steps.size();
  summary["arena_bytes"] = p.arena_bytes;
  summary["naive_bytes"] = p.naive_bytes;
  summary["lower_bound_bytes"] = p.lower_bound_bytes;
  summary["kernels"] = p.fused_kernels;
  summary["fused_ops"] = p.fused_ops;
  summary["library_calls"] = p.library_calls;
  summary["reference_ops"] = p.reference_ops;
  summary["compile_ms"] = p.compile_ms;
  summary["kernel_modules_cached"] = p.kernel_modules_cached;
}

namespace {

// The runs --bench times: into outputs reused from run to run (no allocation).
template <class Executor>
std::function<Expected<std::vector<ir::Tensor>>()> reusing_runs(Executor& e, const std::vector<ir::Tensor>& inputs,
                                                                std::vector<ir::Tensor>& reused) {
  return [&e, &inputs, &reused]() -> Expected<std::vector<ir::Tensor>> {
    auto r = e.run_into(inputs, reused);
    if (!r) return r.error();
    return std::vector<ir::Tensor>{};
  };
}

// --profile: every step timed over kProfileRuns more runs, the median of
// each printed unless quiet and put in the summary. One run's times mislead:
// its first steps pay for waking the thread pool and touching cold memory
// (a 0.1 ms elementwise kernel timed at 1.3 ms).
constexpr int kProfileRuns = 7;
template <class Executor>
Expected<bool> profile_steps(Executor& e, const std::vector<ir::Tensor>& inputs, bool quiet, nlohmann::json& summary) {
  const lower::Program& p = e.program();
  std::vector<std::vector<double>> ms(p.steps.size());
  e.set_profile(true);
  for (int r = 0; r < kProfileRuns; ++r) {
    auto again = e.run(inputs);
    if (!again) {
      e.set_profile(false);
      return again.error();
    }
    for (std::size_t s = 0; s < p.steps.size(); ++s) ms[s].push_back(e.step_ms()[s]);
  }
  e.set_profile(false);
  nlohmann::json steps = nlohmann::json::array();
  for (std::size_t s = 0; s < p.steps.size(); ++s) {
    std::nth_element(ms[s].begin(), ms[s].begin() + kProfileRuns / 2, ms[s].end());
    const double median = ms[s][kProfileRuns / 2];
    steps.push_back({{"step", p.steps[s].label}, {"ms", median}});
    if (!quiet)
      std::cerr << "  " << std::setw(9) << std::fixed << std::setprecision(3) << median << " ms  " << p.steps[s].label
                << "\n";
  }
  std::cerr.unsetf(std::ios::floatfield);
  summary["profile"] = steps;
  return true;
}

}  // namespace

int run_model(const RunOptions& o) {
  if (o.target == "cuda")  // before any work: is there a driver and a device?
    if (auto why = cuda_unavailable()) return bad_input(*why + " (use --target cpu or interp)");
  std::vector<ir::Tensor> inputs;
  for (const std::string& p : o.inputs) {
    auto t = ir::read_tensor_file(p);
    if (!t) return bad_input(t.error().to_string());
    inputs.push_back(std::move(*t));
  }
  const bool sat = o.model.size() > 4 && o.model.compare(o.model.size() - 4, 4, ".sat") == 0;
  auto g = sat ? ir::read_sat_file(o.model) : ir::import_onnx_for_inputs(o.model, inputs);
  if (!g) return bad_input(g.error().to_string());
  const bool seeded = o.inputs.empty() && !g->inputs.empty() && (o.bench > 0 || o.profile);
  if (seeded) {
    // Timing needs values, not particular ones: as onnxruntime_perf_test,
    // seeded random ones of the declared types.
    auto made = seeded_inputs(*g, o.bench > 0 ? "--bench" : "--profile");
    if (!made) return bad_input(made.error().to_string());
    inputs = std::move(*made);
    if (!o.json)
      std::cerr << "inputs: seeded random values (floats in [-1, 1], integers in [0, 4); --inputs gives them)\n";
  }
  nlohmann::json optimized = {{"optimized", false}};
  if (o.target != "interp" && !o.no_opt) {
    // What users get is the optimized program: the e-graph decides which
    // library runs what (docs/cost-model.md); --no-opt is the graph as written.
    // (`saturn opt --target T`'s defaults: its rules and limits.)
    OptimizeOptions oo;
    oo.target = o.target;
    oo.saturation.memory_limit_mb = default_memory_limit_mb();
    auto shipped = shipped_rules_for(o.target);
    if (!shipped) return kBadInput;
    oo.rule_files = std::move(*shipped);
    const auto t0 = std::chrono::steady_clock::now();
    const pipeline::OptimizeCache cache = optimize_cache(o.no_cache);
    auto res = optimize_calibrated(*g, oo, o.calibration, o.threads, &cache);
    if (!res) return bad_input(res.error().to_string() + " (--no-opt runs the model as written)");
    if (res->unsound) {
      std::cerr << "saturn: " << o.target
                << ": optimizing was refused: " << res->report.value("error", std::string("an unsound rule"))
                << " (--no-opt runs the model as written)\n";
      return kCheckFailed;
    }
    const double opt_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::string cached = res->report.value("cache", std::string("off"));
    optimized = {{"optimized", true},
                 {"opt_ms", opt_ms},
                 {"opt_cache", cached},
                 {"nodes_before", g->nodes.size()},
                 {"nodes_after", res->graph.nodes.size()}};
    if (!o.json)
      std::cerr << o.target << ": optimized in " << std::lround(opt_ms) << " ms ("
                << (cached == "hit" ? "the optimized graph of an earlier run, from the cache; " : "") << g->nodes.size()
                << " -> " << res->graph.nodes.size() << " nodes; --no-opt runs the graph as written)\n";
    *g = std::move(res->graph);
  }
  auto run_inputs = ir::runtime_inputs(*g, inputs);
  nlohmann::json summary = {{"model", o.model}, {"target", o.target}, {"outputs", nlohmann::json::array()}};
  if (seeded) summary["inputs"] = "seeded random";
  summary.update(optimized);
  std::function<Expected<std::vector<ir::Tensor>>()> execute = [&] { return runtime::interpret(*g, run_inputs); };
  std::unique_ptr<runtime::CpuExecutor> cpu;
  if (o.target == "cpu") {
    runtime::CpuExecutorOptions co;
    co.threads = o.threads;
    co.adapt_team = !o.fixed_threads;
    co.lowering = lowering_options(o.no_cache);
    co.lowering.fuse = !o.no_fuse;
    if (!o.json && stderr_is_terminal())  // a progress line while LLVM compiles (seconds on a big model)
      co.lowering.progress = [](std::size_t done, std::size_t modules, std::size_t kernels) {
        if (done < modules)
          std::cerr << "\r\033[K[compile] " << kernels << " kernels: " << done << " of " << modules << " modules"
                    << std::flush;
        else
          std::cerr << "\r\033[K" << std::flush;
      };
    auto made = runtime::CpuExecutor::create(*g, co);
    if (!made) return bad_input(made.error().to_string());
    cpu = std::move(*made);
    execute = [&] { return cpu->run(run_inputs); };
    const lower::Program& p = cpu->program();
    summarize_program(p, summary);
    summary["threads"] = cpu->threads();
    summary["threads_reason"] = cpu->threads_reason();
    if (!o.json) {
      std::cerr << "cpu: " << cpu->threads() << " threads (" << cpu->threads_reason() << "), " << p.steps.size()
                << " steps (" << p.fused_kernels << " generated kernels for " << p.fused_ops << " ops, "
                << p.library_calls << " library calls, " << p.reference_ops.size() << " reference ops), arena "
                << p.arena_bytes << " bytes (naive " << p.naive_bytes << ", liveness bound " << p.lower_bound_bytes
                << "), compiled in " << p.compile_ms << " ms"
                << (p.kernel_modules_cached
                        ? " (" + std::to_string(p.kernel_modules_cached) + " kernel modules from the cache)"
                        : std::string())
                << "\n";
    }
  }
#ifdef SATURN_HAVE_CUDA
  std::unique_ptr<runtime::CudaExecutor> gpu;
  if (o.target == "cuda") {
    runtime::CudaExecutorOptions co;
    co.lowering = lowering_options(o.no_cache);
    co.lowering.fuse = !o.no_fuse;
    auto made = runtime::CudaExecutor::create(*g, co);
    if (!made) return bad_input(made.error().to_string());
    gpu = std::move(*made);
    execute = [&] { return gpu->run(run_inputs); };
    const lower::Program& p = gpu->program();
    summary["device"] = gpu->device().name;
    summarize_program(p, summary);
    if (!o.json) {
      std::cerr << "cuda (" << gpu->device().name << ", " << p.target_cpu << "): " << p.steps.size() << " steps ("
                << p.fused_kernels << " generated kernels for " << p.fused_ops << " ops, " << p.library_calls
                << " library calls, " << p.reference_ops.size() << " ops on the host), arena " << p.arena_bytes
                << " bytes (naive " << p.naive_bytes << "), compiled in " << p.compile_ms << " ms\n";
    }
  }
#endif
  auto outs = execute();
  if (!outs) return bad_input(outs.error().to_string());
  std::vector<ir::Tensor> reused;  // the compiled targets write timed runs' outputs here
  if (cpu) {
    execute = reusing_runs(*cpu, run_inputs, reused);
    if (o.profile)
      if (auto p = profile_steps(*cpu, run_inputs, o.json, summary); !p) return bad_input(p.error().to_string());
  }
#ifdef SATURN_HAVE_CUDA
  if (gpu) {
    execute = reusing_runs(*gpu, run_inputs, reused);
    if (o.profile)
      if (auto p = profile_steps(*gpu, run_inputs, o.json, summary); !p) return bad_input(p.error().to_string());
  }
#endif

  for (std::size_t k = 0; k < outs->size(); ++k) {
    const ir::Tensor& t = (*outs)[k];
    summary["outputs"].push_back({{"name", g->outputs[k]}, {"type", t.summary()}});
    if (!o.json) std::cout << "output " << k << " '" << g->outputs[k] << "': " << t.summary() << "\n";
  }
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) return bad_input("cannot create " + o.out_dir + ": " + ec.message());
    for (std::size_t k = 0; k < outs->size(); ++k) {
      std::string path = (std::filesystem::path(o.out_dir) / ("output_" + std::to_string(k) + ".pb")).string();
      auto w = ir::write_tensor_pb((*outs)[k], path, g->outputs[k]);
      if (!w) return bad_input(w.error().to_string());
    }
  }
  if (o.bench > 0) {
    std::vector<double> device_ms;  // cuda: each run's steps on the device, the warm-up's first
    auto timed = time_runs(
        [&]() -> Expected<bool> {
          auto r = execute();
          if (!r) return r.error();
#ifdef SATURN_HAVE_CUDA
          if (gpu) device_ms.push_back(gpu->device_ms());
#endif
          return true;
        },
        o.bench);
    if (!timed) return bad_input(timed.error().to_string());
    summary["ms"] = timed->ms;  // every timed run, in order (bench/bench_load.py pools them)
    std::vector<double> ms = timed->ms;
    std::sort(ms.begin(), ms.end());
    if (device_ms.size() > 1) {
      // The steps alone, without the host-device copies at the borders:
      // what the cost model predicts (docs/cost-model.md).
      device_ms.erase(device_ms.begin());
      summary["device_ms"] = device_ms;
      std::sort(device_ms.begin(), device_ms.end());
      summary["device_median_ms"] = device_ms[device_ms.size() / 2];
    }
    summary["median_ms"] = ms[ms.size() / 2];
    summary["min_ms"] = ms.front();
    summary["runs"] = o.bench;
#ifdef SATURN_HAVE_CUDA
    if (gpu) {
      // Known after the first run, which captures them.
      summary["cuda_graph_steps"] = gpu->graph_steps();
      summary["cuda_graphs_note"] = gpu->graphs_note();
      if (!o.json)
        std::cerr << "cuda: " << gpu->graph_steps() << " of " << gpu->program().steps.size()
                  << " steps replayed as CUDA graphs"
                  << (gpu->graphs_note().empty() ? std::string() : " (" + gpu->graphs_note() + ")") << "\n";
    }
#endif
    if (cpu && cpu->runs_by_team().size() > 1) {
      // The team moved with other processes' load (runtime/team_choice.hpp).
      nlohmann::json teams = nlohmann::json::object();
      std::string line;
      for (const auto& [threads, runs] : cpu->runs_by_team()) {
        teams[std::to_string(threads)] = runs;
        line += (line.empty() ? "" : ", ") + std::to_string(runs) + " on " + std::to_string(threads);
      }
      summary["runs_by_team"] = teams;
      if (!o.json) std::cerr << "cpu: runs by team size (other processes kept CPUs busy): " << line << "\n";
    }
    if (!o.json)
      std::cout << "latency over " << o.bench << " runs: median " << ms[ms.size() / 2] << " ms, min " << ms.front()
                << " ms\n";
  }
  int status = kOk;
  if (!o.check.empty()) {
    if (o.check.size() != outs->size())
      return bad_input(std::to_string(o.check.size()) + " expected outputs given, the model has " +
                       std::to_string(outs->size()));
    nlohmann::json checks = nlohmann::json::array();
    for (std::size_t k = 0; k < outs->size(); ++k) {
      auto want = ir::read_tensor_file(o.check[k]);
      if (!want) return bad_input(want.error().to_string());
      Mismatch m = compare_tensors((*outs)[k], *want, o.rtol, o.atol);
      checks.push_back({{"output", k}, {"ok", m.ok}, {"detail", m.what}});
      if (!m.ok) {
        status = kCheckFailed;
        std::cerr << "saturn: check failed: output " << k << " '" << g->outputs[k] << "': " << m.what << "\n";
      }
    }
    summary["check"] = checks;
    if (!o.json && status == kOk) std::cout << "check: all " << outs->size() << " outputs match\n";
  }
  if (o.json) std::cout << summary.dump() << "\n";
  return status;
}

}  // namespace saturn::cli
