#include "runtime/team_choice.hpp"

#include <algorithm>
#include <cmath>

namespace saturn::runtime {

int team_for_free_cpus(double free, int current, int most) {
  most = std::max(1, most);
  current = std::clamp(current, 1, most);
  if (std::abs(free - current) <= 0.5 + kHysteresis) return current;
  return std::clamp(static_cast<int>(std::lround(free)), 1, most);
}

TeamChoice::TeamChoice(int most, int first, Clock::duration interval)
    : most_(std::max(1, most)), size_(std::clamp(first, 1, most_)), interval_(interval) {}

void TeamChoice::run_starts(Clock::time_point at, const Read& read) {
  if (window_ && last_end_ && at - *last_end_ <= interval_) return;
  window_ = Window{read(), at};
}

void TeamChoice::run_ended(Clock::time_point at, const Read& read) {
  last_end_ = at;
  if (!window_ || at - window_->at < interval_) return;
  CpuReading now = read();
  const std::optional<double> free = free_cpus_between(window_->start, now);
  if (!free) return;  // no tick passed yet: the window goes on
  size_ = team_for_free_cpus(*free, size_, most_);
  window_ = Window{std::move(now), at};
}

}  // namespace saturn::runtime
