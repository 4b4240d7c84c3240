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

void TeamChoice::add_stretch() {
  if (!stretch_ || !stretch_->last) return;
  const CpuReading ticks = ticks_between(stretch_->first.load, stretch_->last->load);
  for (const auto& [cpu, t] : ticks.cpus) {
    CpuTimes& sum = added_.cpus[cpu];
    sum.idle += t.idle;
    sum.total += t.total;
  }
  added_.own += ticks.own;
  added_time_ += stretch_->last->at - stretch_->first.at;
}

void TeamChoice::run_starts(Clock::time_point at, const Read& read) {
  if (stretch_ && last_end_ && at - *last_end_ <= interval_) return;
  add_stretch();
  stretch_ = Stretch{{read(), at}, std::nullopt};
}

void TeamChoice::run_ended(Clock::time_point at, const Read& read) {
  last_end_ = at;
  if (!stretch_) return;
  const Clock::time_point read_at = stretch_->last ? stretch_->last->at : stretch_->first.at;
  if (stretch_->last && at - read_at < kReadEvery) return;
  stretch_->last = Reading{read(), at};
  if (added_time_ + (at - stretch_->first.at) < interval_) return;
  add_stretch();
  const std::optional<double> free = free_cpus_in(added_);
  stretch_ = Stretch{*stretch_->last, std::nullopt};
  if (!free) return;  // no tick passed yet: the sums go on
  size_ = team_for_free_cpus(*free, size_, most_);
  added_ = CpuReading{};
  added_time_ = {};
}

}  // namespace saturn::runtime
