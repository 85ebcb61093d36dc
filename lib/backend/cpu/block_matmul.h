// Decode's matmul over GGUF blocks: out[N,O] = x[N,I] @ W[O,I]^T (+ bias[O]) with W held as
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K or Q6_K blocks (tensor/quant_blocks.h), for a
// few rows (decode: N = batch). A decode step is bound by reading the weights; the blocks are 4.5-7x smaller than
// float32 values (SmolLM2 Q4_1: 92 MB against 540 MB per token).
//
// Numbers: the same products as the float32 path up to float32 rounding order: a block's
// sum is d * sum(q * x) (+ m * sum(x) for Q4_1/Q5_1) instead of sum((d * q + m) * x); a K-quant
// super-block's likewise per sub-block (block_matmul_k_x86.h). The per-block layouts are
// kernels/quant_blocks.cuh's. Three builds: portable (the reference the tests hold the others
// to), AVX2 (block_matmul_avx2.cpp) and AVX-512 (block_matmul_avx512.cpp); kernel_table.h says
// which runs (LMSCOPE_CPU_KERNEL, or the widest the processor runs).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tensor/quant_blocks.h"

namespace lmscope::cpu {

constexpr int64_t kBlockMatmulMaxRows = 8;

// out [N,O], x [N,I] row-major float32, bias [O] or null; N <= kBlockMatmulMaxRows.
// Splits the O outputs over the OpenMP threads.
void block_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);

// Several matrices that read the same x (a layer's q/k/v, gate/up), in one parallel region:
// the threads split the outputs of all of them together, so a decode layer forks and joins
// its threads fewer times. Each job's numbers are block_matmul's.
struct BlockMatmulJob {
  float* out;            // [N, W->rows]
  const QuantBlocks* W;
  const float* bias;     // [W->rows] or null
};
void block_matmul_group(const float* x, int64_t N, const BlockMatmulJob* jobs, int count);

// The build block_matmul runs (kernel_table.h): "avx512", "avx2" or "portable".
const char* block_matmul_kernel();

// Each build's outputs [o0, o1) on the calling thread: what each thread runs (kernel_table.h).
using BlockOutputs = void (*)(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                              int64_t o0, int64_t o1);
void block_matmul_portable_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                   int64_t o0, int64_t o1);
void block_matmul_avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                               int64_t o0, int64_t o1);
void block_matmul_avx512_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                 int64_t o0, int64_t o1);

// The whole matmul by one build, for the tests and the benchmark. *_available(): the processor
// runs it (kernel_table.h's processor_runs).
void block_matmul_portable(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);
void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);
void block_matmul_avx512(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);
bool block_matmul_simd_available();   // AVX2 + FMA + F16C
bool block_matmul_avx512_available();   // those + AVX-512F
// The AVX2 kernel's body for the fallback types Q5_0, Q4_0, Q5_1 and IQ4_NL, which the AVX-512
// one runs too for such a W (llama-quantize writes them where a row is not a multiple of 256,
// so a row is at most a few hundred blocks: docs/gguf.md).
void block_matmul_fallback_avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias,
                                        int64_t N, int64_t o0, int64_t o1);
// The K-quant bodies the two take for a Q4_K/Q5_K/Q6_K W (block_matmul_k_x86.h).
void block_matmul_k_avx2_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                 int64_t o0, int64_t o1);
void block_matmul_k_avx512_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                   int64_t o0, int64_t o1);

inline void check_block_rows(int64_t N) {
  if (N < 1 || N > kBlockMatmulMaxRows)
    throw std::logic_error("block_matmul: " + std::to_string(N) + " rows, at most " +
                           std::to_string(kBlockMatmulMaxRows));
}

}  // namespace lmscope::cpu
