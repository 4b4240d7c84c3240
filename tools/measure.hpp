// Measured latency, as every figure Saturn shows a user is either measured
// or says it is modeled: `saturn run --bench` times one program, `saturn
// opt --measure` times the model as written against the optimized program,
// interleaved in the same rounds, and keeps the faster.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::cli {

// One run of a compiled program (false never: an error is the Expected's).
using TimedRun = std::function<Expected<bool>()>;

struct Latency {
  std::vector<double> ms;  // every timed run, in order
  double median_ms() const;
  double min_ms() const;
};

// `runs` timed runs of `run` after one untimed warm-up.
Expected<Latency> time_runs(const TimedRun& run, int runs);
// a and b in the same rounds: a warm-up of each, then `runs` rounds of one
// run of each, the first of the pair alternating, so that a machine that
// gets busier or quieter shifts both alike.
Expected<std::pair<Latency, Latency>> time_interleaved(const TimedRun& a, const TimedRun& b, int runs);

// Seeded values of a static type: floats in [-1, 1], integers in [0, 4),
// bools either way. Inputs that need particular values (indices into a
// table) come from --inputs.
ir::Tensor random_tensor(const ir::ValueType& type, std::uint32_t seed);

// One seeded random_tensor per graph input, in order (seeds 1, 2, ...), or
// an error naming `flag` and the first input whose shape is symbolic.
Expected<std::vector<ir::Tensor>> seeded_inputs(const ir::Graph& g, const std::string& flag);

struct MeasureOptions {
  std::string target = "cpu";  // cpu or cuda
  int runs = 20;
  int threads = 0;                  // the CPU executor's (0: the free CPUs)
  std::vector<std::string> inputs;  // tensor files in graph-input order; empty: seeded random values
};

// Runs the model as written and the optimized program on the target (cpu
// or cuda) on the same inputs, checks that they compute the same outputs (to 1e-3 of
// each output's largest magnitude: compare_tensors), and times them interleaved. Fills
// report["measured"] (docs/cli.md) and returns whether the optimized
// program is kept: not when it measured slower (median), nor when its
// outputs differ. Needs static input shapes.
Expected<bool> measure_against_written(const ir::Graph& written, const ir::Graph& optimized, const MeasureOptions& o,
                                       nlohmann::json& report);

}  // namespace saturn::cli
