// How many CPUs this process can use without competing with another one.
//
// A team larger than the CPUs that are free makes every parallel region
// wait for the thread that shares a core with someone else's job: the
// latency of a run then depends on the other job's time slices (median
// 1.9x the best run with one core busy on a Zen 4, 5.5-8.7x slower than
// quiet on an Intel Xeon VM). A team of the free CPUs never waits for a
// busy core. The executor sizes its first team here, when it is made, and
// each run's from readings between runs (runtime/team_choice.hpp).
//
// Invariant: team_size() is at least 1 and never above the CPUs in the
// process's affinity mask, whatever was asked for.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace saturn::runtime {

struct TeamSize {
  int threads = 1;
  // Why that many: "asked", "asked, capped to the N CPUs this process may
  // use", "every free CPU (N of M)" ... for reports.
  std::string reason;
};

// CPUs in this process's affinity mask (sched_getaffinity).
int usable_cpus();

// The CPUs of the affinity mask that other processes leave free: the mask's
// size less the CPU time others took over a short window (50 ms, from
// /proc/stat less this process's own), rounded to whole CPUs. The count is
// reused for a second, so a program creating many executors samples once.
// Without /proc/stat: usable_cpus().
int free_cpus();
// The same, sampled now (no reuse).
int free_cpus_now();

// The CPU time every CPU and this process had taken at one moment
// (/proc/stat, /proc/self/stat), to compare with a later reading: the
// free CPUs over the window between the two, without sleeping (the
// executor reads one between runs).
struct CpuTimes {
  unsigned long long idle = 0, total = 0;  // ticks
};
struct CpuReading {
  std::map<int, CpuTimes> cpus;  // by CPU number; empty without /proc/stat
  unsigned long long own = 0;    // this process's ticks, every thread
};
CpuReading read_cpu_load();
// The CPUs of the affinity mask that other processes left free between
// two readings, as a fraction (this process's own ticks do not count):
// the mask's size less the CPU time others took. Nothing when no tick
// passed on any CPU of the mask in between, or without /proc/stat.
std::optional<double> free_cpus_between(const CpuReading& before, const CpuReading& after);
// The ticks between two readings, per CPU and this process's own (CPUs
// whose counters went back left out), and the free CPUs over such ticks:
// several windows' ticks added up are read as one window.
CpuReading ticks_between(const CpuReading& before, const CpuReading& after);
std::optional<double> free_cpus_in(const CpuReading& ticks);

// requested > 0: that many, capped to usable_cpus() (never oversubscribed).
// requested <= 0: free_cpus() (at least 1).
TeamSize team_size(int requested);

}  // namespace saturn::runtime
