#include "egraph/pattern.hpp"

#include <algorithm>

#include "egraph/print_tree.hpp"

namespace saturn::egraph {

namespace {
void collect(const Pattern& p, std::uint32_t i, std::vector<VarId>& out) {
  const PatternNode& n = p.nodes[i];
  if (n.is_var()) {
    if (std::find(out.begin(), out.end(), n.var) == out.end()) out.push_back(n.var);
    return;
  }
  for (auto c : n.children) collect(p, c, out);
}

}  // namespace

std::vector<VarId> Pattern::vars() const {
  std::vector<VarId> out;
  if (!nodes.empty()) collect(*this, root(), out);
  return out;
}

bool Pattern::is_ground(std::uint32_t i) const {
  const PatternNode& n = nodes[i];
  if (n.is_var()) return false;
  return std::all_of(n.children.begin(), n.children.end(), [&](std::uint32_t c) { return is_ground(c); });
}

std::string Pattern::to_string(const std::vector<std::string>& var_names) const {
  std::string out;
  auto var = [&](const PatternNode& n, std::string& o) {
    if (!n.is_var()) return false;
    if (n.var < var_names.size()) {
      o += var_names[n.var];
    } else {
      o += "?v";
      o += std::to_string(n.var);
    }
    return true;
  };
  if (!nodes.empty()) print_tree(nodes, root(), var, out);
  return out;
}

}  // namespace saturn::egraph
