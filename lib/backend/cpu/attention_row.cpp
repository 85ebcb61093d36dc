#include "backend/cpu/attention_row.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention_math.cuh"

#include "backend/cpu/avx2.h"
#include "backend/cpu/block_matmul.h"

namespace lmscope::cpu {

float attention_scores(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                       float scale) {
  float wmax = -INFINITY;
  for (int64_t s = 0; s < S; ++s) {
    float dot = 0;
    for (int64_t i = 0; i < hd; ++i) dot += q[i] * K[s * hd + i];
    w[s] = attention_score(dot, scale, mask[s]);
    wmax = std::max(wmax, w[s]);
  }
  return wmax;
}

void attention_softmax(float* w, int64_t S, float wmax) {
  double sum = 0;
  for (int64_t s = 0; s < S; ++s) {
    w[s] = softmax_weight(w[s], wmax);
    sum += w[s];
  }
  const float inv = float(1.0 / sum);
  for (int64_t s = 0; s < S; ++s) w[s] *= inv;
}

void attention_mix(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  for (int64_t i = 0; i < hd; ++i) z[i] = 0;
  for (int64_t s = 0; s < S; ++s) {
    if (p[s] == 0.0f) continue;
    const float* v = V + s * hd;
    for (int64_t i = 0; i < hd; ++i) z[i] += p[s] * v[i];
  }
}

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

bool attention_avx2_available() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
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

const AttentionRowLoops kScalarRowLoops{"scalar", attention_scores, attention_mix, false};

const AttentionRowLoops& attention_row_loops() {
  static const AttentionRowLoops chosen = [] {
    const std::string kernel = block_matmul_kernel();
    if (kernel == "avx512" && attention_avx512_available())
      return AttentionRowLoops{"avx512", attention_scores_avx512, attention_mix_avx512, true};
    if (kernel != "portable" && attention_avx2_available())
      return AttentionRowLoops{"avx2", attention_scores_avx2, attention_mix_avx2, true};
    return kScalarRowLoops;
  }();
  return chosen;
}

void attention_row(const AttentionRowLoops& loops, float* z, float* w, const float* q, const float* K, const float* V,
                   const float* mask, int64_t S, int64_t hd, float scale, float* scores_out, float* probs_out) {
  const float wmax = loops.scores(w, q, K, mask, S, hd, scale);
  if (scores_out) std::memcpy(scores_out, w, size_t(S) * sizeof(float));
  attention_softmax(w, S, wmax);
  if (probs_out) std::memcpy(probs_out, w, size_t(S) * sizeof(float));
  loops.mix(z, w, V, S, hd);
}

void attention_rows(const AttentionRowLoops& loops, float* Z, const float* Q, const float* K, const float* V,
                    const float* M, const AttentionDims& d, float scale, float* scores, float* probs) {
  const int64_t group = d.H / d.Hkv, hd = d.hd, S = d.S, T = d.T;
#pragma omp parallel
  {
    std::vector<float> w(S);
#pragma omp for collapse(2)
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t h = 0; h < d.H; ++h) {
        const int64_t kvh = kv_head_of(int(h), int(group));
        const float* Kh = K + (b * d.Hkv + kvh) * d.Smax * hd;
        const float* Vh = V + (b * d.Hkv + kvh) * d.Smax * hd;
        for (int64_t t = 0; t < T; ++t) {
          const int64_t row = ((b * d.H + h) * T + t) * S;   // scores and probs are [B,H,T,S]
          attention_row(loops, Z + ((b * T + t) * d.H + h) * hd, w.data(), Q + ((b * d.H + h) * T + t) * hd, Kh, Vh,
                        M + (b * T + t) * S, S, hd, scale, scores ? scores + row : nullptr,
                        probs ? probs + row : nullptr);   // z is [B,T,H,hd]
        }
      }
  }
}

}  // namespace lmscope::cpu
