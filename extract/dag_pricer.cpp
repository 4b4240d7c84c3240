#include "extract/dag_pricer.hpp"

#include <algorithm>
#include <cmath>

namespace saturn::extract {

namespace {
enum : std::uint8_t { kOpen = 1, kDone = 2 };  // a class not stamped by this call is new
}  // namespace

DagPricer::DagPricer(const ExtractionProblem& p) : p_(p) {
  nodes_.reserve(p.nodes.size());
  for (const ExtractionProblem::Node& n : p.nodes) {
    Node c{};
    c.cost = n.cost;
    c.compute_us = n.fused.compute_us;
    c.write_us = n.fused.write_us;
    c.overhead_us = n.fused.overhead_us;
    c.out_elems = n.fused.out_elems;
    c.operand_passes = n.fused.operand_passes;
    c.role = n.fused.role;
    c.boundary = n.fused.boundary;
    c.children_begin = static_cast<std::uint32_t>(children_.size());
    children_.insert(children_.end(), n.children.begin(), n.children.end());
    c.children_end = static_cast<std::uint32_t>(children_.size());
    c.reads_begin = static_cast<std::uint32_t>(reads_.size());
    reads_.insert(reads_.end(), n.fused.read_us.begin(), n.fused.read_us.end());
    c.reads_end = static_cast<std::uint32_t>(reads_.size());
    c.layout_begin = static_cast<std::uint32_t>(layout_after_.size());
    if (!n.children.empty())
      for (std::uint32_t k : n.layout.after) layout_after_.push_back(static_cast<std::int32_t>(k));
    c.layout_end = static_cast<std::uint32_t>(layout_after_.size());
    c.layout_cost = n.layout.cost;
    c.finite = std::isfinite(c.cost) && (c.layout_begin == c.layout_end || std::isfinite(c.layout_cost));
    nodes_.push_back(c);
    spans_.emplace_back(c.children_begin, c.children_end);
  }
  const std::size_t nc = p.classes.size();
  stamp_.assign(nc, 0);
  uses_.assign(nc, 0);
  joined_.assign(nc, 0);
  compute_.assign(nc, 0);
  bytes_.assign(nc, 0);
}

bool DagPricer::laid_out(const std::vector<std::int32_t>& choice, std::uint32_t c) const {
  const Node& n = chosen(choice, c);
  if (n.layout_begin == n.layout_end) return false;
  const std::int32_t first = choice[children_[n.children_begin]];
  const auto begin = layout_after_.begin() + n.layout_begin, end = layout_after_.begin() + n.layout_end;
  return std::find(begin, end, first) != end;
}

double DagPricer::chosen_cost(const std::vector<std::int32_t>& choice, std::uint32_t c) const {
  return laid_out(choice, c) ? chosen(choice, c).layout_cost : chosen(choice, c).cost;
}

// Hand-written on purpose: this walk touches only the classes a choice
// needs, where Boost.Graph's DFS (children_first in class_graph.hpp) needs a
// graph built over every class first: measured on the extraction-gym files,
// dag-greedy took 1628 ms per file on average with it against 17.5 ms.
bool DagPricer::walk(const std::vector<std::int32_t>& choice) {
  if (++call_ == (1u << 30)) {  // the stamps wrap: none is this call's
    std::fill(stamp_.begin(), stamp_.end(), 0);
    call_ = 1;
  }
  const auto state = [&](std::uint32_t c) {
    return stamp_[c] >> 2 == call_ ? static_cast<std::uint8_t>(stamp_[c] & 3) : std::uint8_t{0};
  };
  const auto set_state = [&](std::uint32_t c, std::uint8_t s) { stamp_[c] = call_ << 2 | s; };
  order_.clear();
  for (std::uint32_t root : p_.roots) {
    if (state(root) == kDone) continue;
    stack_.assign(1, {root, 0});
    set_state(root, kOpen);
    while (!stack_.empty()) {
      auto& [c, next] = stack_.back();
      if (choice[c] < 0) return false;
      const auto [begin, end] = spans_[static_cast<std::size_t>(choice[c])];
      if (begin + next < end) {
        const std::uint32_t k = children_[begin + next++];
        const std::uint8_t s = state(k);
        if (s == kOpen) return false;
        if (s == 0) {
          set_state(k, kOpen);
          stack_.emplace_back(k, 0);
        }
        continue;
      }
      set_state(c, kDone);
      order_.push_back(c);
      stack_.pop_back();
    }
  }
  return true;
}

double DagPricer::dag_cost(const std::vector<std::int32_t>& choice, std::vector<char>* needed) {
  if (needed) needed->assign(p_.classes.size(), 0);
  // Under fusion the unfused sum would only say whether the cost is finite,
  // which fused_cost checks itself.
  const double total = !p_.fusion ? unfused_dag_cost(choice) : walk(choice) ? fused_cost(choice) : kInfinity;
  if (needed && total != kInfinity)
    for (std::uint32_t c : order_) (*needed)[c] = 1;
  return total;
}

double DagPricer::unfused_dag_cost(const std::vector<std::int32_t>& choice) {
  if (!walk(choice)) return kInfinity;
  double total = 0;
  for (std::uint32_t c : order_) total += chosen_cost(choice, c);
  return total;
}

double DagPricer::tree_cost(const std::vector<std::int32_t>& choice) {
  if (!walk(choice)) return kInfinity;
  for (std::uint32_t c : order_) {  // children first: their sums are complete
    const Node& n = chosen(choice, c);
    double s = chosen_cost(choice, c);
    for (std::uint32_t i = n.children_begin; i < n.children_end; ++i) s = cost_sum(s, compute_[children_[i]]);
    compute_[c] = s;
  }
  double total = 0;
  for (std::uint32_t r : p_.roots) total = cost_sum(total, compute_[r]);
  return total;
}

// The DAG cost with fused chains priced once: an elementwise node used once
// (not an output) joins its consumer's kernel when the consumer is an
// elementwise node of the same size or a reduction, as the lowering fuses
// it. A chain costs max(its compute, the bytes it reads from outside plus
// its result's write) plus one kernel overhead.
double DagPricer::fused_cost(const std::vector<std::int32_t>& choice) {
  for (std::uint32_t c : order_) {
    // A node fusion prices by its figures is still infinite when its cost
    // is, as the unfused sum would be.
    if (!nodes_[static_cast<std::size_t>(choice[c])].finite && !std::isfinite(chosen_cost(choice, c))) return kInfinity;
    uses_[c] = 0;
    joined_[c] = 0;
    compute_[c] = 0;
    bytes_[c] = 0;
  }
  for (std::uint32_t r : p_.roots) uses_[r] += 2;  // an output is stored
  for (std::uint32_t c : order_) {
    const Node& n = chosen(choice, c);
    for (std::uint32_t i = n.children_begin; i < n.children_end; ++i) ++uses_[children_[i]];
  }
  // A node priced by its producer's layout (a reduce_max of windows: the
  // pooling loop) is a kernel of its own, as the price says.
  const auto role = [&](std::uint32_t c) { return laid_out(choice, c) ? FuseRole::None : chosen(choice, c).role; };
  const auto joins = [&](std::uint32_t consumer, std::uint32_t k) {
    const FuseRole consumer_role = role(consumer);
    if (uses_[k] != 1 || consumer_role == FuseRole::None) return false;
    const Node& producer = chosen(choice, k);
    if (producer.role != FuseRole::Elementwise || producer.boundary) return false;
    return consumer_role == FuseRole::Reduction || chosen(choice, consumer).out_elems == producer.out_elems;
  };
  for (std::uint32_t c : order_) {
    const Node& n = chosen(choice, c);
    for (std::uint32_t i = n.children_begin; i < n.children_end; ++i)
      if (joins(c, children_[i])) joined_[children_[i]] = 1;
  }
  // Children come first in the order, so a chain's sums are complete when
  // its consumer is reached.
  double total = 0;
  for (std::uint32_t c : order_) {
    const Node& n = chosen(choice, c);
    if (role(c) == FuseRole::None) {
      total += chosen_cost(choice, c);
      continue;
    }
    double work = n.compute_us, moved = 0;
    bool joins_any = false;
    for (std::uint32_t i = 0; i < n.children_end - n.children_begin; ++i) {
      const std::uint32_t k = children_[n.children_begin + i];
      if (joined_[k]) {
        const double times = i == 0 ? n.operand_passes : 1;
        work += compute_[k] * times;
        moved += bytes_[k] * times;
        joins_any = true;
      } else if (i < n.reads_end - n.reads_begin) {
        moved += reads_[n.reads_begin + i];
      }
    }
    if (n.boundary && !joins_any) continue;  // already in memory: no kernel
    if (joined_[c]) {
      compute_[c] = work;
      bytes_[c] = moved;
    } else {
      total += std::max(work, moved + n.write_us) + n.overhead_us;
    }
  }
  return total;
}

}  // namespace saturn::extract
