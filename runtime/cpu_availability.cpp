#include "runtime/cpu_availability.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace saturn::runtime {

namespace {

// Per-CPU jiffies from /proc/stat ("cpuN user nice system idle iowait ...").
std::map<int, CpuTimes> read_cpu_times() {
  std::map<int, CpuTimes> out;
  std::ifstream f("/proc/stat");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream in(line.substr(3));
    int cpu = 0;
    in >> cpu;
    CpuTimes t;
    unsigned long long v = 0;
    // user nice system idle iowait irq softirq steal; guest and guest_nice
    // (after them) are already inside user and nice.
    for (int field = 0; field < 8 && in >> v; ++field) {
      t.total += v;
      if (field == 3 || field == 4) t.idle += v;  // idle, iowait
    }
    out[cpu] = t;
  }
  return out;
}

cpu_set_t affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  }
  return set;
}

// This process's own CPU time (every thread), in the same ticks as
// /proc/stat: its fields 14 and 15, utime and stime.
unsigned long long own_ticks() {
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');  // (the command name may hold spaces)
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string skipped;  // fields 3 to 13: state ... cmajflt
  for (int k = 3; k <= 13; ++k) in >> skipped;
  unsigned long long utime = 0, stime = 0;
  in >> utime >> stime;
  return utime + stime;
}

// The free CPUs over a short window, rounded to the nearest whole CPU
// (others' busy ticks, less this process's own: its libraries' idle threads
// may still be spinning from start-up or an earlier run).
int sample_free_cpus() {
  const int usable = usable_cpus();
  const CpuReading before = read_cpu_load();
  if (before.cpus.empty()) return usable;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::optional<double> free = free_cpus_between(before, read_cpu_load());
  if (!free) return usable;
  return std::clamp(static_cast<int>(*free + 0.5), 1, usable);
}

}  // namespace

int usable_cpus() {
  cpu_set_t set = affinity();
  return std::max(1, CPU_COUNT(&set));
}

CpuReading read_cpu_load() { return {read_cpu_times(), own_ticks()}; }

CpuReading ticks_between(const CpuReading& before, const CpuReading& after) {
  CpuReading ticks;
  for (const auto& [cpu, a] : after.cpus) {
    auto b = before.cpus.find(cpu);
    if (b == before.cpus.end() || a.total < b->second.total || a.idle < b->second.idle) continue;
    ticks.cpus[cpu] = CpuTimes{a.idle - b->second.idle, a.total - b->second.total};
  }
  ticks.own = after.own > before.own ? after.own - before.own : 0;
  return ticks;
}

std::optional<double> free_cpus_in(const CpuReading& ticks) {
  const cpu_set_t mask = affinity();
  unsigned long long busy = 0, window = 0;
  for (const auto& [cpu, t] : ticks.cpus) {
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask)) continue;
    busy += t.total - std::min(t.total, t.idle);
    window = std::max(window, t.total);
  }
  if (window == 0) return std::nullopt;
  const double others = static_cast<double>(busy > ticks.own ? busy - ticks.own : 0) / static_cast<double>(window);
  return std::max(0.0, static_cast<double>(usable_cpus()) - others);
}

std::optional<double> free_cpus_between(const CpuReading& before, const CpuReading& after) {
  return free_cpus_in(ticks_between(before, after));
}

int free_cpus_now() { return sample_free_cpus(); }

int free_cpus() {
  static std::mutex m;
  static std::chrono::steady_clock::time_point when;
  static int cached = 0;
  std::lock_guard<std::mutex> lock(m);
  const auto now = std::chrono::steady_clock::now();
  if (cached == 0 || now - when > std::chrono::seconds(1)) {
    cached = sample_free_cpus();
    when = std::chrono::steady_clock::now();
  }
  return cached;
}

TeamSize team_size(int requested) {
  const int usable = usable_cpus();
  if (requested > 0) {
    if (requested <= usable) return {requested, "asked"};
    return {usable, "asked for " + std::to_string(requested) + ", capped to the " + std::to_string(usable) +
                        " CPUs this process may use"};
  }
  const int free = free_cpus();
  return {free, "every free CPU (" + std::to_string(free) + " of " + std::to_string(usable) + ")"};
}

}  // namespace saturn::runtime
