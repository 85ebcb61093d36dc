// block_matmul.h's AVX2 build (block_matmul.cpp has the portable reference, block_matmul_avx512.cpp
// the AVX-512 one; kernel_table.h chooses). Compiled for any x86-64 with
// __attribute__((target)): the caller checks the processor first.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_rows.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "kernels/quant_blocks.cuh"   // kIQ4NLValues

#include "backend/cpu/avx2.h"

namespace lmscope::cpu {

#if defined(LMSCOPE_AVX2)
// AVX2 + FMA + F16C (vcvtph2ps for the scales). Every processor with AVX2 has F16C (Intel's
// since Ivy Bridge, a generation before AVX2; AMD's since Piledriver); block_matmul_simd_available
// checks all three all the same.
#define LMSCOPE_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
namespace {

// The f16 at p (little-endian, unaligned) in all 8 lanes: the hardware conversion, exact like
// quant::load_f16 (~10 scalar instructions and a branch each).
LMSCOPE_AVX2_F16C inline __m256 splat_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm256_cvtph_ps(_mm_set1_epi16(short(h)));
}

// A Q5_0/Q5_1 block's fifth bits as the dwords to add to its nibbles: entry v, lane l is `set`
// where bit l of the byte v is 1 and `clear` where it is 0 (Q5_0: 0 and -16, its codes' zero
// folded in; Q5_1: 16 and 0). 256 entries of 8 dwords, 8 KB, which stay in the L1 cache: a
// vector of 8 elements' fifth bits is then one load (indexed by a byte of qh) added to the
// nibbles, where shifting each lane's bit into place took three or four vector instructions.
// With the prefetch choice below, a pass of exact mode's kernels over Qwen2.5-Coder-0.5B's
// block matrices (133 of them Q5_0) took 45.4 ms against 55.9 (docs/benchmarks.md).
template <int Set, int Clear>
struct FifthBitTable {
  alignas(64) int32_t add[256][8];
  constexpr FifthBitTable() : add{} {
    for (int v = 0; v < 256; ++v)
      for (int l = 0; l < 8; ++l) add[v][l] = (v >> l) & 1 ? Set : Clear;
  }
};
constexpr bool has_fifth_bit(BlockType T) { return T == BlockType::Q5_0 || T == BlockType::Q5_1; }
template <BlockType T>
constexpr FifthBitTable<T == BlockType::Q5_0 ? 0 : 16, T == BlockType::Q5_0 ? -16 : 0> kFifthBits{};

// The 32 weights of a block as 4 vectors of 8 floats, without the scale: q (Q8_0: -128..127;
// Q4_0: -8..7; Q4_1: 0..15; Q5_0: -16..15; Q5_1: 0..31; IQ4_NL: the grid value of the nibble,
// -127..113; in every nibble type elements 0-15 from the low nibbles, 16-31 from the high ones).
// A block's bytes 0-7 widen to 8 dwords in one instruction (8-15 in another); the low nibbles
// (elements 0-7) are then a mask and the high ones (16-23) a shift, with no byte shuffles. Q5_0
// and Q5_1 are the same nibbles plus a fifth bit: element e's is bit e of the block's 32-bit qh,
// so vector k's eight come from byte k of qh through kFifthBits. IQ4_NL looks its 32 nibbles up
// in the grid with one byte shuffle per half, then widens the int8 values.
template <BlockType T>
LMSCOPE_AVX2_F16C inline void block_q(const uint8_t* blk, __m256 q[4]) {
  if (T == BlockType::IQ4_NL) {
    const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)), low4 = _mm_set1_epi8(0x0F);
    const __m128i v[2] = {_mm_shuffle_epi8(grid, _mm_and_si128(qs, low4)),                          // elements 0-15
                          _mm_shuffle_epi8(grid, _mm_and_si128(_mm_srli_epi16(qs, 4), low4))};   // 16-31
    for (int k = 0; k < 4; ++k)
      q[k] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(k % 2 ? _mm_srli_si128(v[k / 2], 8) : v[k / 2]));
  } else if (T == BlockType::Q8_0) {
    const uint8_t* qs = blk + 2;
    for (int k = 0; k < 4; ++k)
      q[k] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * k))));
  } else {   // Q4_0, Q4_1, Q5_0, Q5_1: d [, m] [, qh], then 16 bytes of nibbles
    constexpr bool fifth_bit = has_fifth_bit(T);
    constexpr int qh_at = T == BlockType::Q5_1 ? 4 : 2;
    constexpr int qs_at = 2 + (has_min(T) ? 2 : 0) + (fifth_bit ? 4 : 0);
    const uint8_t* qs = blk + qs_at;
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs))),
                  hi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8)));
    const __m256i mask = _mm256_set1_epi32(0x0F);
    const __m256i n[4] = {_mm256_and_si256(lo, mask), _mm256_and_si256(hi, mask), _mm256_srli_epi32(lo, 4),
                          _mm256_srli_epi32(hi, 4)};   // elements 0-7, 8-15, 16-23, 24-31
    for (int k = 0; k < 4; ++k) {
      const __m256i add = fifth_bit ? _mm256_load_si256(reinterpret_cast<const __m256i*>(kFifthBits<T>.add[blk[qh_at + k]]))
                                    : _mm256_set1_epi32(T == BlockType::Q4_0 ? -8 : 0);   // the codes' zero
      q[k] = _mm256_cvtepi32_ps(_mm256_add_epi32(n[k], add));
    }
  }
}

// One block into each of the N rows' accumulators: s = sum(q * x) over the 32 weights (4
// vector FMAs), acc_d += d * s and (Q4_1) acc_m += m * sx, still 8 lanes wide. sx is the block's
// x summed lane-wise, (x0 + x1) + (x2 + x3), which does not depend on the output: lane_sums
// forms it once per call instead of once per output (3 vector adds a block and row less).
template <BlockType T, int N>
LMSCOPE_AVX2_F16C inline void block_rows(const uint8_t* blk, const float* xb, const float* sxb, int64_t I,
                                         int64_t S, __m256* acc_d, __m256* acc_m) {
  constexpr bool Q4_1 = has_min(T);   // Q4_1, Q5_1: a min m
  __m256 q[4];
  block_q<T>(blk, q);
  const __m256 d = splat_f16(blk);
  const __m256 m = Q4_1 ? splat_f16(blk + 2) : _mm256_setzero_ps();
  for (int n = 0; n < N; ++n) {
    const float* xn = xb + n * I;
    __m256 s = _mm256_mul_ps(q[0], _mm256_loadu_ps(xn));
    s = _mm256_fmadd_ps(q[1], _mm256_loadu_ps(xn + 8), s);
    s = _mm256_fmadd_ps(q[2], _mm256_loadu_ps(xn + 16), s);
    s = _mm256_fmadd_ps(q[3], _mm256_loadu_ps(xn + 24), s);
    acc_d[n] = _mm256_fmadd_ps(d, s, acc_d[n]);
    if (Q4_1) acc_m[n] = _mm256_fmadd_ps(m, _mm256_loadu_ps(sxb + n * S), acc_m[n]);
  }
}

// Each row's blocks of x summed lane-wise, 8 floats a block: sums[n * S + 8 b + lane] =
// (x0 + x1) + (x2 + x3) of block b's four vectors, S = 8 * blocks.
LMSCOPE_AVX2_F16C inline const float* lane_sums(const float* x, int64_t N, int64_t I, int64_t nb, int64_t S) {
  thread_local std::vector<float> sums;
  if (sums.size() < size_t(N * S)) sums.resize(size_t(N * S));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + n * I + b * 32;
      const __m256 x01 = _mm256_add_ps(_mm256_loadu_ps(xb), _mm256_loadu_ps(xb + 8)),
                   x23 = _mm256_add_ps(_mm256_loadu_ps(xb + 16), _mm256_loadu_ps(xb + 24));
      _mm256_storeu_ps(sums.data() + n * S + b * 8, _mm256_add_ps(x01, x23));
    }
  return sums.data();
}

// Outputs [o0, o1) for N rows (a template: with N known the accumulators stay in registers, as
// far as the 16 hold them: one row of Q4_1, five of Q8_0; beyond, some live on the stack).
// Even blocks go to the first set of accumulators, odd ones to the second, so consecutive
// FMAs into a row do not wait on each other's latency; one horizontal sum per output. The
// arrangement does not depend on N: a row's result is the same in any batch. (A function of
// its own: a lambda would not inherit the target attribute.)
// The weight stream is prefetched (avx2.h) except for Q5_0/Q5_1, whose blocks take the most
// arithmetic: there the hardware prefetcher keeps up alone, and the prefetches' own
// instructions cost more than they save. Qwen2.5-Coder-0.5B Q4_K_M (133 Q5_0 matrices), exact
// decode, one thread, AVX2 VM, 3 rounds alternated: 21.5-21.6 tok/s so, 20.1-20.5 with every
// type prefetched, 20.7-20.9 with none (SmolLM2's Q4_1 loses 3-6% without its prefetch).
template <BlockType T, int N>
LMSCOPE_AVX2_F16C void avx2_rows(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t o0,
                                 int64_t o1) {
  constexpr bool Q4_1 = has_min(T);   // Q4_1, Q5_1: a min m
  const int64_t O = W.rows, I = W.cols, nb = W.row_blocks(), S = nb * 8;
  const size_t bb = W.block_bytes();
  const float* sx = Q4_1 ? lane_sums(x, N, I, nb, S) : nullptr;
  const auto sums_at = [sx](int64_t b) { return Q4_1 ? sx + b * 8 : nullptr; };   // the others have no mins
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    __m256 d0[N], d1[N], m0[N], m1[N];
    for (int n = 0; n < N; ++n) d0[n] = d1[n] = m0[n] = m1[n] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      if (!has_fifth_bit(T)) prefetch_ahead<2 * int(block_bytes(T))>(row + b * bb);
      block_rows<T, N>(row + b * bb, x + b * 32, sums_at(b), I, S, d0, m0);
      block_rows<T, N>(row + (b + 1) * bb, x + (b + 1) * 32, sums_at(b + 1), I, S, d1, m1);
    }
    if (b < nb) block_rows<T, N>(row + b * bb, x + b * 32, sums_at(b), I, S, d0, m0);
    for (int n = 0; n < N; ++n) {
      __m256 sum = _mm256_add_ps(d0[n], d1[n]);
      if (Q4_1) sum = _mm256_add_ps(sum, _mm256_add_ps(m0[n], m1[n]));
      out[n * O + o] = hsum(sum) + (bias ? bias[o] : 0.0f);
    }
  }
}

void avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N, int64_t o0,
                  int64_t o1) {
  if (is_k_quant(W.type)) return block_matmul_k_avx2_outputs(out, x, W, bias, N, o0, o1);
  if (W.type != BlockType::Q8_0 && W.type != BlockType::Q4_1)
    return block_matmul_fallback_avx2_outputs(out, x, W, bias, N, o0, o1);
  with_block_shape(W.type, N, [&](auto q4_1, auto rows) {
    constexpr BlockType T = decltype(q4_1)::value ? BlockType::Q4_1 : BlockType::Q8_0;
    avx2_rows<T, decltype(rows)::value>(out, x, W, bias, o0, o1);
  });
}

}  // namespace

void block_matmul_fallback_avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias,
                                        int64_t N, int64_t o0, int64_t o1) {
  with_rows(N, [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    switch (W.type) {
      case BlockType::Q4_0: return avx2_rows<BlockType::Q4_0, R>(out, x, W, bias, o0, o1);
      case BlockType::Q5_1: return avx2_rows<BlockType::Q5_1, R>(out, x, W, bias, o0, o1);
      case BlockType::IQ4_NL: return avx2_rows<BlockType::IQ4_NL, R>(out, x, W, bias, o0, o1);
      default: return avx2_rows<BlockType::Q5_0, R>(out, x, W, bias, o0, o1);
    }
  });
}

void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { avx2_outputs(out, x, W, bias, N, o0, o1); });
}

bool block_matmul_simd_available() { return processor_runs(Isa::avx2); }
#else
void avx2_outputs(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t, int64_t) {
  throw std::logic_error("avx2_outputs: not an x86-64 build");
}
void block_matmul_fallback_avx2_outputs(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t,
                                        int64_t) {
  throw std::logic_error("block_matmul_fallback_avx2_outputs: not an x86-64 build");
}
void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  block_matmul_portable(out, x, W, bias, N);
}
bool block_matmul_simd_available() { return false; }
#endif

void block_matmul_avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                               int64_t o0, int64_t o1) {
  avx2_outputs(out, x, W, bias, N, o0, o1);
}

}  // namespace lmscope::cpu
