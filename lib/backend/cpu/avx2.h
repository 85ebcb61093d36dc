// What the AVX2 code paths of the CPU backend share: the target attribute that lets one
// function use AVX2 + FMA in a binary built for any x86-64 (the caller checks the processor
// first), the horizontal sum of 8 floats, and the f16 scales' conversion. Elsewhere LMSCOPE_AVX2 stays undefined and only
// the portable code is built.
#pragma once

#if defined(__x86_64__)
#include <cpuid.h>
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

// What the AVX2 block kernels need: AVX2, FMA and F16C (the f16 scales' conversion). F16C is
// read from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
inline bool cpu_has_avx2_fma_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C)) return false;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // namespace lmscope::cpu
#endif
