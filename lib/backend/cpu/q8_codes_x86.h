// What the x86 q8 kernels share (the one-row q8_matmul_x86.h and the GEMM q8_gemm_x86.h): a
// weight block's 32 codes as one 256-bit vector, and the exact integer dot of unsigned by signed
// bytes in 8 lanes. The includer defines LMSCOPE_Q8_TARGET (the function attribute for its
// instructions) and LMSCOPE_Q8_VNNI (1: vpdpbusd; 0: maddubs + madd) first; everything has
// internal linkage, so an AVX-512 build's copy never stands in for the AVX2 one.
#pragma once
#if !defined(LMSCOPE_Q8_TARGET) || !defined(LMSCOPE_Q8_VNNI)
#error "define LMSCOPE_Q8_TARGET and LMSCOPE_Q8_VNNI before including q8_codes_x86.h"
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/quant_blocks.cuh"   // quant::load_u32
#include "tensor/quant_blocks.h"      // BlockType

namespace lmscope::cpu {
namespace {

// The 16 bytes of nibbles at qs in both halves, the upper half shifted by 4: elements 0-15 are
// the low nibbles, 16-31 the high ones.
LMSCOPE_Q8_TARGET inline __m256i nibbles_32(const uint8_t* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the 32-bit little-endian word at p is set, else 0 (Q5_0's and
// Q5_1's fifth bits). Byte j of a vector gets the word's byte j/8 (the shuffle works per 128-bit
// half, so both halves index bytes 0-3 of the broadcast word), then keeps only bit j%8.
LMSCOPE_Q8_TARGET inline __m256i bits_32(const uint8_t* p) {
  const __m256i qh = _mm256_set1_epi32(int(quant::load_u32(p)));
  const __m256i byte_of = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i bit_of = _mm256_set1_epi64x(int64_t(0x8040201008040201));
  return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(qh, byte_of), bit_of), bit_of);
}

// A block's 32 codes in element order: Q4_0 -8..7, Q4_1 0..15, Q5_0 -16..15, Q5_1 0..31, IQ4_NL
// the grid values -127..113, Q8_0 as stored.
template <BlockType T>
LMSCOPE_Q8_TARGET inline __m256i weight_codes(const uint8_t* blk) {
  if (T == BlockType::Q4_1) return nibbles_32(blk + 4);
  if (T == BlockType::Q4_0) return _mm256_sub_epi8(nibbles_32(blk + 2), _mm256_set1_epi8(8));
  if (T == BlockType::Q5_0) {
    // Where the fifth bit is clear the code is nibble - 16, i.e. the nibble with 0xF0 in its
    // upper bits (two's complement); where set, the nibble itself.
    return _mm256_or_si256(nibbles_32(blk + 6), _mm256_andnot_si256(bits_32(blk + 2), _mm256_set1_epi8(char(0xF0))));
  }
  if (T == BlockType::Q5_1) return _mm256_or_si256(nibbles_32(blk + 8), _mm256_and_si256(bits_32(blk + 4), _mm256_set1_epi8(0x10)));
  if (T == BlockType::IQ4_NL) {   // each nibble indexes the grid, a byte shuffle per 128-bit half
    const __m256i grid = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
    return _mm256_shuffle_epi8(grid, nibbles_32(blk + 2));
  }
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
}

// a * b + c with the product and the sum rounded apart, as llama.cpp's scalar `sumf += d * sumi`
// compiles: the empty asm keeps the compiler from contracting the two into an FMA (GCC fuses a
// vector multiply feeding an add when the target has FMA and -ffp-contract=fast, its default).
LMSCOPE_Q8_TARGET inline __m256 mul_then_add(__m256 a, __m256 b, __m256 c) {
  __m256 product = _mm256_mul_ps(a, b);
  asm("" : "+x"(product));
  return _mm256_add_ps(product, c);
}

// Lane k = sum of u_j * s_j over j = 4k..4k+3 (u unsigned, s signed bytes), exact.
LMSCOPE_Q8_TARGET inline __m256i dot4(__m256i u, __m256i s) {
#if LMSCOPE_Q8_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));   // pairs < 2^15
#endif
}

}  // namespace
}  // namespace lmscope::cpu
