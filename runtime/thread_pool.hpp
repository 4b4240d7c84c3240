// The CPU executor's threads for loop kernels and split library calls:
// OpenMP's team, the same threads oneDNN runs its primitives on.
//
// Its size is runtime::team_size (runtime/cpu_availability.hpp): the CPUs
// that are free when it is made, never more than the process may use.
//
// parallel_for splits [0, n) into one contiguous part per thread (the
// calling thread takes the first) and returns when all parts are done.
// Sharing one team with oneDNN is the point: a pool of its own had to wake
// its workers on cores where oneDNN's OpenMP threads were still spinning
// after the previous primitive, and the scheduler let them wait for the
// spinner's time slice (about 4 ms here, on kernels that take 10 us). One
// parallel_for at a time (the executor runs its steps in order).
#pragma once

#include <cstdint>
#include <functional>

#include "lower/program.hpp"
#include "runtime/cpu_availability.hpp"

namespace saturn::runtime {

class ThreadPool final : public lower::ThreadPoolRef {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: every free CPU (team_size)
  int size() const override { return team_.threads; }
  // Why this many threads (for reports).
  const std::string& size_reason() const { return team_.reason; }
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) override;

 private:
  TeamSize team_;
};

}  // namespace saturn::runtime
