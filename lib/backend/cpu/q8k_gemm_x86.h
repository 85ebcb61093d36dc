// The x86 body of the K-quant q8 GEMM (q8k_gemm.h), shared by its AVX2 and AVX-512 VNNI builds:
// each includer defines LMSCOPE_Q8KG_TARGET (the function attribute for its instructions) and
// LMSCOPE_Q8KG_VNNI (0: vpmaddwd + vpaddd; 1: vpdpwssd on 256-bit registers) first.
// Everything here has internal linkage. The formulas: kernels/q8_k_activations.cuh.
#pragma once
#if !defined(LMSCOPE_Q8KG_TARGET) || !defined(LMSCOPE_Q8KG_VNNI)
#error "define LMSCOPE_Q8KG_TARGET and LMSCOPE_Q8KG_VNNI before including q8k_gemm_x86.h"
#endif
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/avx2.h"   // load_f16c
#include "backend/cpu/q8k_gemm.h"
#include "kernels/q8_k_activations.cuh"

namespace lmscope::cpu {
namespace {

static_assert(kQ8KGemmRows == 8, "a group is the eight 32-bit slots of a 256-bit register");

// One weight super-block decoded for the GEMM (per output and super-block; 328 bytes).
struct DecodedBlock {
  // Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 (before its -32), in the panel's slot order
  // (q8k_gemm.h): slot 16u + 2k + part holds elements 4k + 2 part, +1 of sub-blocks 2u and 2u + 1.
  uint8_t codes[256];
  // The int16 pair (scale of sub-block 2u, of 2u + 1) for lanes 4h .. 4h + 3: [2u + h].
  // Q4_K/Q5_K: sc_v; Q6_K: sc of the group of 16 that lanes 4h .. 4h + 3 fall in.
  int32_t scales[8];
  // Q4_K/Q5_K: [p] = the int16 pair (m_2p, m_2p+1), the mins of sub-blocks 2p and 2p+1 (p < 4);
  // Q6_K: [k] = (sc_2k, sc_2k+1), the scales lane k's offset of 32 takes off.
  int32_t mins[8];
  float d, dmin;   // f32(d_w), f32(dmin_w) (Q6_K: d only)
};

LMSCOPE_Q8KG_TARGET inline int32_t int16_pair(int lo, int hi) {
  return int32_t(uint32_t(uint16_t(int16_t(lo))) | (uint32_t(uint16_t(int16_t(hi))) << 16));
}
LMSCOPE_Q8KG_TARGET inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
LMSCOPE_Q8KG_TARGET inline void store256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

// A super-block's 256 codes from element order to the panel's slot order (q8k_gemm.h): per pair
// of sub-blocks (2u, 2u + 1), their 16 two-code units interleaved.
LMSCOPE_Q8KG_TARGET inline void to_slot_order(const uint8_t* elem, uint8_t* slots) {
  for (int u = 0; u < 4; ++u) {
    const __m256i a = load256(elem + 64 * u), b = load256(elem + 64 * u + 32);
    const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);   // in-lane halves
    store256(slots + 64 * u, _mm256_permute2x128_si256(lo, hi, 0x20));
    store256(slots + 64 * u + 32, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

// Super-block blk of ggml type T (12 Q4_K, 13 Q5_K, 14 Q6_K) -> out: the codes unpacked as
// q8k_matmul_x86.h's AVX2 path unpacks them, stored in the panel's slot order.
template <int T>
LMSCOPE_Q8KG_TARGET void decode_block(const uint8_t* blk, DecodedBlock& out) {
  if (T == 14) {
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
    alignas(32) uint8_t elem[256];   // the codes in element order
    for (int j = 0; j < 2; ++j) {
      const __m256i b1 = load256(blk + 64 * j), b2 = load256(blk + 64 * j + 32), h = load256(blk + 128 + 32 * j);
      uint8_t* c = elem + 128 * j;
      store256(c, _mm256_or_si256(_mm256_and_si256(b1, m15), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4)));
      store256(c + 32, _mm256_or_si256(_mm256_and_si256(b2, m15),
                                       _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(12)), 2)));
      store256(c + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m15),
                                       _mm256_and_si256(h, _mm256_set1_epi8(48))));
      store256(c + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m15),
                                       _mm256_srli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(char(0xC0))), 2)));
    }
    to_slot_order(elem, out.codes);
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);   // sub-block v: sc[2v], sc[2v + 1]
    for (int u = 0; u < 4; ++u)
      for (int h = 0; h < 2; ++h) out.scales[2 * u + h] = int16_pair(sc[4 * u + h], sc[4 * u + 2 + h]);
    for (int k = 0; k < 8; ++k) out.mins[k] = int16_pair(sc[2 * k], sc[2 * k + 1]);
    out.d = load_f16c(blk + 208);
    out.dmin = 0.0f;
    return;
  }
  constexpr bool Q5 = T == 13;
  const uint8_t* qs = blk + (Q5 ? 48 : 16);
  const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  const __m256i hbits = Q5 ? load256(blk + 16) : _mm256_setzero_si256();
  alignas(32) uint8_t elem[256];   // the codes in element order
  for (int j = 0; j < 4; ++j) {
    const __m256i bits = load256(qs + 32 * j);
    __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
    if (Q5) {   // bit 2j of qh[e] for sub-block 2j, 2j+1 for 2j+1
      const __m128i s0 = _mm_cvtsi32_si128(2 * j), s1 = _mm_cvtsi32_si128(2 * j + 1);
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s0), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s1), one), 4));
    }
    store256(elem + 64 * j, lo);
    store256(elem + 64 * j + 32, hi);
  }
  to_slot_order(elem, out.codes);
  int sc[8], m[8];
  q8k::k4_scales(blk, sc, m);
  for (int u = 0; u < 4; ++u) out.scales[2 * u] = out.scales[2 * u + 1] = int16_pair(sc[2 * u], sc[2 * u + 1]);
  for (int p = 0; p < 4; ++p) out.mins[p] = int16_pair(m[2 * p], m[2 * p + 1]);
  out.mins[4] = out.mins[5] = out.mins[6] = out.mins[7] = 0;
  out.d = load_f16c(blk);
  out.dmin = load_f16c(blk + 2);
}

// Where one output stands for a group of eight rows between runs of super-blocks: lane k's
// accumulator for the eight rows, Q4_K's four mins lanes, Q5_K's mins sum (floats, read and
// written unaligned: a vector of them need not be 32-byte aligned).
struct RowsState {
  float acc[8][8], am[4][8], summs[8];
};
// acc = fma(a, b, acc) on eight rows' floats in memory.
LMSCOPE_Q8KG_TARGET inline void fma_into(float* acc, __m256 a, __m256 b) {
  _mm256_storeu_ps(acc, _mm256_fmadd_ps(a, b, _mm256_loadu_ps(acc)));
}

// A group of the panel from its super-block 0.
struct Group {
  const int8_t* q;
  const float* d;
  const int16_t *pair_sums, *group_sums;
};

// Super-blocks [b0, b1) of P outputs (their decoded blocks w[p]) into st[p], for the group's
// eight rows. Two outputs share each load of the rows' codes, and each scale pair stays in a
// register for the four lanes of a half. Per 64 products: two vpmaddubsw, one vpaddw, one
// vpmaddwd, one vpaddd and two broadcasts (measured, the 1.5B-shaped file's K-quant matrices at
// 128 rows on the AVX2 EPYC: 57 GMAC/s per CPU second, against 50 with a vpmaddwd per vpmaddubsw).
template <int T, int P>
LMSCOPE_Q8KG_TARGET inline void run_blocks(const DecodedBlock* const* w, const Group& g, int64_t b0, int64_t b1,
                                           RowsState* const* st) {
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* a = g.q + b * 2048;
    const __m256 d_a = _mm256_loadu_ps(g.d + b * 8);
    for (int h = 0; h < 2; ++h) {   // lanes 4h .. 4h + 3
      __m256i isum[P][4];
      for (int p = 0; p < P; ++p)
        for (int kk = 0; kk < 4; ++kk) isum[p][kk] = _mm256_setzero_si256();
      for (int u = 0; u < 4; ++u) {   // sub-blocks 2u and 2u + 1
        __m256i sc[P];
        for (int p = 0; p < P; ++p) sc[p] = _mm256_set1_epi32(w[p][b].scales[2 * u + h]);
        for (int kk = 0; kk < 4; ++kk) {
          const int slot = 16 * u + 2 * (4 * h + kk);   // lane k = 4h + kk: slots slot, slot + 1
          __m256i rows0 = load256(a + slot * 32), rows1 = load256(a + slot * 32 + 32);
          // One load for the P multiplies: without this the compiler folds the load into each
          // vpmaddubsw, and the loop then waits on loads, not on its multiplies.
          __asm__("" : "+x"(rows0), "+x"(rows1));
          for (int p = 0; p < P; ++p) {
            int32_t w0, w1;
            std::memcpy(&w0, w[p][b].codes + slot * 4, 4);
            std::memcpy(&w1, w[p][b].codes + slot * 4 + 4, 4);
            // Per row, int16 0: quad (2u, k)'s four products, int16 1: quad (2u + 1, k)'s
            // (|sum| <= 4 * 63 * 127 = 32004 < 2^15), so one vpmaddwd scales both quads.
            const __m256i quads = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_set1_epi32(w0), rows0),
                                                   _mm256_maddubs_epi16(_mm256_set1_epi32(w1), rows1));
#if LMSCOPE_Q8KG_VNNI
            isum[p][kk] = _mm256_dpwssd_epi32(isum[p][kk], sc[p], quads);
#else
            isum[p][kk] = _mm256_add_epi32(isum[p][kk], _mm256_madd_epi16(sc[p], quads));
#endif
          }
        }
      }
      for (int p = 0; p < P; ++p) {
        const DecodedBlock& wb = w[p][b];
        const __m256 dd = _mm256_mul_ps(d_a, _mm256_set1_ps(wb.d));   // d_a * f32(d_w), per row
        for (int kk = 0; kk < 4; ++kk) {
          const int k = 4 * h + kk;
          __m256i lane = isum[p][kk];
          if (T == 14) {   // Q6_K's offset: 32 (sc_2k bsums_2k + sc_2k+1 bsums_2k+1) per row
            const __m256i off =
                _mm256_madd_epi16(_mm256_set1_epi32(wb.mins[k]), load256(g.group_sums + b * 128 + k * 16));
            lane = _mm256_sub_epi32(lane, _mm256_slli_epi32(off, 5));
          }
          fma_into(st[p]->acc[k], dd, _mm256_cvtepi32_ps(lane));
        }
      }
    }
    if (T == 14) continue;
    // dmin = -d_a * f32(dmin_w), per row; lane q of the mins: m_2q S_2q + m_2q+1 S_2q+1
    const __m256 minus_d_a = _mm256_xor_ps(d_a, _mm256_set1_ps(-0.0f));
    for (int p = 0; p < P; ++p) {
      const DecodedBlock& wb = w[p][b];
      const __m256 dmin = _mm256_mul_ps(minus_d_a, _mm256_set1_ps(wb.dmin));
      __m256i prod[4];
      for (int q = 0; q < 4; ++q)
        prod[q] = _mm256_madd_epi16(_mm256_set1_epi32(wb.mins[q]), load256(g.pair_sums + b * 64 + q * 16));
      if (T == 12) {
        for (int q = 0; q < 4; ++q) fma_into(st[p]->am[q], dmin, _mm256_cvtepi32_ps(prod[q]));
      } else {
        const __m256i s = _mm256_add_epi32(_mm256_add_epi32(prod[0], prod[2]), _mm256_add_epi32(prod[1], prod[3]));
        fma_into(st[p]->summs, dmin, _mm256_cvtepi32_ps(s));
      }
    }
  }
}

// The eight rows' outputs: hsum_float_8's order between registers,
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), then the mins as the one-row kernel adds them.
template <int T>
LMSCOPE_Q8KG_TARGET inline __m256 finish(const RowsState& st) {
  __m256 acc[8], am[4];
  for (int k = 0; k < 8; ++k) acc[k] = _mm256_loadu_ps(st.acc[k]);
  for (int q = 0; q < 4; ++q) am[q] = _mm256_loadu_ps(st.am[q]);
  const __m256 l04 = _mm256_add_ps(acc[0], acc[4]), l15 = _mm256_add_ps(acc[1], acc[5]);
  const __m256 l26 = _mm256_add_ps(acc[2], acc[6]), l37 = _mm256_add_ps(acc[3], acc[7]);
  const __m256 y = _mm256_add_ps(_mm256_add_ps(l04, l26), _mm256_add_ps(l15, l37));
  if (T == 12) return _mm256_add_ps(y, _mm256_add_ps(_mm256_add_ps(am[0], am[2]), _mm256_add_ps(am[1], am[3])));
  if (T == 13) return _mm256_add_ps(y, _mm256_loadu_ps(st.summs));
  return y;
}

// Decoded super-blocks a thread keeps for a chunk of outputs (they stay in L2 while every group
// reads them), and the super-blocks a group runs through every output of the chunk before the
// next ones (their 2 x 2 KB of activation codes stay in L1).
constexpr int64_t kDecodedBytes = 192 * 1024;
constexpr int64_t kMaxChunk = 32;
constexpr int64_t kBlocksAtOnce = 2;

// A thread's decoded chunk and its outputs' states, kept for the next call (one per thread for
// every block type).
struct ThreadScratch {
  std::vector<DecodedBlock> decoded;
  std::vector<RowsState> states;
};
inline ThreadScratch& thread_scratch() {
  thread_local ThreadScratch scratch;
  return scratch;
}

// Outputs [o0, o1) of every row of the packed x.
template <int T>
LMSCOPE_Q8KG_TARGET void gemm_outputs(float* out, const Q8KGemmPanel& panel, int64_t N, const QuantBlocks& W,
                                      const float* bias, int64_t o0, int64_t o1) {
  const int64_t nb = panel.blocks, O = W.rows, row_bytes = int64_t(W.row_bytes());
  constexpr int64_t block_bytes = T == 12 ? 144 : T == 13 ? 176 : 210;
  const int64_t chunk = std::clamp<int64_t>(kDecodedBytes / (nb * int64_t(sizeof(DecodedBlock))), 1, kMaxChunk);
  std::vector<DecodedBlock>& decoded = thread_scratch().decoded;
  std::vector<RowsState>& states = thread_scratch().states;
  decoded.resize(size_t(chunk * nb));
  states.resize(size_t(chunk));
  for (int64_t c0 = o0; c0 < o1; c0 += chunk) {
    const int64_t c1 = std::min(o1, c0 + chunk);
    for (int64_t o = c0; o < c1; ++o)
      for (int64_t b = 0; b < nb; ++b)
        decode_block<T>(W.data + o * row_bytes + b * block_bytes, decoded[size_t((o - c0) * nb + b)]);
    for (int64_t gi = 0; gi < panel.groups; ++gi) {
      const Group g{panel.q.data() + gi * nb * 2048, panel.d.data() + gi * nb * 8, panel.pair_sums.data() + gi * nb * 64,
                    panel.group_sums.data() + gi * nb * 128};
      // memset: std::fill with a RowsState{} compiles to rep movsq, 6% of the GEMM's time
      std::memset(states.data(), 0, size_t(c1 - c0) * sizeof(RowsState));
      for (int64_t b0 = 0; b0 < nb; b0 += kBlocksAtOnce) {
        const int64_t b1 = std::min(nb, b0 + kBlocksAtOnce);
        int64_t o = c0;
        for (; o + 1 < c1; o += 2) {   // two outputs at a time, then the odd one
          const DecodedBlock* w[2] = {decoded.data() + (o - c0) * nb, decoded.data() + (o + 1 - c0) * nb};
          RowsState* st[2] = {&states[size_t(o - c0)], &states[size_t(o + 1 - c0)]};
          run_blocks<T, 2>(w, g, b0, b1, st);
        }
        if (o < c1) {
          const DecodedBlock* w[1] = {decoded.data() + (o - c0) * nb};
          RowsState* st[1] = {&states[size_t(o - c0)]};
          run_blocks<T, 1>(w, g, b0, b1, st);
        }
      }
      const int64_t n0 = gi * kQ8KGemmRows;
      const int rows = int(std::min<int64_t>(kQ8KGemmRows, N - n0));
      for (int64_t o = c0; o < c1; ++o) {
        // + 0.0f without a bias, as the one-row kernel adds it (it turns -0 into +0)
        const __m256 y = _mm256_add_ps(finish<T>(states[size_t(o - c0)]), _mm256_set1_ps(bias ? bias[o] : 0.0f));
        alignas(32) float v[kQ8KGemmRows];
        _mm256_store_ps(v, y);
        for (int r = 0; r < rows; ++r) out[(n0 + r) * O + o] = v[r];
      }
    }
  }
}

// One thread's share of a call (the Q8KOutputs signature): x packed into this thread's own panel.
void x86_gemm_thread_outputs(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                             int64_t o1) {
  thread_local Q8KGemmPanel panel;
  q8k_gemm_pack(x, panel);
  switch (int(ggml_type_of(W.type))) {
    case 12: return gemm_outputs<12>(out, panel, x.rows, W, bias, o0, o1);
    case 13: return gemm_outputs<13>(out, panel, x.rows, W, bias, o0, o1);
    default: return gemm_outputs<14>(out, panel, x.rows, W, bias, o0, o1);
  }
}

}  // namespace
}  // namespace lmscope::cpu
