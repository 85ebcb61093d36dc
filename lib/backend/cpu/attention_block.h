// Prefill attention in tiles (CpuBackend::attention when T > 1 and no hook asked for the
// scores or probs): the same z as the row path (attention_row.h) without materializing a
// row of S weights per query.
//
// For each (b, KV head) the query rows of every head of the GQA group over a block of
// kQueryBlock positions form one tile; it meets the keys kKeyBlock at a time:
//   w = (Q_tile . K_block^T) * scale + mask        one sgemm (OpenBLAS, one thread)
//   online softmax per row: running max m, running sum l, the accumulator rescaled by
//   exp(m_old - m_new) when the max grows (flash-attention); exp is softmax_exp
//   (kernels/attention_math.cuh), a polynomial that vectorizes, not libm's expf
//   acc += p . V_block                              one sgemm
// and z = acc / l at the end. A (query block, key block) pair whose mask entries are all
// masked (is_masked: the causal upper triangle, left padding) is skipped: those keys would
// get probability exactly 0 in the row path too. The mask decides, never the shape, so left
// padding and custom masks skip what they mask and nothing else.
// A query row that sees no key at all (a pad query under left padding) softmaxes to a uniform
// row over all S keys in HF eager; it is computed by the row path instead.
//
// Numbers: the row path's up to float32 rounding (sgemm's dot products, softmax_exp within
// 1 ulp of exp, the sum of weights split over key blocks and rescaled, the division by l
// after the sum of p . v instead of before); the tests (tests/engine/attention_block_test.cpp) hold it to the row path.
#pragma once
#include <cstdint>

namespace lmscope::cpu {

constexpr int64_t kQueryBlock = 32;   // positions per tile (times the GQA group in rows)
constexpr int64_t kKeyBlock = 128;    // keys per step

struct AttentionDims {
  int64_t B, H, Hkv, T, hd;
  int64_t S;      // keys attended to (mask is [B,T,S])
  int64_t Smax;   // the cache's row stride in keys (k, v are [B,Hkv,Smax,hd])
};

// One row of a tile meeting one key block, the online softmax step: w holds nb raw dot
// products q . k in and the unnormalized weights exp(score - m) out (0 for a masked key);
// m (the row's running max over unmasked scores, -inf at first), l (the sum of its weights)
// and acc (its hd accumulated sums of p . v) are rescaled when the max grows. Scalar (the
// reference: kernels/attention_math.cuh's softmax_exp) and AVX2 + FMA (the same floats up to
// the order of the block's sum), chosen by the caller.
void online_softmax_row(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                        int64_t hd);
void online_softmax_row_avx2(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                             int64_t hd);
// y = softmax_exp(x) in 8 lanes (for the tests: the same float as the scalar one).
void softmax_exp_avx2(float* y, const float* x, int64_t n);

// z [B,T,H,hd] from q [B,H,T,hd], k/v [B,Hkv,Smax,hd], mask [B,T,S]. Splits the tiles over
// the OpenMP threads. vector_rows: the softmax steps, and the rows left to the row path, take
// the AVX2 loops (the caller checked the processor).
void attention_blocked(float* z, const float* q, const float* k, const float* v, const float* mask,
                       const AttentionDims& d, float scale, bool vector_rows);

}  // namespace lmscope::cpu
