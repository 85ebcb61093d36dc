// Decode's matmul over GGUF blocks: out[N,O] = x[N,I] @ W[O,I]^T (+ bias[O]) with W held as
// Q8_0 or Q4_1 blocks (tensor/quant_blocks.h), for a few rows (decode: N = batch). A decode
// step is bound by reading the weights; the blocks are ~6x smaller than the float32 values
// the loader also keeps (SmolLM2: 92 MB against 540 MB per token).
//
// Numbers: the same products as the float32 path up to float32 rounding order: a block's
// sum is d * sum(q * x) (+ m * sum(x) for Q4_1) instead of sum((d * q + m) * x). The
// per-block layouts are kernels/quant_blocks.cuh's. Two implementations: AVX2 + FMA (chosen
// at run time when the processor has them) and a portable one, the reference the tests hold
// the other to.
#pragma once
#include <cstdint>

#include "tensor/quant_blocks.h"

namespace lmscope::cpu {

constexpr int64_t kBlockMatmulMaxRows = 8;

// out [N,O], x [N,I] row-major float32, bias [O] or null; N <= kBlockMatmulMaxRows.
// Splits the O outputs over the OpenMP threads.
void block_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);

// The two implementations, for the tests. simd_available(): the processor runs the AVX2 one.
void block_matmul_portable(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);
void block_matmul_avx2(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);
bool block_matmul_simd_available();

}  // namespace lmscope::cpu
