// The x86 body of the q8 GEMM (q8_gemm.h), shared by its AVX2 and AVX-512 VNNI builds: each
// includer defines LMSCOPE_Q8_TARGET and LMSCOPE_Q8_VNNI first (as for q8_codes_x86.h).
// Everything here has internal linkage. The caller packs the rows (q8_gemm_pack).
#pragma once
#if !defined(LMSCOPE_Q8_TARGET) || !defined(LMSCOPE_Q8_VNNI)
#error "define LMSCOPE_Q8_TARGET and LMSCOPE_Q8_VNNI before including q8_gemm_x86.h"
#endif
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/avx2.h"           // load_f16c
#include "backend/cpu/q8_codes_x86.h"   // weight_codes, dot4
#include "backend/cpu/q8_gemm.h"
#include "kernels/quant_blocks.cuh"

namespace lmscope::cpu {
namespace {

static_assert(kQ8GemmRows == 8, "a group is the eight 32-bit slots of a 256-bit register");

// A Q8GemmPanel (q8_gemm.h) as plain pointers, and one group of it from its block 0.
struct Panel {
  const int8_t* q;
  const float *d, *s;
  const int32_t* sum16;
  int64_t groups, blocks;
};
struct Group {
  const int8_t* q;
  const float *d, *s;
  const int32_t* sum16;
};

// Whether a type's codes are signed bytes whose signs move onto the activations (Q8_0, IQ4_NL:
// |w| and w both kept), rather than made unsigned by an offset (Q4_0: w + 8; Q5_0: w + 16) or
// unsigned already (Q4_1, Q5_1).
constexpr bool signs_move(BlockType t) { return t == BlockType::Q8_0 || t == BlockType::IQ4_NL; }

// A chunk of weight rows decoded once for every group that reads them (q8_gemm_scratch_bytes):
// per output, per block, 32 unsigned codes u (Q8_0, IQ4_NL: |w|, then the 32 signed codes w;
// Q4_1, Q5_1: the codes; Q4_0: w + 8; Q5_0: w + 16), and per output the blocks' d_w (and
// Q4_1's / Q5_1's m_w) as float.
template <BlockType T>
struct Decoded {
  static constexpr int64_t kCodeBytes = signs_move(T) ? 64 : 32;   // per block
  uint8_t* codes;   // [outputs][nb][kCodeBytes]
  float* d;         // [outputs][nb]
  float* m;         // [outputs][nb] (Q4_1, Q5_1)
  int64_t nb;
};

// What a type's unsigned codes add to the dot, per activation: u = w + offset.
constexpr int code_offset(BlockType t) { return t == BlockType::Q4_0 ? 8 : t == BlockType::Q5_0 ? 16 : 0; }

template <BlockType T>
LMSCOPE_Q8_TARGET void decode_chunk(const QuantBlocks& W, int64_t o0, int64_t o1, const Decoded<T>& dec) {
  const int64_t nb = dec.nb;
  const size_t bb = W.block_bytes(), rb = W.row_bytes();
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * int64_t(rb);
    uint8_t* codes = dec.codes + (o - o0) * nb * Decoded<T>::kCodeBytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * bb;
      const __m256i w = weight_codes<T>(blk);
      __m256i u = w;
      if (signs_move(T)) u = _mm256_sign_epi8(w, w);
      if (code_offset(T)) u = _mm256_add_epi8(w, _mm256_set1_epi8(char(code_offset(T))));
      uint8_t* c = codes + b * Decoded<T>::kCodeBytes;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), u);
      if (signs_move(T)) _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 32), w);
      dec.d[(o - o0) * nb + b] = load_f16c(blk);
      if (has_min(T)) dec.m[(o - o0) * nb + b] = load_f16c(blk + 2);
    }
  }
}

// Block b of output i into the eight lane registers of the group's eight rows: per quad k, with
// u_k the weight's quad broadcast to all eight rows and a_k the rows' quads, the exact integer
// lane k of each row:
//   Q4_1, Q5_1      dot(u_k, a_k)                    (codes 0..15 / 0..31, unsigned as they are)
//   Q8_0, IQ4_NL    dot(|w|_k, sign(a_k, w_k))        (llama.cpp's mul_sum_i8_pairs_float)
//   Q4_0, Q5_0      dot(w_k + c, a_k) - c sum(a_k)    (c = 8 / 16: w + c is unsigned, no sign
//                                                     step; the rows' 16 sum(a_k) come packed,
//                                                     q8_gemm.h, and 8 sum(a_k) is half of it)
// each an exact integer (maddubs's pairs stay below 2^15: |a| <= 127, u <= 128), so every lane
// is the one-row kernel's. Returns the lanes' integer sum over the block's eight quads, per row.
template <BlockType T>
LMSCOPE_Q8_TARGET inline __m256i block_lanes(const uint8_t* u, const int8_t* a, const int32_t* sum16, __m256 dd,
                                             __m256* acc) {
  __m256i total = _mm256_setzero_si256();
  for (int k = 0; k < 8; ++k) {
    int32_t quad_u;
    std::memcpy(&quad_u, u + 4 * k, 4);
    __m256i ak = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * k));
    if (signs_move(T)) {
      int32_t quad_w;
      std::memcpy(&quad_w, u + 32 + 4 * k, 4);
      ak = _mm256_sign_epi8(ak, _mm256_set1_epi32(quad_w));
    }
    __m256i isum = dot4(_mm256_set1_epi32(quad_u), ak);
    if (code_offset(T)) {
      const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum16 + 8 * k));
      isum = _mm256_sub_epi32(isum, code_offset(T) == 16 ? s16 : _mm256_srai_epi32(s16, 1));
    }
    if (acc) acc[k] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(isum), acc[k]);
    total = _mm256_add_epi32(total, isum);
  }
  return total;
}

// Block b of output i into acc, for the group's eight rows: the combined scales d_w * d_a (one
// vector product), Q4_1's / Q5_1's fma(m_w, s_a, summs), then block_lanes.
template <BlockType T>
LMSCOPE_Q8_TARGET inline void block_into(const Decoded<T>& dec, int64_t i, const Group& g, int64_t b, __m256* acc,
                                         __m256& summs) {
  const int64_t nb = dec.nb;
  const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(dec.d[i * nb + b]), _mm256_loadu_ps(g.d + b * 8));   // per row
  if (has_min(T)) summs = _mm256_fmadd_ps(_mm256_set1_ps(dec.m[i * nb + b]), _mm256_loadu_ps(g.s + b * 8), summs);
  block_lanes<T>(dec.codes + (i * nb + b) * Decoded<T>::kCodeBytes, g.q + b * 256, g.sum16 + b * 64, dd, acc);
}

// Output i of a decoded chunk for the group's eight rows: y[r] = W row . row r, the one-row
// kernel's numbers (block_into per block; IQ4_NL's even and odd blocks into two sets of lanes
// and an odd last block apart, as kernels/q8_activations.cuh says).
template <BlockType T>
LMSCOPE_Q8_TARGET inline __m256 group_output(const Decoded<T>& dec, int64_t i, const Group& g) {
  constexpr bool kPairs = T == BlockType::IQ4_NL;
  const int64_t nb = dec.nb, lane_blocks = kPairs ? nb / 2 * 2 : nb;
  __m256 acc[8], odd[8];
  for (int k = 0; k < 8; ++k) acc[k] = odd[k] = _mm256_setzero_ps();
  __m256 summs = _mm256_setzero_ps();   // Q4_1, Q5_1: per row, fma(m_w, s_a, summs) block after block
  for (int64_t b = 0; b < lane_blocks; b += kPairs ? 2 : 1) {
    block_into<T>(dec, i, g, b, acc, summs);
    if (kPairs) block_into<T>(dec, i, g, b + 1, odd, summs);
  }
  if (kPairs)
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_add_ps(acc[k], odd[k]);
  // hsum_float_8's order, between registers: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
  const __m256 l04 = _mm256_add_ps(acc[0], acc[4]), l15 = _mm256_add_ps(acc[1], acc[5]);
  const __m256 l26 = _mm256_add_ps(acc[2], acc[6]), l37 = _mm256_add_ps(acc[3], acc[7]);
  __m256 y = _mm256_add_ps(_mm256_add_ps(l04, l26), _mm256_add_ps(l15, l37));
  if (has_min(T)) y = _mm256_add_ps(y, summs);
  if (lane_blocks < nb) {   // IQ4_NL's odd last block: y + (d_w * d_a) * float(its integer dot)
    const int64_t b = nb - 1;
    const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(dec.d[i * nb + b]), _mm256_loadu_ps(g.d + b * 8));
    const __m256i total =
        block_lanes<T>(dec.codes + (i * nb + b) * Decoded<T>::kCodeBytes, g.q + b * 256, g.sum16 + b * 64, dd, nullptr);
    y = mul_then_add(dd, _mm256_cvtepi32_ps(total), y);
  }
  return y;
}

// Outputs [o0, o1) of every row: a chunk of kQ8GemmChunk outputs at a time, decoded once, then
// every group of rows over it (the decoded chunk stays in cache).
template <BlockType T>
LMSCOPE_Q8_TARGET void gemm_outputs(float* out, const Panel& p, int64_t N, const QuantBlocks& W, const float* bias,
                                    int64_t o0, int64_t o1, uint8_t* scratch) {
  const int64_t nb = p.blocks, O = W.rows;
  const Decoded<T> dec{scratch, reinterpret_cast<float*>(scratch + kQ8GemmChunk * nb * Decoded<T>::kCodeBytes),
                       reinterpret_cast<float*>(scratch + kQ8GemmChunk * nb * (Decoded<T>::kCodeBytes + 4)), nb};
  for (int64_t c0 = o0; c0 < o1; c0 += kQ8GemmChunk) {
    const int64_t c1 = c0 + kQ8GemmChunk < o1 ? c0 + kQ8GemmChunk : o1;
    decode_chunk<T>(W, c0, c1, dec);
    for (int64_t g = 0; g < p.groups; ++g) {
      const int64_t n0 = g * kQ8GemmRows;
      const int rows = N - n0 < kQ8GemmRows ? int(N - n0) : kQ8GemmRows;
      const Group group{p.q + g * nb * 256, p.d + g * nb * 8, p.s + g * nb * 8, p.sum16 + g * nb * 64};
      for (int64_t o = c0; o < c1; ++o) {
        __m256 y = group_output<T>(dec, o - c0, group);
        if (bias) y = _mm256_add_ps(y, _mm256_set1_ps(bias[o]));
        alignas(32) float v[kQ8GemmRows];
        _mm256_store_ps(v, y);
        for (int r = 0; r < rows; ++r) out[(n0 + r) * O + o] = v[r];
      }
    }
  }
}

// out [x.rows, W.rows]: outputs [o0, o1) of every row of the packed x; scratch: at least
// q8_gemm_scratch_bytes(W.cols) bytes.
void x86_gemm_outputs(float* out, const Q8GemmPanel& panel, int64_t N, const QuantBlocks& W, const float* bias,
                      int64_t o0, int64_t o1, uint8_t* scratch) {
  const Panel p{panel.q.data(), panel.d.data(), panel.s.data(), panel.sum16.data(), panel.groups, panel.blocks};
  switch (W.type) {
    case BlockType::Q4_1: return gemm_outputs<BlockType::Q4_1>(out, p, N, W, bias, o0, o1, scratch);
    case BlockType::Q5_0: return gemm_outputs<BlockType::Q5_0>(out, p, N, W, bias, o0, o1, scratch);
    case BlockType::Q4_0: return gemm_outputs<BlockType::Q4_0>(out, p, N, W, bias, o0, o1, scratch);
    case BlockType::Q5_1: return gemm_outputs<BlockType::Q5_1>(out, p, N, W, bias, o0, o1, scratch);
    case BlockType::IQ4_NL: return gemm_outputs<BlockType::IQ4_NL>(out, p, N, W, bias, o0, o1, scratch);
    default: return gemm_outputs<BlockType::Q8_0>(out, p, N, W, bias, o0, o1, scratch);
  }
}

// One thread's share of a call (the Q8Outputs signature): x packed into this thread's own panel,
// the weight chunks decoded into its own scratch.
void x86_gemm_thread_outputs(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                             int64_t o1) {
  thread_local Q8GemmPanel panel;
  thread_local std::vector<uint8_t> scratch;
  q8_gemm_pack(x, panel);
  scratch.resize(size_t(q8_gemm_scratch_bytes(W.cols)));
  x86_gemm_outputs(out, panel, x.rows, W, bias, o0, o1, scratch.data());
}

}  // namespace
}  // namespace lmscope::cpu
