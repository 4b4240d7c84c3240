#include "extract/class_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/strong_components.hpp>

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
