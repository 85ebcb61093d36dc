// --cpu-activations q8 for K-quant weights (Q4_K, Q5_K, Q6_K): out[N,O] = x[N,I] @ W[O,I]^T
// (+ bias[O]) with each row of x first quantized per super-block of 256 to int8 (llama.cpp's
// block_q8_K: a float32 scale and the sums of each 16 codes), the products integer. The formulas
// and their llama.cpp sources are kernels/q8_k_activations.cuh's; the results are llama.cpp's
// x86 numbers bit for bit (ggml_vec_dot_q4_K_q8_K, _q5_K_q8_K, _q6_K_q8_K; tests/llamacpp holds
// them to the built library).
//
// Any N; each thread walks its outputs a chunk at a time so that a chunk's weight blocks are
// read from cache by every row, and up to kQ8KRows rows at a time share each weight row's
// unpacking (q8k_slice_*). Three builds: portable (the formulas one lane at a time, the
// reference the tests hold the others to), AVX2 (llama.cpp's own instruction sequence,
// vpmaddubsw + vpmaddwd) and AVX-512 (512-bit integer sums, AVX-512 BW + VNNI), the two in
// q8k_matmul_x86.h and bit for bit the same numbers; kernel_table.h says which runs.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/block_matmul.h"   // BlockMatmulJob
#include "tensor/quant_blocks.h"

namespace lmscope::cpu {

// Rows of activations as block_q8_K holds them.
struct Q8KRows {
  int64_t rows = 0, cols = 0;   // cols % 256 == 0
  std::vector<int8_t> q;        // [rows, cols] codes, -127..127
  std::vector<int16_t> bsums;   // [rows, cols/16]: the sum of each 16 codes
  std::vector<float> d;         // [rows, cols/256]
  int64_t blocks() const { return cols / 256; }
};

// x [N, I] row-major -> out (resized); splits the super-blocks over the OpenMP threads when
// there are many.
void quantize_rows_q8k(const float* x, int64_t N, int64_t I, Q8KRows& out);

// out [N,O] (N = x.rows), bias [O] or null; W Q4_K, Q5_K or Q6_K. Splits the O outputs over
// the OpenMP threads.
void q8k_matmul(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias);
// Several matrices reading the same x in one parallel region (block_matmul_group's split).
void q8k_matmul_group(const Q8KRows& x, const BlockMatmulJob* jobs, int count);

// The build q8k_matmul runs (kernel_table.h): "avx512", "avx2" or "portable".
const char* q8k_matmul_kernel();

// The implementations, for the tests: outputs [o0, o1) on the calling thread.
using Q8KOutputs = void (*)(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                            int64_t o1);
void q8k_outputs_portable(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                          int64_t o1);
void q8k_outputs_avx2(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                      int64_t o1);
void q8k_outputs_avx512(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                        int64_t o1);
bool q8k_avx2_available();     // AVX2 + FMA + F16C
bool q8k_avx512_available();   // those + AVX-512 F, VL, BW and VNNI (kernel_table.h)
// The SIMD implementations ("avx2", "avx512", and their prefill GEMMs "avx2-gemm", "avx512-gemm":
// q8k_gemm.h), and whether this processor runs each.
struct Q8KImplementation {
  const char* name;
  Q8KOutputs outputs;
  bool runs;
};
std::vector<Q8KImplementation> q8k_simd_implementations();
// One output of one row: W's row `w` (nb super-blocks of ggml type 12/13/14) against the row's
// codes q, group sums bsums and scales d (what each implementation runs per output).
using Q8KDot = float (*)(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums,
                         const float* d);
float q8k_dot_avx2(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums,
                   const float* d);
float q8k_dot_avx512(int ggml_type, const uint8_t* w, int64_t nb, const int8_t* q, const int16_t* bsums,
                     const float* d);
// A slice of outputs [o0, o1) of W (ggml type, row_bytes, nb super-blocks a row) for up to
// kQ8KRows activation rows at once (row r's codes q[r], sums bsums[r], scales d[r]):
// out[r * O + o] = W row o . x row r (+ bias[o]). The x86 implementations unpack each weight
// row once for all the rows (prefill); every output is bit for bit the one-row dot product's.
constexpr int kQ8KRows = 8;
struct Q8KSlice {
  int ggml_type;
  const uint8_t* w;
  int64_t row_bytes, nb, o0, o1, O;
  const float* bias;
  float* out;   // row 0 of the slice's rows
};
using Q8KSliceRows = void (*)(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums,
                              const float* const* d, int rows);
void q8k_slice_avx2(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                    int rows);
void q8k_slice_avx512(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                      int rows);

}  // namespace lmscope::cpu
