// runtime::team_size: the CPU executor's team is never larger than the CPUs
// the process may use, and leaves out a CPU another process keeps busy.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "runtime/cpu_availability.hpp"
#include "runtime/thread_env.hpp"
#include "runtime/thread_pool.hpp"
#include "tests/busy_cpu.hpp"

using namespace saturn;
using namespace saturn::runtime;

TEST_CASE("an asked-for team size is kept up to the usable CPUs, and capped above") {
  const int usable = usable_cpus();
  REQUIRE(usable >= 1);
  TeamSize one = team_size(1);
  CHECK(one.threads == 1);
  CHECK(one.reason == "asked");
  TeamSize many = team_size(usable + 7);
  CHECK(many.threads == usable);
  CHECK(many.reason.find("capped to the " + std::to_string(usable)) != std::string::npos);
  ThreadPool pool(usable + 7);
  CHECK(pool.size() == usable);
}

TEST_CASE("the default team is the free CPUs, between one and the usable ones") {
  TeamSize t = team_size(0);
  CHECK(t.threads >= 1);
  CHECK(t.threads <= usable_cpus());
  CHECK(t.reason.find("free CPU") != std::string::npos);
}

TEST_CASE("a CPU another process keeps busy is not free") {
  const int usable = usable_cpus();
  if (usable < 2) {
    WARN("one usable CPU: nothing to leave out");
    return;
  }
  int free = 0;
  {
    test::BusyCpu other;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    free = free_cpus_now();
  }
  CHECK(free >= 1);
  CHECK(free <= usable - 1);
}

TEST_CASE("this process's own busy threads do not make a CPU unfree") {
  // A spinning thread of ours stands for libraries' idle spinners. Other
  // processes (ctest runs two tests at once) may still take CPUs, so the
  // check is against a sample taken with and without the spinner, and
  // retried: our own spinning must never be what takes a CPU away.
  const int usable = usable_cpus();
  if (usable < 2) {
    WARN("one usable CPU: nothing to count");
    return;
  }
  bool same = false;
  for (int attempt = 0; attempt < 5 && !same; ++attempt) {
    const int quiet = free_cpus_now();
    std::atomic<bool> stop{false};
    std::thread spinner([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
    const int spinning = free_cpus_now();
    stop = true;
    spinner.join();
    same = spinning >= quiet;
  }
  CHECK(same);
}

TEST_CASE("the thread environment is ready once its variables are set") {
  setenv("GOMP_SPINCOUNT", "20000", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  CHECK(thread_env_ready());
  unsetenv("OPENBLAS_NUM_THREADS");
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (!omp) CHECK_FALSE(thread_env_ready());
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
}
