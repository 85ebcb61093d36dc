// q8k_matmul's AVX-512 build (q8k_matmul_x86.h with 512-bit integer sums: two sub-blocks of
// 32 codes, or two Q6_K groups, per vpmaddubsw, whose pair sums vpdpwssd (AVX-512 VNNI)
// multiplies by the scales and adds in one instruction where AVX2 takes vpmaddwd + vpaddd;
// folded to llama.cpp's eight int32 lanes at the end of each super-block, so every output is
// bit for bit the AVX2 one).
// Compiled for any x86-64 with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/q8k_matmul.h"

#include <stdexcept>

#include "backend/cpu/kernel_table.h"   // processor_has_avx512_vnni

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_Q8K_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vnni")))
#define LMSCOPE_Q8K_WIDE 1
#include "backend/cpu/q8k_matmul_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
float q8k_dot_avx512(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums,
                     const float* d) {
  return x86_dot(ggml_type, w, nb, q, bsums, d);
}
void q8k_slice_avx512(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                      int rows) {
  x86_slice(s, q, bsums, d, rows);
}
bool q8k_avx512_available() { return processor_has_avx512_vnni(); }
#else
float q8k_dot_avx512(int, const uint8_t*, int64_t, const int8_t*, const int16_t*, const float*) {
  throw std::logic_error("q8k_dot_avx512: not an x86-64 build");
}
void q8k_slice_avx512(const Q8KSlice&, const int8_t* const*, const int16_t* const*, const float* const*, int) {
  throw std::logic_error("q8k_slice_avx512: not an x86-64 build");
}
bool q8k_avx512_available() { return false; }
#endif

}  // namespace lmscope::cpu
