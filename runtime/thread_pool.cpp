#include "runtime/thread_pool.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace saturn::runtime {

ThreadPool::ThreadPool(int threads) {
  threads_ = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (threads_ == 1 || n < 2) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(threads_)
  {
    const std::int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    const std::int64_t b = n * t / k, e = n * (t + 1) / k;
    if (b < e) fn(b, e);
  }
}

}  // namespace saturn::runtime
