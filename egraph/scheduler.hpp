// Rule schedulers: which rules search in an iteration, and with what limit.
//
// SimpleScheduler searches every rule every iteration without a limit.
// BackoffScheduler is egg's: a rule whose matches exceed its threshold
// (match_limit << times_banned) is banned for ban_length << times_banned
// iterations and its matches dropped; before the runner may stop as
// saturated, banned rules are fast-forwarded back in, so saturation means
// saturated with every rule.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "egraph/rewrite.hpp"

namespace saturn::egraph {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;
  // Searches rule `index` in `iteration` for matches new since epoch
  // `since` (see Rewrite::search). Returns true when `out` holds every such
  // match, false when the scheduler skipped the rule or dropped its matches.
  virtual bool search(std::size_t iteration, std::size_t index, const Rewrite& rw, const EGraph& g, Matches& out,
                      std::uint32_t since) {
    (void)iteration, (void)index;
    rw.search(g, out, static_cast<std::size_t>(-1), since);
    return true;
  }
  // May the runner stop as saturated after `iteration`?
  virtual bool can_stop(std::size_t iteration) {
    (void)iteration;
    return true;
  }
  // Times rule `index` has been banned so far.
  virtual std::size_t times_banned(std::size_t index) const {
    (void)index;
    return 0;
  }
};

class SimpleScheduler final : public Scheduler {
 public:
  std::string name() const override { return "simple"; }
};

class BackoffScheduler final : public Scheduler {
 public:
  explicit BackoffScheduler(std::size_t match_limit = 1000, std::size_t ban_length = 5)
      : match_limit_(match_limit), ban_length_(ban_length) {}
  std::string name() const override { return "backoff"; }
  bool search(std::size_t iteration, std::size_t index, const Rewrite& rw, const EGraph& g, Matches& out,
              std::uint32_t since) override;
  bool can_stop(std::size_t iteration) override;
  std::size_t times_banned(std::size_t index) const override {
    return index < stats_.size() ? stats_[index].times_banned : 0;
  }

 private:
  struct RuleState {
    std::size_t banned_until = 0;
    std::size_t times_banned = 0;
  };
  RuleState& state(std::size_t index) {
    if (stats_.size() <= index) stats_.resize(index + 1);
    return stats_[index];
  }
  std::size_t match_limit_, ban_length_;
  std::vector<RuleState> stats_;
};

std::unique_ptr<Scheduler> make_scheduler(const std::string& name);  // "simple" | "backoff"; null if unknown

}  // namespace saturn::egraph
