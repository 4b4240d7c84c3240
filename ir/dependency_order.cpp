#include "ir/dependency_order.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

namespace saturn::ir {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

struct Cycle {
  std::uint32_t at;
};

struct FinishOrder : boost::default_dfs_visitor {
  std::vector<std::uint32_t>* order;
  void back_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
    throw Cycle{static_cast<std::uint32_t>(boost::target(e, g))};
  }
  void finish_vertex(boost::graph_traits<Graph>::vertex_descriptor v, const Graph&) const {
    order->push_back(static_cast<std::uint32_t>(v));
  }
};

}  // namespace

DependencyOrder dependency_order(const std::vector<std::vector<std::uint32_t>>& needs,
                                 const std::vector<std::uint32_t>& starts) {
  Graph g(needs.size());
  for (std::uint32_t v = 0; v < needs.size(); ++v)
    for (std::uint32_t w : needs[v]) boost::add_edge(v, w, g);
  DependencyOrder r;
  r.order.reserve(needs.size());
  std::vector<boost::default_color_type> color(needs.size(), boost::white_color);
  auto colors = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  try {
    if (starts.empty()) {
      boost::depth_first_search(g, FinishOrder{{}, &r.order}, colors);
    } else {
      for (std::uint32_t s : starts)
        if (color[s] == boost::white_color) boost::depth_first_visit(g, s, FinishOrder{{}, &r.order}, colors);
    }
  } catch (const Cycle& c) {
    r.cycle_at = c.at;
  }
  return r;
}

}  // namespace saturn::ir
