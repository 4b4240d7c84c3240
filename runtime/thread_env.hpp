// The environment Saturn's thread pools want to start from: one team,
// which waits by spinning briefly and then sleeping.
//
// The generated kernels and oneDNN share libgomp's team (thread_pool.hpp).
// After a parallel region libgomp's idle threads spin GOMP_SPINCOUNT times
// before they sleep (300,000 by default, about 3 ms), taking a core from
// any other process; with OMP_WAIT_POLICY=PASSIVE they sleep at once and
// every region pays a futex wake (squeezenet1_1: 4.7 ms quiet with
// spinning, 7.7 ms passive). The gaps between a run's steps are
// microseconds, so a spin of about 0.2 ms (GOMP_SPINCOUNT=20000) keeps the
// quiet-machine speed and frees the core soon after a run.
//
// OpenBLAS runs single-threaded (the team shares out sgemm calls,
// lower/library_calls.cpp). Left to itself it starts a pthread pool of its
// own when it loads, whose idle workers spin on sched_yield for a while
// after start-up and after every call; OPENBLAS_NUM_THREADS=1 keeps it
// from starting one.
//
// Both libraries read their environment once, in their own constructors,
// before main (a setenv from the executable's .preinit_array does not
// survive: glibc's initializer resets environ afterwards). So a program
// that runs compiled models (`saturn run`, bench_cpu) calls restart_with_thread_env() first thing in
// main: when a variable is missing it sets them and executes itself again.
// A user's own setting of any of them wins, and is kept.
#pragma once

namespace saturn::runtime {

// Whether this process started with every variable above set (by Saturn
// or by the user).
bool thread_env_ready();

// When !thread_env_ready(): sets what is missing and replaces the process
// with a fresh start of the same executable and arguments. Returns only
// when nothing was missing, or when the restart failed (the program then
// runs with the libraries' own defaults).
void restart_with_thread_env(char** argv);

}  // namespace saturn::runtime
