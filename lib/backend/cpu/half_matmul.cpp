// half_matmul (half_matmul.h): the portable reference, the matmul and the group through the
// build kernel_table.h chose, and the prefill through panels.
#include "backend/cpu/half_matmul.h"

#include "backend/cpu/block_matmul.h"   // check_block_rows
#include "backend/cpu/block_prefill.h"
#include "backend/cpu/half_dot.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"

namespace lmscope::cpu {

namespace {
// half_dot.h one lane at a time.
template <bool BF16>
void portable_rows(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N, int64_t o0,
                   int64_t o1) {
  const int64_t O = W.rows, I = W.cols;
  for (int64_t o = o0; o < o1; ++o) {
    const uint16_t* w = W.data + o * I;
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = x + n * I;
      float acc[kHalfLanes] = {};
      for (int64_t c = 0; c < I; c += kHalfLanes)
        for (int l = 0; l < kHalfLanes; ++l) {
          const bool in = c + l < I;   // past the end: the zero padding
          acc[l] = half_lane_fma(in ? widen_half<BF16>(w[c + l]) : 0.0f, in ? xn[c + l] : 0.0f, acc[l]);
        }
      out[n * O + o] = reduce_half_lanes(acc) + (bias ? bias[o] : 0.0f);
    }
  }
}
}  // namespace

void half_matmul_portable_outputs(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N,
                                  int64_t o0, int64_t o1) {
  if (W.type == DType::BF16)
    portable_rows<true>(out, x, W, bias, N, o0, o1);
  else
    portable_rows<false>(out, x, W, bias, N, o0, o1);
}

HalfOutputs half_matmul_chosen_outputs() { return chosen_kernels().half_matmul.build.outputs; }

void half_matmul(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N) {
  check_block_rows(N);
  const HalfOutputs run = half_matmul_chosen_outputs();
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { run(out, x, W, bias, N, o0, o1); });
}

void half_matmul_group(const float* x, int64_t N, const HalfMatmulJob* jobs, int count) {
  check_block_rows(N);
  const HalfOutputs run = half_matmul_chosen_outputs();
  over_job_outputs(
      count, [&](int j) { return jobs[j].W.rows; },
      [&](int j, int64_t o0, int64_t o1) { run(jobs[j].out, x, jobs[j].W, jobs[j].bias, N, o0, o1); });
}

void widen_half_rows_portable(const HalfMatrix& W, int64_t row0, int64_t n, float* out) {
  const uint16_t* src = W.data + row0 * W.cols;
  const int64_t count = n * W.cols;
  if (W.type == DType::BF16)
    for (int64_t i = 0; i < count; ++i) out[i] = widen_half<true>(src[i]);
  else
    for (int64_t i = 0; i < count; ++i) out[i] = widen_half<false>(src[i]);
}

void widen_half_rows(const HalfMatrix& W, int64_t row0, int64_t n, float* out) {
  chosen_kernels().prefill_panel.build.widen(W, row0, n, out);
}

void half_prefill_matmul(float* out, const float* x, const HalfMatrix& W, const float* bias, int64_t N) {
  const auto widen = chosen_kernels().prefill_panel.build.widen;   // before the threads: it may throw
  panel_matmul(out, x, W.rows, W.cols, bias, N, [&](int64_t row0, int64_t n, float* panel) { widen(W, row0, n, panel); });
}

}  // namespace lmscope::cpu
