// Strongly typed indices used throughout the e-graph.
//
// Every e-node added to an e-graph gets its own id in the union-find, so a
// node id and an e-class id live in one index space (as in egg): the class of
// node n is find(n). The two types keep the two roles apart in signatures.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace saturn::egraph {

struct EClassId {
  std::uint32_t v = std::numeric_limits<std::uint32_t>::max();
  constexpr EClassId() = default;
  constexpr explicit EClassId(std::uint32_t value) : v(value) {}
  constexpr bool valid() const { return v != std::numeric_limits<std::uint32_t>::max(); }
  friend constexpr auto operator<=>(EClassId, EClassId) = default;
};

struct NodeId {
  std::uint32_t v = std::numeric_limits<std::uint32_t>::max();
  constexpr NodeId() = default;
  constexpr explicit NodeId(std::uint32_t value) : v(value) {}
  friend constexpr auto operator<=>(NodeId, NodeId) = default;
};

}  // namespace saturn::egraph

template <>
struct std::hash<saturn::egraph::EClassId> {
  std::size_t operator()(saturn::egraph::EClassId id) const noexcept { return id.v; }
};
