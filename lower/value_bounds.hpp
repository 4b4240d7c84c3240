// Magnitude bounds that travel between library steps, so that a step whose
// library would lose a NaN (oneDNN's ReLU and clip post-ops, its max
// pooling, Winograd's transforms) proves its source finite from what the
// step that wrote it knew, instead of reading it again.
//
// Invariant: after the step writing buffer B ran in a run, B's ValueBound
// holds +inf (nothing known) or a bound on the magnitude of every element
// of B, all of them finite. A bound is trusted only where that step is B's
// one writer in the program (ValueBounds::keep_single_writers, when the
// target finishes); a reader checks `known()` at every run, after its
// writer ran (steps run in program order).
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lower/loop_kernel.hpp"
#include "lower/program.hpp"

namespace saturn::lower {

struct ValueBound {
  float magnitude = std::numeric_limits<float>::infinity();
  bool published = false;  // a step publishes into it
  // Several steps write the buffer, each a part, each publishing the
  // largest bound of what was written this run (a concat chain's buffer:
  // a reader reads parts written before it).
  bool accumulates = false;
  bool single_writer = true;
  float known() const { return single_writer ? magnitude : std::numeric_limits<float>::infinity(); }
  // Sets the bound of a value computed in floats from a bound of the exact
  // result: with a percent of room for the computation's rounding (a float
  // sum of n terms strays by n 6e-8 of its terms' magnitudes); unknown for
  // NaN or past float's range.
  void publish(double exact) {
    const double room = exact * 1.01;
    magnitude =
        room < std::numeric_limits<float>::max() ? static_cast<float>(room) : std::numeric_limits<float>::infinity();
  }
};

class ValueBounds {
 public:
  // b's cell if a step reads or publishes it (a step whose result no one
  // reads a bound of publishes none).
  std::shared_ptr<ValueBound> find(BufferId b) const {
    auto it = cells_.find(b);
    return it == cells_.end() ? nullptr : it->second;
  }
  // b's cell, for a step reading it (made now when no step publishes into
  // it yet; it stays unknown unless one does).
  std::shared_ptr<ValueBound> read(BufferId b) {
    return cells_.try_emplace(b, std::make_shared<ValueBound>()).first->second;
  }
  // The cell a step writing `b` publishes into (a second such step makes
  // it untrusted).
  std::shared_ptr<ValueBound> written(BufferId b) {
    std::shared_ptr<ValueBound> cell = read(b);
    if (cell->published) cell->single_writer = false;
    cell->published = true;
    return cell;
  }
  // The cell that several steps writing parts of `b` publish into, each
  // the largest bound so far this run (the first resets it).
  std::shared_ptr<ValueBound> accumulated(BufferId b) {
    std::shared_ptr<ValueBound> cell = read(b);
    cell->published = true;
    cell->accumulates = true;
    return cell;
  }
  // Untrusts the cells of buffers that not exactly one step of `steps`
  // writes (a value updated in place), unless all of them accumulate.
  void keep_single_writers(const std::vector<Step>& steps) {
    std::map<BufferId, int> writers;
    for (const Step& s : steps)
      for (BufferId b : s.writes) ++writers[b];
    for (auto& [b, cell] : cells_)
      if (writers[b] != 1 && !(cell->accumulates && writers[b] > 1)) cell->single_writer = false;
  }

 private:
  std::map<BufferId, std::shared_ptr<ValueBound>> cells_;
};

// The magnitude a loop kernel's result can reach from its leaves' (leaf[i]
// bounds leaves[i]; +inf: unknown), evaluated over its expression: sums
// and products of bounds, 1 for comparisons and tanh, exp of a bound.
// Only arithmetic that keeps finite operands finite has one: a division
// by anything but a constant, a logarithm, a square root or a power makes
// it nullopt, and so does an expression of more than 512 nodes.
class KernelBound {
 public:
  static std::optional<KernelBound> of(const LoopKernel& k);
  // +inf (never NaN) where the leaves' bounds prove nothing; `scratch`
  // holds the nodes' values (kept between calls: no allocation per run).
  double operator()(std::span<const double> leaf, std::vector<double>& scratch) const;
  double operator()(std::span<const double> leaf) const {
    std::vector<double> scratch;
    return (*this)(leaf, scratch);
  }

 private:
  struct Node {
    ir::SymOp op = ir::SymOp::Const;
    double value = 0;          // Const: its magnitude; a reduction's sum: its terms
    int a = -1, b = -1;        // operand nodes (earlier in nodes_)
    int leaf = -1;             // Var: the leaf it reads
    bool accumulator = false;  // Var: the reduction's accumulator (reads node `a`)
  };
  std::vector<Node> nodes_;  // operands before their users; the result last
};

}  // namespace saturn::lower
