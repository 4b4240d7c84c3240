#include "tools/cli_common.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#ifdef SATURN_HAVE_CUDA
#include "device/cuda_driver.hpp"
#endif
#include "ir/cache_dir.hpp"
#include "ir/onnx_import.hpp"
#include "ir/sat_format.hpp"

namespace saturn::cli {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string printable(std::string_view text) {
  // Names read from a damaged file may hold any bytes: valid UTF-8, tabs and
  // line breaks are kept; a control byte or one that starts no valid UTF-8
  // sequence is written \xNN, so the message stays text a terminal shows.
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = byte(i);
    std::size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool valid = len > 0 && i + len <= text.size() && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
    for (std::size_t k = 1; valid && k < len; ++k) valid = (byte(i + k) & 0xC0) == 0x80;
    // (No overlong forms, surrogates or code points past U+10FFFF.)
    if (valid && len >= 3) {
      const unsigned char d = byte(i + 1);
      valid = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0) && !(c == 0xF0 && d < 0x90) &&
              !(c == 0xF4 && d >= 0x90);
    }
    if (valid && len == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)) valid = false;
    if (!valid) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

int bad_input(const std::string& message) {
  std::cerr << "saturn: " << (message.find("error:") == std::string::npos ? "error: " : "") << printable(message)
            << "\n";
  return kBadInput;
}

std::optional<std::string> cuda_unavailable() {
#ifdef SATURN_HAVE_CUDA
  auto driver = device::cuda::CudaDriver::get();
  if (!driver) return driver.error().message;
  return std::nullopt;
#else
  return "this build has no cuda target: the CUDA toolkit was not found when it was configured";
#endif
}

lower::LoweringOptions lowering_options(bool no_cache) {
  lower::LoweringOptions o;  // (compile_cpu / compile_cuda set the target)
  if (!no_cache) o.kernel_cache_dir = (ir::cache_dir() / "kernels").string();
  return o;
}

pipeline::OptimizeCache optimize_cache(bool no_cache) {
  return pipeline::OptimizeCache(no_cache ? std::filesystem::path() : ir::cache_dir() / "optimized");
}

Expected<ir::Graph> read_model(const std::string& path) {
  const bool sat = path.size() >= 4 && path.compare(path.size() - 4, 4, ".sat") == 0;
  return sat ? ir::read_sat_file(path) : ir::import_onnx_file(path);
}

std::optional<std::vector<std::string>> shipped_rules_for(const std::string& target) {
  auto files = pipeline::collect_rule_files(target, /*shipped=*/true, {});
  if (!files) {
    bad_input(files.error().to_string());
    return std::nullopt;
  }
  return std::move(*files);
}

CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
          return "expected a finite number >= 0, found '" + text + "'";
        return {};
      },
      "NUMBER>=0");
}

void add_saturation_flags(CLI::App& cmd, SaturateOptions& o, const std::string& iter_help,
                          const std::string& time_help) {
  cmd.add_option("--iter-limit", o.iter_limit, iter_help)->check(non_negative())->capture_default_str();
  cmd.add_option("--node-limit", o.node_limit, "Stop once the e-graph holds more than N e-nodes")
      ->check(non_negative())
      ->capture_default_str();
  cmd.add_option("--time-limit", o.time_limit_s, time_help)->check(non_negative())->capture_default_str();
  cmd.add_option("--memory-limit", o.memory_limit_mb,
                 "Stop once the process holds more than MB MiB of memory (default: half of physical memory)")
      ->check(non_negative());
  cmd.add_option("--scheduler", o.scheduler, "Rule scheduler")
      ->check(CLI::IsMember({"simple", "backoff"}))
      ->capture_default_str();
}

Mismatch compare_tensors(const ir::Tensor& got, const ir::Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return {false, std::string("type ") + ir::dtype_name(got.dtype()) + ", expected " + ir::dtype_name(want.dtype())};
  if (got.dims() != want.dims()) return {false, "shape " + got.summary() + ", expected " + want.summary()};
  double worst = 0;
  std::size_t at = 0;
  bool bad = false;
  for (std::size_t i = 0; i < got.numel(); ++i) {
    double a = got.at(i), b = want.at(i);
    if (!ir::is_float(want.dtype())) {
      if (got.at_int(i) != want.at_int(i) && !bad) {
        bad = true;
        at = i;
        worst = std::fabs(a - b);
      }
      continue;
    }
    if ((std::isnan(a) && std::isnan(b)) || a == b) continue;
    double excess = std::fabs(a - b) - (atol + rtol * std::fabs(b));
    if (std::isnan(excess) || std::isinf(a) || std::isinf(b)) excess = INFINITY;
    if (excess > 0 && (!bad || excess > worst)) {
      bad = true;
      worst = excess;
      at = i;
    }
  }
  if (!bad) return {};
  std::ostringstream s;
  s << "worst element " << at << ": got " << std::setprecision(9) << got.at(at) << ", expected " << want.at(at)
    << " (|diff| " << std::fabs(got.at(at) - want.at(at)) << ", rtol " << rtol << ", atol " << atol << ")";
  return {false, s.str()};
}

}  // namespace saturn::cli
