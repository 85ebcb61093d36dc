// The CPU backend's two ways of splitting a matmul's O outputs over the OpenMP threads
// (OpenBLAS itself runs single-threaded, cpu_backend.cpp):
//  * over_outputs: each thread takes a contiguous slice [o0, o1) sized by the thread count.
//    Only for kernels that compute every output on its own, in an order that does not depend
//    on the slice (block_matmul.h, q8_matmul.h): their numbers do not depend on the split.
//  * over_pieces: pieces of sgemm_piece(O) outputs, a size that follows the shape alone, handed
//    to the threads. For sgemm: OpenBLAS rounds an output otherwise in a call of another width
//    (its blocking and edge kernels), so a split by the thread count gave other float32
//    results at 1 and 2 threads. With pieces, a run's numbers are the same at any thread count.
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

// Outputs per sgemm piece: at least 96 (a narrower call loses sgemm's efficiency: measured
// 10-25% below the whole matrix at 64-72 outputs), and narrow enough that a large matrix
// gives 16 pieces (multiples of 16 outputs, as OpenBLAS's kernels like them).
inline int64_t sgemm_piece(int64_t O) {
  constexpr int64_t kMinPiece = 96, kPieces = 16;
  return std::max(kMinPiece, (O + kPieces * 16 - 1) / (kPieces * 16) * 16);
}

// body(o0, o1) for the pieces [0, piece), [piece, 2 piece), ... of [0, O), the last one
// shorter, spread over the threads (which thread runs a piece changes no number).
template <class Body>
void over_pieces(int64_t O, int64_t piece, const Body& body) {
  const int64_t n = (O + piece - 1) / piece;
#pragma omp parallel for schedule(static) if (n > 1)
  for (int64_t i = 0; i < n; ++i) body(i * piece, std::min(O, (i + 1) * piece));
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
