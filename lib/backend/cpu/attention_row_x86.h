// The x86 body of attention_row.h's two loops over the cache (a decode row: one query against
// S cached keys), shared by its AVX2 and AVX-512 builds: each includer defines
// LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES (x86_lanes.h: 8 or 16 float lanes) first. Internal
// linkage: the two builds never merge.
//
// Both loops run over the head's whole vectors, then its last hd % kLanes columns: AVX-512
// takes them as one masked vector, AVX2 one column at a time. A key of hd 64 is 4 AVX-512
// vectors or 8 AVX2 ones, and the weighted sum of V holds 4 vectors of z in registers over
// every key: all 64 lanes in one pass over V with AVX-512, two passes with AVX2.
#pragma once
#if !defined(LMSCOPE_X86_TARGET) || !defined(LMSCOPE_X86_LANES)
#error "define LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES before including attention_row_x86.h"
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/attention_row.h"
#include "backend/cpu/x86_lanes.h"   // vf, kLanes
#include "kernels/attention_math.cuh"

namespace lmscope::cpu {
namespace {

#if LMSCOPE_X86_LANES == 16
// Lanes [i, hd) of a row's last, partial vector.
LMSCOPE_X86_TARGET inline __mmask16 tail_lanes(int64_t i, int64_t hd) { return __mmask16((1u << (hd - i)) - 1); }
#endif

// Per key: two accumulators over hd (alternating, so consecutive FMAs do not wait on each
// other), one horizontal sum.
LMSCOPE_X86_TARGET float row_scores(float* w, const float* q, const float* K, const float* mask, int64_t S,
                                    int64_t hd, float scale) {
  const int64_t full = hd / kLanes * kLanes;   // columns in whole vectors
  float wmax = -INFINITY;
  for (int64_t s = 0; s < S; ++s) {
    const float* k = K + s * hd;
    vf a0 = vzero(), a1 = vzero();
    int64_t i = 0;
    for (; i + 2 * kLanes <= full; i += 2 * kLanes) {
      a0 = vfma(vload(q + i), vload(k + i), a0);
      a1 = vfma(vload(q + i + kLanes), vload(k + i + kLanes), a1);
    }
    if (i < full) a0 = vfma(vload(q + i), vload(k + i), a0);
#if LMSCOPE_X86_LANES == 16
    if (full < hd) {
      const __mmask16 m = tail_lanes(full, hd);
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + full), _mm512_maskz_loadu_ps(m, k + full), a0);
    }
    const float dot = vsum(vadd(a0, a1));
#else
    float dot = vsum(vadd(a0, a1));
    for (i = full; i < hd; ++i) dot += q[i] * k[i];
#endif
    w[s] = attention_score(dot, scale, mask[s]);
    wmax = std::max(wmax, w[s]);
  }
  return wmax;
}

// z in chunks of 4 vectors held in registers over every key, then of one; a zero p skips its
// key (a masked one).
LMSCOPE_X86_TARGET void row_mix(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  const int64_t full = hd / kLanes * kLanes;
  int64_t i0 = 0;
  for (; i0 + 4 * kLanes <= full; i0 += 4 * kLanes) {
    vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
    for (int64_t s = 0; s < S; ++s) {
      if (p[s] == 0.0f) continue;
      const vf ps = vset(p[s]);
      const float* v = V + s * hd + i0;
      a0 = vfma(ps, vload(v), a0);
      a1 = vfma(ps, vload(v + kLanes), a1);
      a2 = vfma(ps, vload(v + 2 * kLanes), a2);
      a3 = vfma(ps, vload(v + 3 * kLanes), a3);
    }
    vstore(z + i0, a0);
    vstore(z + i0 + kLanes, a1);
    vstore(z + i0 + 2 * kLanes, a2);
    vstore(z + i0 + 3 * kLanes, a3);
  }
  for (; i0 < full; i0 += kLanes) {
    vf a = vzero();
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a = vfma(vset(p[s]), vload(V + s * hd + i0), a);
    vstore(z + i0, a);
  }
#if LMSCOPE_X86_LANES == 16
  if (full < hd) {
    const __mmask16 m = tail_lanes(full, hd);
    __m512 a = _mm512_setzero_ps();
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a = _mm512_fmadd_ps(_mm512_set1_ps(p[s]), _mm512_maskz_loadu_ps(m, V + s * hd + full), a);
    _mm512_mask_storeu_ps(z + full, m, a);
  }
#else
  for (int64_t i = full; i < hd; ++i) {
    float a = 0;
    for (int64_t s = 0; s < S; ++s)
      if (p[s] != 0.0f) a += p[s] * V[s * hd + i];
    z[i] = a;
  }
#endif
}

}  // namespace
}  // namespace lmscope::cpu
