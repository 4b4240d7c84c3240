#include "extract/tree_greedy.hpp"

#include <limits>

namespace saturn::extract {

double ast_size(Op) { return 1.0; }

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

TreeGreedyExtractor::TreeGreedyExtractor(const egraph::EGraph& g, OpCost cost) : g_(g), op_cost_(std::move(cost)) {
  std::size_t n = 0;
  for (EClassId c : g.class_ids()) n = std::max<std::size_t>(n, c.v + 1);
  cost_.assign(n, kInf);
  best_.assign(n, NodeId{});
  // Operator costs are cached: the fixpoint revisits every node several times.
  struct Candidate {
    EClassId cls;
    NodeId node;
    double op_cost;
  };
  std::vector<Candidate> candidates;
  for (EClassId c : g.class_ids())
    for (NodeId node : g.nodes(c)) candidates.push_back(Candidate{c, node, op_cost_(g.op(node))});
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Candidate& cand : candidates) {
      double total = cand.op_cost;
      for (EClassId k : g.children(cand.node)) {
        total += cost_[k.v];
        if (total == kInf) break;
      }
      if (total < cost_[cand.cls.v]) {
        cost_[cand.cls.v] = total;
        best_[cand.cls.v] = cand.node;
        changed = true;
      }
    }
  }
}

double TreeGreedyExtractor::cost(EClassId id) const { return cost_[g_.find(id).v]; }
NodeId TreeGreedyExtractor::best_node(EClassId id) const { return best_[g_.find(id).v]; }

std::optional<egraph::Term> TreeGreedyExtractor::extract(EClassId id) const {
  if (cost(id) == kInf) return std::nullopt;
  egraph::Term t;
  // Post-order, explicit stack: terms can be deep.
  struct Frame {
    EClassId cls;
    std::size_t next = 0;
    std::vector<std::uint32_t> kids;
  };
  std::vector<Frame> stack{Frame{g_.find(id), 0, {}}};
  std::uint32_t last = 0;
  while (!stack.empty()) {
    Frame& f = stack.back();
    auto kids = g_.children(best_[f.cls.v]);
    if (f.next < kids.size()) {
      EClassId k = g_.find(kids[f.next++]);
      stack.push_back(Frame{k, 0, {}});
      continue;
    }
    last = t.push(g_.op(best_[f.cls.v]), std::move(f.kids));
    stack.pop_back();
    if (!stack.empty()) stack.back().kids.push_back(last);
  }
  return t;
}

}  // namespace saturn::extract
