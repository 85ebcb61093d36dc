#include "backend/cpu/attention_block.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/avx2.h"
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

// After a block's weights: raise the running max to m_new, rescaling the sum and the
// accumulator row by exp(m - m_new) (0 while the row has seen nothing: m = -inf).
void rescale(float m_new, float& m, double& l, float* acc, int64_t hd) {
  if (m_new == m) return;
  const float c = softmax_exp(m - m_new);
  for (int64_t i = 0; i < hd; ++i) acc[i] *= c;
  l *= c;
  m = m_new;
}

}  // namespace

void online_softmax_row(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                        int64_t hd, float* scores_out) {
  float mb = -INFINITY;
  for (int64_t j = 0; j < nb; ++j) {
    w[j] = attention_score(w[j], scale, mrow[j]);
    if (!is_masked(w[j])) mb = std::max(mb, w[j]);
  }
  if (scores_out) std::memcpy(scores_out, w, size_t(nb) * sizeof(float));
  if (mb == -INFINITY) {   // every key of this block is masked for this row
    std::fill(w, w + nb, 0.0f);
    return;
  }
  const float m_new = std::max(m, mb);
  double sum = 0;
  for (int64_t j = 0; j < nb; ++j) {
    w[j] = is_masked(w[j]) ? 0.0f : softmax_exp(w[j] - m_new);
    sum += w[j];
  }
  rescale(m_new, m, l, acc, hd);
  l += sum;
}

#if defined(LMSCOPE_AVX2)
namespace {

// softmax_exp (kernels/attention_math.cuh) in 8 lanes, the same operations in the same order.
LMSCOPE_AVX2 inline __m256 softmax_exp8(__m256 x) {
  const __m256 in_range = _mm256_cmp_ps(x, _mm256_set1_ps(kExpFlushBelow), _CMP_GE_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpFlushBelow));   // the lanes out of range give 0 below
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x));
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(bits)), in_range);
}

LMSCOPE_AVX2 inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

LMSCOPE_AVX2 void softmax_exp_avx2(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, softmax_exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = softmax_exp(x[i]);
}

// The scalar step's passes 8 keys at a time: "not masked" is !(w <= kMaskedAtOrBelow), as
// is_masked, so a NaN score counts as real in both. A scalar tail past a multiple of 8.
LMSCOPE_AVX2 void online_softmax_row_avx2(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l,
                                          float* acc, int64_t hd, float* scores_out) {
  const int64_t n8 = nb / 8 * 8;
  const __m256 vscale = _mm256_set1_ps(scale), floor = _mm256_set1_ps(kMaskedAtOrBelow);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 vmax = ninf;
  for (int64_t j = 0; j < n8; j += 8) {
    const __m256 x = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(w + j), vscale), _mm256_loadu_ps(mrow + j));
    _mm256_storeu_ps(w + j, x);
    vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(ninf, x, _mm256_cmp_ps(x, floor, _CMP_NLE_UQ)));
  }
  float mb = hmax(vmax);
  for (int64_t j = n8; j < nb; ++j) {
    w[j] = attention_score(w[j], scale, mrow[j]);
    if (!is_masked(w[j])) mb = std::max(mb, w[j]);
  }
  if (scores_out) std::memcpy(scores_out, w, size_t(nb) * sizeof(float));
  if (mb == -INFINITY) {
    std::fill(w, w + nb, 0.0f);
    return;
  }
  const float m_new = std::max(m, mb);
  const __m256 vm = _mm256_set1_ps(m_new);
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t j = 0; j < n8; j += 8) {
    const __m256 x = _mm256_loadu_ps(w + j);
    const __m256 p = _mm256_and_ps(softmax_exp8(_mm256_sub_ps(x, vm)), _mm256_cmp_ps(x, floor, _CMP_NLE_UQ));
    _mm256_storeu_ps(w + j, p);
    vsum = _mm256_add_ps(vsum, p);
  }
  double sum = hsum(vsum);
  for (int64_t j = n8; j < nb; ++j) {
    w[j] = is_masked(w[j]) ? 0.0f : softmax_exp(w[j] - m_new);
    sum += w[j];
  }
  rescale(m_new, m, l, acc, hd);
  l += sum;
}
#else
void softmax_exp_avx2(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = softmax_exp(x[i]);
}
void online_softmax_row_avx2(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                             int64_t hd, float* scores_out) {
  online_softmax_row(w, mrow, nb, scale, m, l, acc, hd, scores_out);
}
#endif

namespace {

// A row's probabilities from its S scores w (in place: p may be w) and its max m over the
// unmasked ones: softmax_exp(w - m), 0 for a masked key, over their sum in double.
void probs_from_scores(float* p, const float* w, int64_t S, float m) {
  double sum = 0;
  for (int64_t s = 0; s < S; ++s) {
    p[s] = is_masked(w[s]) ? 0.0f : softmax_exp(w[s] - m);
    sum += p[s];
  }
  const float inv = float(1.0 / sum);
  for (int64_t s = 0; s < S; ++s) p[s] *= inv;
}

}  // namespace

void attention_blocked(float* Z, const float* Q, const float* K, const float* V, const float* M,
                       const AttentionDims& d, float scale, const AttentionRowLoops& rows, float* scores,
                       float* probs) {
  const int64_t G = d.H / d.Hkv, hd = d.hd, S = d.S, T = d.T;
  const int64_t nqb = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t items = d.B * d.Hkv * nqb;
  const auto step = rows.simd ? online_softmax_row_avx2 : online_softmax_row;
  // Where a row's scores go while the tiles run: the scores hook's rows, else the probs hook's
  // (turned into probabilities at the end), else nowhere.
  float* const srows = scores ? scores : probs;
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
      // Tile row r = g * tb + (t - t0): head kvh * G + g at position t; its [B,H,T,S] row:
      auto hook_row = [&](float* base, int64_t r) {
        return base ? base + ((b * d.H + kvh * G + r / tb) * T + t0 + r % tb) * S : nullptr;
      };
      for (int64_t g = 0; g < G; ++g)
        std::memcpy(tile.q.data() + g * tb * hd, Q + ((b * d.H + kvh * G + g) * T + t0) * hd, tb * hd * sizeof(float));
      std::fill(tile.acc.begin(), tile.acc.begin() + R * hd, 0.0f);
      std::fill(tile.m.begin(), tile.m.begin() + R, -INFINITY);
      std::fill(tile.l.begin(), tile.l.begin() + R, 0.0);
      for (int64_t s0 = 0; s0 < S; s0 += kKeyBlock) {
        const int64_t nb = std::min(kKeyBlock, S - s0);
        if (!sees_any(Mb, S, t0, t0 + tb, s0, s0 + nb)) {
          if (srows)   // every entry masked: the mask entries are the scores (attention_block.h)
            for (int64_t r = 0; r < R; ++r)
              std::memcpy(hook_row(srows, r) + s0, Mb + (t0 + r % tb) * S + s0, nb * sizeof(float));
          continue;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(R), int(nb), int(hd), 1.0f, tile.q.data(), int(hd),
                    Kh + s0 * hd, int(hd), 0.0f, tile.w.data(), int(nb));
        for (int64_t r = 0; r < R; ++r)
          step(tile.w.data() + r * nb, Mb + (t0 + r % tb) * S + s0, nb, scale, tile.m[r], tile.l[r],
               tile.acc.data() + r * hd, hd, srows ? hook_row(srows, r) + s0 : nullptr);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(R), int(hd), int(nb), 1.0f, tile.w.data(), int(nb),
                    Vh + s0 * hd, int(hd), 1.0f, tile.acc.data(), int(hd));
      }
      for (int64_t r = 0; r < R; ++r) {
        const int64_t g = r / tb, t = t0 + r % tb, h = kvh * G + g;
        float* zrow = Z + ((b * T + t) * d.H + h) * hd;   // z is [B,T,H,hd]
        if (tile.l[r] == 0.0) {   // no key visible: HF's uniform row, the row path's numbers
          wrow.resize(S);
          attention_row(rows, zrow, wrow.data(), Q + ((b * d.H + h) * T + t) * hd, Kh, Vh, Mb + t * S, S, hd, scale,
                        hook_row(scores, r), hook_row(probs, r));
          continue;
        }
        const float inv = float(1.0 / tile.l[r]);
        const float* a = tile.acc.data() + r * hd;
        for (int64_t i = 0; i < hd; ++i) zrow[i] = a[i] * inv;
        if (probs) probs_from_scores(hook_row(probs, r), hook_row(srows, r), S, tile.m[r]);
      }
    }
  }
}

bool attention_tiles_enabled() {
  static const bool tiles = [] {
    const char* env = std::getenv("LMSCOPE_CPU_ATTENTION");
    if (!env || !*env || std::strcmp(env, "tiles") == 0) return true;
    if (std::strcmp(env, "row") == 0) return false;
    throw std::runtime_error(std::string("LMSCOPE_CPU_ATTENTION=") + env + ": expected tiles or row");
  }();
  return tiles;
}

}  // namespace lmscope::cpu
