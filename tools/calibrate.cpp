#include "tools/calibrate.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "extract/calibration_pass.hpp"
#include "extract/cost_model.hpp"
#include "runtime/cpu_availability.hpp"
#include "runtime/cpu_executor.hpp"
#ifdef SATURN_HAVE_CUDA
#include "device/cuda_driver.hpp"
#include "runtime/cuda_executor.hpp"
#endif
#include "tools/calibration_probe.hpp"
#include "tools/cli_common.hpp"
#include "tools/measure.hpp"

namespace saturn::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Graph values that only bring an operand into the library's layout: their
// steps are not the timed op's.
constexpr const char* kLayoutPrefix = "calibrate.layout.";

// oneDNN leaves a convolution's or pooling's result in its own layout
// (NHWC), and the next oneDNN call of a program reads it as it is; from a
// plain NCHW graph input, the call would reorder its source first, which a
// call inside a program does not pay. So each f32 activation of a dnnl op
// comes through a depthwise 1x1 oneDNN convolution of ones, whose step is
// then left out of the time. (mobilenet_v2's 52 convolutions, 3.3 ms in the
// program: calibrated 5.8 and 6.6 ms from NCHW, 3.6-4.2 ms so, in
// interleaved calibrations.)
std::string in_library_layout(ir::Graph& g, const std::string& name, const ir::ValueType& t) {
  const std::size_t rank = t.shape.size();
  const std::int64_t channels = ir::static_dims(t.shape)[1];  // (timed ops have static shapes)
  std::vector<std::int64_t> w_dims(rank, 1);
  w_dims[0] = channels;
  ir::Tensor ones(t.dtype, w_dims);
  for (std::size_t i = 0; i < ones.numel(); ++i) ones.set(i, 1.0);
  const std::string w = kLayoutPrefix + name + ".w", out = kLayoutPrefix + name;
  g.initializers.emplace(w, std::move(ones));
  ir::Node p;
  p.name = out;
  p.op = "dnnl.conv";
  p.inputs = {name, w};
  p.outputs = {out};
  p.attrs.set("kernel_shape", std::vector<std::int64_t>(rank - 2, 1));
  p.attrs.set("group", channels);
  g.nodes.push_back(std::move(p));
  return out;
}

// Median microseconds over 3 to 15 timed runs (about 0.1 s) after a
// warm-up: `run` runs the program once and returns the milliseconds it
// spent in its own steps.
Expected<double> median_us(const std::function<Expected<double>()>& run) {
  if (auto w = run(); !w) return w.error();  // warm-up
  Latency own;
  const auto t0 = Clock::now();
  auto first = run();
  if (!first) return first.error();
  own.ms.push_back(*first);
  const int runs = std::clamp(static_cast<int>(0.1 / std::max(seconds_since(t0), 1e-7)), 3, 15);
  for (int i = 1; i < runs; ++i) {
    auto ms = run();
    if (!ms) return ms.error();
    own.ms.push_back(*ms);
  }
  return own.median_ms() * 1e3;
}

// Median microseconds a run of `g` spends in its own steps on the CPU
// target: without the copies into the caller's output tensors (a graph
// output's; a value inside a program is not copied), or an error.
Expected<double> time_on_cpu(const ir::Graph& g, int threads) {
  runtime::CpuExecutorOptions co;
  co.threads = threads;
  co.adapt_team = false;  // (the times are those of this team)
  co.profile = true;
  auto exec = runtime::CpuExecutor::create(g, co);
  if (!exec) return exec.error();
  auto inputs = seeded_inputs(g, "calibrate");
  if (!inputs) return inputs.error();
  std::vector<ir::Tensor> out;
  const lower::Program& program = (*exec)->program();
  const auto& steps = program.steps;
  std::vector<bool> layout_step(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s)
    for (lower::BufferId b : steps[s].writes)
      layout_step[s] = layout_step[s] || program.buffers[static_cast<std::size_t>(b)].name.rfind(kLayoutPrefix, 0) == 0;
  return median_us([&]() -> Expected<double> {
    auto r = (*exec)->run_into(*inputs, out);
    if (!r) return r.error();
    double ms = 0;
    for (std::size_t s = 0; s < steps.size(); ++s)
      if (steps[s].label.rfind("output copy", 0) != 0 && !layout_step[s]) ms += (*exec)->step_ms()[s];
    return ms;
  });
}

// The same on the CUDA target: the device time between the first step and
// the last (events on the stream), without the host-device copies of the
// program's borders, which a value inside a program never makes.
Expected<double> time_on_cuda(const ir::Graph& g) {
#ifdef SATURN_HAVE_CUDA
  runtime::CudaExecutorOptions co;
  co.lowering = lowering_options();
  auto exec = runtime::CudaExecutor::create(g, co);
  if (!exec) return exec.error();
  auto inputs = seeded_inputs(g, "calibrate");
  if (!inputs) return inputs.error();
  std::vector<ir::Tensor> out;
  return median_us([&]() -> Expected<double> {
    auto r = (*exec)->run_into(*inputs, out);
    if (!r) return r.error();
    return (*exec)->device_ms();
  });
#else
  (void)g;
  return Diagnostic{SourceLoc{}, "this build has no cuda target"};
#endif
}

Expected<double> time_graph(const ir::Graph& g, const std::string& target, int threads) {
  return target == "cuda" ? time_on_cuda(g) : time_on_cpu(g, threads);
}

// Microseconds of one application of the op: alone when it is long, else
// the mean of 8 back-to-back copies (a lone short op mostly measures the
// thread pool waking up, which a program's next step does not pay). An op
// whose weights come from memory (OperandFacts::weights_from_memory) is
// timed over timed_copies() copies, whose weights together overflow the
// cache, so that no copy finds its weights there.
Expected<double> time_op(const extract::TimedOp& op, const std::string& target, int threads) {
  auto alone = time_graph(timed_op_graph(op, target, 1), target, threads);
  if (!alone) return alone;
  const int copies = timed_copies(op, target, *alone);
  if (copies == 1 && *alone > 500) return alone;
  const int n = copies > 1 ? copies : 8;
  auto batch = time_graph(timed_op_graph(op, target, n), target, threads);
  if (!batch) return batch.error();
  return *batch / n;
}

}  // namespace

int timed_copies(const extract::TimedOp& op, const std::string& target, double alone_us) {
  if (!op.facts.weights_from_memory) return 1;
  const std::optional<extract::CostModel> model = extract::CostModel::for_target(target);
  if (!model || !(model->spec().weight_cache_bytes > 0) || !(model->spec().weight_gbytes_per_s > 0)) return 1;
  const double weight_bytes = extract::weight_bytes(op.in, op.facts);
  const double read_us = weight_bytes / (model->spec().weight_gbytes_per_s * 1e3);
  if (!(weight_bytes > 0) || read_us < kWeightShare * alone_us) return 1;
  const double sweep = kWeightSweep * model->spec().weight_cache_bytes;
  return static_cast<int>(std::clamp(std::ceil(sweep / weight_bytes), 2.0, double(kMaxWeightCopies)));
}

ir::Graph timed_op_graph(const extract::TimedOp& op, const std::string& target, int copies) {
  ir::Graph g;
  g.name = "calibrate";
  const bool onednn = target == "cpu" && op.def->name.rfind("dnnl.", 0) == 0;
  std::vector<std::string> activations(op.facts.given.size());  // per operand slot; empty: a weight or omitted
  std::size_t k = 0;
  for (std::size_t i = 0; i < op.facts.given.size(); ++i) {
    if (!op.facts.given[i]) continue;
    const ir::ValueType& t = op.in[k++];
    if (op.facts.weight[k - 1]) continue;
    const std::string name = "x" + std::to_string(i);
    g.inputs.push_back(ir::GraphValue{name, t});
    activations[i] = onednn && t.dtype == ir::DType::F32 && t.shape.size() >= 3 && t.shape.size() <= 5
                         ? in_library_layout(g, name, t)
                         : name;
  }
  for (int c = 0; c < copies; ++c) {
    ir::Node n;
    n.op = op.def->name;
    n.attrs = op.attrs;
    n.name = "timed" + std::to_string(c);
    k = 0;
    for (std::size_t i = 0; i < op.facts.given.size(); ++i) {
      if (!op.facts.given[i]) {
        n.inputs.emplace_back();
        continue;
      }
      const ir::ValueType& t = op.in[k];
      if (op.facts.weight[k++]) {
        // Values of their own too, so that nothing shares them as equal
        // constants.
        const std::string name = "w" + std::to_string(i) + "." + std::to_string(c);
        g.initializers.emplace(name, random_tensor(t, static_cast<std::uint32_t>(100 + i + 1000 * c)));
        n.inputs.push_back(name);
      } else {
        n.inputs.push_back(activations[i]);
      }
    }
    n.outputs = {"y" + std::to_string(c)};
    g.nodes.push_back(n);
    g.outputs.push_back(n.outputs[0]);
  }
  return g;
}

void add_calibration_flags(CLI::App& cmd, CalibrationFlags& f) {
  cmd.add_flag("--calibrate", f.calibrate,
               "Measure the library calls and loop nests the calibration cache lacks, at the model's "
               "shapes, and price with the measurements (saved for the next run)");
  cmd.add_flag("--no-calibration", f.no_calibration, "Price with the roofline model alone (ignore the cache)");
  cmd.add_option("--calibration-budget", f.budget_s, "--calibrate: seconds of measuring at most (reported when hit)")
      ->check(non_negative())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--calibration-file", f.file,
                 "The calibration cache (default: $SATURN_CACHE_DIR, $XDG_CACHE_HOME/saturn or ~/.cache/saturn, "
                 "one file per target and machine)");
}

Expected<std::string> machine_id(const std::string& target, int threads) {
  if (target == "cuda") {
#ifdef SATURN_HAVE_CUDA
    auto driver = device::cuda::CudaDriver::get();
    if (!driver) return driver.error();
    return (*driver)->device(0).name + ", cuda";
#else
    return Diagnostic{SourceLoc{}, "this build has no cuda target"};
#endif
  }
  std::string model = "unknown CPU";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  const int n = threads > 0 ? threads : runtime::usable_cpus();
  return model + ", " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

Expected<std::unique_ptr<CalibrationSession>> CalibrationSession::open(const CalibrationFlags& f,
                                                                       const std::string& target, int threads) {
  if (f.no_calibration) return std::unique_ptr<CalibrationSession>();
  auto machine = machine_id(target, threads);
  if (!machine) {
    // No device to measure on: the roofline prices, unless measuring was asked for
    // or a calibration file was named (another machine's measurements: the
    // file says which machine it prices).
    if (f.calibrate)
      return Diagnostic{SourceLoc{}, "--calibrate on the " + target + " target: " + machine.error().message};
    if (f.file.empty()) return std::unique_ptr<CalibrationSession>();
    if (!std::filesystem::is_regular_file(f.file))
      return Diagnostic{SourceLoc{f.file, 0, 0}, "no such calibration file (and no " + target +
                                                     " device here to measure one on: " + machine.error().message +
                                                     ")"};
    machine = std::string();
  }
  auto s = std::make_unique<CalibrationSession>();
  s->flags_ = f;
  s->target_ = target;
  s->threads_ = threads;
  s->path_ = f.file.empty() ? extract::Calibration::default_path(target, *machine) : f.file;
  auto c = extract::Calibration::load(s->path_, target, *machine);
  if (!c) return c.error();
  s->cal_ = std::move(*c);
  s->loaded_ = s->cal_.us.size();
  return s;
}

void CalibrationSession::attach(pipeline::OptimizeOptions& oo) {
  oo.calibration = &cal_;
  if (!flags_.calibrate) return;
  oo.measure = [this](const std::map<std::string, extract::TimedOp>& ops, extract::Calibration& c) {
    nlohmann::json j = measure_timed_ops(ops, c, target_, threads_, flags_.budget_s);
    j["file"] = path_;
    return j;
  };
}

Expected<bool> CalibrationSession::save_if_changed() {
  if (cal_.us.size() == loaded_) return false;
  auto saved = cal_.save(path_);
  if (saved) loaded_ = cal_.us.size();
  return saved;
}

Expected<pipeline::OptimizeResult> optimize_calibrated(const ir::Graph& g, pipeline::OptimizeOptions oo,
                                                       const CalibrationFlags& f, int threads,
                                                       const pipeline::OptimizeCache* cache) {
  auto session = CalibrationSession::open(f, oo.target, threads);
  if (!session) return session.error();
  if (*session) (*session)->attach(oo);
  auto res = cache ? pipeline::optimize_cached(g, oo, *cache) : pipeline::optimize(g, oo);
  if (res && *session)
    if (auto saved = (*session)->save_if_changed(); !saved) return saved.error();
  return res;
}

namespace {

// A CPU timing is crowded when other processes took more than a quarter of
// a CPU from those its team needs (/proc/stat, this process's own time left
// out; hypervisor steal counts as taken). A CUDA timing is not watched.
extract::LoadWatch cpu_load_watch(const std::string& target, int threads) {
  if (target != "cpu") return {};
  const double team = std::min(threads > 0 ? threads : runtime::usable_cpus(), runtime::usable_cpus());
  auto mark = std::make_shared<runtime::CpuReading>();  // (the reading `begin` took)
  return {[mark] { *mark = runtime::read_cpu_load(); },
          [mark, team] {
            const std::optional<double> free = runtime::free_cpus_between(*mark, runtime::read_cpu_load());
            return free && *free + 0.25 < team;
          }};
}

}  // namespace

nlohmann::json measure_timed_ops(const std::map<std::string, extract::TimedOp>& ops, extract::Calibration& c,
                                 const std::string& target, int threads, double budget_s) {
  const auto start = Clock::now();
  const std::optional<extract::CostModel> roofline = extract::CostModel::for_target(target);
  const extract::CalibrationPass pass = extract::run_calibration_pass(
      ops, c, [&](const extract::TimedOp& op) { return time_op(op, target, threads); }, roofline ? &*roofline : nullptr,
      budget_s, cpu_load_watch(target, threads));
  nlohmann::json failed = nlohmann::json::array(), second_looks = nlohmann::json::array();
  // (Priced by the roofline instead; named so that a user can see why.)
  for (const auto& f : pass.failed) failed.push_back({{"op", f.op}, {"error", f.why}});
  for (const auto& l : pass.second_looks)
    second_looks.push_back({{"op", l.op}, {"first_us", l.first_us}, {"second_us", l.second_us}});
  return {{"measured", pass.measured},
          {"failed", failed},
          {"second_looks", second_looks},
          {"crowded", pass.crowded},
          {"crowded_again", pass.crowded_again},
          {"budget_hit", pass.budget_hit},
          {"measure_ms", seconds_since(start) * 1e3}};
}

void add_calibrate_command(CLI::App& app, CalibrateOptions& o) {
  auto* cmd = app.add_subcommand(
      "calibrate", "Measure the library calls and loop nests models need, at their shapes, for the cost model.");
  cmd->add_option("models", o.models,
                  "Models (.onnx or .sat) whose timed ops to measure (none: a probe of typical layers, whose "
                  "measurements price every model's library calls)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--target", o.target, "Target to calibrate")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "CPU threads to measure with (0: the usable CPUs)")
      ->check(non_negative())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--budget", o.flags.budget_s, "Seconds of measuring at most, all models together")
      ->check(non_negative())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--calibration-file", o.flags.file, "The calibration cache (default: as saturn opt's)");
  cmd->add_flag("--json", o.json, "Print what was measured as JSON");
}

int run_calibrate(const CalibrateOptions& o) {
  CalibrationFlags f = o.flags;
  f.calibrate = true;
  auto session = CalibrationSession::open(f, o.target, o.threads);
  if (!session) return bad_input(session.error().to_string());
  auto shipped = shipped_rules_for(o.target);
  if (!shipped) return kBadInput;
  nlohmann::json out = {{"file", (*session)->path()},
                        {"machine", (*session)->calibration().machine},
                        {"models", nlohmann::json::array()}};
  CalibrationSession& cal = **session;
  const auto start = Clock::now();
  // No model: the probe, its weights in the cache, then from memory (its
  // layers' families give every model's library calls their ratios:
  // tools/calibration_probe.hpp).
  const bool probe = o.models.empty();
  const std::size_t graphs = probe ? 2 : o.models.size();
  for (std::size_t i = 0; i < graphs; ++i) {
    auto graph = probe ? Expected<ir::Graph>(calibration_probe(i == 1)) : read_model(o.models[i]);
    if (!graph) return bad_input(graph.error().to_string());
    pipeline::OptimizeOptions oo;
    oo.target = o.target;
    oo.rule_files = *shipped;
    oo.saturation.memory_limit_mb = default_memory_limit_mb();
    cal.set_budget(std::max(1e-3, o.flags.budget_s - seconds_since(start)));
    cal.attach(oo);
    auto res = pipeline::optimize(*graph, oo);
    if (!res) return bad_input(res.error().to_string());
    if (auto saved = cal.save_if_changed(); !saved) return bad_input(saved.error().to_string());
    nlohmann::json c = res->report.value("calibration", nlohmann::json::object());
    const std::string name = probe ? graph->name : o.models[i];
    c["model"] = name;
    if (!c.contains("failed")) c["failed"] = nlohmann::json::array();
    if (!o.json) {
      const std::size_t twice = c.contains("second_looks") ? c["second_looks"].size() : 0;
      const int crowded = c.value("crowded", 0), crowded_again = c.value("crowded_again", 0);
      std::cerr << name << ": " << c.value("measured", 0) << " ops measured, " << c.value("entries_before", 0)
                << " known before"
                << (twice ? ", " + std::to_string(twice) + " timed twice (over " +
                                std::to_string(static_cast<int>(extract::kSecondLookRatio)) +
                                "x the roofline, or its op's usual ratio to it, at first" +
                                (crowded ? ", or timed while other processes were busy: " + std::to_string(crowded)
                                         : std::string()) +
                                ")"
                          : "")
                << (c.value("budget_hit", false) ? ", stopped at --budget" : "") << "\n";
      if (crowded_again)
        std::cerr << "saturn: note: other processes were busy during " << crowded_again
                  << " second looks as well; the faster of each op's two times is kept, and may still be high "
                     "(calibrate again on a quiet machine to be sure)\n";
      for (const auto& e : c["failed"])
        std::cerr << "saturn: note: could not measure " << e["op"].get<std::string>() << ": "
                  << e["error"].get<std::string>() << " (priced by the roofline)\n";
    }
    out["models"].push_back(std::move(c));
  }
  out["entries"] = cal.calibration().us.size();
  if (o.json)
    std::cout << out.dump() << "\n";
  else
    std::cerr << cal.path() << ": " << cal.calibration().us.size() << " measured ops for " << cal.calibration().machine
              << "\n";
  return kOk;
}

}  // namespace saturn::cli
