#include "egraph/term.hpp"

#include "egraph/print_tree.hpp"

namespace saturn::egraph {

double Term::tree_size() const {
  std::vector<double> size(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    size[i] = 1;
    for (auto c : nodes[i].children) size[i] += size[c];
  }
  return nodes.empty() ? 0 : size.back();
}

std::string Term::to_string() const {
  std::string out;
  if (!nodes.empty())
    print_tree(
        nodes, root(), [](const TermNode&, std::string&) { return false; }, out);
  return out;
}

EClassId add_term(EGraph& g, const Term& t) {
  std::vector<EClassId> ids(t.nodes.size());
  std::vector<EClassId> kids;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    kids.clear();
    for (auto c : t.nodes[i].children) kids.push_back(ids[c]);
    ids[i] = g.add(t.nodes[i].op, kids);
  }
  return ids.back();
}

}  // namespace saturn::egraph
