// Flat storage of every e-node ever added to an e-graph.
//
// Node n's children live in kids_[first_[n] .. first_[n + 1]); operators in
// ops_[n]. Children are rewritten in place when rebuild canonicalizes a node,
// which never changes a node's arity, so the layout stays valid. Keeping nodes
// out of per-class vectors makes an e-node 4 bytes of op + 4 of offset + 4 per
// child, and lets classes and parent lists refer to nodes by a 4-byte NodeId.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "egraph/ids.hpp"
#include "egraph/op.hpp"

namespace saturn::egraph {

// 64-bit mix of an operator and its children (wyhash-style multiply/xor).
inline std::uint64_t hash_node(Op op, std::span<const EClassId> kids) {
  constexpr std::uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xBF58476D1CE4E5B9ull;
  std::uint64_t h = (op.id + 1) * k1 ^ kids.size();
  for (EClassId k : kids) {
    h ^= k.v;
    h *= k2;
    h ^= h >> 31;
  }
  h *= k1;
  return h ^ (h >> 29);
}

class NodeStore {
 public:
  NodeStore() { first_.push_back(0); }

  NodeId push(Op op, std::span<const EClassId> kids) {
    NodeId id(static_cast<std::uint32_t>(ops_.size()));
    ops_.push_back(op);
    kids_.insert(kids_.end(), kids.begin(), kids.end());
    first_.push_back(static_cast<std::uint32_t>(kids_.size()));
    return id;
  }

  std::size_t size() const { return ops_.size(); }
  Op op(NodeId n) const { return ops_[n.v]; }
  std::span<const EClassId> children(NodeId n) const {
    return {kids_.data() + first_[n.v], kids_.data() + first_[n.v + 1]};
  }
  std::span<EClassId> children_mut(NodeId n) { return {kids_.data() + first_[n.v], kids_.data() + first_[n.v + 1]}; }
  std::uint64_t hash(NodeId n) const { return hash_node(op(n), children(n)); }

  bool equals(NodeId n, Op op, std::span<const EClassId> kids) const {
    if (ops_[n.v] != op) return false;
    auto mine = children(n);
    if (mine.size() != kids.size()) return false;
    for (std::size_t i = 0; i < kids.size(); ++i)
      if (mine[i] != kids[i]) return false;
    return true;
  }

  // Orders nodes by (op, arity, children): nodes with one op are contiguous.
  bool less(NodeId a, NodeId b) const {
    if (ops_[a.v] != ops_[b.v]) return ops_[a.v] < ops_[b.v];
    auto ka = children(a), kb = children(b);
    if (ka.size() != kb.size()) return ka.size() < kb.size();
    for (std::size_t i = 0; i < ka.size(); ++i)
      if (ka[i] != kb[i]) return ka[i] < kb[i];
    return false;
  }

  std::size_t memory_bytes() const {
    return ops_.capacity() * sizeof(Op) + first_.capacity() * 4 + kids_.capacity() * sizeof(EClassId);
  }

 private:
  std::vector<Op> ops_;
  std::vector<std::uint32_t> first_;
  std::vector<EClassId> kids_;
};

}  // namespace saturn::egraph
