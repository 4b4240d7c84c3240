// Catch2's implementation, compiled once for every test program. The main
// is separate (catch_run.cpp): test_cuda_device has its own, which skips
// where there is no GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/catch_session.hpp"

namespace saturn::test {
int run_catch_session(int argc, char** argv) { return Catch::Session().run(argc, argv); }
}  // namespace saturn::test
