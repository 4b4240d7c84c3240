#include "pipeline/rematerialize.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "pipeline/memory_order.hpp"

namespace saturn::pipeline {

namespace {

// One value computed again for its late uses: the chain of cheap nodes
// from values alive then up to it, inserted before the first late reader.
struct Remat {
  std::string value;
  std::size_t before;              // graph index of the first late reader
  std::set<std::size_t> readers;   // the late readers, which read the copy
  std::vector<std::size_t> chain;  // node indices, in graph order; the last computes `value`
};

}  // namespace

RematReport rematerialize(ir::Graph& g, const RematOptions& o) {
  RematReport report;
  auto types = ir::infer_types(g);
  if (!types) return report;  // (the lowering reports what is wrong)
  const std::vector<bool> live = ir::live_nodes(g);
  const std::size_t n = g.nodes.size();
  auto cheap = [&](std::size_t i) -> const ir::OpDef* {
    const ir::Node& node = g.nodes[i];
    if (node.outputs.size() != 1 || node.inputs.empty()) return nullptr;
    if (std::any_of(node.inputs.begin(), node.inputs.end(), [](const std::string& v) { return v.empty(); }))
      return nullptr;
    const ir::OpDef* def = ir::OpRegistry::get().find(node.op);
    // Views and transposes cost nothing: the lowering reads through them.
    // A materialize is where the extractor chose to store a value, not a
    // step of a chain fused into its readers.
    return def && ((def->elementwise && node.op != "materialize") || reads_through(node)) ? def : nullptr;
  };
  auto work_of = [](const ir::OpDef* def) { return def->elementwise ? def->unit_work : 0.0; };

  std::map<std::string, std::vector<std::size_t>> consumers;
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    for (const std::string& v : g.nodes[i].inputs)
      if (!v.empty()) consumers[v].push_back(i);
    for (const std::string& v : g.nodes[i].outputs) producer[v] = i;
  }
  std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  // When a node runs, as the lowering orders work: a cheap node's result is
  // computed where its first reader that is not cheap needs it (elementwise
  // chains are fused into their readers), any other node in graph order.
  std::vector<std::size_t> when(n, n);
  for (std::size_t i = n; i-- > 0;) {
    if (!live[i]) continue;
    if (!cheap(i)) {
      when[i] = i;
      continue;
    }
    const std::string& v = g.nodes[i].outputs[0];
    std::size_t t = n;  // a graph output's: where the outputs are written
    for (std::size_t c : consumers[v]) t = std::min(t, when[c]);
    when[i] = t;
  }
  // The times a value is read.
  auto reads = [&](const std::string& v) {
    std::vector<std::size_t> t;
    for (std::size_t c : consumers[v]) t.push_back(when[c]);
    if (outputs.count(v)) t.push_back(n);
    std::sort(t.begin(), t.end());
    return t;
  };
  auto bytes_of = [&](const std::string& v) -> std::size_t {
    auto c = ir::checked_static_numel(types->at(v).shape);
    return c ? static_cast<std::size_t>(*c) * ir::dtype_size(types->at(v).dtype) : 0;
  };
  auto last_read = [&](const std::string& v) -> std::size_t {
    auto t = reads(v);
    return t.empty() ? 0 : t.back();
  };

  std::vector<Remat> remats;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live[i] || !cheap(i)) continue;
    const std::string& v = g.nodes[i].outputs[0];
    if (bytes_of(v) < o.min_bytes || outputs.count(v)) continue;
    const std::vector<std::size_t> t = reads(v);
    // The first read after a gap of min_distance (in run order).
    const std::size_t none = n + 1;  // (n: read where the outputs are written)
    std::size_t last = when[i], at = none;
    for (std::size_t k : t) {
      if (k >= last + o.min_distance) {
        at = k;
        break;
      }
      last = std::max(last, k);
    }
    if (at == none) continue;
    // The cheap nodes between v and values alive at `at` anyway (inputs,
    // weights, values read within min_distance of it or later). An operand
    // alive past v's early reads anyway, or not cheap to compute, is kept
    // alive until `at`: worth it only when v frees more (bytes times run
    // order) than those extensions cost.
    std::set<std::size_t> chain;
    std::set<std::string> extended;
    double work = 0;
    std::function<bool(std::size_t)> take = [&](std::size_t node) {
      if (chain.count(node)) return true;
      const ir::OpDef* def = cheap(node);
      if (!def || chain.size() >= 8) return false;
      work += work_of(def);
      if (work > o.max_unit_work) return false;
      chain.insert(node);
      for (const std::string& x : g.nodes[node].inputs) {
        if (!producer.count(x) || last_read(x) + o.min_distance >= at) continue;
        if (last_read(x) > last || !cheap(producer.at(x))) {
          extended.insert(x);
          continue;
        }
        if (!take(producer.at(x))) return false;
      }
      return true;
    };
    if (!take(i)) continue;
    double freed = double(bytes_of(v)) * double(at - last), cost = 0;
    for (const std::string& x : extended) cost += double(bytes_of(x)) * double(at - last_read(x));
    if (cost >= freed) continue;
    Remat r{v, n, {}, std::vector<std::size_t>(chain.begin(), chain.end())};
    for (std::size_t c : consumers[v])
      if (when[c] >= at) {
        r.readers.insert(c);
        r.before = std::min(r.before, c);
      }
    remats.push_back(std::move(r));
    report.values += 1;
    report.bytes += bytes_of(v);
  }
  if (remats.empty()) return report;

  // Insert each chain before its first late reader; the late readers read
  // the copy. A chain reads the copy of another rematerialized value where
  // that copy comes first (either computes the same).
  std::map<std::size_t, std::vector<const Remat*>> before;
  std::map<std::string, const Remat*> remat_of;
  for (const Remat& r : remats) {
    before[r.before].push_back(&r);
    remat_of[r.value] = &r;
  }
  auto copy_name = [](const Remat& r) { return r.value + "/remat" + std::to_string(r.before); };
  std::vector<ir::Node> out;
  out.reserve(n + remats.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (auto it = before.find(i); it != before.end())
      for (const Remat* r : it->second) {
        // (A chain's other nodes get names of their own: another chain
        // may compute the same node again at the same place.)
        std::map<std::string, std::string> renamed;
        for (std::size_t c : r->chain) {
          ir::Node copy = g.nodes[c];
          const std::string result = copy.outputs[0];
          copy.name = (copy.name.empty() ? result : copy.name) + "/remat" + std::to_string(i) + "/" + r->value;
          for (std::string& x : copy.inputs) {
            if (renamed.count(x)) {
              x = renamed[x];
            } else if (auto rx = remat_of.find(x); rx != remat_of.end() && rx->second->before < i) {
              x = copy_name(*rx->second);
            }
          }
          renamed[result] = c == r->chain.back() ? copy_name(*r) : copy.name;
          copy.outputs = {renamed[result]};
          out.push_back(std::move(copy));
        }
      }
    ir::Node node = g.nodes[i];
    for (std::string& x : node.inputs)
      if (auto rx = remat_of.find(x); rx != remat_of.end() && rx->second->readers.count(i)) x = copy_name(*rx->second);
    out.push_back(std::move(node));
  }
  g.nodes = std::move(out);
  return report;
}

}  // namespace saturn::pipeline
