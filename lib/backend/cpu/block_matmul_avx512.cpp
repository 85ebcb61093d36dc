// block_matmul's AVX-512 implementation (block_matmul.h): the same sums as the AVX2 one,
// a block's 32 weights in two 16-lane vectors instead of four 8-lane ones.
//
// Per block and row: s = q[0:16] * x[0:16] + q[16:32] * x[16:32] (lane-wise), then
// acc_d += d * s and acc_m += m * (x[0:16] + x[16:32]) (Q4_1), one horizontal sum per output.
// What the vector width does not buy by itself:
//  * the scales go through the hardware f16 -> f32 conversion (vcvtph2ps, exact like
//    quant::load_f16, which is ~10 scalar instructions and a branch each);
//  * a Q4_1 block's 16 bytes widen to 16 dwords in one instruction; the low nibble is then a
//    mask and the high one a shift, with no byte shuffles;
//  * two blocks at a time into separate accumulators, so a row's FMAs do not wait on each
//    other's latency (one chain per block would be bound by it).
// Compiled for any x86-64 with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/block_matmul.h"

#include <cstring>

#include "backend/cpu/block_rows.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"

#include "backend/cpu/avx2.h"   // prefetch_ahead
#define LMSCOPE_AVX512 __attribute__((target("avx512f,f16c,fma")))
#endif

namespace lmscope::cpu {

#if defined(LMSCOPE_AVX512)
namespace {

// The f16 at p (little-endian, unaligned) in all 16 lanes.
LMSCOPE_AVX512 inline __m512 splat_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm512_cvtph_ps(_mm256_set1_epi16(short(h)));
}

// A block's q as two 16-lane vectors (elements 0-15, 16-31), without the scale.
LMSCOPE_AVX512 inline void block_q(const uint8_t* blk, bool q4_1, __m512& q0, __m512& q1) {
  if (q4_1) {   // qs[j]: low nibble -> element j, high -> j + 16
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4)));
    q0 = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0x0F)));
    q1 = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
  } else {
    q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2))));
    q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18))));
  }
}

// One block into row n's accumulators, for each of the N rows.
template <bool Q4_1, int N>
LMSCOPE_AVX512 inline void block_rows(const uint8_t* blk, const float* xb, int64_t I, __m512* acc_d, __m512* acc_m) {
  __m512 q0, q1;
  block_q(blk, Q4_1, q0, q1);
  const __m512 d = splat_f16(blk);
  const __m512 m = Q4_1 ? splat_f16(blk + 2) : _mm512_setzero_ps();
  for (int n = 0; n < N; ++n) {
    const __m512 x0 = _mm512_loadu_ps(xb + n * I), x1 = _mm512_loadu_ps(xb + n * I + 16);
    const __m512 s = _mm512_fmadd_ps(q1, x1, _mm512_mul_ps(q0, x0));
    acc_d[n] = _mm512_fmadd_ps(d, s, acc_d[n]);
    if (Q4_1) acc_m[n] = _mm512_fmadd_ps(m, _mm512_add_ps(x0, x1), acc_m[n]);
  }
}

// Outputs [o0, o1) for N rows (a template: with N known the accumulators stay in registers).
// Even blocks go to the first set of accumulators, odd ones to the second. (A function of its
// own: a lambda would not inherit the target attribute.)
template <bool Q4_1, int N>
LMSCOPE_AVX512 void outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t o0,
                            int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = W.row_blocks();
  const size_t bb = W.block_bytes();
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    __m512 d0[N], d1[N], m0[N], m1[N];
    for (int n = 0; n < N; ++n) d0[n] = d1[n] = m0[n] = m1[n] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      prefetch_ahead<2 * int(block_bytes(Q4_1 ? BlockType::Q4_1 : BlockType::Q8_0))>(row + b * bb);
      block_rows<Q4_1, N>(row + b * bb, x + b * 32, I, d0, m0);
      block_rows<Q4_1, N>(row + (b + 1) * bb, x + (b + 1) * 32, I, d1, m1);
    }
    if (b < nb) block_rows<Q4_1, N>(row + b * bb, x + b * 32, I, d0, m0);
    for (int n = 0; n < N; ++n) {
      __m512 sum = _mm512_add_ps(d0[n], d1[n]);
      if (Q4_1) sum = _mm512_add_ps(sum, _mm512_add_ps(m0[n], m1[n]));
      out[n * O + o] = _mm512_reduce_add_ps(sum) + (bias ? bias[o] : 0.0f);
    }
  }
}

}  // namespace

void block_matmul_avx512_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                 int64_t o0, int64_t o1) {
  if (is_k_quant(W.type)) return block_matmul_k_avx512_outputs(out, x, W, bias, N, o0, o1);
  if (W.type != BlockType::Q8_0 && W.type != BlockType::Q4_1)
    return block_matmul_fallback_avx2_outputs(out, x, W, bias, N, o0, o1);
  with_block_shape(W.type, N, [&](auto q4_1, auto rows) {
    outputs<decltype(q4_1)::value, decltype(rows)::value>(out, x, W, bias, o0, o1);
  });
}

void block_matmul_avx512(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { block_matmul_avx512_outputs(out, x, W, bias, N, o0, o1); });
}

// AVX-512F is all it uses (its vcvtph2ps and FMA forms on 512-bit registers included).
bool block_matmul_avx512_available() { return processor_runs(Isa::avx512); }
#else
void block_matmul_avx512_outputs(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t, int64_t) {
  throw std::logic_error("block_matmul_avx512_outputs: not an x86-64 build");
}
void block_matmul_avx512(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  block_matmul_portable(out, x, W, bias, N);
}
bool block_matmul_avx512_available() { return false; }
#endif

}  // namespace lmscope::cpu
