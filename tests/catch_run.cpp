// The main of every test program but test_cuda_device.
//
// A test program starts the way `saturn run` does (runtime/thread_env.hpp):
// the compiled programs it runs then wait as users' programs do, and
// OpenBLAS starts no pthread pool of its own (whose idle worker would
// otherwise still be alive when LeakSanitizer stops the world at exit:
// see tests/run_sanitized.sh).
#include "runtime/thread_env.hpp"
#include "tests/catch_session.hpp"

int main(int argc, char** argv) {
  saturn::runtime::restart_with_thread_env(argv);
  return saturn::test::run_catch_session(argc, argv);
}
