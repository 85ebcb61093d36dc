// attention_row.h: the scalar loops (the reference), the softmax, and the row and rows that
// run whichever loops kernel_table.h chose (attention_row_avx2.cpp, attention_row_avx512.cpp).
#include "backend/cpu/attention_row.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention_math.cuh"

#include "backend/cpu/kernel_table.h"

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

const AttentionRowLoops kScalarRowLoops{"scalar", attention_scores, attention_mix, false};

const AttentionRowLoops& attention_row_loops() { return chosen_kernels().attention_row.build; }

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
