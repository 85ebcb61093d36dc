// One query row of HF eager attention over S cached keys (CpuBackend::attention):
//   w = (q . k_s) * scale + mask_s;  p = softmax(w) in float32;  z = sum_s p_s * v_s
// in three steps, so that a row whose scores and probs nobody asked for can take vector
// versions of the two loops over the cache (q . k and the weighted sum of V) while the softmax
// (expf, a double sum) stays one function. The vector versions change only the order and
// rounding of float32 sums (lanes, fused multiply-adds); the tests hold them to the scalar
// ones. AVX-512 (attention_row_avx512.cpp) or AVX2 + FMA, chosen at run time with
// block_matmul's kernel (LMSCOPE_CPU_KERNEL); the scalar versions are the reference and the
// fallback.
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

}  // namespace lmscope::cpu
