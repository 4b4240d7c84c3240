// runtime::TeamChoice and the CPU executor's teams: a run takes as many
// threads as other processes leave CPUs free (never flapping on a load near
// a boundary), and a smaller team's program computes the same values.
#include <sched.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "ir/onnx_import.hpp"
#include "pipeline/optimize.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/team_choice.hpp"
#include "tests/busy_cpu.hpp"
#include "tests/helpers.hpp"

using namespace saturn;
using namespace saturn::runtime;
using namespace std::chrono_literals;

namespace {

// A first reading: every CPU of the affinity mask at 1000 ticks, idle.
CpuReading start() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  CpuReading r;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) r.cpus[c] = CpuTimes{1000, 1000};
  return r;
}

// `r` after `ticks` more ticks on every CPU, `busy_cpus` of them (spread
// evenly) not idle, `own` of those this process's.
CpuReading after(const CpuReading& r, unsigned long long ticks, double busy_cpus, unsigned long long own) {
  CpuReading next = r;
  const double n = static_cast<double>(r.cpus.size());
  for (auto& [cpu, t] : next.cpus) {
    const auto busy = static_cast<unsigned long long>(static_cast<double>(ticks) * busy_cpus / n);
    t.total += ticks;
    t.idle += ticks - busy;
  }
  next.own += own;
  return next;
}

}  // namespace

TEST_CASE("the team follows the free CPUs, with room either side of a boundary") {
  // Two CPUs, the team of two: a neighbour taking up to 0.6 of a CPU keeps it.
  CHECK(team_for_free_cpus(2.0, 2, 2) == 2);
  CHECK(team_for_free_cpus(1.45, 2, 2) == 2);
  CHECK(team_for_free_cpus(1.3, 2, 2) == 1);
  CHECK(team_for_free_cpus(1.0, 2, 2) == 1);
  // Back up only once the neighbour takes under 0.4.
  CHECK(team_for_free_cpus(1.55, 1, 2) == 1);
  CHECK(team_for_free_cpus(1.7, 1, 2) == 2);
  // Within [1, most] whatever the reading.
  CHECK(team_for_free_cpus(0.0, 2, 2) == 1);
  CHECK(team_for_free_cpus(7.9, 1, 4) == 4);
  CHECK(team_for_free_cpus(3.0, 9, 4) == 3);
}

TEST_CASE("free CPUs between two readings leave out this process's own ticks") {
  const int usable = usable_cpus();
  const CpuReading a = start();
  // Every CPU busy for the whole window, all of it this process's.
  auto own = free_cpus_between(a, after(a, 100, usable, 100 * static_cast<unsigned long long>(usable)));
  REQUIRE(own);
  CHECK(*own == Approx(usable).margin(0.05));
  // One CPU's worth taken by someone else.
  auto other = free_cpus_between(a, after(a, 100, 1.0, 0));
  REQUIRE(other);
  CHECK(*other == Approx(usable - 1.0).margin(0.05));
  // No tick passed: nothing to say.
  CHECK_FALSE(free_cpus_between(a, a));
}

TEST_CASE("a team choice reads the load over its own runs, and moves on it") {
  if (usable_cpus() < 2) {
    WARN("one usable CPU: one team");
    return;
  }
  // A clock and a CPU load the test moves by hand; `reads` counts readings.
  CpuReading load = start();
  int reads = 0;
  const TeamChoice::Read read = [&] {
    ++reads;
    return load;
  };
  const auto t0 = TeamChoice::Clock::now();
  auto run = [&](TeamChoice& c, std::chrono::milliseconds from, std::chrono::milliseconds to, double busy_cpus) {
    c.run_starts(t0 + from, read);
    load = after(load, static_cast<unsigned long long>((to - from).count() / 10), busy_cpus, 0);
    c.run_ended(t0 + to, read);
  };
  TeamChoice c(2, 2, 250ms);
  CHECK(c.size() == 2);
  // Runs of 100 ms with another process keeping a CPU busy: the team moves
  // at the end of the first run 250 ms after the first reading. Each
  // run's end is read, and the stretch's start.
  run(c, 0ms, 100ms, 1.0);
  run(c, 100ms, 200ms, 1.0);
  CHECK(c.size() == 2);
  CHECK(reads == 3);
  run(c, 200ms, 300ms, 1.0);
  CHECK(c.size() == 1);
  CHECK(reads == 4);
  // Quiet again: back to two at the next closed window.
  run(c, 300ms, 500ms, 0.0);
  CHECK(c.size() == 1);
  run(c, 500ms, 600ms, 0.0);
  CHECK(c.size() == 2);
  // A long idle gap in which another process was busy drops the window:
  // what it did while this one was idle does not count.
  TeamChoice d(2, 2, 250ms);
  run(d, 0ms, 100ms, 0.0);
  load = after(load, 200, 2.0, 0);  // two seconds of others' work, idle here
  run(d, 2100ms, 2200ms, 0.0);
  run(d, 2200ms, 2400ms, 0.0);
  CHECK(d.size() == 2);
  // Short runs back to back are read every 10 ms at most: 200 runs of 1
  // ms, 21 readings.
  TeamChoice f(2, 2, 250ms);
  reads = 0;
  for (int i = 0; i < 200; ++i) run(f, i * 1ms, i * 1ms + 1ms, 0.0);
  CHECK(reads == 21);
  // Bursts of 60 ms a second apart, another process keeping a CPU busy
  // while they run and both while they do not: the bursts add up, and the
  // team moves on the load over them alone (one CPU free), at the end of
  // the fifth burst (300 ms of them).
  TeamChoice g(2, 2, 250ms);
  for (int burst = 0; burst < 5; ++burst) {
    const auto at = burst * 1000ms;
    CHECK(g.size() == 2);
    run(g, at, at + 30ms, 1.0);
    run(g, at + 30ms, at + 60ms, 1.0);
    load = after(load, 94, 2.0, 0);  // idle here
  }
  CHECK(g.size() == 1);
  // No tick in a window: it goes on, the team stays.
  TeamChoice e(2, 1, 250ms);
  e.run_starts(t0, read);
  e.run_ended(t0 + 300ms, read);
  CHECK(e.size() == 1);
}

namespace {

struct Model {
  ir::Graph graph;
  std::vector<ir::Tensor> inputs;
};

// The bundled residual CNN as `saturn opt --target cpu` leaves it: its
// convolutions are oneDNN primitives, made for the team they run on.
Model optimized_resnet_small() {
  const std::string dir = test::source_dir() + "/docs/examples/models/";
  auto input = ir::read_tensor_pb(dir + "resnet_small.input.pb");
  REQUIRE(input);
  Model m;
  m.inputs = {*input};
  auto g = ir::import_onnx_for_inputs(dir + "resnet_small.onnx", m.inputs);
  REQUIRE(g);
  pipeline::OptimizeOptions o;
  o.target = "cpu";
  o.rule_files = pipeline::rule_files_for(test::source_dir() + "/rulesets", "cpu");
  auto opt = pipeline::optimize(*g, o);
  REQUIRE(opt);
  m.graph = opt->graph;
  m.inputs = ir::runtime_inputs(m.graph, m.inputs);
  return m;
}

void check_same(const std::vector<ir::Tensor>& got, const std::vector<ir::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    REQUIRE(got[k].dims() == want[k].dims());
    for (std::size_t i = 0; i < got[k].numel(); ++i) {
      INFO("output " << k << " element " << i);
      CHECK(got[k].at(i) == Approx(want[k].at(i)).epsilon(1e-5).margin(1e-6));
    }
  }
}

}  // namespace

TEST_CASE("a smaller team runs a program of its own, with the same values") {
  if (usable_cpus() < 2) {
    WARN("one usable CPU: one team");
    return;
  }
  const Model m = optimized_resnet_small();
  CpuExecutorOptions o;
  o.threads = 2;
  o.adapt_team = false;
  auto e = CpuExecutor::create(m.graph, o);
  REQUIRE(e);
  CpuExecutor& x = **e;
  REQUIRE(x.program().library_calls > 0);
  auto two = x.run(m.inputs);
  REQUIRE(two);
  REQUIRE(x.use_team(1));
  auto one = x.run(m.inputs);
  REQUIRE(one);
  CHECK(x.last_team() == 1);
  CHECK(x.runs_by_team().at(1) == 1);
  CHECK(x.runs_by_team().at(2) == 1);
  check_same(*one, *two);
  // And back: the first program, still there.
  REQUIRE(x.use_team(2));
  auto again = x.run(m.inputs);
  REQUIRE(again);
  CHECK(x.last_team() == 2);
  check_same(*again, *two);
}

TEST_CASE("with a CPU kept busy by another process, runs take a smaller team") {
  const int usable = usable_cpus();
  if (usable < 2) {
    WARN("one usable CPU: one team");
    return;
  }
  const Model m = optimized_resnet_small();
  CpuExecutorOptions o;
  o.threads = usable;
  auto e = CpuExecutor::create(m.graph, o);
  REQUIRE(e);
  CpuExecutor& x = **e;
  CHECK(x.threads() == usable);
  CHECK(x.threads_reason().find("each run takes as many of " + std::to_string(usable) +
                                " as other processes leave free") != std::string::npos);
  auto want = x.run(m.inputs);
  REQUIRE(want);
  bool same = true;
  {
    test::BusyCpu other;
    // Runs for a second and a half: several windows of the load.
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < until && same) {
      auto got = x.run(m.inputs);
      same = got && got->size() == want->size() && (*got)[0].at(0) == Approx((*want)[0].at(0)).epsilon(1e-5);
    }
  }
  CHECK(same);
  INFO("runs by team: " << x.runs_by_team().size() << " sizes");
  CHECK(x.runs_by_team().begin()->first < usable);
  CHECK(x.last_team() < usable);
}
