#include "extract/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/cache_dir.hpp"
#include "ir/sat_format.hpp"

namespace saturn::extract {

namespace {

std::string type_text(const ir::ValueType& t) { return std::string(ir::dtype_name(t.dtype)) + ir::to_string(t.shape); }

// A machine's description as a short file name.
std::string short_hash(const std::string& s) {
  std::ostringstream o;
  o << std::hex << (ir::stable_hash(s) & 0xffffffffffull);
  return o.str();
}

// The library of a library call's signature, or of a family: up to its
// first dot ("dnnl."); empty for anything else.
std::string library_prefix(const std::string& s) {
  const std::size_t dot = s.find('.'), space = s.find(' ');
  return dot < space && dot != std::string::npos ? s.substr(0, dot + 1) : std::string();
}

Diagnostic error_at(const std::string& path, const std::string& msg) {
  Diagnostic d;
  d.loc.file = path;
  d.message = msg;
  return d;
}

}  // namespace

std::string op_signature(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                         const OperandFacts& facts, const ir::ValueType& out) {
  const std::vector<bool>& given = facts.given;
  const std::vector<bool>& weight = facts.weight;
  for (const ir::ValueType& t : in)
    if (!ir::is_static(t.shape)) return "";
  if (!ir::is_static(out.shape)) return "";
  std::string s = def.name;
  for (const auto& [k, v] : attrs.all()) s += " :" + k + " " + ir::attr_text(v);
  s += " (";
  // Trailing omitted operands are not written: a graph's node lists fewer
  // operands where the e-graph's decoded node lists them as omitted.
  std::size_t slots = given.size();
  while (slots > 0 && !given[slots - 1]) --slots;
  std::size_t k = 0;
  for (std::size_t i = 0; i < slots; ++i) {
    if (i) s += " ";
    if (!given[i]) {
      s += "-";
      continue;
    }
    if (k < weight.size() && weight[k]) s += "w:";
    if (k < in.size()) s += type_text(in[k]);
    ++k;
  }
  s += ") -> " + type_text(out);
  return facts.weights_from_memory ? s + " weights from memory" : s;
}

double weight_bytes(std::span<const ir::ValueType> in, const OperandFacts& facts) {
  double bytes = 0;
  for (std::size_t k = 0; k < in.size() && k < facts.weight.size(); ++k)
    if (facts.weight[k])
      bytes += static_cast<double>(ir::numel(ir::static_dims(in[k].shape))) *
               static_cast<double>(ir::dtype_size(in[k].dtype));
  return bytes;
}

void Calibration::record(const std::string& signature, double measured_us, double modeled_us,
                         const std::string& family_key) {
  us[signature] = measured_us;
  if (modeled_us > 0 && std::isfinite(modeled_us))
    roofline_us[signature] = modeled_us;
  else
    roofline_us.erase(signature);
  auto f = family_of.find(signature);
  const std::string before = f == family_of.end() ? std::string() : f->second;
  if (family_key.empty())
    family_of.erase(signature);
  else
    family_of[signature] = family_key;
  for (const std::string& key : {before, family_key})
    if (!key.empty()) update_ratio(key);
}

void Calibration::keep_faster(const std::string& signature, double measured_us) {
  auto it = us.find(signature);
  if (it == us.end() || !(measured_us < it->second)) return;
  it->second = measured_us;
  if (auto f = family_of.find(signature); f != family_of.end()) update_ratio(f->second);
}

void Calibration::update_ratio(const std::string& key) {
  // (A family's calls are its library's: their signatures start with it.)
  const std::string prefix = library_prefix(key);
  std::vector<double> ratios;
  for (auto it = family_of.lower_bound(prefix); it != family_of.end() && it->first.starts_with(prefix); ++it) {
    auto modeled = roofline_us.find(it->first);
    const double* measured = find(it->first);
    if (it->second == key && measured && modeled != roofline_us.end()) ratios.push_back(*measured / modeled->second);
  }
  if (ratios.size() < kFamilySize) {
    family.erase(key);
    return;
  }
  auto mid = ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2);
  std::nth_element(ratios.begin(), mid, ratios.end());
  family[key] = *mid;
}

std::string Calibration::default_path(const std::string& target, const std::string& machine) {
  return (ir::cache_dir() / ("calibration-" + target + "-" + short_hash(machine) + ".json")).string();
}

Expected<Calibration> Calibration::load(const std::string& path, const std::string& target,
                                        const std::string& machine) {
  Calibration c;
  c.target = target;
  c.machine = machine;
  std::ifstream f(path);
  if (!f) return c;  // nothing measured yet
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    return error_at(path, std::string("calibration file is not JSON (delete it to start over): ") + e.what());
  }
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_object())
    return error_at(path, "calibration file has no \"entries\" object (delete it to start over)");
  if (machine.empty()) c.machine = j.value("machine", "");
  if (j.value("format", 0) != kFormat || j.value("target", "") != target || j.value("machine", "") != c.machine)
    return c;  // another machine's or another version's measurements
  for (const auto& [sig, us] : j["entries"].items()) {
    if (!us.is_number() || us.get<double>() < 0)
      return error_at(path, "calibration entry \"" + sig + "\" is not a non-negative number of microseconds");
    c.us[sig] = us.get<double>();
  }
  // (Files written before the roofline's prices were kept have none: their
  // families have no ratio.)
  if (j.contains("roofline")) {
    if (!j["roofline"].is_object()) return error_at(path, "calibration file's \"roofline\" is not an object");
    for (const auto& [sig, us] : j["roofline"].items()) {
      if (!us.is_number() || !(us.get<double>() > 0))
        return error_at(path, "calibration roofline price \"" + sig + "\" is not a positive number of microseconds");
      if (c.find(sig)) c.roofline_us[sig] = us.get<double>();
    }
  }
  if (j.contains("families")) {
    if (!j["families"].is_object()) return error_at(path, "calibration file's \"families\" is not an object");
    for (const auto& [sig, key] : j["families"].items()) {
      const std::string prefix = library_prefix(sig);
      if (!key.is_string() || prefix.empty() || library_prefix(key.get<std::string>()) != prefix)
        return error_at(path, "calibration family of \"" + sig + "\" is not a family of its library");
      if (c.find(sig)) c.family_of[sig] = key.get<std::string>();
    }
  }
  std::set<std::string> keys;
  for (const auto& [sig, key] : c.family_of) keys.insert(key);
  for (const std::string& key : keys) c.update_ratio(key);
  return c;
}

Expected<bool> Calibration::save(const std::string& path) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) return error_at(path, "cannot create the calibration folder: " + ec.message());
  nlohmann::json j = {{"format", kFormat}, {"target", target},        {"machine", machine},
                      {"entries", us},     {"roofline", roofline_us}, {"families", family_of}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) return error_at(path, "cannot write the calibration file");
    f << j.dump(1) << "\n";
    if (!f) return error_at(path, "cannot write the calibration file");
  }
  fs::rename(tmp, p, ec);
  if (ec) return error_at(path, "cannot write the calibration file: " + ec.message());
  return true;
}

}  // namespace saturn::extract
