// How many CPUs this process can use without competing with another one.
//
// The executor sizes its team once, at creation, because oneDNN primitives
// keep the thread count they were created with (oneDNN's CPU threading
// rules: a primitive runs on the team size it was made for). A team larger
// than the CPUs that are free makes every parallel region wait for the
// thread that shares a core with someone else's job: the latency of a run
// then depends on the other job's time slices (median 1.9x the best run
// with one core busy). A team of the free CPUs never waits for a busy core.
//
// Invariant: team_size() is at least 1 and never above the CPUs in the
// process's affinity mask, whatever was asked for.
#pragma once

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

// requested > 0: that many, capped to usable_cpus() (never oversubscribed).
// requested <= 0: free_cpus() (at least 1).
TeamSize team_size(int requested);

}  // namespace saturn::runtime
