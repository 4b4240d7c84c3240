#include "egraph/runner.hpp"

#include <unistd.h>

#include <cstdio>

namespace saturn::egraph {

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::Saturated:
      return "saturated";
    case StopReason::IterLimit:
      return "iter_limit";
    case StopReason::NodeLimit:
      return "node_limit";
    case StopReason::TimeLimit:
      return "time_limit";
    case StopReason::MemoryLimit:
      return "memory_limit";
    case StopReason::Other:
      return "other";
  }
  return "other";
}

std::size_t resident_memory_mb() {
  // Linux: the second field of /proc/self/statm is resident pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / (1024 * 1024);
}

double RunReport::search_ms() const {
  double t = 0;
  for (auto& i : iterations) t += i.search_ms;
  return t;
}
double RunReport::apply_ms() const {
  double t = 0;
  for (auto& i : iterations) t += i.apply_ms;
  return t;
}
double RunReport::rebuild_ms() const {
  double t = 0;
  for (auto& i : iterations) t += i.rebuild_ms;
  return t;
}

Runner::Runner(RunnerLimits limits, std::unique_ptr<Scheduler> scheduler)
    : limits_(limits), scheduler_(scheduler ? std::move(scheduler) : std::make_unique<BackoffScheduler>()) {}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

RunReport Runner::run(EGraph& g, std::span<const Rewrite> rules) {
  RunReport report;
  report.rules.resize(rules.size());
  for (std::size_t r = 0; r < rules.size(); ++r) report.rules[r].name = rules[r].name();
  const auto start = Clock::now();
  g.rebuild();

  // Reading resident memory costs a few microseconds: at most every 5 ms.
  double memory_checked_at = -1e9;
  auto check_limits = [&]() -> std::optional<StopReason> {
    if (report.iterations.size() >= limits_.iter_limit) return StopReason::IterLimit;
    if (g.num_nodes() > limits_.node_limit) return StopReason::NodeLimit;
    if (ms_since(start) > limits_.time_limit_s * 1000.0) return StopReason::TimeLimit;
    if (limits_.memory_limit_mb) {
      double now = ms_since(start);
      if (now - memory_checked_at >= 5.0) {
        memory_checked_at = now;
        if (resident_memory_mb() > limits_.memory_limit_mb) return StopReason::MemoryLimit;
      }
    }
    return std::nullopt;
  };

  std::vector<Matches> matches(rules.size());
  // Per rule: every match of the e-graph as it was at this epoch is applied.
  std::vector<std::uint32_t> applied_through(rules.size(), 0);
  std::vector<bool> complete(rules.size(), false);
  for (;;) {
    std::optional<StopReason> stop = check_limits();
    if (stop) {
      report.stop_reason = *stop;
      break;
    }
    for (auto& h : hooks_) {
      if (auto msg = h(g, report)) {
        report.stop_reason = StopReason::Other;
        report.stop_message = *msg;
        break;
      }
    }
    if (!report.stop_message.empty()) break;

    IterationReport it;
    it.index = report.iterations.size();
    const auto it_start = Clock::now();
    const std::size_t nodes_before = g.num_nodes(), classes_before = g.num_classes();

    // Search every rule on the rebuilt e-graph. Changes made from here on
    // are stamped with the next epoch.
    const std::uint32_t search_epoch = g.epoch();
    g.advance_epoch();
    auto t = Clock::now();
    for (std::size_t r = 0; r < rules.size() && !stop; ++r) {
      auto rt = Clock::now();
      matches[r].data.clear();
      complete[r] = scheduler_->search(it.index, r, rules[r], g, matches[r], incremental_ ? applied_through[r] : 0);
      report.rules[r].search_ms += ms_since(rt);
      report.rules[r].matches += matches[r].size();
      it.matches += matches[r].size();
      stop = check_limits();
    }
    it.search_ms = ms_since(t);

    // Apply rule by rule.
    t = Clock::now();
    bool changed = false;
    for (std::size_t r = 0; r < rules.size() && !stop; ++r) {
      auto rt = Clock::now();
      if (applying_ && !matches[r].data.empty()) applying_(&rules[r]);
      ApplyStats s = rules[r].apply(g, matches[r], limits_.node_limit);
      if (complete[r] && !s.over_budget) applied_through[r] = search_epoch;
      report.rules[r].apply_ms += ms_since(rt);
      report.rules[r].applications += s.applied;
      report.rules[r].changed += s.changed;
      report.rules[r].rejected += s.rejected;
      it.applied += s.applied;
      changed |= s.changed > 0;
      stop = check_limits();
    }
    it.apply_ms = ms_since(t);

    t = Clock::now();
    if (applying_) applying_(nullptr);
    it.rebuild_unions = g.rebuild();
    it.rebuild_ms = ms_since(t);
    it.enodes = g.num_nodes();
    it.eclasses = g.num_classes();
    it.total_ms = ms_since(it_start);
    report.iterations.push_back(it);
    if (observer_) observer_(g, it);

    if (stop) {
      report.stop_reason = *stop;
      break;
    }
    if (!changed && nodes_before == g.num_nodes() && classes_before == g.num_classes() &&
        scheduler_->can_stop(it.index)) {
      report.stop_reason = StopReason::Saturated;
      break;
    }
  }
  for (std::size_t r = 0; r < rules.size(); ++r) report.rules[r].times_banned = scheduler_->times_banned(r);
  report.total_ms = ms_since(start);
  return report;
}

}  // namespace saturn::egraph
