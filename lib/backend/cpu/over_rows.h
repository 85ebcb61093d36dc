// The CPU backend's one way of splitting a matmul: each OpenMP thread takes a contiguous
// slice [o0, o1) of the O outputs (OpenBLAS itself runs single-threaded, cpu_backend.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace lmscope::cpu {

template <class Body>
void over_outputs(int64_t O, const Body& body) {
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t per = (O + nt - 1) / nt;
    const int64_t o0 = std::min(O, id * per), o1 = std::min(O, o0 + per);
    if (o1 > o0) body(o0, o1);
  }
}

// Several matrices' outputs laid end to end (a layer's q/k/v, gate/up) and split as one:
// body(j, o0, o1) for each job j's part [o0, o1) of a thread's slice; rows(j): job j's outputs.
template <class Rows, class Body>
void over_job_outputs(int count, const Rows& rows, const Body& body) {
  int64_t total = 0;
  for (int j = 0; j < count; ++j) total += rows(j);
  over_outputs(total, [&](int64_t g0, int64_t g1) {
    int64_t first = 0;   // the first output of job j in the laid-out order
    for (int j = 0; j < count; ++j) {
      const int64_t n = rows(j), o0 = std::max<int64_t>(g0 - first, 0), o1 = std::min<int64_t>(g1 - first, n);
      if (o1 > o0) body(j, o0, o1);
      first += n;
    }
  });
}

}  // namespace lmscope::cpu
