#include "backend/cpu/attention_block.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/attention_row.h"
#include "kernels/attention_math.cuh"

namespace lmscope::cpu {

namespace {

// Any entry of mask rows [t0, t1) over keys [s0, s1) that is not masked. Reads stop at the
// first one: a tile under the causal diagonal answers on its first entry.
bool sees_any(const float* M, int64_t S, int64_t t0, int64_t t1, int64_t s0, int64_t s1) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t s = s0; s < s1; ++s)
      if (!is_masked(M[t * S + s])) return true;
  return false;
}

// One thread's buffers for one tile of R = group * kQueryBlock rows.
struct Tile {
  std::vector<float> q, w, acc, m;
  std::vector<double> l;
  explicit Tile(int64_t R, int64_t hd) : q(R * hd), w(R * kKeyBlock), acc(R * hd), m(R), l(R) {}
};

// Softmax step for tile row r over nb scores w (raw dot products in, weights out): scale and
// mask them, raise the running max, rescale the running sum and the accumulator row.
void online_softmax_row(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                        int64_t hd) {
  float mb = -INFINITY;
  for (int64_t j = 0; j < nb; ++j) {
    w[j] = attention_score(w[j], scale, mrow[j]);
    if (!is_masked(w[j])) mb = std::max(mb, w[j]);
  }
  if (mb == -INFINITY) {   // every key of this block is masked for this row
    std::fill(w, w + nb, 0.0f);
    return;
  }
  const float m_new = std::max(m, mb);
  double sum = 0;
  for (int64_t j = 0; j < nb; ++j) {
    w[j] = is_masked(w[j]) ? 0.0f : softmax_weight(w[j], m_new);
    sum += w[j];
  }
  if (m_new != m) {   // softmax_weight(-inf, m_new) = 0: the first block clears nothing real
    const float c = softmax_weight(m, m_new);
    for (int64_t i = 0; i < hd; ++i) acc[i] *= c;
    l *= c;
    m = m_new;
  }
  l += sum;
}

// The row path (attention_row.h) for one query row: the rows the tiles leave over.
void row_path(float* zrow, const float* qrow, const float* Kh, const float* Vh, const float* mrow, int64_t S,
              int64_t hd, float scale, bool vector, std::vector<float>& w) {
  w.resize(S);
  if (vector) {
    attention_softmax(w.data(), S, attention_scores_avx2(w.data(), qrow, Kh, mrow, S, hd, scale));
    attention_mix_avx2(zrow, w.data(), Vh, S, hd);
  } else {
    attention_softmax(w.data(), S, attention_scores(w.data(), qrow, Kh, mrow, S, hd, scale));
    attention_mix(zrow, w.data(), Vh, S, hd);
  }
}

}  // namespace

void attention_blocked(float* Z, const float* Q, const float* K, const float* V, const float* M,
                       const AttentionDims& d, float scale, bool vector_rows) {
  const int64_t G = d.H / d.Hkv, hd = d.hd, S = d.S, T = d.T;
  const int64_t nqb = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t items = d.B * d.Hkv * nqb;
#pragma omp parallel
  {
    Tile tile(G * kQueryBlock, hd);
    std::vector<float> wrow;
    // Later query blocks see more keys under a causal mask: hand them out first.
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t qb = nqb - 1 - item % nqb, bh = item / nqb;
      const int64_t b = bh / d.Hkv, kvh = bh % d.Hkv;
      const int64_t t0 = qb * kQueryBlock, tb = std::min(kQueryBlock, T - t0), R = G * tb;
      const float* Kh = K + (b * d.Hkv + kvh) * d.Smax * hd;
      const float* Vh = V + (b * d.Hkv + kvh) * d.Smax * hd;
      const float* Mb = M + b * T * S;
      // Tile row r = g * tb + (t - t0): head kvh * G + g at position t.
      for (int64_t g = 0; g < G; ++g)
        std::memcpy(tile.q.data() + g * tb * hd, Q + ((b * d.H + kvh * G + g) * T + t0) * hd, tb * hd * sizeof(float));
      std::fill(tile.acc.begin(), tile.acc.begin() + R * hd, 0.0f);
      std::fill(tile.m.begin(), tile.m.begin() + R, -INFINITY);
      std::fill(tile.l.begin(), tile.l.begin() + R, 0.0);
      for (int64_t s0 = 0; s0 < S; s0 += kKeyBlock) {
        const int64_t nb = std::min(kKeyBlock, S - s0);
        if (!sees_any(Mb, S, t0, t0 + tb, s0, s0 + nb)) continue;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(R), int(nb), int(hd), 1.0f, tile.q.data(), int(hd),
                    Kh + s0 * hd, int(hd), 0.0f, tile.w.data(), int(nb));
        for (int64_t r = 0; r < R; ++r)
          online_softmax_row(tile.w.data() + r * nb, Mb + (t0 + r % tb) * S + s0, nb, scale, tile.m[r], tile.l[r],
                             tile.acc.data() + r * hd, hd);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(R), int(hd), int(nb), 1.0f, tile.w.data(), int(nb),
                    Vh + s0 * hd, int(hd), 1.0f, tile.acc.data(), int(hd));
      }
      for (int64_t r = 0; r < R; ++r) {
        const int64_t g = r / tb, t = t0 + r % tb, h = kvh * G + g;
        float* zrow = Z + ((b * T + t) * d.H + h) * hd;   // z is [B,T,H,hd]
        if (tile.l[r] == 0.0) {   // no key visible: HF's uniform row, the row path's numbers
          row_path(zrow, Q + ((b * d.H + h) * T + t) * hd, Kh, Vh, Mb + t * S, S, hd, scale, vector_rows, wrow);
          continue;
        }
        const float inv = float(1.0 / tile.l[r]);
        const float* a = tile.acc.data() + r * hd;
        for (int64_t i = 0; i < hd; ++i) zrow[i] = a[i] * inv;
      }
    }
  }
}

}  // namespace lmscope::cpu
