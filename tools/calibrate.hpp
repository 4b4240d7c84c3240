// Measured prices for the cost model (extract/calibration.hpp): the flags
// saturn opt and saturn run share, the measuring of timed ops as one-node
// programs on the target (the CPU, or the GPU's device time on cuda), and
// `saturn calibrate`, which fills the cache for models ahead of time.
//
// By default a command prices with the cache when one exists for this
// machine and measures nothing: measuring takes seconds and makes the
// choice depend on the machine's load at that moment. `--calibrate`
// measures what the cache lacks (within `--calibration-budget`) and saves
// it, so the next optimization of the model measures nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "extract/calibration.hpp"
#include "pipeline/optimize.hpp"
#include "pipeline/optimize_cache.hpp"

namespace CLI {
class App;
}

namespace saturn::cli {

struct CalibrationFlags {
  bool calibrate = false;       // measure what the cache lacks
  bool no_calibration = false;  // the roofline alone
  double budget_s = 120;        // seconds of measuring per command
  std::string file;             // default: Calibration::default_path
};

void add_calibration_flags(CLI::App& cmd, CalibrationFlags& f);

// A calibration loaded for a command, saved back when it measured.
class CalibrationSession {
 public:
  // nullptr (no session) for --no-calibration or a target this machine
  // cannot measure on (cuda without a driver or device); an error for a
  // malformed cache file or --calibrate on such a target.
  static Expected<std::unique_ptr<CalibrationSession>> open(const CalibrationFlags& f, const std::string& target,
                                                            int threads);
  // Points `oo` at the calibration (and the measuring, with --calibrate).
  void attach(pipeline::OptimizeOptions& oo);
  // Seconds of measuring the next optimization may take.
  void set_budget(double s) { flags_.budget_s = s; }
  // Writes the cache when something was measured since it was read or saved.
  Expected<bool> save_if_changed();
  const std::string& path() const { return path_; }
  const extract::Calibration& calibration() const { return cal_; }

 private:
  extract::Calibration cal_;
  std::string path_;
  CalibrationFlags flags_;
  std::string target_;
  int threads_ = 0;
  std::size_t loaded_ = 0;
};

// pipeline::optimize with the calibration the flags name (measuring with
// --calibrate, saving what it measured), through `cache` when given (the
// optimized graph of the same model, rules, options and prices is reused:
// pipeline/optimize_cache.hpp).
Expected<pipeline::OptimizeResult> optimize_calibrated(const ir::Graph& g, pipeline::OptimizeOptions oo,
                                                       const CalibrationFlags& f, int threads,
                                                       const pipeline::OptimizeCache* cache = nullptr);

// What a calibration file is valid for: "AMD Ryzen 9 7950X 16-Core
// Processor, 2 threads" on cpu, "NVIDIA H100 80GB HBM3, cuda" (device 0) on
// cuda; an error when the target has no device here.
Expected<std::string> machine_id(const std::string& target, int threads);

// What measuring `op` runs: the op alone, `copies` times over the same activations (so that a short
// op runs back to back with itself, as steps of a program do, rather than
// after an idle thread pool): activations as graph inputs, weights as
// initializers (so that a library prepares them at compile time, as in a
// real model). Each copy reads weights of its own: in a program a weight
// was last read a whole run ago, and copies sharing one would find it in
// the cache. (A plain-loop gemm of mobilenet_v3_small's classifier, 1x576
// by a 2.4 MB weight, measured 18 us so and took 115 in the program, and
// the calibrated extraction chose it over oneDNN's product.) On cpu, a
// oneDNN op's 3- to 5-D float activations first pass a 1x1 depthwise
// oneDNN convolution of ones, so that they come in the layout oneDNN's
// own results have in a program.
ir::Graph timed_op_graph(const extract::TimedOp& op, const std::string& target, int copies);

// How many copies of `op` its timing runs, given the microseconds it took
// alone: 1 (alone, or 8 copies when short), but for an op whose weights
// come from memory and whose weights' read from there
// (extract::TargetSpec::weight_gbytes_per_s) would take kWeightShare of
// that time or more, as many copies as take kWeightSweep times the cache
// that keeps weights between runs (TargetSpec::weight_cache_bytes), at
// least 2 and at most kMaxWeightCopies. (An op with small weights, under
// about 3 MB, is so timed with some of them in the cache; a plain loop
// nest, 20-50 ms at resnet18's shapes, alone: its weights are a few
// percent of its time, and timing 11 copies of it took most of a
// calibration's budget.)
constexpr double kWeightSweep = 3;
constexpr double kWeightShare = 0.1;
constexpr int kMaxWeightCopies = 32;
int timed_copies(const extract::TimedOp& op, const std::string& target, double alone_us);

// Times each op as a one-node program (operands random, weights constant)
// on the target: a warm-up, then 3 to 15 runs (about 0.1 s), the median;
// a suspect time is taken again (extract/calibration_pass.hpp). Returns the
// report's "calibration" fields.
nlohmann::json measure_timed_ops(const std::map<std::string, extract::TimedOp>& ops, extract::Calibration& c,
                                 const std::string& target, int threads, double budget_s);

struct CalibrateOptions {
  std::vector<std::string> models;
  std::string target = "cpu";
  CalibrationFlags flags;
  int threads = 0;
  bool json = false;
};

void add_calibrate_command(CLI::App& app, CalibrateOptions& o);
int run_calibrate(const CalibrateOptions& o);

}  // namespace saturn::cli
