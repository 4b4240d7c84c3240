// The runner: equality saturation with limits, a scheduler and hooks.
//
// One iteration has egg's Runner semantics, so e-graph sizes are comparable
// with egg's exactly: search every rule on the rebuilt e-graph, then apply
// all matches rule by rule (checking limits after each rule), then rebuild
// once. Limits are checked before each iteration and after each rule's search
// and application; the run stops as saturated when an iteration changes
// nothing and the scheduler agrees. Every run says why it stopped.
// One departure from egg, which only matters when the node limit is hit: the
// limit is also checked between the matches of one rule, because a single
// rule's application can multiply the e-graph (seen: 10k -> 231k e-nodes).
// Node counts before a rebuild include nodes the rebuild will merge away.
//
// Semi-naive search (on by default): a rule whose every match of some
// earlier search was applied only looks for matches that traverse an e-node
// added or changed since (Rewrite::search). Re-applying an old match is a
// no-op, since e-graphs only grow, so saturated e-graphs are identical with
// it on or off; it saves the re-application of every old match each
// iteration. Rules with guards, and patterns whose root is an unbound
// variable, always search in full. Statistics count the matches reported.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/rewrite.hpp"
#include "egraph/scheduler.hpp"

namespace saturn::egraph {

enum class StopReason { Saturated, IterLimit, NodeLimit, TimeLimit, MemoryLimit, Other };
const char* to_string(StopReason r);

struct RunnerLimits {
  std::size_t iter_limit = 30;
  std::size_t node_limit = 10000;
  double time_limit_s = 5.0;
  // Resident memory of the whole process, in MiB (0: no limit); checked
  // where the node limit is, except between the matches of a rule.
  std::size_t memory_limit_mb = 0;
};

// The process's resident memory now, in MiB (0 where it cannot be read).
std::size_t resident_memory_mb();

struct IterationReport {
  std::size_t index = 0;
  std::size_t enodes = 0;  // live e-nodes after this iteration's rebuild
  std::size_t eclasses = 0;
  std::size_t matches = 0;  // across all rules
  std::size_t applied = 0;
  std::size_t rebuild_unions = 0;
  double search_ms = 0, apply_ms = 0, rebuild_ms = 0, total_ms = 0;
};

struct RuleReport {
  std::string name;
  std::size_t matches = 0;       // found by search (after scheduler limits)
  std::size_t applications = 0;  // guard held and the RHS was merged in
  std::size_t changed = 0;       // applications that changed the e-graph
  std::size_t rejected = 0;      // turned down by the guard
  std::size_t times_banned = 0;
  double search_ms = 0, apply_ms = 0;
};

struct RunReport {
  StopReason stop_reason = StopReason::Saturated;
  std::string stop_message;  // for Other: what the hook said
  std::vector<IterationReport> iterations;
  std::vector<RuleReport> rules;
  double total_ms = 0;
  double search_ms() const;
  double apply_ms() const;
  double rebuild_ms() const;
};

class Runner {
 public:
  // A hook runs before each iteration; returning a message stops the run
  // with StopReason::Other.
  using Hook = std::function<std::optional<std::string>(const EGraph&, const RunReport&)>;
  // Called after each iteration (progress display).
  using Observer = std::function<void(const EGraph&, const IterationReport&)>;

  explicit Runner(RunnerLimits limits = {}, std::unique_ptr<Scheduler> scheduler = nullptr);

  void add_hook(Hook h) { hooks_.push_back(std::move(h)); }
  // Off: every search reports every match, as in egg.
  void set_incremental(bool on) { incremental_ = on; }
  void set_observer(Observer o) { observer_ = std::move(o); }
  // Told which rule is about to change the e-graph (nullptr: the rebuild),
  // so that an analysis can name the rule behind a conflict.
  void set_applying(std::function<void(const Rewrite*)> f) { applying_ = std::move(f); }

  RunReport run(EGraph& g, std::span<const Rewrite> rules);

 private:
  RunnerLimits limits_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<Hook> hooks_;
  Observer observer_;
  std::function<void(const Rewrite*)> applying_;
  bool incremental_ = true;
};

}  // namespace saturn::egraph
