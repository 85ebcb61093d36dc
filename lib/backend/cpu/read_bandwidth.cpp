#include "backend/cpu/read_bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

namespace lmscope::cpu {

namespace {

// The sum of n 64-bit words from p: eight independent sums, so that the loads, not the
// additions, set the pace (the compiler vectorizes it for any x86-64).
uint64_t sum_words(const uint64_t* p, int64_t n) {
  uint64_t s[8] = {};
  for (int64_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  uint64_t t = 0;
  for (uint64_t v : s) t += v;
  return t;
}

}  // namespace

ReadBandwidth measure_read_bandwidth(int64_t buffer_bytes, int passes) {
  const int64_t words = buffer_bytes / 64 * 8;
  std::unique_ptr<uint64_t[]> buf(new uint64_t[size_t(words)]);
  ReadBandwidth r{0, omp_get_max_threads(), words * 8};
  volatile uint64_t sink = 0;   // keeps the sums from being optimized away
  for (int pass = 0; pass <= passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t total = 0;
#pragma omp parallel reduction(+ : total)
    {
      // Each thread's share is contiguous, as a matrix's rows are split between the threads.
      const int64_t T = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t begin = words / 8 * t / T * 8, end = words / 8 * (t + 1) / T * 8;
      if (pass == 0)   // fault the pages in on the thread that reads them (first touch)
        std::fill(buf.get() + begin, buf.get() + end, uint64_t(t + 1));
      total += sum_words(buf.get() + begin, end - begin);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink = sink + total;
    if (pass > 0) r.bytes_per_s = std::max(r.bytes_per_s, double(r.buffer_bytes) / s);
  }
  return r;
}

}  // namespace lmscope::cpu
