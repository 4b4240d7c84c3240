#include "runtime/thread_pool.hpp"

#include <omp.h>

namespace saturn::runtime {

ThreadPool::ThreadPool(int threads) : team_(team_size(threads)) {}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (team_.threads == 1 || n < 2) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(team_.threads)
  {
    const std::int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    const std::int64_t b = n * t / k, e = n * (t + 1) / k;
    if (b < e) fn(b, e);
  }
}

}  // namespace saturn::runtime
