// The x86 body of q8k_matmul (q8k_matmul.h), shared by its AVX2 and AVX-512 builds: each
// includer defines LMSCOPE_Q8K_TARGET (the function attribute for its instructions) and
// LMSCOPE_Q8K_WIDE (0: 256-bit integer sums; 1: 512-bit) first. Everything here has internal
// linkage, so the two builds never merge.
//
// The numbers are llama.cpp's ggml_vec_dot_q4_K_q8_K / _q5_K_q8_K / _q6_K_q8_K (arch/x86/
// quants.c, __AVX2__), bit for bit: vpmaddubsw (unsigned weight codes times signed activation
// codes, pairs), vpmaddwd with the sub-block scales (quads, int32 lanes), one FMA per
// super-block into eight float lanes, the mins apart (kernels/q8_k_activations.cuh has the
// formulas). Only the eight int32 lanes of a super-block are converted to float, and integer
// sums do not depend on their order, so the wide build may add its products in other groupings:
// it puts two sub-blocks (Q4_K/Q5_K: the low- and high-nibble ones of 32 bytes; Q6_K: two
// groups of 32) in the halves of one 512-bit vector, multiplies the pair sums by the scales and
// adds them in one vpdpwssd (exact: the same integers as vpmaddwd + vpaddd), and adds the
// halves at the end of the super-block, which gives llama.cpp's eight lanes, then the same
// float operations. The scales
// are splat by vpshufb with indices from a table in memory, as llama.cpp's tables do.
#pragma once
#if !defined(LMSCOPE_Q8K_TARGET) || !defined(LMSCOPE_Q8K_WIDE)
#error "define LMSCOPE_Q8K_TARGET and LMSCOPE_Q8K_WIDE before including q8k_matmul_x86.h"
#endif
#include <cstdint>
#include <vector>

#include "backend/cpu/avx2.h"   // hsum (ggml's hsum_float_8 order), load_f16c, prefetch_ahead
#include "backend/cpu/q8k_matmul.h"
#include "kernels/q8_k_activations.cuh"

namespace lmscope::cpu {
namespace {

LMSCOPE_Q8K_TARGET inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// vpshufb indices that put, in every 16-bit lane of 128-bit lane L of the result, 16-bit
// element pick(L) of that 128-bit lane of the source (a table in memory: the indices are a
// memory operand, since constants in registers would be spilled or rebuilt in the unrolled loop).
template <int Bytes>
struct Splat {
  alignas(64) uint8_t idx[Bytes];
  constexpr Splat() : idx{} {}
  template <class Pick>
  constexpr explicit Splat(Pick pick) : idx{} {
    for (int b = 0; b < Bytes; ++b) idx[b] = uint8_t(2 * pick(b / 16) + (b & 1));
  }
};
// AVX2: element lo in the low 128 bits, hi in the high ones; [lo][hi].
struct Splats256 {
  Splat<32> s[8][8];
  constexpr Splats256() : s{} {
    for (int lo = 0; lo < 8; ++lo)
      for (int hi = 0; hi < 8; ++hi) s[lo][hi] = Splat<32>([lo, hi](int L) { return L == 0 ? lo : hi; });
  }
};
constexpr Splats256 kSplats256;
LMSCOPE_Q8K_TARGET inline __m256i splat16(__m256i v, int lo, int hi) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kSplats256.s[lo][hi].idx)));
}

#if LMSCOPE_Q8K_WIDE
// AVX-512: Q4_K/Q5_K sub-block 2j's scale in the low 256 bits, 2j+1's in the high ones
// ([j]); Q6_K elements 4p .. 4p+3 in the four 128-bit lanes ([p]).
struct Splats512 {
  Splat<64> k4[4], q6[2];
  constexpr Splats512() : k4{}, q6{} {
    for (int j = 0; j < 4; ++j) k4[j] = Splat<64>([j](int L) { return 2 * j + L / 2; });
    for (int p = 0; p < 2; ++p) q6[p] = Splat<64>([p](int L) { return 4 * p + L; });
  }
};
constexpr Splats512 kSplats512;
LMSCOPE_Q8K_TARGET inline __m512i splat16_512(__m512i v, const Splat<64>& s) {
  return _mm512_shuffle_epi8(v, _mm512_load_si512(s.idx));
}
LMSCOPE_Q8K_TARGET inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
// 32 bytes at p in both halves.
LMSCOPE_Q8K_TARGET inline __m512i both_halves(const void* p) { return _mm512_broadcast_i64x4(load256(p)); }
// 16-bit counts a in the low 256 bits, b in the high ones (for the variable shifts).
LMSCOPE_Q8K_TARGET inline __m512i counts(int a, int b) {
  return _mm512_mask_mov_epi16(_mm512_set1_epi16(short(a)), __mmask32(0xFFFF0000u), _mm512_set1_epi16(short(b)));
}
// The two 256-bit halves added: llama.cpp's eight int32 lanes.
LMSCOPE_Q8K_TARGET inline __m256i fold(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}
#endif

// One weight row against R activation rows at once (prefill: R up to kQ8KRows): the weight
// side of a super-block (its scales, the codes unpacked from their nibbles and bits) is formed
// once and used by every row; each row's own operations are the R = 1 sequence, in the same
// order, so every output is bit for bit what the one-row dot product gives.
struct RowsK {
  const int8_t* q[kQ8KRows];
  const int16_t* bsums[kQ8KRows];
  const float* d[kQ8KRows];
  // Q4_K/Q5_K: each sub-block's sum of 32 codes, bsums[2k] + bsums[2k + 1] (8 a super-block),
  // formed once per slice: llama.cpp adds the pairs with a vphaddw per super-block and weight
  // row; the same int16 sums, once for all of a slice's rows.
  const int16_t* pair_sums[kQ8KRows];
};

// x's pair_sums for `rows` rows of nb super-blocks, into the calling thread's buffer.
void form_pair_sums(RowsK& x, int rows, int64_t nb) {
  thread_local std::vector<int16_t> sums;
  sums.resize(size_t(rows * nb * 8));
  for (int r = 0; r < rows; ++r) {
    int16_t* out = sums.data() + r * nb * 8;
    for (int64_t k = 0; k < nb * 8; ++k) out[k] = int16_t(x.bsums[r][2 * k] + x.bsums[r][2 * k + 1]);
    x.pair_sums[r] = out;
  }
}

// Super-block i's integer sums for Q4_K / Q5_K (scales: its eight 6-bit scales): lane k of
// sumi[r] = sum over the sub-blocks s of scale_s * (the products of s's elements 4k..4k+3).
template <bool Q5, int R>
LMSCOPE_Q8K_TARGET inline void k4_sums(const uint8_t* blk, __m128i scales, const RowsK& x, int64_t i,
                                       __m256i* sumi) {
  const uint8_t* qs = blk + (Q5 ? 48 : 16);
  const __m128i scales8x16 = _mm_cvtepu8_epi16(scales);
#if LMSCOPE_Q8K_WIDE
  // Sub-block 2j (the low nibbles of qs[32j..]) in the low half, 2j+1 (the high nibbles) in the high half.
  const __m512i m4 = _mm512_set1_epi8(0xF), one = _mm512_set1_epi8(1), sc = _mm512_broadcast_i32x4(scales8x16);
  const __m512i hbits = Q5 ? both_halves(blk + 16) : _mm512_setzero_si512();
  __m512i wide[R];
  for (int r = 0; r < R; ++r) wide[r] = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) {
    const __m512i bits = both_halves(qs + 32 * j);
    __m512i c = _mm512_and_si512(_mm512_mask_srli_epi16(bits, __mmask32(0xFFFF0000u), bits, 4), m4);
    if (Q5)   // bit 2j of qh[e] for sub-block 2j, 2j+1 for 2j+1 (per byte: no bit crosses)
      c = _mm512_or_si512(c, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hbits, counts(2 * j, 2 * j + 1)), one), 4));
    const __m512i s = splat16_512(sc, kSplats512.k4[j]);
    for (int r = 0; r < R; ++r)
      wide[r] = _mm512_dpwssd_epi32(wide[r], s, _mm512_maddubs_epi16(c, load512(x.q[r] + i * 256 + 64 * j)));
  }
  for (int r = 0; r < R; ++r) sumi[r] = fold(wide[r]);
#else
  const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1), sc = _mm256_broadcastsi128_si256(scales8x16);
  const __m256i hbits = Q5 ? load256(blk + 16) : _mm256_setzero_si256();
  for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
  for (int j = 0; j < 4; ++j) {
    const __m256i bits = load256(qs + 32 * j);
    __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
    if (Q5) {   // bit 2j of qh[e] for sub-block 2j, 2j+1 for 2j+1 (per byte: no bit crosses)
      const __m128i s0 = _mm_cvtsi32_si128(2 * j), s1 = _mm_cvtsi32_si128(2 * j + 1);
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s0), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s1), one), 4));
    }
    const __m256i sl = splat16(sc, 2 * j, 2 * j), sh = splat16(sc, 2 * j + 1, 2 * j + 1);
    for (int r = 0; r < R; ++r) {
      const int8_t* a = x.q[r] + i * 256 + 64 * j;
      const __m256i pl = _mm256_madd_epi16(sl, _mm256_maddubs_epi16(lo, load256(a)));
      const __m256i ph = _mm256_madd_epi16(sh, _mm256_maddubs_epi16(hi, load256(a + 32)));
      sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(pl, ph));
    }
  }
#endif
}

// Q4_K (Q5 false) or Q5_K (Q5 true).
template <bool Q5, int R>
LMSCOPE_Q8K_TARGET __attribute__((always_inline)) inline void dot_k4(const uint8_t* w, int64_t nb, const RowsK& x,
                                                                    float* out) {
  constexpr int64_t bytes = Q5 ? 176 : 144;
  __m256 acc[R];
  __m128 acc_m[R];
  float summs[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), acc_m[r] = _mm_setzero_ps(), summs[r] = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = w + i * bytes;
    prefetch_ahead<bytes>(blk);
    const __m128 dmins = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk)));   // d, dmin
    const float wd = _mm_cvtss_f32(dmins), wmin = _mm_cvtss_f32(_mm_movehdup_ps(dmins));
    const __m128i sm = scales_mins_k4_x86(blk);   // the eight 6-bit scales, then the eight mins
    const __m128i mins16 = _mm_unpackhi_epi8(sm, _mm_setzero_si128());
    for (int r = 0; r < R; ++r) {
      const float dmin = -x.d[r][i] * wmin;
      const __m128i q8s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.pair_sums[r] + i * 8));
      const __m128i prod = _mm_madd_epi16(mins16, q8s);
      if (Q5) {
        __m128i h = _mm_add_epi32(prod, _mm_unpackhi_epi64(prod, prod));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
        summs[r] = q8::fused(dmin, float(_mm_cvtsi128_si32(h)), summs[r]);
      } else {
        acc_m[r] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m[r]);
      }
    }
    __m256i sumi[R];
    k4_sums<Q5, R>(blk, sm, x, i, sumi);
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x.d[r][i] * wd), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    if (Q5) {
      out[r] = hsum(acc[r]) + summs[r];
      continue;
    }
    __m128 m = _mm_add_ps(acc_m[r], _mm_movehl_ps(acc_m[r], acc_m[r]));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    out[r] = hsum(acc[r]) + _mm_cvtss_f32(m);
  }
}

// Super-block i's integer sums for Q6_K (codes 0..63, the offset of 32 taken off by the caller):
// lane k of sumi[r] = sum over the groups g of 16 of sc[g] * (the products of g's elements at
// 4k..4k+3 of its 32-byte vector).
// scales16: the 16 scales as 16-bit integers.
template <int R>
LMSCOPE_Q8K_TARGET inline void q6k_sums(const uint8_t* blk, __m256i scales16, const RowsK& x, int64_t i,
                                        __m256i* sumi) {
#if LMSCOPE_Q8K_WIDE
  // Per half j: codes of groups 0 and 1 in one vector (ql[64j..64j+63]'s low nibbles), 2 and 3
  // in another (their high nibbles); the two high bits from qh[32j..] in both halves, shifted
  // into bits 4-5 by a count per half.
  const __m512i m15 = _mm512_set1_epi8(15), m48 = _mm512_set1_epi8(48);
  __m512i wide[R];
  for (int r = 0; r < R; ++r) wide[r] = _mm512_setzero_si512();
  for (int j = 0; j < 2; ++j) {
    const __m512i b = load512(blk + 64 * j), h = both_halves(blk + 128 + 32 * j);
    const __m512i sc16 = _mm512_castsi256_si512(scales16);   // half j's eight scales in every 128-bit lane
    // The lane pattern is an immediate: clang wants a constant expression, not j's value.
    const __m512i sc8 = j == 0 ? _mm512_shuffle_i32x4(sc16, sc16, 0x00) : _mm512_shuffle_i32x4(sc16, sc16, 0x55);
    const __m512i c01 = _mm512_or_si512(_mm512_and_si512(b, m15), _mm512_and_si512(_mm512_sllv_epi16(h, counts(4, 2)), m48));
    const __m512i c23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), m15),
                                        _mm512_and_si512(_mm512_srlv_epi16(h, counts(0, 2)), m48));
    const __m512i s01 = splat16_512(sc8, kSplats512.q6[0]), s23 = splat16_512(sc8, kSplats512.q6[1]);
    for (int r = 0; r < R; ++r) {
      const int8_t* a = x.q[r] + i * 256 + 128 * j;
      wide[r] = _mm512_dpwssd_epi32(wide[r], s01, _mm512_maddubs_epi16(c01, load512(a)));
      wide[r] = _mm512_dpwssd_epi32(wide[r], s23, _mm512_maddubs_epi16(c23, load512(a + 64)));
    }
  }
  for (int r = 0; r < R; ++r) sumi[r] = fold(wide[r]);
#else
  const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
  // Each half's eight scales as 16-bit integers in both 128-bit lanes, for splat16.
  const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales16, scales16, 0x00),
                                  _mm256_permute2x128_si256(scales16, scales16, 0x11)};
  for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
  for (int j = 0; j < 2; ++j) {
    const __m256i b1 = load256(blk + 64 * j), b2 = load256(blk + 64 * j + 32), h = load256(blk + 128 + 32 * j);
    __m256i codes[4];
    codes[0] = _mm256_or_si256(_mm256_and_si256(b1, m15), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4));
    codes[1] = _mm256_or_si256(_mm256_and_si256(b2, m15), _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(12)), 2));
    codes[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m15), _mm256_and_si256(h, _mm256_set1_epi8(48)));
    codes[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m15),
                               _mm256_srli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(char(0xC0))), 2));
    for (int k = 0; k < 4; ++k) {
      // the scales sc[g], g = 8j + 2k, of elements 0-15 and sc[g + 1] of 16-31 of this group of 32
      const __m256i s = splat16(half_scales[j], 2 * k, 2 * k + 1);   // sc[g] | sc[g + 1]
      for (int r = 0; r < R; ++r)
        sumi[r] = _mm256_add_epi32(
            sumi[r], _mm256_madd_epi16(s, _mm256_maddubs_epi16(codes[k], load256(x.q[r] + i * 256 + 128 * j + 32 * k))));
    }
  }
#endif
}

template <int R>
LMSCOPE_Q8K_TARGET __attribute__((always_inline)) inline void dot_q6k(const uint8_t* w, int64_t nb, const RowsK& x,
                                                                     float* out) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = w + i * 210;
    prefetch_ahead<210>(blk);
    const float wd = load_f16c(blk + 208);
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192)));
    __m256i sumi[R];
    q6k_sums<R>(blk, scales16, x, i, sumi);
    for (int r = 0; r < R; ++r) {
      const __m256i q8sclsub = _mm256_slli_epi32(_mm256_madd_epi16(load256(x.bsums[r] + i * 16), scales16), 5);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(x.d[r][i] * wd), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[r], q8sclsub)),
                               acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

template <int R>
LMSCOPE_Q8K_TARGET void dot_rows(int ggml_type, const uint8_t* w, int64_t nb, const RowsK& x, float* out) {
  if (ggml_type == 12) return dot_k4<false, R>(w, nb, x, out);
  if (ggml_type == 13) return dot_k4<true, R>(w, nb, x, out);
  return dot_q6k<R>(w, nb, x, out);
}

// Outputs [o0, o1) of the R rows: out[r * O + o] = row o of W . row r of x (+ bias[o]). The
// type is dispatched once per slice and its dot product inlined into the loop over outputs:
// a decode row of 1536 inputs is only six super-blocks, and a call per output would reload
// the constants and wait for the last sums at each return (a build that calls: `perf` puts
// 8.5% of q8 decode's samples on the instructions after the calls).
template <int R, class Dot>
LMSCOPE_Q8K_TARGET __attribute__((always_inline)) inline void outputs_of(const Q8KSlice& s, const RowsK& x,
                                                                        Dot dot) {
  for (int64_t o = s.o0; o < s.o1; ++o) {
    float got[R];
    dot(s.w + o * s.row_bytes, s.nb, x, got);
    for (int r = 0; r < R; ++r) s.out[r * s.O + o] = got[r] + (s.bias ? s.bias[o] : 0.0f);
  }
}
template <int R>
LMSCOPE_Q8K_TARGET void outputs_rows(const Q8KSlice& s, const RowsK& x) {
  if (s.ggml_type == 12) return outputs_of<R>(s, x, dot_k4<false, R>);
  if (s.ggml_type == 13) return outputs_of<R>(s, x, dot_k4<true, R>);
  return outputs_of<R>(s, x, dot_q6k<R>);
}

// One output of one row (Q8KDot).
float x86_dot(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums, const float* d) {
  RowsK x{{q}, {bsums}, {d}, {}};
  if (ggml_type != 14) form_pair_sums(x, 1, nb);
  float out;
  dot_rows<1>(ggml_type, w, nb, x, &out);
  return out;
}

// A slice for up to kQ8KRows rows (Q8KSliceRows).
void x86_slice(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
               int rows) {
  RowsK x{};
  for (int r = 0; r < rows; ++r) x.q[r] = q[r], x.bsums[r] = bsums[r], x.d[r] = d[r];
  if (s.ggml_type != 14) form_pair_sums(x, rows, s.nb);
  static_assert(kQ8KRows == 8, "outputs_rows instances 1..8");
  switch (rows) {
    case 1: return outputs_rows<1>(s, x);
    case 2: return outputs_rows<2>(s, x);
    case 3: return outputs_rows<3>(s, x);
    case 4: return outputs_rows<4>(s, x);
    case 5: return outputs_rows<5>(s, x);
    case 6: return outputs_rows<6>(s, x);
    case 7: return outputs_rows<7>(s, x);
    default: return outputs_rows<8>(s, x);
  }
}

}  // namespace
}  // namespace lmscope::cpu
