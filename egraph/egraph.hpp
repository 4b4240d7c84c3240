// The e-graph: e-classes of equivalent e-nodes, generic over the operator set.
//
// Invariants (egg's), restored by rebuild() after any sequence of add/merge:
//  - every live e-node's children are canonical class ids;
//  - the hash-cons holds each live node exactly once and no two live nodes
//    are equal (congruent nodes have been merged and the duplicate retired);
//  - each class's node list holds its live nodes sorted by (op, children), so
//    the nodes of one operator are a contiguous run;
//  - every analysis holds the join of make() over each class's nodes.
// Between rebuilds add() and merge() stay correct (lookups canonicalize their
// children first) but congruence may be incomplete: search only after
// rebuild(). Node and class ids share one index space: a node founds the
// class with its own id, and find(EClassId(node.v)) is the node's class.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "egraph/analysis.hpp"
#include "egraph/explain.hpp"
#include "egraph/hashcons.hpp"
#include "egraph/ids.hpp"
#include "egraph/node_store.hpp"
#include "egraph/op.hpp"
#include "egraph/union_find.hpp"

namespace saturn::egraph {

// An entry of a class's node list: the node, and the epoch in which it last
// moved into this class by a merge (0: it founded or was added to it). Kept
// beside the id so that a merge stamps the absorbed nodes with sequential
// writes into the list it appends anyway, not scattered writes by node id.
struct ClassNode {
  NodeId id;
  std::uint32_t moved = 0;
  operator NodeId() const { return id; }  // NOLINT(google-explicit-constructor)
};

class EGraph {
 public:
  EGraph() = default;
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;
  EGraph(EGraph&&) = default;
  EGraph& operator=(EGraph&&) = default;

  // Adds the node (children canonicalized first) unless an equal one exists;
  // returns its class.
  EClassId add(Op op, std::span<const EClassId> children = {});
  EClassId add(Op op, std::initializer_list<EClassId> children) {
    return add(op, std::span<const EClassId>(children.begin(), children.size()));
  }
  std::optional<EClassId> lookup(Op op, std::span<const EClassId> children) const;
  // Starts loading the hash-cons slot of a node that is about to be added or
  // looked up (children need not be canonical: it is only a hint).
  void prefetch(Op op, std::span<const EClassId> children) const;

  // Unions two classes; true when they were distinct. Congruence is restored
  // by the next rebuild(). `why` is recorded when explanations are on
  // (without one, a merge is "given"); off, it is ignored, and the merge
  // without it costs a pointer test. Instructions under callgrind with
  // explanations off, against the e-graph before they existed: ac-sum-9
  // +0.6%, math-derivative +0.06% (building a Justification for every
  // merge was +2.0%).
  bool merge(EClassId a, EClassId b) { return proofs_ ? merge(a, b, Justification{}) : merge_classes(a, b); }
  bool merge(EClassId a, EClassId b, Justification why);

  // Keeps a proof forest (egraph/explain.hpp) from now on; only before the
  // first node. Off by default: merges then record nothing.
  void enable_explanations() {
    if (store_.size() != 0) throw std::logic_error("EGraph::enable_explanations: before the first node");
    proofs_ = std::make_unique<ProofForest>();
  }
  bool explaining() const { return proofs_ != nullptr; }
  const ProofForest* proofs() const { return proofs_.get(); }

  // Restores the invariants; returns the number of unions congruence caused.
  std::size_t rebuild();
  bool clean() const { return pending_.empty() && analysis_pending_.empty() && !needs_class_rebuild_; }

  EClassId find(EClassId id) const { return uf_.find(id); }
  EClassId find_mut(EClassId id) { return uf_.find_mut(id); }

  // Live (canonical) e-nodes: the hash-cons's size.
  std::size_t num_nodes() const { return hashcons_.size(); }
  std::size_t num_classes() const { return num_classes_; }
  // Every id ever handed out (ids below it are valid arguments to find).
  std::size_t num_ids() const { return uf_.size(); }

  // Canonical class ids in increasing order. Valid after rebuild().
  std::span<const EClassId> class_ids() const { return roots_; }
  // Live nodes of a canonical class, sorted by (op, children).
  std::span<const ClassNode> nodes(EClassId id) const { return classes_[id.v].nodes; }
  // Nodes having this canonical class as a child; may repeat entries.
  std::span<const NodeId> parents(EClassId id) const { return classes_[id.v].parents; }
  Op op(NodeId n) const { return store_.op(n); }
  std::span<const EClassId> children(NodeId n) const { return store_.children(n); }
  bool is_live(NodeId n) const { return !dead_[n.v]; }

  // Epochs and stamps (for semi-naive matching). A node's stamp is the epoch
  // in which it was added or re-canonicalized; the epoch in which it last
  // moved class is its ClassNode::moved. A node with both at or before epoch
  // E sat, unchanged and in the same class, in the e-graph as it was at E.
  // The runner advances the epoch once per iteration, just before searching.
  std::uint32_t epoch() const { return epoch_; }
  void advance_epoch() { ++epoch_; }
  std::uint32_t stamp(NodeId n) const { return stamp_[n.v]; }
  // Like lookup, but returns the node found.
  std::optional<NodeId> lookup_node(Op op, std::span<const EClassId> children) const;

  // The subrange of nodes(id) whose operator is `op`.
  std::span<const ClassNode> nodes_with_op(EClassId id, Op op) const;
  // Canonical classes holding at least one node with operator `op`. Valid
  // after rebuild(); computed on first use after each rebuild.
  std::span<const EClassId> classes_with_op(Op op) const;
  // The literal operator of a class, if it holds a literal node.
  std::optional<Op> literal(EClassId id) const;

  // Analyses are owned by the e-graph; add them before the first node.
  template <class A, class... Args>
  A& add_analysis(Args&&... args) {
    // Facts are made as nodes arrive; an analysis added later would have none.
    if (store_.size() != 0) throw std::logic_error("EGraph::add_analysis: add analyses before the first node");
    auto a = std::make_unique<A>(std::forward<Args>(args)...);
    A& ref = *a;
    analyses_.push_back(std::move(a));
    return ref;
  }
  template <class A>
  A* analysis() const {
    for (auto& a : analyses_)
      if (auto* p = dynamic_cast<A*>(a.get())) return p;
    return nullptr;
  }

  // Approximate heap bytes held by the e-graph's own structures.
  std::size_t memory_bytes() const;

  // Checks every invariant listed above; returns a description of the first
  // violation, or an empty string. O(nodes log nodes): for tests and debugging.
  std::string check_invariants() const;

 private:
  struct EClass {
    std::vector<ClassNode> nodes;
    std::vector<NodeId> parents;
    bool dirty = false;  // nodes unsorted or parents with retired entries
  };

  void rebuild_classes();
  void repair_node(NodeId n);
  bool merge_classes(EClassId a, EClassId b);

  UnionFind uf_;
  NodeStore store_;
  HashCons hashcons_;
  std::vector<EClass> classes_;
  std::vector<std::uint8_t> dead_;
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 1;
  std::vector<NodeId> pending_;
  std::vector<NodeId> analysis_pending_;
  std::vector<EClassId> roots_;
  std::vector<EClassId> dirty_;
  std::vector<EClassId> scratch_;
  std::vector<std::unique_ptr<Analysis>> analyses_;
  std::size_t num_classes_ = 0;
  bool needs_class_rebuild_ = false;
  std::unique_ptr<ProofForest> proofs_;  // when explaining

  // classes_with_op cache, rebuilt lazily after each rebuild.
  mutable std::vector<std::vector<EClassId>> by_op_;
  mutable std::vector<std::uint32_t> by_op_used_;
  mutable bool by_op_valid_ = false;
};

}  // namespace saturn::egraph
