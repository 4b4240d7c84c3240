#include "ir/graph.hpp"

#include <algorithm>
#include <set>

namespace saturn::ir {

std::string describe(const Node& n) {
  std::string s = "node";
  if (!n.name.empty()) s += " '" + n.name + "'";
  s += " (" + (n.source_op.empty() ? n.op : n.source_op) + ")";
  return s;
}

std::vector<bool> live_nodes(const Graph& g) {
  std::set<std::string> needed(g.outputs.begin(), g.outputs.end());
  std::vector<bool> live(g.nodes.size(), false);
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    live[i] = std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return needed.count(o); });
    if (live[i]) needed.insert(n.inputs.begin(), n.inputs.end());
  }
  return live;
}

Expected<std::map<std::string, ValueType>> infer_types(const Graph& g) {
  std::map<std::string, ValueType> types;
  auto fail = [&](const std::string& msg) { return Diagnostic{SourceLoc{g.source, 0, 0}, msg}; };
  for (const GraphValue& v : g.inputs) {
    if (!checked_static_numel(v.type.shape))
      return fail("input '" + v.name + "' has shape " + to_string(v.type.shape) + ": more than 2^48 elements");
    types[v.name] = v.type;
  }
  for (const auto& [name, t] : g.initializers) types[name] = ValueType{t.dtype(), shape_of(t.dims())};
  for (const Node& n : g.nodes) {
    const OpDef* def = OpRegistry::get().find(n.op);
    if (!def) return fail(describe(n) + ": unknown op '" + n.op + "'");
    // (Operand counts are checked by the shape rule itself: OpRegistry::add.)
    std::vector<TypedInput> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.push_back(TypedInput{{}, nullptr, false});
        continue;
      }
      auto it = types.find(in);
      if (it == types.end()) return fail(describe(n) + ": operand '" + in + "' is not defined before it is used");
      auto init = g.initializers.find(in);
      ins.push_back(TypedInput{it->second, init == g.initializers.end() ? nullptr : &init->second, true});
    }
    try {
      auto outs = def->infer(n.attrs, ins, n.outputs.size());
      if (def->num_outputs >= 0 && n.outputs.size() > outs.size())
        return fail(describe(n) + ": " + n.op + " has " + std::to_string(outs.size()) + " results, the node names " +
                    std::to_string(n.outputs.size()));
      for (std::size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) {
        if (n.outputs[k].empty()) continue;
        // Single assignment: a second producer of a name would silently win.
        if (types.count(n.outputs[k]))
          return fail(describe(n) + ": value '" + n.outputs[k] +
                      "' is already defined (by a graph input, an initializer or another node)");
        types[n.outputs[k]] = outs[k];
      }
    } catch (const ShapeError& e) {
      return fail(describe(n) + ": " + e.message);
    }
  }
  for (const std::string& o : g.outputs)
    if (!types.count(o)) return fail("graph output '" + o + "' is not produced by any node");
  return types;
}

}  // namespace saturn::ir
