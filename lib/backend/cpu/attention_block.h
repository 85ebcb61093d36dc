// Prefill attention in tiles (CpuBackend::attention when T > 1 and no hook asked for the
// scores or probs): the same z as the row path (attention_row.h) without materializing a
// row of S weights per query.
//
// For each (b, KV head) the query rows of every head of the GQA group over a block of
// kQueryBlock positions form one tile; it meets the keys kKeyBlock at a time:
//   w = (Q_tile . K_block^T) * scale + mask        one sgemm (OpenBLAS, one thread)
//   online softmax per row: running max m, running sum l, the accumulator rescaled by
//   softmax_weight(m_old, m_new) when the max grows (flash-attention)
//   acc += p . V_block                              one sgemm
// and z = acc / l at the end. A (query block, key block) pair whose mask entries are all
// masked (is_masked: the causal upper triangle, left padding) is skipped: those keys would
// get probability exactly 0 in the row path too. The mask decides, never the shape, so left
// padding and custom masks skip what they mask and nothing else.
// A query row that sees no key at all (a pad query under left padding) softmaxes to a uniform
// row over all S keys in HF eager; it is computed by the row path instead.
//
// Numbers: the row path's up to float32 rounding order (sgemm's dot products, the sum of
// exp split over key blocks and rescaled, the division by l after the sum of p . v instead of
// before); the tests (tests/engine/attention_block_test.cpp) hold it to the row path.
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

// z [B,T,H,hd] from q [B,H,T,hd], k/v [B,Hkv,Smax,hd], mask [B,T,S]. Splits the tiles over
// the OpenMP threads. vector_rows: the rows left to the row path take its AVX2 loops.
void attention_blocked(float* z, const float* q, const float* k, const float* v, const float* mask,
                       const AttentionDims& d, float scale, bool vector_rows);

}  // namespace lmscope::cpu
