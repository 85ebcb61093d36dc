// The host's memory read bandwidth, as a decode step meets it: the OpenMP threads of the run
// each stream their share of a buffer far larger than the last-level cache, summing it (the
// loads the matrix kernels make, without their arithmetic). What lmscope-bench --roofline
// divides a decode step's bytes by on the CPU: no decode that reads every weight once per
// token can run faster than bandwidth / bytes, whatever its kernels.
#pragma once
#include <cstdint>

namespace lmscope::cpu {

struct ReadBandwidth {
  double bytes_per_s = 0;   // the best of the passes
  int threads = 0;          // omp_get_max_threads() at the time
  int64_t buffer_bytes = 0;
};

// Streams a buffer of `buffer_bytes` (rounded down to whole 64-byte lines) `passes` times
// after one untimed pass that faults its pages in. Throws std::bad_alloc when it cannot be
// allocated.
ReadBandwidth measure_read_bandwidth(int64_t buffer_bytes = int64_t(1) << 30, int passes = 3);

}  // namespace lmscope::cpu
