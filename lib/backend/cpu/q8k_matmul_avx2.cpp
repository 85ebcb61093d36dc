// q8k_matmul's AVX2 dot products (q8k_matmul.h): llama.cpp's own instruction sequence for
// ggml_vec_dot_q4_K_q8_K / _q5_K_q8_K / _q6_K_q8_K (arch/x86/quants.c, __AVX2__), so that every
// lane's integer sum and every float operation is its: vpmaddubsw (unsigned weight codes times
// signed activation codes, pairs), vpmaddwd with the sub-block scales (quads, int32 lanes),
// one FMA per super-block into eight float lanes, the mins apart (kernels/q8_k_activations.cuh
// has the formulas). The scales are splat by vpshufb with indices from a table, as llama.cpp's
// tables do. Compiled for any x86-64 with __attribute__((target)): the caller checks the
// processor first.
#include "backend/cpu/q8k_matmul.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "backend/cpu/avx2.h"   // immintrin.h, hsum (ggml's hsum_float_8 order), cpu_has_avx2_fma_f16c
#include "kernels/q8_k_activations.cuh"
#define LMSCOPE_Q8K_TARGET __attribute__((target("avx2,fma,f16c")))
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
namespace {

LMSCOPE_Q8K_TARGET inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16-bit element `lo` of each 128-bit lane of v in every 16-bit lane of the low half, element
// `hi` in the high half: one vpshufb with its indices from a table in memory, as llama.cpp's
// get_scale_shuffle tables do (a memory operand: constants in registers would be spilled or
// rebuilt in the unrolled loop).
struct ScaleShuffles {
  alignas(32) uint8_t idx[8][8][32];   // [lo][hi]
  constexpr ScaleShuffles() : idx{} {
    for (int lo = 0; lo < 8; ++lo)
      for (int hi = 0; hi < 8; ++hi)
        for (int b = 0; b < 32; ++b) {
          const int e = b < 16 ? lo : hi;
          idx[lo][hi][b] = uint8_t(2 * e + (b & 1));
        }
  }
};
constexpr ScaleShuffles kScaleShuffles;
LMSCOPE_Q8K_TARGET inline __m256i splat16(__m256i v, int lo, int hi) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kScaleShuffles.idx[lo][hi])));
}

// One weight row against R activation rows at once (prefill: R up to kQ8KRows): the weight
// side of a super-block (its scales, the codes unpacked from their nibbles and bits) is formed
// once and used by every row; each row's own operations are the R = 1 sequence, in the same
// order, so every output is bit for bit what the one-row dot product gives.
struct RowsK {
  const int8_t* q[kQ8KRows];
  const int16_t* bsums[kQ8KRows];
  const float* d[kQ8KRows];
};

// Q4_K (Q5 false) or Q5_K (Q5 true).
template <bool Q5, int R>
LMSCOPE_Q8K_TARGET void dot_k4(const uint8_t* w, int64_t nb, const RowsK& x, float* out) {
  constexpr int64_t bytes = Q5 ? 176 : 144;
  const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  __m256 acc[R];
  __m128 acc_m[R];
  float summs[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), acc_m[r] = _mm_setzero_ps(), summs[r] = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = w + i * bytes;
    prefetch_ahead<bytes>(blk);
    const float wd = load_f16c(blk), wmin = load_f16c(blk + 2);
    uint8_t sm[16];   // the eight 6-bit scales, then the eight mins
    quant::scales_mins_k4(blk + 4, sm);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm))));
    for (int r = 0; r < R; ++r) {
      const float dmin = -x.d[r][i] * wmin;
      const __m256i q8sums = load256(x.bsums[r] + i * 16);
      const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(q8sums), _mm256_extracti128_si256(q8sums, 1));
      const __m128i prod = _mm_madd_epi16(mins16, q8s);
      if (Q5) {
        __m128i h = _mm_add_epi32(prod, _mm_unpackhi_epi64(prod, prod));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
        summs[r] = q8::fused(dmin, float(_mm_cvtsi128_si32(h)), summs[r]);
      } else {
        acc_m[r] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m[r]);
      }
    }
    const uint8_t* qs = blk + (Q5 ? 48 : 16);
    const __m256i hbits = Q5 ? load256(blk + 16) : _mm256_setzero_si256();
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(qs + 32 * j);
      __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      if (Q5) {   // bit 2j of qh[e] for sub-block 2j, 2j+1 for 2j+1 (per byte: no bit crosses)
        const __m128i s0 = _mm_cvtsi32_si128(2 * j), s1 = _mm_cvtsi32_si128(2 * j + 1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s0), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits, s1), one), 4));
      }
      const __m256i sl = splat16(scales16, 2 * j, 2 * j), sh = splat16(scales16, 2 * j + 1, 2 * j + 1);
      for (int r = 0; r < R; ++r) {
        const int8_t* a = x.q[r] + i * 256 + 64 * j;
        const __m256i pl = _mm256_madd_epi16(sl, _mm256_maddubs_epi16(lo, load256(a)));
        const __m256i ph = _mm256_madd_epi16(sh, _mm256_maddubs_epi16(hi, load256(a + 32)));
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(pl, ph));
      }
    }
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

template <int R>
LMSCOPE_Q8K_TARGET void dot_q6k(const uint8_t* w, int64_t nb, const RowsK& x, float* out) {
  const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = w + i * 210;
    prefetch_ahead<210>(blk);
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const float wd = load_f16c(blk + 208);
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    // Each half's eight scales as 16-bit integers in both 128-bit lanes, for splat16.
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales16, scales16, 0x00),
                                    _mm256_permute2x128_si256(scales16, scales16, 0x11)};
    __m256i sumi[R];
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

// Outputs [o0, o1) of the R rows: out[r * O + o] = row o of W . row r of x (+ bias[o]).
template <int R>
LMSCOPE_Q8K_TARGET void outputs_rows(const Q8KSlice& s, const RowsK& x) {
  for (int64_t o = s.o0; o < s.o1; ++o) {
    float got[R];
    dot_rows<R>(s.ggml_type, s.w + o * s.row_bytes, s.nb, x, got);
    for (int r = 0; r < R; ++r) s.out[r * s.O + o] = got[r] + (s.bias ? s.bias[o] : 0.0f);
  }
}

}  // namespace

float q8k_dot_avx2(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums, const float* d) {
  const RowsK x{{q}, {bsums}, {d}};
  float out;
  dot_rows<1>(ggml_type, w, nb, x, &out);
  return out;
}

void q8k_slice_avx2(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                    int rows) {
  RowsK x{};
  for (int r = 0; r < rows; ++r) x.q[r] = q[r], x.bsums[r] = bsums[r], x.d[r] = d[r];
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
bool q8k_avx2_available() { return cpu_has_avx2_fma_f16c(); }
#else
float q8k_dot_avx2(int, const uint8_t*, int64_t, const int8_t*, const int16_t*, const float*) {
  throw std::logic_error("q8k_dot_avx2: not an x86-64 build");
}
void q8k_slice_avx2(const Q8KSlice&, const int8_t* const*, const int16_t* const*, const float* const*, int) {
  throw std::logic_error("q8k_slice_avx2: not an x86-64 build");
}
bool q8k_avx2_available() { return false; }
#endif

}  // namespace lmscope::cpu
