// The K-quant q8 GEMM's AVX-512 VNNI build (q8k_gemm_x86.h): the scales' vpmaddwd and the sum's
// vpaddd as one vpdpwssd on 256-bit registers (AVX-512 VL + VNNI: the same integers), and
// AVX-512's 32 vector registers for the eight lanes' accumulators. Compiled for any x86-64 with
// __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/q8k_gemm.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_Q8KG_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define LMSCOPE_Q8KG_VNNI 1
#include "backend/cpu/q8k_gemm_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void q8k_gemm_outputs_avx512(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                             int64_t o1) {
  x86_gemm_thread_outputs(out, x, W, bias, o0, o1);
}
#else
void q8k_gemm_outputs_avx512(float*, const Q8KRows&, const QuantBlocks&, const float*, int64_t, int64_t) {
  throw std::logic_error("q8k_gemm_outputs_avx512: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
