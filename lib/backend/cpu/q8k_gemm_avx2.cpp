// The K-quant q8 GEMM's AVX2 build (q8k_gemm_x86.h): each quad's scaled integer dot by
// vpmaddubsw + vpmaddwd, as llama.cpp's AVX2 vec_dot forms it. Compiled for any x86-64 with
// __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/q8k_gemm.h"

#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#define LMSCOPE_Q8KG_TARGET __attribute__((target("avx2,fma,f16c")))
#define LMSCOPE_Q8KG_VNNI 0
#include "backend/cpu/q8k_gemm_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void q8k_gemm_outputs_avx2(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                           int64_t o1) {
  x86_gemm_thread_outputs(out, x, W, bias, o0, o1);
}
#else
void q8k_gemm_outputs_avx2(float*, const Q8KRows&, const QuantBlocks&, const float*, int64_t, int64_t) {
  throw std::logic_error("q8k_gemm_outputs_avx2: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
