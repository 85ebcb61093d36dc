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

}  // namespace lmscope::cpu
