// attention_row.h's two loops over the cache in 8-lane AVX2 vectors with FMA (a decode row:
// one query against S cached keys); the AVX-512 build is attention_row_avx512.cpp, the scalar
// reference attention_row.cpp. A head size that is not a multiple of 8 ends in a scalar tail.
// Compiled for any x86-64 with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/attention_row.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/avx2.h"           // LMSCOPE_AVX2, hsum
#include "backend/cpu/kernel_table.h"   // processor_runs
#include "kernels/attention_math.cuh"

namespace lmscope::cpu {

#if defined(LMSCOPE_AVX2)
// Per key: two 8-lane accumulators over hd (alternating, so consecutive FMAs do not wait on
// each other), one horizontal sum, a scalar tail when hd is not a multiple of 8.
LMSCOPE_AVX2 float attention_scores_avx2(float* w, const float* q, const float* K, const float* mask, int64_t S,
                                         int64_t hd, float scale) {
  const int64_t h8 = hd / 8 * 8;
  float wmax = -INFINITY;
  for (int64_t s = 0; s < S; ++s) {
    const float* k = K + s * hd;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= h8; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
    }
    if (i < h8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
    float dot = hsum(_mm256_add_ps(a0, a1));
    for (i = h8; i < hd; ++i) dot += q[i] * k[i];
    w[s] = attention_score(dot, scale, mask[s]);
    wmax = std::max(wmax, w[s]);
  }
  return wmax;
}

// z in chunks of 32 lanes (then of 8) held in registers over every key: hd 64 is two passes
// over V, each reading two whole cache lines per key. A scalar tail when hd is not a multiple
// of 8.
LMSCOPE_AVX2 void attention_mix_avx2(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  const int64_t h8 = hd / 8 * 8;
  int64_t i0 = 0;
  for (; i0 + 32 <= h8; i0 += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t s = 0; s < S; ++s) {
      if (p[s] == 0.0f) continue;
      const __m256 ps = _mm256_set1_ps(p[s]);
      const float* v = V + s * hd + i0;
      a0 = _mm256_fmadd_ps(ps, _mm256_loadu_ps(v), a0);
      a1 = _mm256_fmadd_ps(ps, _mm256_loadu_ps(v + 8), a1);
      a2 = _mm256_fmadd_ps(ps, _mm256_loadu_ps(v + 16), a2);
      a3 = _mm256_fmadd_ps(ps, _mm256_loadu_ps(v + 24), a3);
    }
    _mm256_storeu_ps(z + i0, a0);
    _mm256_storeu_ps(z + i0 + 8, a1);
    _mm256_storeu_ps(z + i0 + 16, a2);
    _mm256_storeu_ps(z + i0 + 24, a3);
  }
  for (; i0 < h8; i0 += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a = _mm256_fmadd_ps(_mm256_set1_ps(p[s]), _mm256_loadu_ps(V + s * hd + i0), a);
    _mm256_storeu_ps(z + i0, a);
  }
  for (int64_t i = h8; i < hd; ++i) {
    float a = 0;
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a += p[s] * V[s * hd + i];
    z[i] = a;
  }
}

bool attention_avx2_available() { return processor_runs(Isa::avx2); }
#else
float attention_scores_avx2(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                            float scale) {
  return attention_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx2(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  attention_mix(z, p, V, S, hd);
}
bool attention_avx2_available() { return false; }
#endif

}  // namespace lmscope::cpu
