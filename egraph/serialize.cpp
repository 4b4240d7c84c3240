#include "egraph/serialize.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

namespace saturn::egraph {

std::string to_serialized_json(const EGraph& g, std::span<const EClassId> roots, const NodeCost& cost) {
  using nlohmann::json;
  json nodes = json::object();
  auto representative = [&](EClassId c) { return std::to_string(g.nodes(g.find(c)).front().id.v); };
  for (EClassId c : g.class_ids()) {
    for (NodeId n : g.nodes(c)) {
      json kids = json::array();
      for (EClassId k : g.children(n)) kids.push_back(representative(k));
      nodes[std::to_string(n.v)] = json{{"op", g.op(n).name()},
                                        {"children", std::move(kids)},
                                        {"eclass", std::to_string(c.v)},
                                        {"cost", cost ? cost(g.op(n)) : 1.0}};
    }
  }
  json root_classes = json::array();
  for (EClassId r : roots) root_classes.push_back(std::to_string(g.find(r).v));
  json out = {{"nodes", std::move(nodes)}, {"root_eclasses", std::move(root_classes)}, {"class_data", json::object()}};
  return out.dump(1);
}

std::string to_dot(const EGraph& g) {
  using nlohmann::json;
  std::ostringstream o;
  o << "digraph egraph {\n  compound=true;\n  clusterrank=local;\n";
  for (EClassId c : g.class_ids()) {
    o << "  subgraph cluster_" << c.v << " {\n    style=dotted;\n    label=\"e" << c.v << "\";\n";
    for (NodeId n : g.nodes(c)) o << "    n" << n.v << " [label=" << json(g.op(n).name()).dump() << "];\n";
    o << "  }\n";
  }
  for (EClassId c : g.class_ids()) {
    for (NodeId n : g.nodes(c)) {
      auto kids = g.children(n);
      for (std::size_t i = 0; i < kids.size(); ++i) {
        EClassId k = g.find(kids[i]);
        o << "  n" << n.v << " -> n" << g.nodes(k).front().id.v << " [lhead=cluster_" << k.v;
        if (kids.size() > 1) o << ", label=\"" << i << "\"";
        o << "];\n";
      }
    }
  }
  o << "}\n";
  return o.str();
}

}  // namespace saturn::egraph
