// The team each run of the CPU executor takes: as many threads as the CPUs
// other processes leave free, between one and the most it may use, read
// again between runs.
//
// Why per run and not once at creation: a team larger than the free CPUs
// waits at every parallel region's join for the thread that shares a core
// with another process's job, and oneDNN's OpenMP primitives cannot hand
// that thread's share to another (resnet18 on an Intel Xeon VM with one of
// its two cores kept busy: 91.8 ms a run on two threads, 35.8 on one,
// 16.7 quiet on two). Load comes and goes while a program serves runs.
//
// Invariant: size() is within [1, most]. It moves only on a window of at
// least `interval`, and only when the free CPUs measured over it are more
// than kHysteresis beyond the half-CPU boundaries around the current size,
// so a neighbour using about half a CPU does not make it flap.
#pragma once

#include <chrono>

#include "runtime/cpu_availability.hpp"

namespace saturn::runtime {

// The team for `free` CPUs (a fraction) when the current team is `current`:
// current while free stays within current +- (0.5 + kHysteresis), else
// free rounded to the nearest whole CPU; always within [1, most].
inline constexpr double kHysteresis = 0.1;
int team_for_free_cpus(double free, int current, int most);

class TeamChoice {
 public:
  using Clock = std::chrono::steady_clock;
  TeamChoice(int most, int first, CpuReading start, Clock::time_point at,
             Clock::duration interval = std::chrono::milliseconds(100));
  // The team for a run starting at `at`: when `interval` has passed since
  // the last window began, the free CPUs over the window decide (`now` is
  // read by the caller, through read_cpu_load, only when due() says so).
  bool due(Clock::time_point at) const { return at - window_start_ >= interval_; }
  int next(const CpuReading& now, Clock::time_point at);
  int size() const { return size_; }
  int most() const { return most_; }

 private:
  int most_, size_;
  CpuReading window_reading_;
  Clock::time_point window_start_;
  Clock::duration interval_;
};

}  // namespace saturn::runtime
