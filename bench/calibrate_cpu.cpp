// Calibrates the CPU cost model (extract/cost_model.cpp) on this machine:
// OpenBLAS sgemm throughput, oneDNN-free streaming bandwidth, and the fixed
// cost of one small library call. Prints medians of 7 runs; the constants in
// cost_model.cpp were taken from its output (docs/cost-model.md).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

template <class F>
double median_s(F&& f, int runs = 7) {
  std::vector<double> t;
  f();  // warm-up
  for (int i = 0; i < runs; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  std::printf("sgemm (OpenBLAS, %d threads)\n", openblas_get_num_threads());
  for (int n : {64, 128, 256, 512, 768, 1024}) {
    std::vector<float> a(static_cast<std::size_t>(n) * n, 1.0f), b(a), c(a);
    double s = median_s([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    });
    std::printf("  n=%4d  %8.3f ms  %7.1f GFLOP/s\n", n, s * 1e3, 2.0 * n * n * n / s / 1e9);
  }
  {
    std::vector<float> a(64, 1.0f), b(a), c(a);
    double s = median_s([&] {
      for (int i = 0; i < 1000; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 8, 8, 8, 1.0f, a.data(), 8, b.data(), 8, 0.0f, c.data(),
                    8);
    });
    std::printf("call overhead (8x8x8 sgemm): %.2f us\n", s / 1000 * 1e6);
  }
  {
    const std::size_t n = 16u << 20;  // 64 MiB per array
    std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
    double s = median_s([&] {
      for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    });
    std::printf("stream a+b (3 x 64 MiB, one thread): %.1f GB/s\n", 3.0 * n * 4 / s / 1e9);
  }
  return 0;
}
