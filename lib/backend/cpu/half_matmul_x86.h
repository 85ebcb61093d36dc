// The x86 body of half_matmul (half_matmul.h), shared by its AVX2 and AVX-512 builds: each
// includer defines LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES (x86_lanes.h: 8 or 16 float lanes)
// first. Internal linkage: the two builds never merge. The arithmetic is half_dot.h's: 32 lanes as 32 / LMSCOPE_X86_LANES vectors, one
// FMA per lane and chunk of 32 columns, the lanes stored and summed by reduce_half_lanes.
#pragma once
#if !defined(LMSCOPE_X86_TARGET) || !defined(LMSCOPE_X86_LANES)
#error "define LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES before including half_matmul_x86.h"
#endif
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx2.h"   // prefetch_ahead
#include "backend/cpu/block_rows.h"
#include "backend/cpu/half_dot.h"
#include "backend/cpu/half_matmul.h"
#include "backend/cpu/x86_lanes.h"   // vf, kLanes

namespace lmscope::cpu {
namespace {

constexpr int kVecs = kHalfLanes / kLanes;   // vectors per chunk of 32 columns

#if LMSCOPE_X86_LANES == 8
// 8 stored values at p as float32: bf16 shifted into a float's top half, f16 by vcvtph2ps.
template <bool BF16>
LMSCOPE_X86_TARGET inline vf vwiden(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}
#elif LMSCOPE_X86_LANES == 16
template <bool BF16>
LMSCOPE_X86_TARGET inline vf vwiden(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}
#else
#error "LMSCOPE_X86_LANES must be 8 or 16"
#endif

// Outputs [o0, o1) for N rows (N a template argument: the accumulators' count is known).
template <bool BF16, int N>
LMSCOPE_X86_TARGET void half_rows(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t o0,
                                int64_t o1) {
  const int64_t O = W.rows, I = W.cols, full = I / kHalfLanes, rem = I % kHalfLanes;
  for (int64_t o = o0; o < o1; ++o) {
    const uint16_t* w = W.data + o * I;
    vf acc[N][kVecs];
    for (int n = 0; n < N; ++n)
      for (int v = 0; v < kVecs; ++v) acc[n][v] = vzero();
    for (int64_t c = 0; c < full; ++c) {
      prefetch_ahead<kHalfLanes * 2>(w + c * kHalfLanes);
      vf wv[kVecs];
      for (int v = 0; v < kVecs; ++v) wv[v] = vwiden<BF16>(w + c * kHalfLanes + v * kLanes);
      for (int n = 0; n < N; ++n)
        for (int v = 0; v < kVecs; ++v)
          acc[n][v] = vfma(wv[v], vload(x + n * I + c * kHalfLanes + v * kLanes), acc[n][v]);
    }
    if (rem) {   // the last partial chunk, zero-padded (half_dot.h)
      alignas(64) float wt[kHalfLanes] = {}, xt[kHalfLanes];
      for (int64_t j = 0; j < rem; ++j) wt[j] = widen_half<BF16>(w[full * kHalfLanes + j]);
      for (int n = 0; n < N; ++n) {
        std::memset(xt, 0, sizeof xt);
        std::memcpy(xt, x + n * I + full * kHalfLanes, size_t(rem) * sizeof(float));
        for (int v = 0; v < kVecs; ++v) acc[n][v] = vfma(vload(wt + v * kLanes), vload(xt + v * kLanes), acc[n][v]);
      }
    }
    for (int n = 0; n < N; ++n) {
      alignas(64) float lanes[kHalfLanes];
      for (int v = 0; v < kVecs; ++v) vstore(lanes + v * kLanes, acc[n][v]);
      out[n * O + o] = reduce_half_lanes(lanes) + (bias ? bias[o] : 0.0f);
    }
  }
}

void half_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N, int64_t o0,
                  int64_t o1) {
  with_rows(N, [&](auto rows) {
    if (W.type == DType::BF16)
      half_rows<true, decltype(rows)::value>(out, x, W, bias, o0, o1);
    else
      half_rows<false, decltype(rows)::value>(out, x, W, bias, o0, o1);
  });
}

}  // namespace
}  // namespace lmscope::cpu
