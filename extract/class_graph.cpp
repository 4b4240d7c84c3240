#include "extract/class_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/strong_components.hpp>

#include <algorithm>
#include <set>

#include "ir/dependency_order.hpp"

namespace saturn::extract {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

Graph class_graph(const ExtractionProblem& p, const NodeFilter& keep) {
  Graph g(p.classes.size());
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n) {
    if (!keep(n)) continue;
    for (std::uint32_t k : p.nodes[n].children) boost::add_edge(p.nodes[n].cls, k, g);
  }
  return g;
}

}  // namespace

Components strong_components(const ExtractionProblem& p, const NodeFilter& keep) {
  const Graph g = class_graph(p, keep);
  Components c;
  c.of.resize(p.classes.size());
  const auto count =
      boost::strong_components(g, boost::make_iterator_property_map(c.of.begin(), boost::get(boost::vertex_index, g)));
  c.size.assign(static_cast<std::size_t>(count), 0);
  for (std::uint32_t k : c.of) ++c.size[k];
  return c;
}

std::vector<char> reachable_from_roots(const ExtractionProblem& p, const NodeFilter& keep) {
  const Graph g = class_graph(p, keep);
  std::vector<boost::default_color_type> color(p.classes.size(), boost::white_color);
  auto colors = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  boost::queue<Vertex> queue;
  for (std::uint32_t r : p.roots)
    if (color[r] == boost::white_color) boost::breadth_first_visit(g, r, queue, boost::default_bfs_visitor(), colors);
  std::vector<char> seen(p.classes.size());
  for (std::size_t c = 0; c < seen.size(); ++c) seen[c] = color[c] != boost::white_color;
  return seen;
}

std::vector<std::uint32_t> distinct_children(const ExtractionProblem& p, std::uint32_t n) {
  std::vector<std::uint32_t> v = p.nodes[n].children;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<std::vector<std::uint32_t>> shortest_cycles(const ExtractionProblem& p, const NodeFilter& keep,
                                                        const std::vector<std::uint32_t>& through,
                                                        std::size_t max_length) {
  const Graph g = class_graph(p, keep);
  std::vector<std::vector<std::uint32_t>> into(p.classes.size());  // u per edge u -> s
  for (std::uint32_t n = 0; n < p.nodes.size(); ++n)
    if (keep(n))
      for (std::uint32_t k : p.nodes[n].children) into[k].push_back(p.nodes[n].cls);
  std::set<std::vector<std::uint32_t>> found;
  std::vector<Vertex> parent(p.classes.size());
  std::vector<std::size_t> depth(p.classes.size());
  std::vector<boost::default_color_type> color(p.classes.size());
  auto colors = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  for (std::uint32_t s : through) {
    std::fill(color.begin(), color.end(), boost::white_color);
    parent[s] = s;
    depth[s] = 0;
    boost::queue<Vertex> queue;
    boost::breadth_first_visit(
        g, s, queue,
        boost::make_bfs_visitor(std::make_pair(boost::record_predecessors(parent.data(), boost::on_tree_edge()),
                                               boost::record_distances(depth.data(), boost::on_tree_edge()))),
        colors);
    for (std::uint32_t u : into[s]) {
      if (color[u] == boost::white_color || depth[u] + 1 > max_length) continue;
      std::vector<std::uint32_t> cycle;
      for (Vertex v = u; v != s; v = parent[v]) cycle.push_back(static_cast<std::uint32_t>(v));
      cycle.push_back(s);
      std::sort(cycle.begin(), cycle.end());
      cycle.erase(std::unique(cycle.begin(), cycle.end()), cycle.end());
      found.insert(std::move(cycle));
    }
  }
  return {found.begin(), found.end()};
}

std::vector<std::vector<std::uint32_t>> choice_cycles(const ExtractionProblem& p,
                                                      const std::vector<std::int32_t>& choice) {
  const auto is_chosen = [&](std::uint32_t n) { return choice[p.nodes[n].cls] == static_cast<std::int32_t>(n); };
  const std::vector<char> needed = reachable_from_roots(p, is_chosen);
  const NodeFilter keep = [&](std::uint32_t n) { return is_chosen(n) && needed[p.nodes[n].cls]; };
  const Components scc = strong_components(p, keep);
  std::vector<std::vector<std::uint32_t>> members(scc.size.size());
  for (std::uint32_t c = 0; c < p.classes.size(); ++c)
    if (needed[c] && choice[c] >= 0 && scc.size[scc.of[c]] > 1) members[scc.of[c]].push_back(c);
  std::vector<std::uint32_t> cyclic;
  std::set<std::vector<std::uint32_t>> found;
  for (auto& component : members)
    if (!component.empty()) {
      cyclic.insert(cyclic.end(), component.begin(), component.end());
      found.insert(std::move(component));
    }
  for (auto& cycle : shortest_cycles(p, keep, cyclic, SIZE_MAX)) found.insert(std::move(cycle));
  return {found.begin(), found.end()};
}

std::optional<std::vector<std::uint32_t>> children_first(const ExtractionProblem& p,
                                                         const std::vector<std::int32_t>& choice) {
  std::vector<std::vector<std::uint32_t>> needs(p.classes.size());
  for (std::uint32_t c = 0; c < p.classes.size(); ++c)
    if (choice[c] >= 0) needs[c] = p.nodes[static_cast<std::size_t>(choice[c])].children;
  ir::DependencyOrder order = ir::dependency_order(needs, p.roots);
  if (order.cycle_at) return std::nullopt;
  for (std::uint32_t c : order.order)
    if (choice[c] < 0) return std::nullopt;
  return std::move(order.order);
}

}  // namespace saturn::extract
