#include "extract/tree_greedy.hpp"

#include "extract/extractors.hpp"

#include <unordered_map>

namespace saturn::extract {

double ast_size(Op) { return 1.0; }

TreeGreedyExtractor::TreeGreedyExtractor(const egraph::EGraph& g, OpCost cost)
    : g_(g),
      problem_(problem_from_egraph(g, {}, [&cost](const egraph::EGraph& eg, NodeId n) { return cost(eg.op(n)); })),
      choice_(extract_tree_greedy(problem_)) {}

double TreeGreedyExtractor::cost(EClassId id) const {
  return choice_.class_tree_cost[problem_.class_index(g_.find(id))];
}
NodeId TreeGreedyExtractor::best_node(EClassId id) const {
  std::int32_t n = choice_.choice[problem_.class_index(g_.find(id))];
  return n < 0 ? NodeId{} : problem_.node_ids[static_cast<std::size_t>(n)];
}

std::optional<egraph::Term> TreeGreedyExtractor::extract(EClassId id) const {
  if (cost(id) == kInfinity) return std::nullopt;
  egraph::Term t;
  // Post-order, explicit stack: terms can be deep.
  struct Frame {
    EClassId cls;
    std::size_t next = 0;
    std::vector<std::uint32_t> kids;
  };
  // A class used twice is built once and shared (Term's children may
  // repeat): a chain whose ops use their operand twice is as many nodes as
  // it has classes, not 2^depth.
  std::unordered_map<EClassId, std::uint32_t> built;
  std::vector<Frame> stack{Frame{g_.find(id), 0, {}}};
  std::uint32_t last = 0;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const NodeId best = best_node(f.cls);
    auto kids = g_.children(best);
    if (f.next < kids.size()) {
      EClassId k = g_.find(kids[f.next++]);
      if (auto it = built.find(k); it != built.end())
        f.kids.push_back(it->second);
      else
        stack.push_back(Frame{k, 0, {}});
      continue;
    }
    last = t.push(g_.op(best), std::move(f.kids));
    built.emplace(f.cls, last);
    stack.pop_back();
    if (!stack.empty()) stack.back().kids.push_back(last);
  }
  return t;
}

}  // namespace saturn::extract
