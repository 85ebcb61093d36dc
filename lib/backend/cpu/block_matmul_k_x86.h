// The x86 body of block_matmul for the K-quants (Q4_K, Q5_K, Q6_K: 256-weight super-blocks),
// shared by its AVX2 and AVX-512 builds: each includer defines LMSCOPE_X86_TARGET and
// LMSCOPE_X86_LANES (x86_lanes.h: 8 or 16 float lanes) first. Everything here has internal
// linkage, so the two builds never merge.
//
// Per super-block, its scales as floats first (d * sc and dmin * m, one product each, the
// values of kernels/quant_blocks.cuh), eight at a time in a vector (block_scales), each then
// broadcast by one permute (vlane); then per sub-block of 32 (Q6_K: of 16) and row:
//   s = sum q * x over the sub-block (lane-wise, the integer codes converted to float),
//   acc += (d * sc) * s            (even sub-blocks into one accumulator, odd into another,
//                                   so that consecutive FMAs do not wait on each other)
// and for Q4_K/Q5_K the mins apart: sum_j (dmin * m_j) * (sum of x over sub-block j), the
// sums of x formed once per call (k_block_sums), a super-block's eight in one vector FMA. The
// result is the sum over the row of dequantized weight times x, in another order than sgemm on
// the dequantized values: equal up to float32 rounding (the tests' tolerance).
#pragma once
#if !defined(LMSCOPE_X86_TARGET) || !defined(LMSCOPE_X86_LANES)
#error "define LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES before including block_matmul_k_x86.h"
#endif
#include <cstdint>
#include <vector>

#include "backend/cpu/avx2.h"   // hsum, load_f16c
#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_rows.h"
#include "backend/cpu/x86_lanes.h"   // vf, kLanes
#include "kernels/quant_blocks.cuh"

namespace lmscope::cpu {
namespace {

#if LMSCOPE_X86_LANES == 8
using vi = __m256i;
// Lane j of the 8 floats v, in every lane (one vpermps).
LMSCOPE_X86_TARGET inline vf vlane(__m256 v, int j) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(j)); }
// kLanes bytes at p, each widened to a 32-bit lane.
LMSCOPE_X86_TARGET inline vi widen(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// kLanes signed bytes at p, each widened to a 32-bit lane.
LMSCOPE_X86_TARGET inline vi widen_signed(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
LMSCOPE_X86_TARGET inline vi iset(int v) { return _mm256_set1_epi32(v); }
LMSCOPE_X86_TARGET inline vi iand(vi a, vi b) { return _mm256_and_si256(a, b); }
LMSCOPE_X86_TARGET inline vi ior(vi a, vi b) { return _mm256_or_si256(a, b); }
LMSCOPE_X86_TARGET inline vi ishr(vi a, int n) { return _mm256_srl_epi32(a, _mm_cvtsi32_si128(n)); }
LMSCOPE_X86_TARGET inline vi ishl4(vi a) { return _mm256_slli_epi32(a, 4); }
LMSCOPE_X86_TARGET inline vf tofloat(vi a) { return _mm256_cvtepi32_ps(a); }
#elif LMSCOPE_X86_LANES == 16
using vi = __m512i;
LMSCOPE_X86_TARGET inline vf vlane(__m256 v, int j) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(j), _mm512_castps256_ps512(v));
}
LMSCOPE_X86_TARGET inline vi widen(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
LMSCOPE_X86_TARGET inline vi widen_signed(const int8_t* p) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
LMSCOPE_X86_TARGET inline vi iset(int v) { return _mm512_set1_epi32(v); }
LMSCOPE_X86_TARGET inline vi iand(vi a, vi b) { return _mm512_and_si512(a, b); }
LMSCOPE_X86_TARGET inline vi ior(vi a, vi b) { return _mm512_or_si512(a, b); }
LMSCOPE_X86_TARGET inline vi ishr(vi a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
LMSCOPE_X86_TARGET inline vi ishl4(vi a) { return _mm512_slli_epi32(a, 4); }
LMSCOPE_X86_TARGET inline vf tofloat(vi a) { return _mm512_cvtepi32_ps(a); }
#else
#error "LMSCOPE_X86_LANES must be 8 or 16"
#endif

// s = sum over V vectors of q[v] * x[v * kLanes ...], lane-wise.
template <int V>
LMSCOPE_X86_TARGET inline vf dot(const vf* q, const float* x) {
  vf s = vmul(q[0], vload(x));
  for (int v = 1; v < V; ++v) s = vfma(q[v], vload(x + v * kLanes), s);
  return s;
}

// The 8 integers in the low bytes of `codes` (unsigned, or signed with Signed) times `scale`:
// each scale * float(code), the products quant::chunk_scales_k4 and dequant_q6_k form one by one.
template <bool Signed>
LMSCOPE_X86_TARGET inline __m256 block_scales(__m128i codes, float scale) {
  const __m256i i = Signed ? _mm256_cvtepi8_epi32(codes) : _mm256_cvtepu8_epi32(codes);
  return _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(i));
}
LMSCOPE_X86_TARGET inline __m128i load8(const uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }

// Q4_K / Q5_K super-block into the N rows' accumulators; mins[n] gathers sum_j dmin*m_j*xs_j.
template <BlockType T, int N>
LMSCOPE_X86_TARGET inline void k4_block(const uint8_t* blk, const float* xb, const float* xs, int64_t I, int64_t nb32,
                                      vf* acc0, vf* acc1, __m256* mins) {
  constexpr int V = 32 / kLanes;   // vectors per sub-block
  const __m128i sm = scales_mins_k4_x86(blk);   // the eight 6-bit scales, then the eight mins
  const __m256 dsc = block_scales<false>(sm, load_f16c(blk)),
               dmn = block_scales<false>(_mm_unpackhi_epi64(sm, sm), load_f16c(blk + 2));
  const uint8_t* qh = blk + 16;
  const uint8_t* qs = blk + (T == BlockType::Q5_K ? 48 : 16);
  const vi low4 = iset(0x0F), one = iset(1);
  for (int c = 0; c < 4; ++c) {   // sub-blocks 2c (low nibbles of qs[32c..]) and 2c+1 (high)
    vf lo[V], hi[V];
    for (int v = 0; v < V; ++v) {
      const vi bytes = widen(qs + 32 * c + v * kLanes);
      vi l = iand(bytes, low4), h = ishr(bytes, 4);
      if (T == BlockType::Q5_K) {   // the 5th bit: bit 2c of qh[e] for sub-block 2c, 2c+1 for 2c+1
        const vi bits = widen(qh + v * kLanes);
        l = ior(l, ishl4(iand(ishr(bits, 2 * c), one)));
        h = ior(h, ishl4(iand(ishr(bits, 2 * c + 1), one)));
      }
      lo[v] = tofloat(l);
      hi[v] = tofloat(h);
    }
    const vf dl = vlane(dsc, 2 * c), dh = vlane(dsc, 2 * c + 1);
    for (int n = 0; n < N; ++n) {
      const float* xn = xb + n * I + 64 * c;
      acc0[n] = vfma(dl, dot<V>(lo, xn), acc0[n]);
      acc1[n] = vfma(dh, dot<V>(hi, xn + 32), acc1[n]);
    }
  }
  for (int n = 0; n < N; ++n) mins[n] = _mm256_fmadd_ps(dmn, _mm256_loadu_ps(xs + n * nb32), mins[n]);
}

// Q6_K super-block: two halves of 128; in half h, element 32k + l takes its low 4 bits from
// ql[64h + 32(k&1) + l] (low nibble for k < 2, high for k >= 2) and its high 2 bits from bits
// 2k..2k+1 of qh[32h + l]; weight = (d * sc[e/16]) * (q - 32).
// A half's 128 codes are assembled 32 at a time in bytes (q6k_half_codes: 21 byte operations
// for 128 codes), then widened to 32-bit lanes and converted: the same integers q - 32 as one
// lane at a time, so the same floats.
LMSCOPE_X86_TARGET inline void q6k_half_codes(const uint8_t* blk, int half, int8_t* codes) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * half)),
                b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * half + 32)),
                h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * half));
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30), bias32 = _mm256_set1_epi8(32);
  // 16-bit shifts move bits across bytes; every mask keeps only bits that came from their own byte.
  const __m256i c[4] = {
      _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45)),
      _mm256_or_si256(_mm256_and_si256(b, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4), _mm256_and_si256(h, bits45)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low4), _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45))};
  for (int k = 0; k < 4; ++k)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 32 * k), _mm256_sub_epi8(c[k], bias32));
}

template <int N>
LMSCOPE_X86_TARGET inline void q6k_block(const uint8_t* blk, const float* xb, int64_t I, vf* acc0, vf* acc1) {
  constexpr int V = 16 / kLanes;   // vectors per 16 weights (one scale)
  const float d = load_f16c(blk + 208);
  // d * sc[g], g = 0..15
  const __m256 ds[2] = {block_scales<true>(load8(blk + 192), d), block_scales<true>(load8(blk + 200), d)};
  alignas(32) int8_t codes[128];   // one half: codes[32k + l] = q - 32 of its element 32k + l
  for (int half = 0; half < 2; ++half) {
    q6k_half_codes(blk, half, codes);
    for (int part = 0; part < 2; ++part) {   // elements 16 part .. 16 part + 15 of each group k
      vf q[4][V];
      for (int k = 0; k < 4; ++k)
        for (int v = 0; v < V; ++v) q[k][v] = tofloat(widen_signed(codes + 32 * k + 16 * part + v * kLanes));
      vf dk[4];
      for (int k = 0; k < 4; ++k) dk[k] = vlane(ds[half], 2 * k + part);
      for (int n = 0; n < N; ++n) {
        const float* xn = xb + n * I + 128 * half + 16 * part;
        acc0[n] = vfma(dk[0], dot<V>(q[0], xn), acc0[n]);
        acc1[n] = vfma(dk[1], dot<V>(q[1], xn + 32), acc1[n]);
        acc0[n] = vfma(dk[2], dot<V>(q[2], xn + 64), acc0[n]);
        acc1[n] = vfma(dk[3], dot<V>(q[3], xn + 96), acc1[n]);
      }
    }
  }
}

// Outputs [o0, o1) for N rows (a template: with N known the accumulators stay in registers).
template <BlockType T, int N>
LMSCOPE_X86_TARGET void k_rows(float* out, const float* x, const float* xs, const QuantBlocks& W, const float* bias,
                             int64_t o0, int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = W.row_blocks(), nb32 = I / 32;
  const size_t bb = W.block_bytes(), rb = W.row_bytes();
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * int64_t(rb);
    vf acc0[N], acc1[N];
    __m256 mins[N];   // Q4_K/Q5_K: sum over the row of dmin * m_j * (sum of x over sub-block j), lane-wise
    for (int n = 0; n < N; ++n) acc0[n] = acc1[n] = vzero(), mins[n] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead<int(lmscope::block_bytes(T))>(row + b * int64_t(bb));
      if (T == BlockType::Q6_K)
        q6k_block<N>(row + b * int64_t(bb), x + b * 256, I, acc0, acc1);
      else
        k4_block<T, N>(row + b * int64_t(bb), x + b * 256, xs + b * 8, I, nb32, acc0, acc1, mins);
    }
    for (int n = 0; n < N; ++n)
      out[n * O + o] = (vsum(vadd(acc0[n], acc1[n])) - hsum(mins[n])) + (bias ? bias[o] : 0.0f);
  }
}

// The sums of x over each block of 32, [N, I/32] (the mins' factor), into the calling thread's
// buffer; empty for Q6_K, which has no mins.
const float* k_block_sums(const float* x, int64_t N, int64_t I, BlockType type) {
  thread_local std::vector<float> sums;
  if (type == BlockType::Q6_K) return nullptr;
  sums.resize(size_t(N * (I / 32)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < I / 32; ++j) {
      float s = 0.0f;
      for (int e = 0; e < 32; ++e) s += x[n * I + 32 * j + e];
      sums[size_t(n * (I / 32) + j)] = s;
    }
  return sums.data();
}

void k_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N, int64_t o0,
               int64_t o1) {
  const float* xs = k_block_sums(x, N, W.cols, W.type);
  with_k_shape(W.type, N, [&](auto type, auto rows) {
    k_rows<decltype(type)::value, decltype(rows)::value>(out, x, xs, W, bias, o0, o1);
  });
}

}  // namespace
}  // namespace lmscope::cpu
