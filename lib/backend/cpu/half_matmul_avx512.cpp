// half_matmul's AVX-512 build (half_matmul_x86.h, 16-lane vectors; AVX-512F's vcvtph2ps
// converts f16). Compiled for any x86-64 with __attribute__((target)): the caller checks the
// processor first (block_matmul_avx512_available).
#include "backend/cpu/half_matmul.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_X86_TARGET __attribute__((target("avx512f,f16c,fma")))
#define LMSCOPE_X86_LANES 16
#include "backend/cpu/half_matmul_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void half_matmul_avx512_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                                int64_t o0, int64_t o1) {
  half_outputs(out, x, W, bias, N, o0, o1);
}
#else
void half_matmul_avx512_outputs(float*, const float*, const HalfMatrix&, const float*, int64_t, int64_t, int64_t) {
  throw std::logic_error("half_matmul_avx512_outputs: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
