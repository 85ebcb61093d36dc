#include "backend/cpu/q8k_matmul.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8k_gemm.h"
#include "kernels/q8_k_activations.cuh"

namespace lmscope::cpu {

void quantize_rows_q8k(const float* x, int64_t N, int64_t I, Q8KRows& out) {
  if (I % q8k::kBlock != 0)
    throw std::logic_error("quantize_rows_q8k: " + std::to_string(I) + " columns, not super-blocks of 256");
  const int64_t total = N * (I / q8k::kBlock);
  out.rows = N;
  out.cols = I;
  out.q.resize(size_t(N * I));
  out.bsums.resize(size_t(N * I / 16));
  out.d.resize(size_t(total));
  const auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      q8k::quantize_block(x + b * q8k::kBlock, out.q.data() + b * q8k::kBlock, out.bsums.data() + b * q8k::kGroups,
                          out.d.data() + b);
  };
  if (total < 64) return run(0, total);   // a decode row: not worth waking the threads
  over_outputs(total, run);
}

namespace {

constexpr int64_t kChunkOutputs = 64;   // a chunk's weights are read from cache by every row

// Outputs [o0, o1) of every row, a chunk of outputs at a time, kQ8KRows rows of x at a time (an
// implementation may unpack each weight row once for all of them).
void outputs_by_chunks(Q8KSliceRows slice_rows, float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias,
                       int64_t o0, int64_t o1) {
  const int64_t O = W.rows, nb = x.blocks();
  for (int64_t c0 = o0; c0 < o1; c0 += kChunkOutputs) {
    const int64_t c1 = std::min(o1, c0 + kChunkOutputs);
    for (int64_t n0 = 0; n0 < x.rows; n0 += kQ8KRows) {
      const int rows = int(std::min<int64_t>(kQ8KRows, x.rows - n0));
      const int8_t* q[kQ8KRows];
      const int16_t* bs[kQ8KRows];
      const float* d[kQ8KRows];
      for (int r = 0; r < rows; ++r) {
        q[r] = x.q.data() + (n0 + r) * x.cols;
        bs[r] = x.bsums.data() + (n0 + r) * x.cols / 16;
        d[r] = x.d.data() + (n0 + r) * nb;
      }
      const Q8KSlice s{int(ggml_type_of(W.type)), W.data, int64_t(W.row_bytes()), nb, c0, c1, O, bias, out + n0 * O};
      slice_rows(s, q, bs, d, rows);
    }
  }
}

void portable_slice(const Q8KSlice& s, const int8_t* const* q, const int16_t* const* bsums, const float* const* d,
                    int rows) {
  for (int r = 0; r < rows; ++r)
    for (int64_t o = s.o0; o < s.o1; ++o)
      s.out[r * s.O + o] =
          q8k::dot_row(s.ggml_type, s.w + o * s.row_bytes, s.nb, q[r], bsums[r], d[r]) + (s.bias ? s.bias[o] : 0.0f);
}

void check_shapes(const Q8KRows& x, const QuantBlocks& W) {
  if (!is_k_quant(W.type))
    throw std::logic_error(std::string("q8k_matmul: ") + block_type_name(W.type) + " weights are not K-quants");
  if (x.cols != W.cols || x.rows < 1)
    throw std::logic_error("q8k_matmul: activations [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                           "] against weights of " + std::to_string(W.cols) + " columns");
}

}  // namespace

void q8k_outputs_portable(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                          int64_t o1) {
  outputs_by_chunks(portable_slice, out, x, W, bias, o0, o1);
}

void q8k_outputs_avx2(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                      int64_t o1) {
  outputs_by_chunks(q8k_slice_avx2, out, x, W, bias, o0, o1);
}

void q8k_outputs_avx512(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                        int64_t o1) {
  outputs_by_chunks(q8k_slice_avx512, out, x, W, bias, o0, o1);
}

std::vector<Q8KImplementation> q8k_simd_implementations() {
  return {{"avx2", q8k_outputs_avx2, q8k_avx2_available()},
          {"avx2-gemm", q8k_gemm_outputs_avx2, q8k_avx2_available()},
          {"avx512", q8k_outputs_avx512, q8k_avx512_available()},
          {"avx512-gemm", q8k_gemm_outputs_avx512, q8k_avx512_available()}};
}

const char* q8k_matmul_kernel() { return isa_name(chosen_kernels().q8k_matmul.isa); }

namespace {
// The chosen build's GEMM for a prefill of kQ8KGemmMinRows rows or more (q8k_gemm.h: the same
// bits), else its one-row kernel.
Q8KOutputs outputs_for(const Q8KRows& x) {
  const Q8KMatmulBuild& build = chosen_kernels().q8k_matmul.build;
  return x.rows >= kQ8KGemmMinRows && build.gemm ? build.gemm : build.outputs;
}
}  // namespace

void q8k_matmul(float* out, const Q8KRows& x, const QuantBlocks& W, const float* bias) {
  check_shapes(x, W);
  const Q8KOutputs run = outputs_for(x);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { run(out, x, W, bias, o0, o1); });
}

void q8k_matmul_group(const Q8KRows& x, const BlockMatmulJob* jobs, int count) {
  for (int j = 0; j < count; ++j) check_shapes(x, *jobs[j].W);
  const Q8KOutputs run = outputs_for(x);
  over_job_outputs(
      count, [&](int j) { return jobs[j].W->rows; },
      [&](int j, int64_t o0, int64_t o1) { run(jobs[j].out, x, *jobs[j].W, jobs[j].bias, o0, o1); });
}

}  // namespace lmscope::cpu
