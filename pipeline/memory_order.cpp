#include "pipeline/memory_order.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace saturn::pipeline {

bool reads_through(const ir::Node& n) {
  const ir::OpDef* def = ir::OpRegistry::get().find(n.op);
  return def && (def->view || n.op == "transpose" || n.op == "expand");
}

bool order_for_memory(ir::Graph& g) {
  auto types = ir::infer_types(g);
  if (!types) return false;
  const std::vector<bool> live = ir::live_nodes(g);
  const std::size_t n = g.nodes.size();
  std::set<std::string> kept(g.outputs.begin(), g.outputs.end());
  std::map<std::string, long long> bytes;  // 0 for views: no storage of their own
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < n; ++i) {
    const bool view = reads_through(g.nodes[i]);
    for (const std::string& o : g.nodes[i].outputs) {
      producer[o] = i;
      auto c = ir::checked_static_numel(types->at(o).shape);
      bytes[o] =
          view || !c ? 0 : static_cast<long long>(*c) * static_cast<long long>(ir::dtype_size(types->at(o).dtype));
    }
  }
  // Readers left per value; operands not yet computed per node.
  std::map<std::string, std::size_t> readers;
  std::vector<std::size_t> waiting(n, 0);
  std::map<std::string, std::vector<std::size_t>> consumers;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    ++count;
    std::set<std::string> distinct;
    for (const std::string& x : g.nodes[i].inputs)
      if (!x.empty()) {
        ++readers[x];
        if (producer.count(x) && distinct.insert(x).second) {
          ++waiting[i];
          consumers[x].push_back(i);
        }
      }
  }
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (live[i] && waiting[i] == 0) ready.insert(i);
  auto added = [&](std::size_t i) {
    long long c = 0;
    for (const std::string& o : g.nodes[i].outputs) c += bytes[o];
    std::map<std::string, std::size_t> reads;
    for (const std::string& x : g.nodes[i].inputs)
      if (!x.empty()) ++reads[x];
    for (const auto& [x, k] : reads)
      if (readers[x] == k && !kept.count(x) && producer.count(x)) c -= bytes[x];
    return c;
  };
  std::vector<std::size_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    std::size_t best = *ready.begin();
    long long best_added = added(best);
    for (std::size_t i : ready)
      if (long long a = added(i); a < best_added) best = i, best_added = a;
    ready.erase(best);
    order.push_back(best);
    for (const std::string& x : g.nodes[best].inputs)
      if (!x.empty()) --readers[x];
    for (const std::string& o : g.nodes[best].outputs)
      for (std::size_t c : consumers[o])
        if (--waiting[c] == 0) ready.insert(c);
  }
  if (order.size() != count) return false;  // (a cycle: leave the graph as it is)
  // Views cost nothing where they are, so the greedy takes them as soon as
  // they are ready; but a view keeps its operand's storage alive, and a
  // value recomputed before its late reader (pipeline/rematerialize.hpp)
  // must not be recomputed at the view's early place. Each view moves to
  // just before its first reader (later views first, so chains follow).
  std::vector<std::size_t> position(n, 0);
  for (std::size_t k = order.size(); k-- > 0;) {
    const std::size_t i = order[k];
    const bool view = reads_through(g.nodes[i]);
    if (!view || g.nodes[i].outputs.size() != 1 || kept.count(g.nodes[i].outputs[0])) continue;
    for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
    std::size_t first = order.size();
    for (std::size_t c : consumers[g.nodes[i].outputs[0]]) first = std::min(first, position[c]);
    if (first == order.size() || first <= k + 1) continue;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(first - 1), i);
  }
  std::vector<ir::Node> nodes;
  nodes.reserve(count);
  for (std::size_t i : order) nodes.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(nodes);  // (dead nodes dropped: nothing reads them)
  return true;
}

}  // namespace saturn::pipeline
