#include "extract/problem.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace saturn::extract {

std::uint32_t ExtractionProblem::class_index(egraph::EClassId c) const {
  auto it = std::lower_bound(class_ids.begin(), class_ids.end(), c);
  return static_cast<std::uint32_t>(it - class_ids.begin());
}

ExtractionProblem problem_from_egraph(const egraph::EGraph& g, std::span<const egraph::EClassId> roots,
                                      const NodePricing& price) {
  ExtractionProblem p;
  auto ids = g.class_ids();  // increasing, so class_index can bisect
  p.class_ids.assign(ids.begin(), ids.end());
  p.classes.resize(ids.size());
  for (std::uint32_t c = 0; c < ids.size(); ++c) {
    for (egraph::NodeId n : g.nodes(ids[c])) {
      ExtractionProblem::Node node;
      node.cls = c;
      NodePrice np = price(g, n);
      node.cost = np.cost;
      node.fused = std::move(np.fused);
      p.fusion |= node.fused.role != FuseRole::None;
      for (egraph::EClassId k : g.children(n)) node.children.push_back(p.class_index(g.find(k)));
      node.op = g.op(n).name();
      p.classes[c].push_back(static_cast<std::uint32_t>(p.nodes.size()));
      p.nodes.push_back(std::move(node));
      p.node_ids.push_back(n);
    }
  }
  for (egraph::EClassId r : roots) p.roots.push_back(p.class_index(g.find(r)));
  return p;
}

ExtractionProblem problem_from_egraph(const egraph::EGraph& g, std::span<const egraph::EClassId> roots,
                                      const NodeCost& cost) {
  return problem_from_egraph(g, roots, [&cost](const egraph::EGraph& eg, egraph::NodeId n) {
    return NodePrice{cost(eg, n), {}};
  });
}

Expected<ExtractionProblem> read_serialized_json(const std::string& text, const std::string& path) {
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{path, 0, 0}, msg}; };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_object())
    return fail("expected an egraph-serialize object with a \"nodes\" object");
  ExtractionProblem p;
  std::unordered_map<std::string, std::uint32_t> cls, node;
  auto class_of = [&](const std::string& name) {
    auto [it, fresh] = cls.emplace(name, static_cast<std::uint32_t>(p.classes.size()));
    if (fresh) p.classes.emplace_back();
    return it->second;
  };
  for (auto& [id, n] : j["nodes"].items()) {
    if (!n.is_object() || !n.contains("eclass") || !n.contains("op"))
      return fail("node \"" + id + "\": expected an object with \"op\" and \"eclass\"");
    node.emplace(id, static_cast<std::uint32_t>(p.nodes.size()));
    ExtractionProblem::Node x;
    const auto& ec = n["eclass"];
    x.cls = class_of(ec.is_string() ? ec.get<std::string>() : ec.dump());
    x.op = n["op"].is_string() ? n["op"].get<std::string>() : n["op"].dump();
    if (n.contains("cost")) {
      if (!n["cost"].is_number()) return fail("node \"" + id + "\": \"cost\" must be a number");
      x.cost = n["cost"].get<double>();
      // Negative costs are rewards (extraction-gym's maxsat set): extractors
      // take them; a NaN orders nothing.
      if (std::isnan(x.cost)) return fail("node \"" + id + "\": \"cost\" is NaN");
    }
    p.classes[x.cls].push_back(static_cast<std::uint32_t>(p.nodes.size()));
    p.nodes.push_back(std::move(x));
  }
  // Children name nodes; a node stands for its class.
  std::size_t i = 0;
  for (auto& [id, n] : j["nodes"].items()) {
    if (n.contains("children")) {
      if (!n["children"].is_array()) return fail("node \"" + id + "\": \"children\" must be an array");
      for (const auto& k : n["children"]) {
        auto it = node.find(k.is_string() ? k.get<std::string>() : k.dump());
        if (it == node.end()) return fail("node \"" + id + "\": child " + k.dump() + " is not a node");
        p.nodes[i].children.push_back(p.nodes[it->second].cls);
      }
    }
    ++i;
  }
  if (j.contains("root_eclasses")) {
    for (const auto& r : j["root_eclasses"]) {
      auto it = cls.find(r.is_string() ? r.get<std::string>() : r.dump());
      if (it == cls.end()) return fail("root e-class " + r.dump() + " has no nodes");
      p.roots.push_back(it->second);
    }
  }
  if (p.roots.empty()) return fail("no \"root_eclasses\": nothing to extract");
  return p;
}

namespace {

// Visits the classes a choice needs, children first; false on a cycle or a
// missing choice. Hand-written on purpose: the DAG extractor prices
// thousands of choices, and this walk touches only the classes a choice
// needs, where Boost.Graph's DFS (children_first in class_graph.hpp) needs a
// graph built over every class first: measured on the extraction-gym files,
// dag-greedy took 1628 ms per file on average with it against 17.5 ms.
template <class F>
bool walk(const ExtractionProblem& p, const std::vector<std::int32_t>& choice, F&& visit) {
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(p.classes.size(), kNew);
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;
  for (std::uint32_t root : p.roots) {
    if (state[root] == kDone) continue;
    stack.emplace_back(root, 0);
    state[root] = kOpen;
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      if (choice[c] < 0) return false;
      const auto& kids = p.nodes[static_cast<std::size_t>(choice[c])].children;
      if (next < kids.size()) {
        std::uint32_t k = kids[next++];
        if (state[k] == kOpen) return false;
        if (state[k] == kNew) {
          state[k] = kOpen;
          stack.emplace_back(k, 0);
        }
        continue;
      }
      state[c] = kDone;
      visit(c);
      stack.pop_back();
    }
  }
  return true;
}

// The DAG cost with fused chains priced once: an elementwise node used once
// (not an output) joins its consumer's kernel when the consumer is an
// elementwise node of the same size or a reduction, as the lowering fuses
// it. A chain costs max(its compute, the bytes it reads from outside plus
// its result's write) plus one kernel overhead.
double fused_dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice,
                      const std::vector<std::uint32_t>& order) {
  const auto node_of = [&](std::uint32_t c) -> const ExtractionProblem::Node& {
    return p.nodes[static_cast<std::size_t>(choice[c])];
  };
  // Scratch reused across calls: the DAG extractor prices thousands of
  // choices of one problem.
  thread_local std::vector<std::uint32_t> uses;
  thread_local std::vector<char> joined;
  thread_local std::vector<double> compute, bytes;
  uses.assign(p.classes.size(), 0);
  for (std::uint32_t r : p.roots) uses[r] += 2;  // an output is stored
  for (std::uint32_t c : order)
    for (std::uint32_t k : node_of(c).children) ++uses[k];
  const auto joins = [&](const ExtractionProblem::Node& consumer, std::uint32_t k) {
    if (uses[k] != 1 || consumer.fused.role == FuseRole::None) return false;
    const FusedPrice& producer = node_of(k).fused;
    if (producer.role != FuseRole::Elementwise || producer.boundary) return false;
    return consumer.fused.role == FuseRole::Reduction || consumer.fused.out_elems == producer.out_elems;
  };
  joined.assign(p.classes.size(), 0);
  for (std::uint32_t c : order)
    for (std::uint32_t k : node_of(c).children)
      if (joins(node_of(c), k)) joined[k] = 1;
  // Children come first in `order`, so a chain's sums are complete when its
  // consumer is reached.
  compute.assign(p.classes.size(), 0);
  bytes.assign(p.classes.size(), 0);
  double total = 0;
  for (std::uint32_t c : order) {
    const ExtractionProblem::Node& n = node_of(c);
    if (n.fused.role == FuseRole::None) {
      total += n.cost;
      continue;
    }
    double work = n.fused.compute_us, moved = 0;
    bool joins_any = false;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const std::uint32_t k = n.children[i];
      if (joined[k]) {
        const double times = i == 0 ? n.fused.operand_passes : 1;
        work += compute[k] * times;
        moved += bytes[k] * times;
        joins_any = true;
      } else if (i < n.fused.read_us.size()) {
        moved += n.fused.read_us[i];
      }
    }
    if (n.fused.boundary && !joins_any) continue;  // already in memory: no kernel
    if (joined[c]) {
      compute[c] = work;
      bytes[c] = moved;
    } else {
      total += std::max(work, moved + n.fused.write_us) + n.fused.overhead_us;
    }
  }
  return total;
}

}  // namespace

double dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  double total = 0;
  thread_local std::vector<std::uint32_t> order;
  order.clear();
  if (!walk(p, choice, [&](std::uint32_t c) {
        total += p.nodes[static_cast<std::size_t>(choice[c])].cost;
        if (p.fusion) order.push_back(c);
      }))
    return kInfinity;
  if (p.fusion && std::isfinite(total)) return fused_dag_cost(p, choice, order);
  return total;
}

double unfused_dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  double total = 0;
  if (!walk(p, choice, [&](std::uint32_t c) { total += p.nodes[static_cast<std::size_t>(choice[c])].cost; }))
    return kInfinity;
  return total;
}

double tree_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  std::vector<double> cost(p.classes.size(), 0);
  bool ok = walk(p, choice, [&](std::uint32_t c) {
    const auto& n = p.nodes[static_cast<std::size_t>(choice[c])];
    double s = n.cost;
    for (std::uint32_t k : n.children) s = cost_sum(s, cost[k]);
    cost[c] = s;
  });
  if (!ok) return kInfinity;
  double total = 0;
  for (std::uint32_t r : p.roots) total = cost_sum(total, cost[r]);
  return total;
}

}  // namespace saturn::extract
