// Writing an e-graph for other tools.
//
// to_serialized_json emits the egraph-serialize format that extraction-gym
// and egglog's tooling read: "nodes" maps a node id to {op, children (node
// ids: the first live node of each child class), eclass, cost}, and
// "root_eclasses" lists the classes extraction must start from.
// to_dot emits Graphviz with one cluster per e-class and edges from each node
// to the cluster of its child class.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "egraph/egraph.hpp"

namespace saturn::egraph {

using NodeCost = std::function<double(Op)>;

std::string to_serialized_json(const EGraph& g, std::span<const EClassId> roots, const NodeCost& cost = {});
std::string to_dot(const EGraph& g);

}  // namespace saturn::egraph
