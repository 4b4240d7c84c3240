// Writes a flat post-order tree (Term, Pattern) as an s-expression.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace saturn::egraph {

// `leaf(node, out)` may write a node itself (a pattern variable) and return
// true; otherwise the node prints as its operator, applied to its children.
template <class Node, class Leaf>
void print_tree(const std::vector<Node>& nodes, std::uint32_t i, Leaf&& leaf, std::string& out) {
  const Node& n = nodes[i];
  if (leaf(n, out)) return;
  if (n.children.empty()) {
    out += n.op.name();
    return;
  }
  out += '(';
  out += n.op.name();
  for (auto c : n.children) {
    out += ' ';
    print_tree(nodes, c, leaf, out);
  }
  out += ')';
}

}  // namespace saturn::egraph
