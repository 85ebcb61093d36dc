// attention_row.h's two loops over the cache, AVX-512 build (attention_row_x86.h, 16-lane
// vectors; a head size that is not a multiple of 16 ends in a masked vector). Compiled for any
// x86-64 with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/attention_row.h"

#include "backend/cpu/kernel_table.h"   // processor_runs

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_X86_TARGET __attribute__((target("avx512f,fma")))
#define LMSCOPE_X86_LANES 16
#include "backend/cpu/attention_row_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
float attention_scores_avx512(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                              float scale) {
  return row_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx512(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  row_mix(z, p, V, S, hd);
}
bool attention_avx512_available() { return processor_runs(Isa::avx512); }
#else
float attention_scores_avx512(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                              float scale) {
  return attention_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx512(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  attention_mix(z, p, V, S, hd);
}
bool attention_avx512_available() { return false; }
#endif

}  // namespace lmscope::cpu
