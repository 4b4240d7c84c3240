#include "ir/graph_dot.hpp"

#include <algorithm>
#include <sstream>

namespace saturn::ir {

std::string dot_quoted(const std::string& text) {
  std::string q = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

namespace {

std::string type_of(const std::map<std::string, ValueType>& types, const std::string& value) {
  auto it = types.find(value);
  return it == types.end() ? std::string() : std::string(dtype_name(it->second.dtype)) + to_string(it->second.shape);
}

}  // namespace

std::string graph_to_dot(const Graph& g, const std::map<std::string, ValueType>& types,
                         const std::vector<bool>& highlighted) {
  std::ostringstream o;
  o << "digraph " << dot_quoted(g.name.empty() ? "graph" : g.name) << " {\n"
    << "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];\n"
    << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  // Where each value comes from: a graph input's node, or a node's.
  std::map<std::string, std::string> producer;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    const std::string id = "in" + std::to_string(i);
    producer[g.inputs[i].name] = id;
    o << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#dbe9f6\", label="
      << dot_quoted(g.inputs[i].name + "\n" + type_of(types, g.inputs[i].name)) << "];\n";
  }
  const std::vector<bool> live = live_nodes(g);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const std::string id = "n" + std::to_string(n);
    std::string label = node.op;
    if (!node.name.empty() && node.name != node.op) label += "\n" + node.name;
    for (const std::string& in : node.inputs)
      if (g.initializers.count(in)) label += "\n" + in + ": " + type_of(types, in);
    o << "  " << id << " [label=" << dot_quoted(label);
    if (!live[n])
      o << ", style=\"rounded,dashed\", color=grey, fontcolor=grey";
    else if (n < highlighted.size() && highlighted[n])
      o << ", style=\"rounded,filled\", fillcolor=\"#ffd966\"";
    // The id in the picture (an SVG element's <title>) names the node.
    o << ", id=" << dot_quoted("node-" + std::to_string(n)) << "];\n";
    for (const std::string& out : node.outputs)
      if (!out.empty()) producer[out] = id;
  }
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const std::vector<std::string>& inputs = g.nodes[n].inputs;
    // (An absent optional operand or a weight has no edge; operand numbers
    // are drawn only where two edges come in.)
    const auto drawn = [&](const std::string& v) { return !v.empty() && producer.count(v) != 0; };
    const auto edges = std::count_if(inputs.begin(), inputs.end(), drawn);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (!drawn(inputs[k])) continue;
      o << "  " << producer.at(inputs[k]) << " -> n" << n << " [label=" << dot_quoted(type_of(types, inputs[k]));
      if (edges > 1) o << ", headlabel=" << dot_quoted(std::to_string(k));
      o << "];\n";
    }
  }
  for (std::size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string id = "out" + std::to_string(i);
    o << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#e2f0d9\", label="
      << dot_quoted(g.outputs[i] + "\n" + type_of(types, g.outputs[i])) << "];\n";
    if (auto from = producer.find(g.outputs[i]); from != producer.end())
      o << "  " << from->second << " -> " << id << ";\n";
  }
  o << "}\n";
  return o.str();
}

}  // namespace saturn::ir
