#include "backend/cpu/block_matmul.h"

#include "backend/cpu/block_rows.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"

// The portable build (the reference the tests hold the others to) and the calls that run the
// chosen build (kernel_table.h). The AVX2 build is block_matmul_avx2.cpp, the AVX-512 one
// block_matmul_avx512.cpp.
namespace lmscope::cpu {

// ---- portable: dequantize a block (the loader's own function), then dot ----------------
namespace {
void portable_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N, int64_t o0,
                      int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = W.row_blocks(), be = W.block_elems();
  float w[256];   // the largest block: a K-quant super-block
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    float acc[kBlockMatmulMaxRows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      dequantize_block(W.type, row + b * W.block_bytes(), w);
      for (int64_t n = 0; n < N; ++n) {
        const float* xb = x + n * I + b * be;
        float s = 0;
        for (int64_t j = 0; j < be; ++j) s += w[j] * xb[j];
        acc[n] += s;
      }
    }
    for (int64_t n = 0; n < N; ++n) out[n * O + o] = acc[n] + (bias ? bias[o] : 0.0f);
  }
}
}  // namespace

void block_matmul_portable(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { portable_outputs(out, x, W, bias, N, o0, o1); });
}


void block_matmul_portable_outputs(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N,
                                   int64_t o0, int64_t o1) {
  portable_outputs(out, x, W, bias, N, o0, o1);
}

const char* block_matmul_kernel() { return isa_name(chosen_kernels().block_matmul.isa); }

void block_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N) {
  check_block_rows(N);
  const BlockOutputs run = chosen_kernels().block_matmul.build;
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { run(out, x, W, bias, N, o0, o1); });
}

// Each thread takes a contiguous slice of the jobs' outputs laid end to end.
void block_matmul_group(const float* x, int64_t N, const BlockMatmulJob* jobs, int count) {
  check_block_rows(N);
  const BlockOutputs run = chosen_kernels().block_matmul.build;
  over_job_outputs(
      count, [&](int j) { return jobs[j].W->rows; },
      [&](int j, int64_t o0, int64_t o1) { run(jobs[j].out, x, *jobs[j].W, jobs[j].bias, N, o0, o1); });
}

}  // namespace lmscope::cpu
