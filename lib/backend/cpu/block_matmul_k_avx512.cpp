// block_matmul's AVX-512 build for the K-quants (block_matmul_k_x86.h, 16-lane vectors: a
// sub-block of 32 weights is two vectors, a Q6_K scale's 16 one). Compiled for any x86-64
// with __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/block_matmul.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "backend/cpu/avx512_intrinsics.h"
#define LMSCOPE_X86_TARGET __attribute__((target("avx512f,fma,f16c")))
#define LMSCOPE_X86_LANES 16
#include "backend/cpu/block_matmul_k_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void block_matmul_k_avx512_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                   int64_t o0, int64_t o1) {
  k_outputs(out, x, W, bias, N, o0, o1);
}
#else
void block_matmul_k_avx512_outputs(float*, const float*, const QuantBlocks&, const float*, int64_t, int64_t,
                                   int64_t) {
  throw std::logic_error("block_matmul_k_avx512_outputs: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
