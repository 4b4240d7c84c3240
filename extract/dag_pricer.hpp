// Pricing choices of one extraction problem (dag_cost, tree_cost and
// unfused_dag_cost of problem.hpp are one call each of this).
//
// The DAG extractor's local search prices thousands of choices of one
// problem (maxvit_t: 100,000; densenet121: 2,200 of about 1,700 classes), so
// a pricer keeps what each call reads compact and in one place: the nodes'
// costs, fusion figures and children in flat arrays, built once, and the
// per-class scratch of a call kept between calls. The invariant: a call
// reads scratch only for the classes the choice needs, which it writes
// first, so no call depends on the one before; the results are those of
// pricing the problem's nodes directly, added up in the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "extract/problem.hpp"

namespace saturn::extract {

class DagPricer {
 public:
  explicit DagPricer(const ExtractionProblem& p);

  // Each class the choice needs paid once (a node with a LayoutPrice at
  // its layout cost, as a kernel of its own, when its first child's chosen
  // node is one it names),
  // fused chains priced once when the problem has fusion roles; infinity
  // when a needed class has no choice or the choice has a cycle. With `needed`, also marks the classes
  // the choice needs (all unmarked when the cost is infinite).
  double dag_cost(const std::vector<std::int32_t>& choice, std::vector<char>* needed = nullptr);
  // Every node priced alone, fused or not.
  double unfused_dag_cost(const std::vector<std::int32_t>& choice);
  // Shared subterms paid once per use.
  double tree_cost(const std::vector<std::int32_t>& choice);

  // The classes the last call's choice needs, children first (complete
  // when that call's walk found neither a cycle nor a missing choice).
  const std::vector<std::uint32_t>& order() const { return order_; }

 private:
  struct Node {
    double cost;
    double compute_us, write_us, overhead_us, out_elems;
    std::uint32_t children_begin, children_end;
    std::uint32_t reads_begin, reads_end;
    std::uint32_t layout_begin, layout_end;  // LayoutPrice::after, in layout_after_
    double layout_cost;
    std::int32_t operand_passes;
    FuseRole role;
    bool boundary;
    bool finite;  // priced finite whatever its first child's choice
  };
  // The chosen classes from the roots, children first, into order_; false
  // on a cycle or a missing choice.
  bool walk(const std::vector<std::int32_t>& choice);
  double fused_cost(const std::vector<std::int32_t>& choice);
  const Node& chosen(const std::vector<std::int32_t>& choice, std::uint32_t c) const {
    return nodes_[static_cast<std::size_t>(choice[c])];
  }
  // Whether the chosen node is priced by its layout (LayoutPrice: the node
  // chosen for its first child is one it names).
  bool laid_out(const std::vector<std::int32_t>& choice, std::uint32_t c) const;
  // The chosen node's cost given the node chosen for its first child.
  double chosen_cost(const std::vector<std::int32_t>& choice, std::uint32_t c) const;

  const ExtractionProblem& p_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> children_;  // class indices, per node [children_begin, children_end)
  // Per node, its children's range again: the walk reads only this, in
  // eight bytes a node rather than a Node's two cache lines.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans_;
  std::vector<double> reads_;               // read_us, per node [reads_begin, reads_end)
  std::vector<std::int32_t> layout_after_;  // node indices, per node [layout_begin, layout_end)
  // Per class: the walk's state (open, done) in the low two bits, above
  // them the call that wrote it; from another call, the class is new.
  std::vector<std::uint32_t> stamp_;
  std::uint32_t call_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack_;  // (class, next child)
  std::vector<std::uint32_t> order_;
  // Per class, fusion's scratch: uses, joins its consumer, a chain's sums.
  std::vector<std::uint32_t> uses_;
  std::vector<char> joined_;
  std::vector<double> compute_, bytes_;
};

}  // namespace saturn::extract
