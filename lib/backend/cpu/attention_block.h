// Prefill attention in tiles (CpuBackend::attention when T > 1, hooks or not): the same z as
// the row path (attention_row.h) up to float32 rounding, without a row of S weights per query.
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
// Scores and probs, when a hook asks for them, are written beside that arithmetic and change
// none of it (the same tiles, the same skipped pairs, the same z bit for bit): a row's scores
// are the tile's w = q . k * scale + mask as it meets each key block; in a skipped pair they
// are the mask entries themselves (what q . k * scale + mask rounds to for a masked entry, a
// value at or below -1.7e38, unless |q . k * scale| exceeded 1e31). Its probs are the softmax
// of those scores against the row's final max m: softmax_exp(score - m), 0 for a masked key,
// divided by their sum in double. (z was not summed from these probs: the flash-attention
// rescaling gives the same numbers up to float32 rounding, not the same bits.)
//
// Numbers: the row path's up to float32 rounding (sgemm's dot products, softmax_exp within
// 1 ulp of exp, the sum of weights split over key blocks and rescaled, the division by l
// after the sum of p . v instead of before); the tests (tests/engine/attention_block_test.cpp) hold it to the row path.
#pragma once
#include <cstdint>

#include "backend/cpu/attention_row.h"   // AttentionDims, AttentionRowLoops

namespace lmscope::cpu {

constexpr int64_t kQueryBlock = 32;   // positions per tile (times the GQA group in rows)
constexpr int64_t kKeyBlock = 128;    // keys per step

// One row of a tile meeting one key block, the online softmax step: w holds nb raw dot
// products q . k in and the unnormalized weights exp(score - m) out (0 for a masked key);
// m (the row's running max over unmasked scores, -inf at first), l (the sum of its weights)
// and acc (its hd accumulated sums of p . v) are rescaled when the max grows. Scalar (the
// reference: kernels/attention_math.cuh's softmax_exp) and AVX2 + FMA (the same floats up to
// the order of the block's sum), chosen by the caller.
// scores_out, when not null, receives the nb scores (before the exponential).
void online_softmax_row(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                        int64_t hd, float* scores_out = nullptr);
void online_softmax_row_avx2(float* w, const float* mrow, int64_t nb, float scale, float& m, double& l, float* acc,
                             int64_t hd, float* scores_out = nullptr);
// y = softmax_exp(x) in 8 lanes (for the tests: the same float as the scalar one).
void softmax_exp_avx2(float* y, const float* x, int64_t n);

// z [B,T,H,hd] from q [B,H,T,hd], k/v [B,Hkv,Smax,hd], mask [B,T,S]; scores/probs
// [B,H,T,S] written when not null. Splits the tiles over the OpenMP threads (a tile's numbers
// are its own: no thread count changes them). The rows left to the row path take `rows`, and
// the softmax steps the AVX2 version when rows.simd.
void attention_blocked(float* z, const float* q, const float* k, const float* v, const float* mask,
                       const AttentionDims& d, float scale, const AttentionRowLoops& rows, float* scores,
                       float* probs);

// false under LMSCOPE_CPU_ATTENTION=row: prefill takes the row path too (attention_row.h), one
// query row at a time, the arithmetic a decode step uses. Unset or "tiles": the tiles. Any
// other value is an error (std::runtime_error, one line). Read once.
bool attention_tiles_enabled();

}  // namespace lmscope::cpu
