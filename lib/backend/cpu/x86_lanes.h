// The float vectors of the x86 kernel bodies that are written once for AVX2 and AVX-512
// (block_matmul_k_x86.h, half_matmul_x86.h, attention_row_x86.h): vf is kLanes floats, 8
// (__m256) or 16 (__m512), and the few operations every body uses on it. The includer defines
// LMSCOPE_X86_TARGET (the function attribute for its instructions) and LMSCOPE_X86_LANES (8 or
// 16) first; an AVX-512 one includes avx512_intrinsics.h before anything else. Internal
// linkage, like the bodies: a translation unit holds one build.
#pragma once
#if !defined(LMSCOPE_X86_TARGET) || !defined(LMSCOPE_X86_LANES)
#error "define LMSCOPE_X86_TARGET and LMSCOPE_X86_LANES before including x86_lanes.h"
#endif
#include "backend/cpu/avx2.h"   // immintrin.h, hsum

namespace lmscope::cpu {
namespace {

constexpr int kLanes = LMSCOPE_X86_LANES;

#if LMSCOPE_X86_LANES == 8
using vf = __m256;
LMSCOPE_X86_TARGET inline vf vzero() { return _mm256_setzero_ps(); }
LMSCOPE_X86_TARGET inline vf vset(float v) { return _mm256_set1_ps(v); }
LMSCOPE_X86_TARGET inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
LMSCOPE_X86_TARGET inline void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
LMSCOPE_X86_TARGET inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
LMSCOPE_X86_TARGET inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
LMSCOPE_X86_TARGET inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
LMSCOPE_X86_TARGET inline float vsum(vf v) { return hsum(v); }   // avx2.h's pairwise order
#elif LMSCOPE_X86_LANES == 16
using vf = __m512;
LMSCOPE_X86_TARGET inline vf vzero() { return _mm512_setzero_ps(); }
LMSCOPE_X86_TARGET inline vf vset(float v) { return _mm512_set1_ps(v); }
LMSCOPE_X86_TARGET inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
LMSCOPE_X86_TARGET inline void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
LMSCOPE_X86_TARGET inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
LMSCOPE_X86_TARGET inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
LMSCOPE_X86_TARGET inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
LMSCOPE_X86_TARGET inline float vsum(vf v) { return _mm512_reduce_add_ps(v); }
#else
#error "LMSCOPE_X86_LANES must be 8 or 16"
#endif

}  // namespace
}  // namespace lmscope::cpu
