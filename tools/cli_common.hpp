// Shared pieces of the `saturn` verbs: exit codes, terminal detection.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.hpp"
#include "ir/tensor.hpp"
#include "lower/lowering.hpp"
#include "pipeline/optimize.hpp"
#include "pipeline/optimize_cache.hpp"
#include "pipeline/saturate.hpp"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace saturn::cli {

// The pipeline's entry points, as the verbs call them.
using pipeline::default_memory_limit_mb;
using pipeline::optimize;
using pipeline::OptimizeOptions;
using pipeline::OptimizeResult;
using pipeline::rule_files_for;
using pipeline::saturate;
using pipeline::SaturateOptions;
using pipeline::SaturateResult;
using pipeline::shipped_rulesets_dir;
using pipeline::summarize;

// Exit status contract of docs/design.md.
inline constexpr int kOk = 0;
inline constexpr int kCheckFailed = 1;
inline constexpr int kBadInput = 2;

// True when stderr is a terminal (progress is shown only then).
bool stderr_is_terminal();

// text with the bytes a terminal would not show as text escaped (\xNN):
// control bytes other than tab and line break, and invalid UTF-8.
std::string printable(std::string_view text);

// Prints "saturn: error: message" (printable) to stderr and returns kBadInput.
int bad_input(const std::string& message);

// Whether `s` ends with `suffix` (".sat": which format a path asks for).
bool has_suffix(const std::string& s, const std::string& suffix);

// A model file: `.sat` text, else ONNX.
Expected<ir::Graph> read_model(const std::string& path);

// Why the cuda target cannot run here (no CUDA toolkit at configure time,
// no driver, no device), or nothing when it can.
std::optional<std::string> cuda_unavailable();

// A command's lowering options: the compiled kernels (PTX on cuda, object
// files on cpu) kept in the cache folder (ir/cache_dir.hpp, kernels/) for
// the next run, unless `no_cache`.
lower::LoweringOptions lowering_options(bool no_cache = false);
// The optimized graphs kept for the next run (the cache folder's
// optimized/, pipeline/optimize_cache.hpp); none kept when `no_cache`.
pipeline::OptimizeCache optimize_cache(bool no_cache = false);

// The shipped .rules files for `target` (rule_files_for over
// shipped_rulesets_dir); nullopt after reporting (bad_input) when that
// folder holds none. `saturn opt` and the optimization `saturn run` does.
std::optional<std::vector<std::string>> shipped_rules_for(const std::string& target);

// How an output compares with what was expected: `what` names the worst
// element, by how far it is outside atol + rtol |expected| (integers and
// bools exactly, NaN where NaN). `saturn run --check`, `saturn opt --measure`.
struct Mismatch {
  bool ok = true;
  std::string what;
};
Mismatch compare_tensors(const ir::Tensor& got, const ir::Tensor& want, double rtol, double atol);

// The saturation limit flags every saturating verb takes (--iter-limit,
// Accepts a finite number >= 0 written as a flag's value. CLI11's
// NonNegativeNumber lets NaN through, and a negative count read into an
// unsigned field wraps to a huge one: every numeric flag takes this.
CLI::Validator non_negative();

// --node-limit, --time-limit, --memory-limit, --scheduler), bound to `o`.
void add_saturation_flags(CLI::App& cmd, SaturateOptions& o, const std::string& iter_help,
                          const std::string& time_help);

}  // namespace saturn::cli
