// half_matmul's AVX2 build (half_matmul_x86.h, 8-lane vectors; F16C converts f16), and the
// panel widening prefill runs. Compiled for any x86-64 with __attribute__((target)): the
// caller checks the processor first (block_matmul_simd_available).
#include "backend/cpu/half_matmul.h"

#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#define LMSCOPE_X86_TARGET __attribute__((target("avx2,fma,f16c")))
#define LMSCOPE_X86_LANES 8
#include "backend/cpu/half_matmul_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void half_matmul_avx2_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                              int64_t o0, int64_t o1) {
  half_outputs(out, x, W, bias, N, o0, o1);
}

namespace {
template <bool BF16>
LMSCOPE_X86_TARGET void widen_rows(const HalfMatrix& W, int64_t row0, int64_t n, float* out) {
  const int64_t count = n * W.cols;
  const uint16_t* src = W.data + row0 * W.cols;
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) vstore(out + i, vwiden<BF16>(src + i));
  for (; i < count; ++i) out[i] = widen_half<BF16>(src[i]);
}
}  // namespace

void widen_half_rows_avx2(const HalfMatrix& W, int64_t row0, int64_t n, float* out) {
  if (W.type == DType::BF16)
    widen_rows<true>(W, row0, n, out);
  else
    widen_rows<false>(W, row0, n, out);
}
#else
void half_matmul_avx2_outputs(float*, const float*, const HalfMatrix&, const float*, int64_t, int64_t, int64_t) {
  throw std::logic_error("half_matmul_avx2_outputs: not an x86-64 build");
}
void widen_half_rows_avx2(const HalfMatrix&, int64_t, int64_t, float*) {
  throw std::logic_error("widen_half_rows_avx2: not an x86-64 build");
}
#endif

}  // namespace lmscope::cpu
