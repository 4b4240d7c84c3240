#include "runtime/team_choice.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace saturn::runtime {

int team_for_free_cpus(double free, int current, int most) {
  most = std::max(1, most);
  current = std::clamp(current, 1, most);
  if (std::abs(free - current) <= 0.5 + kHysteresis) return current;
  return std::clamp(static_cast<int>(std::lround(free)), 1, most);
}

TeamChoice::TeamChoice(int most, int first, CpuReading start, Clock::time_point at, Clock::duration interval)
    : most_(std::max(1, most)),
      size_(std::clamp(first, 1, most_)),
      window_reading_(std::move(start)),
      window_start_(at),
      interval_(interval) {}

int TeamChoice::next(const CpuReading& now, Clock::time_point at) {
  if (!due(at)) return size_;
  const std::optional<double> free = free_cpus_between(window_reading_, now);
  if (!free) return size_;  // no tick passed yet: the window goes on
  size_ = team_for_free_cpus(*free, size_, most_);
  window_reading_ = now;
  window_start_ = at;
  return size_;
}

}  // namespace saturn::runtime
