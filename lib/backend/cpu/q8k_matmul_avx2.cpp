// q8k_matmul's AVX2 build (q8k_matmul_x86.h with 256-bit integer sums): llama.cpp's own
// instruction sequence for ggml_vec_dot_q4_K_q8_K / _q5_K_q8_K / _q6_K_q8_K (arch/x86/quants.c,
// __AVX2__). Compiled for any x86-64 with __attribute__((target)): the caller checks the
// processor first.
#include "backend/cpu/q8k_matmul.h"

#include <stdexcept>

#include "backend/cpu/kernel_table.h"   // processor_runs

#if defined(__x86_64__)
#include <immintrin.h>
#define LMSCOPE_Q8K_TARGET __attribute__((target("avx2,fma,f16c")))
#define LMSCOPE_Q8K_WIDE 0
#include "backend/cpu/q8k_matmul_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
float q8k_dot_avx2(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums, const float* d) {
  return x86_dot(ggml_type, w, nb, q, bsums, d);
}
void q8k_slice_avx2(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                    int rows) {
  x86_slice(s, q, bsums, d, rows);
}
bool q8k_avx2_available() { return processor_runs(Isa::avx2); }
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
