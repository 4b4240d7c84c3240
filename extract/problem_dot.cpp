#include "extract/problem_dot.hpp"

#include <algorithm>
#include <sstream>

#include "ir/graph_dot.hpp"

namespace saturn::extract {

namespace {

std::string cost_text(double c) {
  if (c == kInfinity) return "inf";
  std::ostringstream o;
  o.precision(4);
  o << c;
  return o.str();
}

}  // namespace

std::string problem_to_dot(const ExtractionProblem& p, const std::vector<std::int32_t>& choice) {
  // The program: the chosen nodes of the classes the roots need through them
  // (an extractor may choose in every class).
  std::vector<bool> needed(p.classes.size(), false);
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (needed[c] || c >= choice.size() || choice[c] < 0) continue;
    needed[c] = true;
    for (std::uint32_t k : p.nodes[static_cast<std::size_t>(choice[c])].children) stack.push_back(k);
  }
  const auto chosen = [&](std::uint32_t node) {
    const std::uint32_t c = p.nodes[node].cls;
    return needed[c] && choice[c] == static_cast<std::int32_t>(node);
  };
  std::vector<bool> root(p.classes.size(), false);
  for (std::uint32_t r : p.roots) root[r] = true;
  std::ostringstream o;
  o << "digraph egraph {\n  compound=true;\n  clusterrank=local;\n"
    << "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];\n";
  for (std::size_t c = 0; c < p.classes.size(); ++c) {
    if (p.classes[c].empty()) continue;
    o << "  subgraph cluster_" << c
      << " {\n    style=dotted;\n    label=" << ir::dot_quoted("e" + std::to_string(c) + (root[c] ? " (root)" : ""))
      << ";\n";
    if (root[c]) o << "    penwidth=2;\n";
    for (std::uint32_t n : p.classes[c]) {
      o << "    n" << n << " [label=" << ir::dot_quoted(p.nodes[n].op + "\n" + cost_text(p.nodes[n].cost));
      if (chosen(n)) o << ", style=\"rounded,filled\", fillcolor=\"#fde9a9\", penwidth=2";
      o << "];\n";
    }
    o << "  }\n";
  }
  for (std::size_t n = 0; n < p.nodes.size(); ++n) {
    const auto& kids = p.nodes[n].children;
    for (std::size_t i = 0; i < kids.size(); ++i) {
      const std::uint32_t k = kids[i];
      if (p.classes[k].empty()) continue;
      // Into the child class's cluster: at its chosen node when it has one.
      std::uint32_t target = p.classes[k].front();
      if (k < choice.size() && choice[k] >= 0) target = static_cast<std::uint32_t>(choice[k]);
      // (A node of the child class itself, a cycle: to the node, as a
      // cluster cannot be both the edge's tail and its head.)
      std::vector<std::string> attrs;
      if (k != p.nodes[n].cls) attrs.push_back("lhead=cluster_" + std::to_string(k));
      if (kids.size() > 1) attrs.push_back("label=\"" + std::to_string(i) + "\"");
      if (chosen(static_cast<std::uint32_t>(n))) attrs.push_back("penwidth=2");
      o << "  n" << n << " -> n" << target;
      for (std::size_t a = 0; a < attrs.size(); ++a) o << (a ? ", " : " [") << attrs[a];
      o << (attrs.empty() ? ";\n" : "];\n");
    }
  }
  o << "}\n";
  return o.str();
}

}  // namespace saturn::extract
