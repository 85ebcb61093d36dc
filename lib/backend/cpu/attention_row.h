// One query row of HF eager attention over S cached keys (CpuBackend::attention: decode, the
// rows the prefill tiles leave over, and all of prefill under LMSCOPE_CPU_ATTENTION=row):
//   w = (q . k_s) * scale + mask_s;  p = softmax(w) in float32;  z = sum_s p_s * v_s
// in three steps, so that the two loops over the cache (q . k and the weighted sum of V) can
// take vector versions while the softmax (expf, a double sum) stays one function. The vector
// versions change only the order and rounding of float32 sums (lanes, fused multiply-adds);
// the tests hold them to the scalar ones. Three builds: scalar (the reference), AVX2 + FMA
// and AVX-512 (one body, attention_row_x86.h, in attention_row_avx2.cpp and
// attention_row_avx512.cpp); kernel_table.h says which runs. A run takes the same loops whether or not a hook asked for the scores or probs: those
// are copies of what the row computes.
#pragma once
#include <cstdint>

namespace lmscope::cpu {

// w[s] = attention_score(q . K[s], scale, mask[s]) for s < S (K: S rows of hd); returns max w.
float attention_scores(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                       float scale);
float attention_scores_avx2(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                            float scale);
float attention_scores_avx512(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                              float scale);

// w[s] = softmax_weight(w[s], wmax) / sum over s (the sum in double).
void attention_softmax(float* w, int64_t S, float wmax);

// z[hd] = sum_s p[s] * V[s] (V: S rows of hd); a zero p skips its row (a masked key).
void attention_mix(float* z, const float* p, const float* V, int64_t S, int64_t hd);
void attention_mix_avx2(float* z, const float* p, const float* V, int64_t S, int64_t hd);
void attention_mix_avx512(float* z, const float* p, const float* V, int64_t S, int64_t hd);

bool attention_avx2_available();
bool attention_avx512_available();

// The two loops a row runs. `simd` also sends the tiles' online softmax (attention_block.h)
// to its AVX2 version.
struct AttentionRowLoops {
  const char* name;
  float (*scores)(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd, float scale);
  void (*mix)(float* z, const float* p, const float* V, int64_t S, int64_t hd);
  bool simd;
};
extern const AttentionRowLoops kScalarRowLoops;   // the reference
// The loops kernel_table.h chose (LMSCOPE_CPU_KERNEL, or the widest the processor runs).
const AttentionRowLoops& attention_row_loops();

struct AttentionDims {
  int64_t B, H, Hkv, T, hd;
  int64_t S;      // keys attended to (mask is [B,T,S])
  int64_t Smax;   // the cache's row stride in keys (k, v are [B,Hkv,Smax,hd])
};

// One query row: z[hd] from q over S keys (K, V: S rows of hd), w[S] scratch. The row's
// scores (before the softmax) go to scores_out and its probabilities to probs_out when those
// are not null: copies of w, so asking for them changes no number.
void attention_row(const AttentionRowLoops& loops, float* z, float* w, const float* q, const float* K, const float* V,
                   const float* mask, int64_t S, int64_t hd, float scale, float* scores_out, float* probs_out);

// Every (b, h, t) row of z [B,T,H,hd] from q [B,H,T,hd], k/v [B,Hkv,Smax,hd], mask [B,T,S],
// rows split over the OpenMP threads (each row's numbers are its own: no thread count
// changes them); scores/probs [B,H,T,S] written when not null.
void attention_rows(const AttentionRowLoops& loops, float* z, const float* q, const float* k, const float* v,
                    const float* mask, const AttentionDims& d, float scale, float* scores, float* probs);

}  // namespace lmscope::cpu
