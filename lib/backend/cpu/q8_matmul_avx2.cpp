// q8_matmul's AVX2 build (q8_matmul_x86.h): the integer dot by vpmaddubsw + vpmaddwd, as
// llama.cpp forms it on a processor without VNNI. Compiled for any x86-64 with
// __attribute__((target)): the caller checks the processor first.
#include "backend/cpu/q8_matmul.h"

#include <stdexcept>

#include "backend/cpu/kernel_table.h"   // processor_runs

#if defined(__x86_64__)
#include "backend/cpu/avx2.h"   // immintrin.h
#define LMSCOPE_Q8_TARGET __attribute__((target("avx2,fma,f16c")))
#define LMSCOPE_Q8_VNNI 0
#include "backend/cpu/q8_matmul_x86.h"
#endif

namespace lmscope::cpu {

#if defined(__x86_64__)
void q8_outputs_avx2(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1) {
  x86_outputs(out, x, W, bias, o0, o1);
}
void q8_quantize_avx2(const float* x, int64_t blocks, int8_t* q, float* ds) { quantize_blocks(x, blocks, q, ds); }
bool q8_avx2_available() { return processor_runs(Isa::avx2); }
#else
void q8_outputs_avx2(float*, const Q8Rows&, const QuantBlocks&, const float*, int64_t, int64_t) {
  throw std::logic_error("q8_outputs_avx2: not an x86-64 build");
}
void q8_quantize_avx2(const float*, int64_t, int8_t*, float*) {
  throw std::logic_error("q8_quantize_avx2: not an x86-64 build");
}
bool q8_avx2_available() { return false; }
#endif

}  // namespace lmscope::cpu
