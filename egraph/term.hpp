// A term: a tree of operators stored flat in post-order (egg's RecExpr).
//
// Children always precede their parent, so the last node is the root and a
// single forward pass can add a term to an e-graph or evaluate it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/op.hpp"

namespace saturn::egraph {

struct TermNode {
  Op op;
  std::vector<std::uint32_t> children;  // indices of earlier nodes
};

struct Term {
  std::vector<TermNode> nodes;

  std::uint32_t push(Op op, std::vector<std::uint32_t> children = {}) {
    nodes.push_back(TermNode{op, std::move(children)});
    return static_cast<std::uint32_t>(nodes.size() - 1);
  }
  bool empty() const { return nodes.empty(); }
  std::uint32_t root() const { return static_cast<std::uint32_t>(nodes.size() - 1); }
  // Number of nodes of the tree it denotes (shared subterms counted again).
  double tree_size() const;
  // The s-expression, e.g. (+ a (* b 2)).
  std::string to_string() const;
};

// Adds every node of the term; returns the class of its root.
EClassId add_term(EGraph& g, const Term& t);

}  // namespace saturn::egraph
