#include "pipeline/optimize_cache.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "ir/sat_format.hpp"
#include "ir/sexpr.hpp"

namespace saturn::pipeline {

namespace {

// Which Saturn build this is: the file this code was loaded from (the
// `saturn` executable, or the Python extension), its size and mtime.
std::string build_id() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&build_id), &info) || !info.dli_fname) return "unknown build";
  struct stat st {};
  if (stat(info.dli_fname, &st) != 0) return "unknown build";
  return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) +
         "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

std::optional<std::string> OptimizeCache::key(const ir::Graph& g, const OptimizeOptions& o) {
  if (o.measure || o.egraph_dot || !o.explain.empty() || o.explain_all) return std::nullopt;
  std::ostringstream k;
  k << "saturn 0.1.0 optimized graph\nbuild " << build_id() << "\ntarget " << o.target << "\nextractor " << o.extractor
    << " " << o.extract_time_limit_s << "\nlimits " << o.saturation.iter_limit << " " << o.saturation.node_limit << " "
    << o.saturation.time_limit_s << " " << o.saturation.memory_limit_mb << " " << o.saturation.scheduler << " "
    << o.saturation.incremental << "\n";
  for (const std::string& f : o.rule_files) {
    auto text = read_file(f);  // (ir/sexpr.hpp)
    if (!text) return std::nullopt;
    k << "rules " << f << " " << std::hex << ir::stable_hash(*text) << std::dec << "\n";
  }
  if (o.calibration) {
    k << "prices " << o.calibration->target << " " << o.calibration->machine << "\n";
    for (const auto& [sig, us] : o.calibration->us) k << sig << " " << us << "\n";
    for (const auto& [sig, us] : o.calibration->roofline_us) k << "roofline " << sig << " " << us << "\n";
    for (const auto& [sig, key] : o.calibration->family_of) k << "family " << sig << " " << key << "\n";
  } else {
    k << "prices: the roofline\n";
  }
  // The graph without its weights' values (their bytes are hashed instead:
  // the text of a large model's weights would be gigabytes).
  ir::Graph shape_only = g;
  shape_only.source.clear();
  for (auto& [name, t] : shape_only.initializers) {
    k << "weight " << name << " " << t.summary() << " " << std::hex
      << ir::content_hash(std::string_view(reinterpret_cast<const char*>(t.bytes()), t.nbytes())) << std::dec << "\n";
    t = ir::Tensor(t.dtype(), {0});
  }
  k << ir::write_sat(shape_only);
  return k.str();
}

namespace {

// An entry: one line of JSON (the report; the weights the model gives;
// where each other weight's bytes are), the graph as .sat text (exact both
// ways, library calls included, which ONNX export turns back into plain
// ops), then the other weights' raw bytes. In the text every weight is an
// input: text would carry a large weight slowly.
std::optional<OptimizeResult> read_entry(const std::string& value, const ir::Graph& model) {
  const auto nl = value.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  auto head = nlohmann::json::parse(value.substr(0, nl), nullptr, /*allow_exceptions=*/false);
  if (head.is_discarded() || !head.contains("report") || !head["model_weights"].is_array() ||
      !head["weights"].is_array() || !head["graph_chars"].is_number_unsigned())
    return std::nullopt;
  const std::size_t text_at = nl + 1, chars = head["graph_chars"].get<std::size_t>();
  if (chars > value.size() - text_at) return std::nullopt;
  auto g = ir::read_sat(std::string_view(value).substr(text_at, chars), model.source);
  if (!g) return std::nullopt;
  const std::size_t blob_at = text_at + chars;
  auto take_input = [&](const std::string& name) -> std::optional<ir::ValueType> {
    auto in = std::find_if(g->inputs.begin(), g->inputs.end(), [&](const ir::GraphValue& v) { return v.name == name; });
    if (in == g->inputs.end() || !ir::is_static(in->type.shape)) return std::nullopt;
    ir::ValueType t = in->type;
    g->inputs.erase(in);
    std::erase(g->declared_inputs, name);
    return t;
  };
  for (const auto& w : head["model_weights"]) {
    const std::string name = w.get<std::string>();
    auto from = model.initializers.find(name);
    if (from == model.initializers.end() || !take_input(name)) return std::nullopt;
    g->initializers[name] = from->second;
  }
  for (const auto& w : head["weights"]) {
    const std::string name = w.value("name", "");
    const std::size_t offset = w.value("offset", std::size_t{0});
    auto type = take_input(name);
    if (!type) return std::nullopt;
    ir::Tensor t = ir::Tensor::uninitialized(type->dtype, ir::static_dims(type->shape));
    if (offset > value.size() - blob_at || t.nbytes() > value.size() - blob_at - offset) return std::nullopt;
    if (t.nbytes()) std::memcpy(t.bytes(), value.data() + blob_at + offset, t.nbytes());
    g->initializers[name] = std::move(t);
  }
  OptimizeResult r;
  r.graph = std::move(*g);
  r.report = std::move(head["report"]);
  return r;
}

}  // namespace

std::optional<OptimizeResult> OptimizeCache::get(const std::string& key, const ir::Graph& model) const {
  auto value = store_.get(key);
  if (!value) return std::nullopt;
  auto r = read_entry(*value, model);
  if (r) r->report["cache"] = "hit";
  return r;
}

std::optional<std::string> OptimizeCache::put(const std::string& key, const OptimizeResult& r,
                                              const ir::Graph& model) const {
  if (r.unsound) return std::nullopt;
  ir::Graph text = r.graph;
  text.initializers.clear();
  nlohmann::json shared = nlohmann::json::array(), own = nlohmann::json::array();
  std::string blob;
  for (const auto& [name, t] : r.graph.initializers) {
    text.inputs.push_back({name, ir::ValueType{t.dtype(), ir::shape_of(t.dims())}});
    auto m = model.initializers.find(name);
    if (m != model.initializers.end() && m->second.storage() == t.storage() && m->second.dtype() == t.dtype() &&
        m->second.dims() == t.dims()) {
      shared.push_back(name);
      continue;
    }
    own.push_back({{"name", name}, {"offset", blob.size()}});
    blob.append(reinterpret_cast<const char*>(t.bytes()), t.nbytes());
  }
  const std::string sat = ir::write_sat(text);
  nlohmann::json head = {
      {"report", r.report}, {"model_weights", shared}, {"weights", own}, {"graph_chars", sat.size()}};
  std::string value = head.dump() + "\n" + sat + blob;
  store_.put(key, value);
  return value;
}

Expected<OptimizeResult> optimize_cached(const ir::Graph& g, const OptimizeOptions& o, const OptimizeCache& cache) {
  std::optional<std::string> key = cache.enabled() ? OptimizeCache::key(g, o) : std::nullopt;
  if (key)
    if (auto hit = cache.get(*key, g)) return std::move(*hit);
  auto res = optimize(g, o);
  if (!res) return res;
  res->report["cache"] = key ? "miss" : "off";
  if (!key) return res;
  // What runs is the graph as the cache gives it back (the weights in the
  // order it reads them), so the first run and every later one compile the
  // same kernels and the kernel cache serves the second.
  auto kept = cache.put(*key, *res, g);
  if (!kept) return res;
  auto again = read_entry(*kept, g);
  if (!again) return res;
  again->report["cache"] = "miss";
  again->egraph_dot = std::move(res->egraph_dot);
  return std::move(*again);
}

}  // namespace saturn::pipeline
