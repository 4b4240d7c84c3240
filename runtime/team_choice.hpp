// The team each run of the CPU executor takes: as many threads as the CPUs
// other processes leave free while it runs, between one and the most it
// may use.
//
// Why per run and not once at creation: a team larger than the free CPUs
// waits at every parallel region's join for the thread that shares a core
// with another process's job, and oneDNN's OpenMP primitives cannot hand
// that thread's share to another (resnet18 on an Intel Xeon VM with one of
// its two cores kept busy: 75-92 ms a run on two threads, 28-36 on one,
// 14-17 quiet on two). Load comes and goes while a program serves runs.
//
// What counts is the load while the executor runs. Runs with no idle gap
// longer than `interval` between them make a stretch; /proc/stat is read
// when a stretch starts and at the end of its runs (no more often than
// every kReadEvery), and the load over each stretch, from its first
// reading to its last, adds up until the stretches last `interval` in
// all: then the team moves on the free CPUs over them. What other
// processes did while this one was idle (between stretches) never counts:
// a benchmark's contenders taking turns would otherwise read as load. And
// a program serving short bursts (turns of 90 ms between idle seconds)
// still moves: a window that had to last `interval` without a gap never
// closed for it, and a program made while the machine was busy kept its
// first team of one for good (the suite benchmark's first contender, on
// one thread at 1.75x the time).
//
// Invariant: size() is within [1, most]. It moves only when the stretches
// read since the last move last `interval`, and only when the free CPUs
// measured over them are more than kHysteresis beyond the half-CPU
// boundaries around the current size, so a neighbour using about half a
// CPU does not make it flap.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

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
  using Read = std::function<CpuReading()>;  // read_cpu_load, or a test's
  // A run's end is read when the last reading is this old: /proc/stat's
  // ticks are 10 ms, and a finer reading costs more than it tells.
  static constexpr Clock::duration kReadEvery = std::chrono::milliseconds(10);
  TeamChoice(int most, int first, Clock::duration interval = std::chrono::milliseconds(100));
  // Before a run starting at `at`: starts a stretch (reads) when none is
  // going on or the last run ended more than `interval` ago, adding the
  // one before up.
  void run_starts(Clock::time_point at, const Read& read);
  // After a run ending at `at`: reads (at most every kReadEvery), and when
  // the stretches read since the last move last `interval`, moves the team
  // on the free CPUs over them.
  void run_ended(Clock::time_point at, const Read& read);
  int size() const { return size_; }

 private:
  struct Reading {
    CpuReading load;
    Clock::time_point at;
  };
  struct Stretch {
    Reading first;
    std::optional<Reading> last;
  };
  // Adds the current stretch, from its first reading to its last, up.
  void add_stretch();
  int most_, size_;
  Clock::duration interval_;
  std::optional<Stretch> stretch_;
  std::optional<Clock::time_point> last_end_;
  CpuReading added_;  // ticks (ticks_between) over the stretches added since the last move
  Clock::duration added_time_{};
};
}  // namespace saturn::runtime
