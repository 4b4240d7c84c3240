// Why two ids are in one e-class: a proof forest over ids (egg's
// explanations, kept at the level of the merges that made the classes).
//
// Invariant: the forest's trees are exactly the union-find's classes. Each
// merge of two distinct classes adds one edge, between the two ids merge()
// was given, labelled with its justification: a rule application (the rule,
// which right-hand side, the match's bindings), congruence (two nodes of
// one operator whose children became equal), an analysis (a constant
// folded into its class), or given (a caller's union). The path between two
// ids in their tree is a chain of such equalities; a congruence step is
// explained in turn by the paths between the two nodes' children. An
// e-graph keeps a forest only when asked before its first node
// (EGraph::enable_explanations): otherwise merges record nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egraph/ids.hpp"

namespace saturn::egraph {

class Rewrite;

struct Justification {
  enum class Kind : std::uint8_t { Given, Rule, Congruence, Analysis };
  Kind kind = Kind::Given;
  const Rewrite* rule = nullptr;   // Rule: owned by the caller's rule set, which outlives the explanation
  std::uint32_t rhs = 0;           // Rule: which left/right-hand side pair of a multirule
  std::vector<EClassId> bindings;  // Rule: the match's bindings (left-hand side variables, then :let)
  NodeId left, right;              // Congruence: the two nodes

  static Justification of_rule(const Rewrite* r, std::uint32_t rhs, std::vector<EClassId> bindings) {
    Justification j;
    j.kind = Kind::Rule;
    j.rule = r;
    j.rhs = rhs;
    j.bindings = std::move(bindings);
    return j;
  }
  static Justification of_congruence(NodeId a, NodeId b) {
    Justification j;
    j.kind = Kind::Congruence;
    j.left = a;
    j.right = b;
    return j;
  }
  static Justification of_analysis() {
    Justification j;
    j.kind = Kind::Analysis;
    return j;
  }
};

// One equality of a chain: `from` equals `to` by `why`. `forward`: the step
// goes as the merge was given (from was merge()'s first id), so a rule step
// rewrites its left-hand side into its right-hand side.
struct ProofStep {
  EClassId from, to;
  const Justification* why = nullptr;
  bool forward = true;
};

class ProofForest {
 public:
  void add_id();  // one per id the e-graph hands out, in order
  // Records the merge of a and b (ids in two different trees).
  void link(EClassId a, EClassId b, Justification why);
  // The chain of equalities from x to y (ids of one tree); empty when x == y.
  std::vector<ProofStep> path(EClassId x, EClassId y) const;

 private:
  struct Edge {
    std::uint32_t parent;  // itself at a root
    std::uint32_t reason;  // index into reasons_, for the edge to parent
  };
  struct Reason {
    EClassId a, b;  // what merge() was given
    Justification why;
  };
  void reroot(std::uint32_t x);
  std::vector<Edge> parent_;
  std::vector<Reason> reasons_;
};

class EGraph;

// Replays a chain from x to y against the e-graph it was recorded in
// (rebuilt): consecutive steps meet, each rule step's left-hand side
// instantiated with its bindings is in the class of the step's left end
// and its right-hand side in the other's (at most `depth` levels of
// congruence steps, whose children's chains are replayed in turn). An
// empty string, or what does not hold.
std::string replay(const EGraph& g, const std::vector<ProofStep>& chain, EClassId x, EClassId y, int depth = 8);

}  // namespace saturn::egraph
