// Runs Catch2's session: the implementation is compiled once
// (catch_main.cpp), and each test program's main calls it.
#pragma once

namespace saturn::test {
int run_catch_session(int argc, char** argv);
}  // namespace saturn::test
