// Another process that keeps one CPU busy while it lives: a child spinning
// on the last CPU of this process's affinity mask, killed on destruction.
// Tests of how Saturn sizes its thread team under load use it.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>

namespace saturn::test {

class BusyCpu {
 public:
  BusyCpu() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) last = c;
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {  // the other process: spins until killed
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(last, &one);
      sched_setaffinity(0, sizeof one, &one);
      std::atomic<unsigned long> spins{0};
      for (;;) spins.fetch_add(1, std::memory_order_relaxed);
    }
  }
  ~BusyCpu() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  BusyCpu(const BusyCpu&) = delete;
  BusyCpu& operator=(const BusyCpu&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace saturn::test
