// What the AVX2 code paths of the CPU backend share: the target attribute that lets one
// function use AVX2 + FMA in a binary built for any x86-64 (the caller checks the processor
// first), the horizontal sum of 8 floats, the f16 scales' conversion, and the weight stream's
// prefetch. Elsewhere LMSCOPE_AVX2 stays undefined and only the portable code is built.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#define LMSCOPE_AVX2 __attribute__((target("avx2,fma")))

namespace lmscope::cpu {

// v[0] + ... + v[7], pairwise.
LMSCOPE_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The f16 at p (unaligned, little-endian) as float: F16C's conversion, exact (the value of
// kernels/dtype_convert.cuh's f16_to_f32, without its branches).
__attribute__((target("f16c"))) inline float load_f16c(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The Q4_K/Q5_K super-block at blk: its eight 6-bit scales in bytes 0..7 and its eight mins in
// bytes 8..15 of one vector (kernels/quant_blocks.cuh scales_mins_k4's words, formed in a
// register: the scalar version's word shifts cost some twenty instructions per super-block and
// its bytes go through memory). With u0, u1, u2 the three words of scales:
//   word 0 = u0 & 0x3f..;  word 1 = (u2 & 0x0f..) | ((u0 >> 2) & 0x30..)
//   word 2 = u1 & 0x3f..;  word 3 = ((u2 >> 4) & 0x0f..) | ((u1 >> 2) & 0x30..)
// ((u >> 6) & 0x03.. then << 4 is (u >> 2) & 0x30..). Reads blk[0..16).
LMSCOPE_AVX2 inline __m128i scales_mins_k4_x86(const uint8_t* blk) {
  const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));   // d, dmin | u0 | u1 | u2
  const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(head, _MM_SHUFFLE(3, 2, 3, 1)), _mm_setr_epi32(0, 0, 0, 4));
  const __m128i high = _mm_srlv_epi32(_mm_shuffle_epi32(head, _MM_SHUFFLE(2, 2, 1, 1)), _mm_setr_epi32(0, 2, 0, 2));
  const __m128i low_mask = _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f);
  const __m128i high_mask = _mm_setr_epi32(0, 0x30303030, 0, 0x30303030);
  return _mm_or_si128(_mm_and_si128(low, low_mask), _mm_and_si128(high, high_mask));
}

// Decode streams every weight matrix from memory once, and one core's hardware prefetcher
// alone keeps too few lines in flight: a 2-core AMD EPYC read a Q4_K matrix of 45 MB at 7.4 GB/s
// in q8 mode, against 10.1 GB/s when it sat in L3. So each kernel calls prefetch_ahead<Step>
// for every Step bytes of weights it reads (a slice's rows are contiguous: one stream), which
// asks for the lines kPrefetchAhead bytes further on. Calls spaced at most 64 bytes apart touch
// every line of the stream; a Step over 64 asks for one line per 64 bytes. The distance, for
// 1.5B Q4_K_M decode (docs/benchmarks.md, "Prefetching the weight stream"): on an AVX2-only
// EPYC 1024 to 4096 bytes are alike within its noise; on an AVX-512 one (Zen 5), whose core
// reads faster, the q8 kernel decodes at 28.8 tok/s with 4096, 31.1 with 8192 and 30.6 with
// 16384 (one thread, medians of 3), and exact mode and SmolLM2 are alike at 4096 and 8192.
// Prefetches change no arithmetic.
// (Addresses as integers: past the matrix's end they are only hints, never pointers.)
constexpr uintptr_t kPrefetchAhead = 8192;
inline void prefetch_lines(uintptr_t address, int lines) {
  for (int l = 0; l < lines; ++l) _mm_prefetch(reinterpret_cast<const char*>(address + uintptr_t(64 * l)), _MM_HINT_T0);
}
template <int Step>
inline void prefetch_ahead(const void* p) {
  prefetch_lines(reinterpret_cast<uintptr_t>(p) + kPrefetchAhead, (Step + 63) / 64);
}

}  // namespace lmscope::cpu
#endif
