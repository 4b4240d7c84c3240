// The main of every test program but test_cuda_device.
#include "tests/catch_session.hpp"

int main(int argc, char** argv) { return saturn::test::run_catch_session(argc, argv); }
