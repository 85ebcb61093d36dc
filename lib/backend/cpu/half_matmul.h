// The CPU matmul by a weight held as stored in bf16 or f16 (an HF checkpoint's safetensors):
// out[N,O] = x[N,I] @ W[O,I]^T (+ bias[O]) with W's 2-byte values
// read in place (the mapped file), never widened into a float32 copy of the matrix.
//  * decode (N <= kBlockMatmulMaxRows): half_matmul, a dot product per output with float32
//    FMAs, the arithmetic of half_dot.h; AVX-512, AVX2 (+ F16C for f16) or portable, the build
//    kernel_table.h chose. All three give the same bits.
//    A decode step reads 2 bytes a weight instead of 4.
//  * prefill (any N): half_prefill_matmul, panels of rows widened to float32 per thread, then
//    sgemm (block_prefill.h's panel_matmul): the values sgemm multiplies are the float32
//    copy's, bit for bit, in the same pieces where a panel holds sgemm_piece(O) rows.
// Outputs are split over the OpenMP threads; each output's arithmetic does not depend on the
// split, so the results do not depend on the thread count.
#pragma once
#include <cstdint>

#include "tensor/dtype.h"

namespace lmscope::cpu {

// A row-major [rows, cols] matrix of bf16 or f16 values (little-endian 16-bit words).
struct HalfMatrix {
  DType type = DType::BF16;   // BF16 or F16
  int64_t rows = 0, cols = 0;
  const uint16_t* data = nullptr;
};

// out [N,O], x [N,I] row-major float32, bias [O] or null; 1 <= N <= kBlockMatmulMaxRows.
void half_matmul(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N);

// Several matrices that read the same x (q/k/v, gate/up) in one parallel region; each job's
// numbers are half_matmul's.
struct HalfMatmulJob {
  float* out;   // [N, W.rows]
  HalfMatrix W;
  const float* bias;   // [W.rows] or null
};
void half_matmul_group(const float* x, int64_t N, const HalfMatmulJob* jobs, int count);

// out [N,O] for any N >= 1: widened panels, then sgemm.
void half_prefill_matmul(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N);

// Rows [row0, row0 + n) of W as float32 into out[n, W.cols] (exact; kernel_table.h's
// prefill_panel build). One thread.
void widen_half_rows(const HalfMatrix& W, int64_t row0, int64_t n, float* out);
void widen_half_rows_portable(const HalfMatrix& W, int64_t row0, int64_t n, float* out);
void widen_half_rows_avx2(const HalfMatrix& W, int64_t row0, int64_t n, float* out);

// The builds, for the tests and kernel_table.h: outputs [o0, o1) on the calling thread.
// Whether the processor runs one: block_matmul.h's *_available.
using HalfOutputs = void (*)(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                             int64_t o0, int64_t o1);
void half_matmul_portable_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                                  int64_t o0, int64_t o1);
void half_matmul_avx2_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                              int64_t o0, int64_t o1);
void half_matmul_avx512_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                                int64_t o0, int64_t o1);
// The build half_matmul runs (kernel_table.h).
HalfOutputs half_matmul_chosen_outputs();

}  // namespace lmscope::cpu
