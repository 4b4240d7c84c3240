#include "pipeline/saturate.hpp"

#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>

namespace saturn::pipeline {

std::size_t default_memory_limit_mb() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / (2 * 1024 * 1024)
                               : 0;
}

SaturateResult saturate(egraph::EGraph& g, std::vector<rules::Phase>& phases, const SaturateOptions& o,
                        const std::function<void(egraph::Runner&)>& configure) {
  using namespace saturn::egraph;
  SaturateResult res;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t p = 0; p < phases.size(); ++p) {
    rules::Phase& phase = phases[p];
    // Each phase may use an equal share of the nodes and seconds the phases
    // before it left, the last one all of them: a phase that blows up still
    // leaves room to the ones after it, the library substitutions that
    // decide what runs. (maxvit_t's phase 2 went from 16k to the 200k limit
    // in one iteration of factor-mul, and its program was extracted with
    // no library call at all, the library phase never run.)
    const std::size_t phases_left = phases.size() - p, now = g.num_nodes();
    const std::size_t node_share = now >= o.node_limit ? o.node_limit : now + (o.node_limit - now) / phases_left;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double time_share = std::max(0.0, o.time_limit_s - elapsed) / static_cast<double>(phases_left);
    RunnerLimits limits{o.iter_limit, node_share, time_share, o.memory_limit_mb};
    Runner runner(limits, make_scheduler(o.scheduler));
    runner.set_incremental(o.incremental);
    if (o.progress) {
      runner.set_observer([&](const EGraph&, const IterationReport& it) {
        std::cerr << "\r[" << o.label << (o.label.empty() ? "" : ", ") << "phase " << phase.phase << "] iteration "
                  << it.index + 1 << ": " << it.enodes << " e-nodes, " << it.eclasses << " e-classes, " << std::fixed
                  << std::setprecision(1) << it.total_ms << " ms   " << std::flush;
      });
    }
    if (configure) configure(runner);
    RunReport rep = runner.run(g, phase.rewrites);
    res.iterations += rep.iterations.size();
    res.time_ms += rep.total_ms;
    if (res.stop == "saturated") res.stop = to_string(rep.stop_reason);
    nlohmann::json pj = {{"phase", phase.phase},
                         {"optimizers", phase.optimizers},
                         {"iterations", rep.iterations.size()},
                         {"stop_reason", to_string(rep.stop_reason)},
                         {"node_limit", node_share},
                         {"time_limit_s", time_share},
                         {"time_ms", rep.total_ms},
                         {"search_ms", rep.search_ms()},
                         {"apply_ms", rep.apply_ms()},
                         {"rebuild_ms", rep.rebuild_ms()}};
    if (!rep.stop_message.empty()) pj["stop_message"] = rep.stop_message;
    // The e-graph's size after each iteration (the growth `saturn opt --html` plots).
    nlohmann::json enodes = nlohmann::json::array(), eclasses = nlohmann::json::array();
    for (const IterationReport& it : rep.iterations) {
      enodes.push_back(it.enodes);
      eclasses.push_back(it.eclasses);
    }
    pj["enodes"] = std::move(enodes);
    pj["eclasses"] = std::move(eclasses);
    res.phases.push_back(std::move(pj));
    for (const RuleReport& r : rep.rules) {  // a rule in several phases: its counts summed
      nlohmann::json& j = res.rules[r.name];
      auto add = [&](const char* key, std::size_t n) {
        j[key] = (j.contains(key) ? j[key].get<std::size_t>() : 0) + n;
      };
      add("matches", r.matches);
      add("applications", r.applications);
      add("changed", r.changed);
      add("rejected", r.rejected);
      add("times_banned", r.times_banned);
    }
    if (rep.stop_reason == StopReason::Other) break;
  }
  if (o.progress) std::cerr << "\r\033[K" << std::flush;
  return res;
}

}  // namespace saturn::pipeline
