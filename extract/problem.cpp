#include "extract/problem.hpp"

#include "extract/dag_pricer.hpp"

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
  std::vector<LayoutPrice<egraph::NodeId>> layouts;  // per node
  for (std::uint32_t c = 0; c < ids.size(); ++c) {
    for (egraph::NodeId n : g.nodes(ids[c])) {
      ExtractionProblem::Node node;
      node.cls = c;
      NodePrice np = price(g, n);
      node.cost = np.cost;
      node.fused = std::move(np.fused);
      layouts.push_back(std::move(np.layout));
      p.fusion |= node.fused.role != FuseRole::None;
      for (egraph::EClassId k : g.children(n)) node.children.push_back(p.class_index(g.find(k)));
      node.op = g.op(n).name();
      p.classes[c].push_back(static_cast<std::uint32_t>(p.nodes.size()));
      p.nodes.push_back(std::move(node));
      p.node_ids.push_back(n);
    }
  }
  for (egraph::EClassId r : roots) p.roots.push_back(p.class_index(g.find(r)));
  // Layout prices name e-nodes; here they name the problem's nodes.
  std::unordered_map<std::uint32_t, std::uint32_t> index_of;
  for (std::uint32_t i = 0; i < p.node_ids.size(); ++i) index_of.emplace(p.node_ids[i].v, i);
  for (std::uint32_t i = 0; i < p.nodes.size(); ++i)
    for (egraph::NodeId n : layouts[i].after)
      if (auto it = index_of.find(n.v); it != index_of.end()) {
        p.nodes[i].layout.after.push_back(it->second);
        p.nodes[i].layout.cost = layouts[i].cost;
      }
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

double dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  return DagPricer(p).dag_cost(choice);
}

double unfused_dag_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  return DagPricer(p).unfused_dag_cost(choice);
}

double tree_cost(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  return DagPricer(p).tree_cost(choice);
}

}  // namespace saturn::extract
