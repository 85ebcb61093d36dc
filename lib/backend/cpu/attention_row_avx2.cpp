// attention_row.h's two loops over the cache, AVX2 build (attention_row_x86.h, 8-lane vectors
// with FMA). Compiled for any x86-64 with __attribute__((target)): the caller checks the
// processor first.
#include "backend/cpu/attention_row.h"

#include "backend/cpu/kernel_table.h"   // processor_runs

#if defined(__x86_64__)
#define LMSCOPE_X86_TARGET __attribute__((target("avx2,fma")))
#define LMSCOPE_X86_LANES 8
#include "backend/cpu/attention_row_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
float attention_scores_avx2(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                            float scale) {
  return row_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx2(float* z, const float* p, const float* V, int64_t S, int64_t hd) { row_mix(z, p, V, S, hd); }
bool attention_avx2_available() { return processor_runs(Isa::avx2); }
#else
float attention_scores_avx2(float* w, const float* q, const float* K, const float* mask, int64_t S, int64_t hd,
                            float scale) {
  return attention_scores(w, q, K, mask, S, hd, scale);
}
void attention_mix_avx2(float* z, const float* p, const float* V, int64_t S, int64_t hd) {
  attention_mix(z, p, V, S, hd);
}
bool attention_avx2_available() { return false; }
#endif

}  // namespace lmscope::cpu
