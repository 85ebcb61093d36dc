// The q8 GEMM's AVX2 build (q8_gemm_x86.h): the integer dot by vpmaddubsw + vpmaddwd, as the
// one-row AVX2 kernel forms it. Compiled for any x86-64 with __attribute__((target)): the caller
// checks the processor first.
#include "backend/cpu/q8_gemm.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "backend/cpu/avx2.h"
#define LMSCOPE_Q8_TARGET __attribute__((target("avx2,fma,f16c")))
#define LMSCOPE_Q8_VNNI 0
#include "backend/cpu/q8_gemm_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void q8_gemm_outputs_avx2(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                          int64_t o1) {
  x86_gemm_thread_outputs(out, x, W, bias, o0, o1);
}
#else
void q8_gemm_outputs_avx2(float*, const Q8Rows&, const QuantBlocks&, const float*, int64_t, int64_t) {
  throw std::logic_error("q8_gemm_outputs_avx2: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
