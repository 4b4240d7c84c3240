// A fixed pool of worker threads for the CPU executor's loop kernels.
//
// parallel_for splits [0, n) into one contiguous part per thread (the
// calling thread takes the first) and returns when all parts are done.
// Workers spin briefly for the next job, then sleep on a condition
// variable, so back-to-back kernels do not pay a wake-up each while an idle
// program costs no CPU. One parallel_for at a time (the executor runs its
// steps in order).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lower/program.hpp"

namespace saturn::runtime {

class ThreadPool final : public lower::ThreadPoolRef {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: the hardware's count
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const override { return static_cast<int>(workers_.size()) + 1; }
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) override;

 private:
  void work(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  const std::function<void(std::int64_t, std::int64_t)>* job_ = nullptr;
  std::int64_t n_ = 0;
  bool stop_ = false;
};

}  // namespace saturn::runtime
