// The hash-cons: a set of live e-nodes keyed by (operator, children).
//
// Open addressing with linear probing and backward-shift deletion (no
// tombstones, so probe lengths stay short through the many erase/insert pairs
// of a rebuild). Each 16-byte slot carries a copy of its node's key - operator
// and arity packed in one word, and the first two children - so a lookup of a
// node of arity <= 2 (nearly all of them) touches one cache line and never
// the node store. Lookups are the cost of applying matches (each is a cache
// miss once the table outgrows L2), so the slot is kept at 16 bytes: the
// home position is recomputed from the node store on erase and growth, which
// are rare next to lookups.
// Invariant kept by EGraph: every live node is in the set under its current
// (canonical after rebuild) children, and no two live nodes share a key.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "egraph/node_store.hpp"

namespace saturn::egraph {

class HashCons {
 public:
  HashCons() { slots_.resize(1024); }

  std::size_t size() const { return size_; }

  std::optional<NodeId> find(const NodeStore& store, Op op, std::span<const EClassId> kids, std::uint64_t hash) const {
    const Slot key = make_slot(op, kids, kEmpty);
    const bool inline_key = key.op_arity != kWide && kids.size() <= 2;
    for (std::size_t i = hash & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.node == kEmpty) return std::nullopt;
      if (s.op_arity == key.op_arity && s.k0 == key.k0 && s.k1 == key.k1 &&
          (inline_key || store.equals(NodeId(s.node), op, kids)))
        return NodeId(s.node);
    }
  }

  // Precondition: no live node with the same key is present.
  void insert(const NodeStore& store, NodeId node, Op op, std::span<const EClassId> kids, std::uint64_t hash) {
    if ((size_ + 1) * 2 > slots_.size()) grow(store);
    place(make_slot(op, kids, node.v), hash);
    ++size_;
  }

  // Removes the slot that holds exactly `node` (found under `hash`); a slot
  // holding another node with the same key is left alone.
  bool erase(const NodeStore& store, NodeId node, std::uint64_t hash) {
    std::size_t i = hash & mask();
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].node == kEmpty) return false;
      if (slots_[i].node == node.v) break;
    }
    // Backward shift: pull later entries of the cluster into the hole when
    // their home slot does not lie cyclically in (hole, j].
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask(); slots_[j].node != kEmpty; j = (j + 1) & mask()) {
      std::size_t home = store.hash(NodeId(slots_[j].node)) & mask();
      bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  std::size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

  // Hints the cache that a lookup under `hash` is coming.
  void prefetch(std::uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask()]); }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
  // Operator id (24 bits) and arity (8 bits); kWide when either does not
  // fit, and such keys are always compared through the node store.
  static constexpr std::uint32_t kWide = 0xFFFFFFFFu;
  struct Slot {
    std::uint32_t node = kEmpty;
    std::uint32_t op_arity = 0;
    std::uint32_t k0 = 0, k1 = 0;  // first two children (0 when absent)
  };
  static_assert(sizeof(Slot) == 16);

  static Slot make_slot(Op op, std::span<const EClassId> kids, std::uint32_t node) {
    std::uint32_t packed =
        (op.id < (1u << 24) && kids.size() < 255) ? op.id | static_cast<std::uint32_t>(kids.size()) << 24 : kWide;
    return Slot{node, packed, kids.size() > 0 ? kids[0].v : 0, kids.size() > 1 ? kids[1].v : 0};
  }

  std::size_t mask() const { return slots_.size() - 1; }

  void place(const Slot& s, std::uint64_t hash) {
    std::size_t i = hash & mask();
    while (slots_[i].node != kEmpty) i = (i + 1) & mask();
    slots_[i] = s;
  }

  void grow(const NodeStore& store) {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.node != kEmpty) place(s, store.hash(NodeId(s.node)));
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace saturn::egraph
