// Disjoint sets over dense ids with path halving.
//
// Invariant: parent_[i] == i exactly for representatives; following parents
// from any id reaches its representative. union_into never merges by rank:
// the e-graph chooses the surviving root itself (the class with more parents),
// because that choice decides how much rebuild work a merge causes.
#pragma once

#include <cstdint>
#include <vector>

#include "egraph/ids.hpp"

namespace saturn::egraph {

class UnionFind {
 public:
  EClassId make_set() {
    auto id = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(id);
    return EClassId(id);
  }

  std::size_t size() const { return parent_.size(); }

  EClassId find(EClassId id) const {
    std::uint32_t x = id.v;
    while (parent_[x] != x) x = parent_[x];
    return EClassId(x);
  }

  // find with path halving; amortized near-constant.
  EClassId find_mut(EClassId id) {
    std::uint32_t x = id.v;
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return EClassId(x);
  }

  bool is_root(EClassId id) const { return parent_[id.v] == id.v; }

  // Makes `child` (a root) point at `root` (a root).
  void union_into(EClassId root, EClassId child) { parent_[child.v] = root.v; }

 private:
  std::vector<std::uint32_t> parent_;
};

}  // namespace saturn::egraph
