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
// What counts is the load while the executor runs: a window opens at the
// start of a run and closes at the end of the first run at least
// `interval` later (readings of /proc/stat at both ends, none in between).
// An idle gap longer than `interval` before a run drops the open window
// unread: what other processes did while this one was idle says little
// about the next runs (a benchmark's contenders taking turns would
// otherwise read as load).
//
// Invariant: size() is within [1, most]. It moves only on a closed window,
// and only when the free CPUs measured over it are more than kHysteresis
// beyond the half-CPU boundaries around the current size, so a neighbour
// using about half a CPU does not make it flap.
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
  TeamChoice(int most, int first, Clock::duration interval = std::chrono::milliseconds(100));
  // Before a run starting at `at`: opens a window (reads) when none is
  // open or the last run ended more than `interval` ago.
  void run_starts(Clock::time_point at, const Read& read);
  // After a run ending at `at`: when the window has lasted `interval`,
  // reads, moves the team on the free CPUs over it, and opens the next.
  void run_ended(Clock::time_point at, const Read& read);
  int size() const { return size_; }

 private:
  struct Window {
    CpuReading start;
    Clock::time_point at;
  };
  int most_, size_;
  Clock::duration interval_;
  std::optional<Window> window_;
  std::optional<Clock::time_point> last_end_;
};

}  // namespace saturn::runtime
