// The x86 body of q8_matmul (q8_matmul.h), shared by its AVX2 and AVX-512 VNNI builds: each
// includer defines LMSCOPE_Q8_TARGET (the function attribute for its instructions) and
// LMSCOPE_Q8_VNNI (1: vpdpbusd; 0: maddubs + madd) first. Everything here has internal
// linkage, so the two builds never merge (an AVX-512 copy must not stand in for the AVX2 one).
//
// Per output and tile of R rows, per weight block: the 32 codes as one 256-bit vector
// (q8_codes_x86.h's weight_codes: in the nibble types the low nibbles are elements 0-15, the
// high ones 16-31, as llama.cpp's bytes_from_nibbles_32 lays them out), one 8-lane integer dot
// with each row's codes (lane k: elements 4k..4k+3), converted to float and accumulated by FMA
// with the combined scale; the formulas are kernels/q8_activations.cuh's. The dot takes unsigned
// times signed bytes: Q4_1 and Q5_1 codes are 0..15 / 0..31 already; a Q8_0, Q4_0, Q5_0 or
// IQ4_NL weight gives its magnitude and its sign moves onto the activation (|w| * sign(w)a,
// llama.cpp's mul_sum_i8_pairs_float / mul_add_epi8, which its ggml_vec_dot_q8_0_q8_0,
// _q4_0_q8_0, _q5_0_q8_0 and _iq4_nl_q8_0 call). Exact: |a| <= 127, so sign(w)a fits.
#pragma once
#if !defined(LMSCOPE_Q8_TARGET) || !defined(LMSCOPE_Q8_VNNI)
#error "define LMSCOPE_Q8_TARGET and LMSCOPE_Q8_VNNI before including q8_matmul_x86.h"
#endif
#include <algorithm>
#include <cstdint>

#include "backend/cpu/avx2.h"   // hsum (ggml's hsum_float_8 order), prefetch_lines
#include "backend/cpu/q8_codes_x86.h"   // weight_codes, dot4
#include "backend/cpu/q8_matmul.h"
#include "kernels/q8_activations.cuh"
#include "kernels/quant_blocks.cuh"

namespace lmscope::cpu {
namespace {

// Plain pointers into the quantized rows (no standard-library code runs under the target).
struct Rows {
  const int8_t* q;
  const float* ds;   // d, s per block
  int64_t rows, cols;
};

// Blocks of x quantized as q8::quantize_block does (kernels/q8_activations.cuh), 32 at a
// time in vectors as llama.cpp's quantize_row_q8_0/_1 do: round half to even by
// _mm256_round_ps, the scales through the F16C conversion (round to nearest even). The max
// of |x| is exact in any order, so the results are the portable ones bit for bit.
[[maybe_unused]] LMSCOPE_Q8_TARGET void quantize_blocks(const float* x, int64_t blocks, int8_t* q, float* ds) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * 32;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k), amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float m = _mm_cvtss_f32(m4);
    const float d = q8::block_scale(m);
    const __m256 id = _mm256_set1_ps(q8::block_inverse_scale(m));
    __m256i c[4];
    for (int k = 0; k < 4; ++k)
      c[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i sum8 = _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
    __m128i sum4 = _mm_add_epi32(_mm256_castsi256_si128(sum8), _mm256_extracti128_si256(sum8, 1));
    sum4 = _mm_add_epi32(sum4, _mm_unpackhi_epi64(sum4, sum4));
    sum4 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, 1));
    // int32 -> int8 in element order: the packs work per 128-bit half, the permute restores it
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * 32),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    ds[2 * b] = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    ds[2 * b + 1] = _cvtsh_ss(_cvtss_sh(d * float(_mm_cvtsi128_si32(sum4)), _MM_FROUND_TO_NEAREST_INT));
  }
}

// One weight block (at b of each of the P rows) into the accumulators of the R activation rows:
// per pair of outputs one conversion gives [d_o, m_o, d_p, m_p] (a block without a min has
// codes or qh where m would be: those lanes go unused), one product with the row's [d_a, s_a,
// d_a, s_a] gives both combined scales d_w * d_a (lanes 0, 2), and one FMA both min sums
// fma(m, s_a, summs) (Q4_1, Q5_1: lanes 1, 3; lanes 0, 2 unused).
template <BlockType T, int R, int P>
LMSCOPE_Q8_TARGET inline void block_step(const uint8_t* const* rows, int64_t b, size_t bb, const int8_t* qa,
                                         const float* ds, int64_t I, int64_t nb, __m256 (&acc)[P][R],
                                         __m128 (&summs)[P / 2][R]) {
  constexpr bool kMin = has_min(T);   // Q4_1, Q5_1: unsigned codes and a min; the others signed
  const __m256i lane2 = _mm256_set1_epi32(2);
  __m256i w[P], u[P];
  __m128 scales[P / 2];
  for (int i = 0; i < P; ++i) {
    w[i] = weight_codes<T>(rows[i] + b * bb);
    u[i] = kMin ? w[i] : _mm256_sign_epi8(w[i], w[i]);
  }
  for (int j = 0; j < P / 2; ++j)
    scales[j] = _mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128(int(quant::load_u32(rows[2 * j] + b * bb))),
                                              int(quant::load_u32(rows[2 * j + 1] + b * bb)), 1));
  for (int r = 0; r < R; ++r) {
    const __m128 das = _mm_castpd_ps(_mm_loaddup_pd(reinterpret_cast<const double*>(ds + 2 * (r * nb + b))));
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qa + r * I + b * 32));
    for (int j = 0; j < P / 2; ++j) {
      const __m128 dd = _mm_mul_ps(scales[j], das);
      if (kMin) summs[j][r] = _mm_fmadd_ps(scales[j], das, summs[j][r]);
      const __m256 dd_o = _mm256_broadcastss_ps(dd);
      const __m256 dd_p = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), lane2);
      const int i = 2 * j;
      const __m256i isum_o = dot4(u[i], kMin ? a : _mm256_sign_epi8(a, w[i]));
      const __m256i isum_p = dot4(u[i + 1], kMin ? a : _mm256_sign_epi8(a, w[i + 1]));
      acc[i][r] = _mm256_fmadd_ps(dd_o, _mm256_cvtepi32_ps(isum_o), acc[i][r]);
      acc[i + 1][r] = _mm256_fmadd_ps(dd_p, _mm256_cvtepi32_ps(isum_p), acc[i + 1][r]);
    }
  }
}

// IQ4_NL's odd last block (kernels/q8_activations.cuh): y + (d_w * d_a) * float(the block's
// integer dot), each step rounded (mul_then_add), the integer formed exactly.
LMSCOPE_Q8_TARGET inline float iq4_nl_tail(const uint8_t* blk, const int8_t* a, float d_a, float y) {
  const __m256i w = weight_codes<BlockType::IQ4_NL>(blk);
  const __m256i lanes = dot4(_mm256_sign_epi8(w, w), _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)), w));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
  const __m256 dd = _mm256_set1_ps(quant::load_f16(blk) * d_a);
  return _mm256_cvtss_f32(mul_then_add(dd, _mm256_set1_ps(float(_mm_cvtsi128_si32(s4))), _mm256_set1_ps(y)));
}

// Outputs [o0, o1) of rows [n0, n0 + R), P outputs at a time (P/2 pairs; more outputs in
// flight hide the latency of each one's FMA chain, which the fixed summation order forbids
// splitting). Outputs past o1 repeat the last one and are not written. IQ4_NL keeps its even
// and odd blocks in two sets of accumulators (vec_dot's order).
template <BlockType T, int R, int P>
LMSCOPE_Q8_TARGET void tile(float* out, const Rows& x, int64_t n0, const QuantBlocks& W, const float* bias,
                            int64_t o0, int64_t o1) {
  static_assert(P % 2 == 0, "outputs go in pairs");
  constexpr bool kMin = has_min(T);
  constexpr bool kPairs = T == BlockType::IQ4_NL;
  const int64_t O = W.rows, I = W.cols, nb = I / 32;
  const int64_t lane_blocks = kPairs ? nb / 2 * 2 : nb;   // IQ4_NL: an odd last block comes apart
  const size_t bb = W.block_bytes(), rb = W.row_bytes();
  const int8_t* qa = x.q + n0 * I;
  const float* ds = x.ds + 2 * n0 * nb;
  for (int64_t o = o0; o < o1; o += P) {
    int64_t idx[P];
    const uint8_t* rows[P];
    for (int i = 0; i < P; ++i) idx[i] = std::min(o + i, o1 - 1), rows[i] = W.data + idx[i] * rb;
    __m256 acc[P][R], odd[kPairs ? P : 1][kPairs ? R : 1];
    __m128 summs[P / 2][R];   // pair j: lanes 1, 3 hold its outputs' sums of m * s
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < P; ++i) acc[i][r] = _mm256_setzero_ps();
      for (int j = 0; j < P / 2; ++j) summs[j][r] = _mm_setzero_ps();
    }
    for (auto& row_acc : odd)
      for (__m256& a : row_acc) a = _mm256_setzero_ps();
    // The P rows interleave P streams, which the hardware prefetcher follows poorly (the q8
    // decode ran at half the f32 kernel's bytes per second without this): each block step
    // asks for its share of the group two groups ahead (P rows are contiguous).
    // (Addresses as integers: past the matrix's end they are only hints, never pointers.)
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(W.data) + uintptr_t((o + 2 * P) * int64_t(rb));
    constexpr int64_t lines = (P * int64_t(block_bytes(T)) + 63) / 64;   // a group's bytes per block step
    if constexpr (kPairs) {
      for (int64_t b = 0; b < lane_blocks; b += 2) {
        prefetch_lines(ahead + uintptr_t(b * lines * 64), 2 * lines);
        block_step<T, R, P>(rows, b, bb, qa, ds, I, nb, acc, summs);
        block_step<T, R, P>(rows, b + 1, bb, qa, ds, I, nb, odd, summs);
      }
      for (int i = 0; i < P; ++i)
        for (int r = 0; r < R; ++r) acc[i][r] = _mm256_add_ps(acc[i][r], odd[i][r]);
    } else {
      for (int64_t b = 0; b < nb; ++b) {
        prefetch_lines(ahead + uintptr_t(b * lines * 64), lines);
        block_step<T, R, P>(rows, b, bb, qa, ds, I, nb, acc, summs);
      }
    }
    for (int r = 0; r < R; ++r) {
      float* y = out + (n0 + r) * O;
      for (int i = 0; i < P; ++i) {
        if (i > 0 && idx[i] == idx[i - 1]) break;
        alignas(16) float sm[4];
        _mm_store_ps(sm, summs[i / 2][r]);
        float v = kMin ? hsum(acc[i][r]) + sm[1 + 2 * (i % 2)] : hsum(acc[i][r]);
        if (lane_blocks < nb)
          v = iq4_nl_tail(rows[i] + (nb - 1) * bb, qa + r * I + (nb - 1) * 32, ds[2 * (r * nb + nb - 1)], v);
        y[idx[i]] = v + (bias ? bias[idx[i]] : 0.0f);
      }
    }
  }
}

// Four outputs in flight for one or two rows (decode), two for more (registers: each output
// keeps R accumulators).
static_assert(kQ8TileRows == 8, "tile_n instantiates R = 1..8");
template <BlockType T>
LMSCOPE_Q8_TARGET void tile_n(int R, float* out, const Rows& x, int64_t n0, const QuantBlocks& W, const float* bias,
                              int64_t o0, int64_t o1) {
  switch (R) {
    case 1: return tile<T, 1, 4>(out, x, n0, W, bias, o0, o1);
    case 2: return tile<T, 2, 4>(out, x, n0, W, bias, o0, o1);
    case 3: return tile<T, 3, 2>(out, x, n0, W, bias, o0, o1);
    case 4: return tile<T, 4, 2>(out, x, n0, W, bias, o0, o1);
    case 5: return tile<T, 5, 2>(out, x, n0, W, bias, o0, o1);
    case 6: return tile<T, 6, 2>(out, x, n0, W, bias, o0, o1);
    case 7: return tile<T, 7, 2>(out, x, n0, W, bias, o0, o1);
    default: return tile<T, 8, 2>(out, x, n0, W, bias, o0, o1);
  }
}

// Outputs [o0, o1), a chunk of kQ8ChunkOutputs at a time, every tile of rows over each chunk.
void x86_outputs(float* out, const Q8Rows& q8, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1) {
  const Rows x{q8.q.data(), q8.ds.data(), q8.rows, q8.cols};
  for (int64_t c0 = o0; c0 < o1; c0 += kQ8ChunkOutputs) {
    const int64_t c1 = std::min(o1, c0 + kQ8ChunkOutputs);
    for (int64_t n0 = 0; n0 < x.rows; n0 += kQ8TileRows) {
      const int R = int(std::min<int64_t>(kQ8TileRows, x.rows - n0));
      switch (W.type) {
        case BlockType::Q4_1: tile_n<BlockType::Q4_1>(R, out, x, n0, W, bias, c0, c1); break;
        case BlockType::Q5_0: tile_n<BlockType::Q5_0>(R, out, x, n0, W, bias, c0, c1); break;
        case BlockType::Q4_0: tile_n<BlockType::Q4_0>(R, out, x, n0, W, bias, c0, c1); break;
        case BlockType::Q5_1: tile_n<BlockType::Q5_1>(R, out, x, n0, W, bias, c0, c1); break;
        case BlockType::IQ4_NL: tile_n<BlockType::IQ4_NL>(R, out, x, n0, W, bias, c0, c1); break;
        default: tile_n<BlockType::Q8_0>(R, out, x, n0, W, bias, c0, c1); break;
      }
    }
  }
}

}  // namespace
}  // namespace lmscope::cpu
