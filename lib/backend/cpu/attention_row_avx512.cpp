// attention_row.h's two loops over the cache in 16-lane AVX-512 vectors (a decode row: one
// query against S cached keys). Against the AVX2 ones: a key of hd 64 is 4 vectors instead of
// 8, and the weighted sum of V holds all 64 lanes of z in 4 registers, one pass over V instead
// of two. A head size that is not a multiple of 16 ends in a masked load, no scalar tail.
// Compiled for any x86-64 with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/attention_row.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_table.h"   // processor_runs
#include "kernels/attention_math.cuh"

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_AVX512 __attribute__((target("avx512f,fma")))
#endif

namespace lmscope::cpu {

#if defined(LMSCOPE_AVX512)
namespace {
// Lanes [i, min(i + 16, hd)) of a row: all 16 but in the last vector of a row whose hd is not
// a multiple of 16.
LMSCOPE_AVX512 inline __mmask16 lanes(int64_t i, int64_t hd) {
  const int64_t n = std::min<int64_t>(16, hd - i);
  return __mmask16((1u << n) - 1);
}
}  // namespace

// Per key: two 16-lane accumulators over hd (alternating, so consecutive FMAs do not wait on
// each other), one horizontal sum.
LMSCOPE_AVX512 float attention_scores_avx512(float* w, const float* q, const float* K, const float* mask, int64_t S,
                                             int64_t hd, float scale) {
  float wmax = -INFINITY;
  for (int64_t s = 0; s < S; ++s) {
    const float* k = K + s * hd;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= hd; i += 32) {
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(k + i), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), _mm512_loadu_ps(k + i + 16), a1);
    }
    for (; i < hd; i += 16) {
      const __mmask16 m = lanes(i, hd);
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), _mm512_maskz_loadu_ps(m, k + i), a0);
    }
    w[s] = attention_score(_mm512_reduce_add_ps(_mm512_add_ps(a0, a1)), scale, mask[s]);
    wmax = std::max(wmax, w[s]);
  }
  return wmax;
}

// z in chunks of 64 lanes (4 registers) held over every key, then of 16 (the last one masked).
LMSCOPE_AVX512 void attention_mix_avx512(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  int64_t i0 = 0;
  for (; i0 + 64 <= hd; i0 += 64) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int64_t s = 0; s < S; ++s) {
      if (p[s] == 0.0f) continue;
      const __m512 ps = _mm512_set1_ps(p[s]);
      const float* v = V + s * hd + i0;
      a0 = _mm512_fmadd_ps(ps, _mm512_loadu_ps(v), a0);
      a1 = _mm512_fmadd_ps(ps, _mm512_loadu_ps(v + 16), a1);
      a2 = _mm512_fmadd_ps(ps, _mm512_loadu_ps(v + 32), a2);
      a3 = _mm512_fmadd_ps(ps, _mm512_loadu_ps(v + 48), a3);
    }
    _mm512_storeu_ps(z + i0, a0);
    _mm512_storeu_ps(z + i0 + 16, a1);
    _mm512_storeu_ps(z + i0 + 32, a2);
    _mm512_storeu_ps(z + i0 + 48, a3);
  }
  for (; i0 < hd; i0 += 16) {
    const __mmask16 m = lanes(i0, hd);
    __m512 a = _mm512_setzero_ps();
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a = _mm512_fmadd_ps(_mm512_set1_ps(p[s]), _mm512_maskz_loadu_ps(m, V + s * hd + i0), a);
    _mm512_mask_storeu_ps(z + i0, m, a);
  }
}

bool attention_avx512_available() { return processor_runs(Isa::avx512); }
#else
float attention_scores_avx512(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                              float scale) {
  return attention_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx512(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  attention_mix(z, p, V, S, hd);
}
bool attention_avx512_available() { return false; }
#endif

}  // namespace lmscope::cpu
