// E-matching: a pattern compiled to a small register machine (egg's design).
//
// Register 0 holds the candidate root class. `Bind` iterates the nodes of a
// register's class that carry one operator (a contiguous run, since classes
// keep nodes sorted) and loads their children into fresh registers; checks
// follow right after the Bind that makes their registers available, so a
// failing repeated variable or ground subterm prunes the search early.
// Ground subterms (no variables, e.g. the literal 0 in (+ ?x 0)) are looked up
// once per search through the hash-cons rather than matched node by node.
// Variables already bound by an earlier pattern of a multi-pattern are checked
// against the substitution, so one machine serves both cases.
// Requires a rebuilt e-graph: children and classes are compared by raw id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/pattern.hpp"

namespace saturn::egraph {

class Matcher {
 public:
  enum class RootKind { Operator, Variable, Ground };

  // `bound[v]` is true for variables bound before this pattern runs.
  Matcher(const Pattern& p, const std::vector<bool>& bound);

  RootKind root_kind() const { return root_kind_; }
  Op root_op() const { return root_op_; }
  VarId root_var() const { return root_var_; }
  // A direct child of the root that is an already-bound variable, if any:
  // candidates can then be taken from that class's parents.
  VarId anchor_var() const { return anchor_var_; }
  // Variables this pattern binds (not bound before it).
  std::span<const std::pair<VarId, std::uint32_t>> binds() const { return out_vars_; }

  struct Ground {
    std::vector<EClassId> classes;  // per ground subterm
    std::uint32_t newest = 0;       // newest stamp among their nodes
  };
  // Looks up the ground subterms; nullopt when one is absent from the e-graph
  // (then nothing can match).
  std::optional<Ground> resolve_ground(const EGraph& g) const;
  bool has_ground() const { return !ground_.empty(); }

  // Matches at canonical class `root`. For each match, writes the pattern's
  // variables into `subst` and calls sink(newest), where `newest` is the
  // newest stamp (EGraph::stamp) among the e-nodes the match traversed and
  // `newest_in`; the sink returns false to stop. Returns false when stopped.
  template <class Sink>
  bool run(const EGraph& g, EClassId root, std::span<EClassId> subst, std::span<const EClassId> ground,
           std::vector<EClassId>& regs, std::uint32_t newest_in, Sink&& sink) const {
    regs.resize(num_regs_);
    regs[0] = root;
    return exec(g, 0, regs.data(), subst, ground, newest_in, sink);
  }

 private:
  enum class Kind : std::uint8_t { Bind, Compare, CheckVar, CheckGround };
  struct Instr {
    Kind kind;
    std::uint32_t reg;
    Op op;                // Bind
    std::uint32_t arity;  // Bind
    std::uint32_t arg;    // Bind: first output register; Compare: other register;
                          // CheckVar: variable; CheckGround: ground index
  };

  static constexpr std::int64_t kUnbound = -1, kPrebound = -2;
  void compile(const Pattern& p, std::uint32_t node, std::uint32_t reg, std::vector<std::int64_t>& var_reg);
  std::uint32_t add_ground(const Pattern& p, std::uint32_t node);

  template <class Sink>
  bool exec(const EGraph& g, std::size_t pc, EClassId* regs, std::span<EClassId> subst,
            std::span<const EClassId> ground, std::uint32_t newest, Sink& sink) const {
    for (; pc < prog_.size(); ++pc) {
      const Instr& in = prog_[pc];
      switch (in.kind) {
        case Kind::Bind: {
          for (const ClassNode& cn : g.nodes_with_op(regs[in.reg], in.op)) {
            auto kids = g.children(cn.id);
            if (kids.size() != in.arity) continue;
            std::copy(kids.begin(), kids.end(), regs + in.arg);
            std::uint32_t seen = std::max(newest, std::max(g.stamp(cn.id), cn.moved));
            if (!exec(g, pc + 1, regs, subst, ground, seen, sink)) return false;
          }
          return true;
        }
        case Kind::Compare:
          if (regs[in.reg] != regs[in.arg]) return true;
          break;
        case Kind::CheckVar:
          if (regs[in.reg] != subst[in.arg]) return true;
          break;
        case Kind::CheckGround:
          if (regs[in.reg] != ground[in.arg]) return true;
          break;
      }
    }
    for (auto [v, r] : out_vars_) subst[v] = regs[r];
    return sink(newest);
  }

  std::vector<Instr> prog_;
  std::vector<std::pair<VarId, std::uint32_t>> out_vars_;  // (variable, register)
  std::vector<Pattern> ground_;                            // ground subterms as patterns
  std::uint32_t num_regs_ = 1;
  RootKind root_kind_ = RootKind::Operator;
  Op root_op_{};
  VarId root_var_ = kNoVar;
  VarId anchor_var_ = kNoVar;
};

}  // namespace saturn::egraph
