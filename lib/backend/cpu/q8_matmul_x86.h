// The x86 body of q8_matmul (q8_matmul.h), shared by its AVX2 and AVX-512 VNNI builds: each
// includer defines LMSCOPE_Q8_TARGET (the function attribute for its instructions) and
// LMSCOPE_Q8_VNNI (1: vpdpbusd; 0: maddubs + madd) first. Everything here has internal
// linkage, so the two builds never merge (an AVX-512 copy must not stand in for the AVX2 one).
//
// Per output and tile of R rows, per weight block: the 32 codes as one 256-bit vector (Q4_1:
// the low nibbles are elements 0-15, the high ones 16-31, as llama.cpp's bytes_from_nibbles_32
// lays them out), one 8-lane integer dot with each row's codes (lane k: elements 4k..4k+3),
// converted to float and accumulated by FMA with the combined scale; the formulas are
// kernels/q8_activations.cuh's. The dot takes unsigned times signed bytes: Q4_1 codes are
// 0..15 already; a Q8_0 weight gives its magnitude and its sign moves onto the activation
// (|w| * sign(w)a, llama.cpp's mul_sum_i8_pairs_float). Exact: |a| <= 127, so sign(w)a fits.
#pragma once
#if !defined(LMSCOPE_Q8_TARGET) || !defined(LMSCOPE_Q8_VNNI)
#error "define LMSCOPE_Q8_TARGET and LMSCOPE_Q8_VNNI before including q8_matmul_x86.h"
#endif
#include <algorithm>
#include <cstdint>

#include "backend/cpu/avx2.h"   // hsum: ggml's hsum_float_8 order
#include "backend/cpu/q8_matmul.h"
#include "kernels/quant_blocks.cuh"

namespace lmscope::cpu {
namespace {

// Plain pointers into the quantized rows (no standard-library code runs under the target).
struct Rows {
  const int8_t* q;
  const float* ds;   // d, s per block
  int64_t rows, cols;
};

template <bool Q4_1>
LMSCOPE_Q8_TARGET inline __m256i weight_codes(const uint8_t* blk) {
  if (Q4_1) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(bytes), _mm_srli_epi16(bytes, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  }
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
}

// Lane k = sum of u_j * s_j over j = 4k..4k+3 (u unsigned, s signed bytes), exact.
LMSCOPE_Q8_TARGET inline __m256i dot4(__m256i u, __m256i s) {
#if LMSCOPE_Q8_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));   // pairs < 2^15
#endif
}

// Outputs [o0, o1) of rows [n0, n0 + R), two outputs (o, p) at a time so that their scales
// share the vector work: one conversion gives [d_o, m_o, d_p, m_p] (a Q8_0 block has codes
// where m would be: those lanes go unused), and one FMA with the row's [d_a, s_a, d_a, s_a]
// gives both combined scales d_w * d_a (lanes 0, 2: the addend there is kept +0, so they are
// the rounded products) and both Q4_1 sums fma(m, s_a, summs) (lanes 1, 3). An odd last output
// pairs with itself and is written once.
template <bool Q4_1, int R>
LMSCOPE_Q8_TARGET void tile(float* out, const Rows& x, int64_t n0, const QuantBlocks& W, const float* bias,
                            int64_t o0, int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = I / 32;
  const size_t bb = W.block_bytes(), rb = W.row_bytes();
  const int8_t* qa = x.q + n0 * I;
  const float* ds = x.ds + 2 * n0 * nb;
  const __m256i lane2 = _mm256_set1_epi32(2);
  for (int64_t o = o0; o < o1; o += 2) {
    const int64_t p = std::min(o + 1, o1 - 1);
    const uint8_t* row_o = W.data + o * rb;
    const uint8_t* row_p = W.data + p * rb;
    __m256 acc_o[R], acc_p[R];
    __m128 summs[R];   // lanes 1, 3: output o's and p's sum of m * s; lanes 0, 2 stay +0
    for (int r = 0; r < R; ++r) acc_o[r] = acc_p[r] = _mm256_setzero_ps(), summs[r] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk_o = row_o + b * bb;
      const uint8_t* blk_p = row_p + b * bb;
      const __m256i w_o = weight_codes<Q4_1>(blk_o), w_p = weight_codes<Q4_1>(blk_p);
      const __m256i u_o = Q4_1 ? w_o : _mm256_sign_epi8(w_o, w_o), u_p = Q4_1 ? w_p : _mm256_sign_epi8(w_p, w_p);
      const __m128 scales = _mm_cvtph_ps(
          _mm_insert_epi32(_mm_cvtsi32_si128(int(quant::load_u32(blk_o))), int(quant::load_u32(blk_p)), 1));
      for (int r = 0; r < R; ++r) {
        const __m128 das = _mm_castpd_ps(_mm_loaddup_pd(reinterpret_cast<const double*>(ds + 2 * (r * nb + b))));
        __m128 t;
        if (Q4_1) {
          t = _mm_fmadd_ps(scales, das, summs[r]);
          summs[r] = _mm_blend_ps(_mm_setzero_ps(), t, 0b1010);
        } else {
          t = _mm_mul_ps(scales, das);
        }
        const __m256 dd_o = _mm256_broadcastss_ps(t);
        const __m256 dd_p = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(t), lane2);
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qa + r * I + b * 32));
        const __m256i isum_o = dot4(u_o, Q4_1 ? a : _mm256_sign_epi8(a, w_o));
        const __m256i isum_p = dot4(u_p, Q4_1 ? a : _mm256_sign_epi8(a, w_p));
        acc_o[r] = _mm256_fmadd_ps(dd_o, _mm256_cvtepi32_ps(isum_o), acc_o[r]);
        acc_p[r] = _mm256_fmadd_ps(dd_p, _mm256_cvtepi32_ps(isum_p), acc_p[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      alignas(16) float sm[4];
      _mm_store_ps(sm, summs[r]);
      float* y = out + (n0 + r) * O;
      y[o] = (Q4_1 ? hsum(acc_o[r]) + sm[1] : hsum(acc_o[r])) + (bias ? bias[o] : 0.0f);
      if (p != o) y[p] = (Q4_1 ? hsum(acc_p[r]) + sm[3] : hsum(acc_p[r])) + (bias ? bias[p] : 0.0f);
    }
  }
}

static_assert(kQ8TileRows == 8, "tile_n instantiates R = 1..8");
template <bool Q4_1>
LMSCOPE_Q8_TARGET void tile_n(int R, float* out, const Rows& x, int64_t n0, const QuantBlocks& W, const float* bias,
                              int64_t o0, int64_t o1) {
  switch (R) {
    case 1: return tile<Q4_1, 1>(out, x, n0, W, bias, o0, o1);
    case 2: return tile<Q4_1, 2>(out, x, n0, W, bias, o0, o1);
    case 3: return tile<Q4_1, 3>(out, x, n0, W, bias, o0, o1);
    case 4: return tile<Q4_1, 4>(out, x, n0, W, bias, o0, o1);
    case 5: return tile<Q4_1, 5>(out, x, n0, W, bias, o0, o1);
    case 6: return tile<Q4_1, 6>(out, x, n0, W, bias, o0, o1);
    case 7: return tile<Q4_1, 7>(out, x, n0, W, bias, o0, o1);
    default: return tile<Q4_1, 8>(out, x, n0, W, bias, o0, o1);
  }
}

// Outputs [o0, o1), a chunk of kQ8ChunkOutputs at a time, every tile of rows over each chunk.
void x86_outputs(float* out, const Q8Rows& q8, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1) {
  const Rows x{q8.q.data(), q8.ds.data(), q8.rows, q8.cols};
  const bool q4_1 = W.type == BlockType::Q4_1;
  for (int64_t c0 = o0; c0 < o1; c0 += kQ8ChunkOutputs) {
    const int64_t c1 = std::min(o1, c0 + kQ8ChunkOutputs);
    for (int64_t n0 = 0; n0 < x.rows; n0 += kQ8TileRows) {
      const int R = int(std::min<int64_t>(kQ8TileRows, x.rows - n0));
      if (q4_1)
        tile_n<true>(R, out, x, n0, W, bias, c0, c1);
      else
        tile_n<false>(R, out, x, n0, W, bias, c0, c1);
    }
  }
}

}  // namespace
}  // namespace lmscope::cpu
