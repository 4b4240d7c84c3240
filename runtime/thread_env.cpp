#include "runtime/thread_env.hpp"

#include <unistd.h>

#include <cstdlib>

namespace saturn::runtime {

namespace {

bool set(const char* name) { return std::getenv(name) != nullptr; }

bool spin_set() { return set("OMP_WAIT_POLICY") || set("GOMP_SPINCOUNT"); }
bool blas_set() { return set("OPENBLAS_NUM_THREADS") || set("OMP_NUM_THREADS"); }

}  // namespace

bool thread_env_ready() { return spin_set() && blas_set(); }

void restart_with_thread_env(char** argv) {
  if (thread_env_ready()) return;
  if (!spin_set()) setenv("GOMP_SPINCOUNT", "20000", 0);
  if (!blas_set()) setenv("OPENBLAS_NUM_THREADS", "1", 0);
  execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace saturn::runtime
