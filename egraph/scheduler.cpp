#include "egraph/scheduler.hpp"

#include <algorithm>
#include <limits>

namespace saturn::egraph {

namespace {
std::size_t shl_saturating(std::size_t v, std::size_t by) {
  if (by >= 63 || v > (std::numeric_limits<std::size_t>::max() >> by)) return std::numeric_limits<std::size_t>::max();
  return v << by;
}
}  // namespace

bool BackoffScheduler::search(std::size_t iteration, std::size_t index, const Rewrite& rw, const EGraph& g,
                              Matches& out, std::uint32_t since) {
  RuleState& s = state(index);
  if (iteration < s.banned_until) return false;
  std::size_t threshold = shl_saturating(match_limit_, s.times_banned);
  rw.search(g, out, threshold, since);
  if (out.size() > threshold) {
    std::size_t ban = shl_saturating(ban_length_, s.times_banned);
    s.times_banned += 1;
    s.banned_until = iteration + ban;
    out.data.clear();
    return false;
  }
  return true;
}

bool BackoffScheduler::can_stop(std::size_t iteration) {
  std::size_t min_ban = std::numeric_limits<std::size_t>::max();
  for (const RuleState& s : stats_)
    if (s.banned_until > iteration) min_ban = std::min(min_ban, s.banned_until);
  if (min_ban == std::numeric_limits<std::size_t>::max()) return true;
  // Fast-forward: shift every ban so the earliest ends now.
  std::size_t delta = min_ban - iteration;
  for (RuleState& s : stats_)
    if (s.banned_until > iteration) s.banned_until -= delta;
  return false;
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name) {
  if (name == "simple") return std::make_unique<SimpleScheduler>();
  if (name == "backoff") return std::make_unique<BackoffScheduler>();
  return nullptr;
}

}  // namespace saturn::egraph
