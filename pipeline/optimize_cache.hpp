// The optimized graph of a model, kept for the next optimization of the
// same model: `saturn run` and `saturn.compile` of a model a second time
// skip saturation and extraction (and the kernel cache, lower/, skips code
// generation), as ONNX Runtime's saved optimized model does, but keyed so
// that it is never stale.
//
// Invariant: an entry is used only when everything optimize() reads is the
// same: the graph (structure, attributes and every weight's bytes), the
// rule files' text, the target, the extractor and the limits, the prices
// (the calibration's every entry) and the Saturn build (the binary's path,
// size and modification time: a rebuilt Saturn may extract differently).
// Entries live in ir::DiskCache (the cache folder's optimized/), which
// stores the whole key and a hash of the value, so a collision or a
// damaged entry is a miss. Optimizations that measure (calibrate) are not
// kept: what they measure changes the prices.
#pragma once

#include <optional>
#include <string>

#include "ir/cache_dir.hpp"
#include "pipeline/optimize.hpp"

namespace saturn::pipeline {

class OptimizeCache {
 public:
  // Entries under `dir` (the cache folder's optimized/); an empty `dir`
  // keeps nothing.
  explicit OptimizeCache(std::filesystem::path dir) : store_(std::move(dir), "opt-", ".bin") {}
  bool enabled() const { return store_.enabled(); }

  // Everything optimize(g, o) depends on, as text; nullopt when the result
  // must not be kept (a rule file cannot be read, the optimization measures).
  static std::optional<std::string> key(const ir::Graph& g, const OptimizeOptions& o);

  // The kept result of optimizing `model` (report["cache"] = "hit"), or nullopt.
  std::optional<OptimizeResult> get(const std::string& key, const ir::Graph& model) const;
  // Keeps a sound result of optimizing `model`; returns the entry written
  // (nullopt: not kept). The weights the result shares with the model are
  // not written: the entry names them, and get() takes them from the model
  // (the key holds a hash of their bytes).
  std::optional<std::string> put(const std::string& key, const OptimizeResult& r, const ir::Graph& model) const;

 private:
  ir::DiskCache store_;
};

// optimize() through the cache: a hit returns the kept graph and report, a
// miss optimizes and keeps a sound result (report["cache"]: "hit", "miss",
// or "off" when the options cannot be kept).
Expected<OptimizeResult> optimize_cached(const ir::Graph& g, const OptimizeOptions& o, const OptimizeCache& cache);

}  // namespace saturn::pipeline
