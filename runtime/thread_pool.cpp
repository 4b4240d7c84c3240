#include "runtime/thread_pool.hpp"

#include <chrono>

namespace saturn::runtime {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  const int parts = size();
  if (parts == 1 || n < 2) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    n_ = n;
    pending_.store(parts - 1);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  fn(0, n / parts);
  // Wait for the workers' parts (they are short: spin).
  while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void ThreadPool::work(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    // Spin briefly for the next job before sleeping: kernels come back to
    // back within microseconds, but a longer spin steals the cores from the
    // library threads (oneDNN's OpenMP, OpenBLAS) running the next step.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    const std::function<void(std::int64_t, std::int64_t)>* job = nullptr;
    std::int64_t n = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_) return;
      job = job_;
      n = n_;
    }
    const int parts = size();
    const std::int64_t b = n * index / parts, e = n * (index + 1) / parts;
    if (b < e) (*job)(b, e);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace saturn::runtime
