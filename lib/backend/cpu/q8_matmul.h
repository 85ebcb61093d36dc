// The fast mode's matmul over GGUF blocks (--cpu-activations q8): out[N,O] = x[N,I] @ W[O,I]^T
// (+ bias[O]) with W held as Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL blocks and each row of x
// first quantized per block of 32 to int8 (llama.cpp's block_q8_0 / block_q8_1: Q4_1's and
// Q5_1's vec_dot_type is Q8_1, the others' Q8_0), the products integer. The formulas and
// their llama.cpp sources are kernels/q8_activations.cuh's; the results are llama.cpp's x86
// numbers bit for bit (each output's eight lanes and their order included).
//
// Any N: the rows go through in tiles of up to 8 (a template per tile height, so the
// accumulators stay in registers), each thread walking its outputs a chunk at a time so that a
// chunk's weight blocks are read from cache by every tile. Three builds, the same bits: portable
// (the reference the tests hold the others to), AVX2 (maddubs + madd) and AVX-512 VNNI
// (q8_matmul_avx512.cpp: vpdpbusd on 256-bit registers, as llama.cpp's build uses it; it needs
// avx512_vnni + avx512vl + avx512bw); kernel_table.h says which runs.
// From kQ8GemmMinRows (16) rows on (prefill), the AVX2 and AVX-512 builds run as a GEMM over
// groups of eight rows (q8_gemm.h), with the same numbers.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/block_matmul.h"   // BlockMatmulJob
#include "tensor/quant_blocks.h"

namespace lmscope::cpu {

// Rows of activations quantized per block: what llama.cpp's block_q8_0 / block_q8_1 hold, the
// scales widened to float32 (exactly: they are fp16 values).
struct Q8Rows {
  int64_t rows = 0, cols = 0;   // cols % 32 == 0
  std::vector<int8_t> q;        // [rows, cols] codes, -127..127
  // [rows, cols/32, 2]: per block d = f16(amax / 127), then s = f16(d * sum of the block's
  // codes) (block_q8_1's), side by side so that one load gives a block's pair
  std::vector<float> ds;
  float d(int64_t block) const { return ds[size_t(2 * block)]; }
  float s(int64_t block) const { return ds[size_t(2 * block + 1)]; }
  int64_t blocks() const { return cols / 32; }
};

// x [N, I] row-major -> out (resized). q8::quantize_block on every block (the chosen build's
// quantizer: kernel_table.h); splits the blocks over the OpenMP threads when there are many.
void quantize_rows_q8(const float* x, int64_t N, int64_t I, Q8Rows& out);
// `blocks` blocks of 32 from x: codes into q, (d, s) pairs into ds. One thread.
using Q8Quantize = void (*)(const float* x, int64_t blocks, int8_t* q, float* ds);
void q8_quantize_portable(const float* x, int64_t blocks, int8_t* q, float* ds);
void q8_quantize_avx2(const float* x, int64_t blocks, int8_t* q, float* ds);   // q8_avx2_available()

// out [N,O] (N = x.rows), bias [O] or null. Splits the O outputs over the OpenMP threads.
void q8_matmul(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias);
// Several matrices reading the same x in one parallel region (block_matmul_group's split).
void q8_matmul_group(const Q8Rows& x, const BlockMatmulJob* jobs, int count);

// Whether q8_matmul multiplies weights of this type (every 32-weight block type; the K-quants
// go through q8k_matmul.h).
bool q8_matmul_supports(BlockType type);

// The build q8_matmul runs (kernel_table.h): "avx512", "avx2" or "portable".
const char* q8_matmul_kernel();

// The implementations, for the tests and the benchmark: outputs [o0, o1) on the calling
// thread. *_available(): the processor runs it.
using Q8Outputs = void (*)(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                           int64_t o1);
void q8_outputs_portable(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1);
void q8_outputs_avx2(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1);
void q8_outputs_avx512(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0, int64_t o1);
bool q8_avx2_available();     // AVX2 + FMA + F16C
bool q8_avx512_available();   // those + AVX-512 F, VL, BW and VNNI (kernel_table.h)

// Tiles: the weights of kQ8ChunkOutputs outputs are read by every tile of kQ8TileRows rows.
constexpr int kQ8TileRows = 8;
constexpr int64_t kQ8ChunkOutputs = 64;

}  // namespace lmscope::cpu
