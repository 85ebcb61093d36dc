#include "backend/cpu/q8_matmul.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8_gemm.h"
#include "kernels/dtype_convert.cuh"
#include "kernels/q8_activations.cuh"
#include "kernels/quant_blocks.cuh"

// IQ4_NL's odd last block is added as llama.cpp's compiled code adds it, y + dd * isum rounded
// twice (kernels/q8_activations.cuh): no contraction into an FMA in this file, whatever the
// target (every other fused step here is written as q8::fused).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

namespace lmscope::cpu {

void q8_quantize_portable(const float* x, int64_t blocks, int8_t* q, float* ds) {
  for (int64_t b = 0; b < blocks; ++b) {
    uint16_t d_h, s_h;
    q8::quantize_block(x + b * q8::kBlock, q + b * q8::kBlock, &d_h, &s_h);
    ds[2 * b] = f16_to_f32(d_h);
    ds[2 * b + 1] = f16_to_f32(s_h);
  }
}

void quantize_rows_q8(const float* x, int64_t N, int64_t I, Q8Rows& out) {
  if (I % q8::kBlock != 0) throw std::logic_error("quantize_rows_q8: " + std::to_string(I) + " columns, not blocks of 32");
  const int64_t nb = I / q8::kBlock, total = N * nb;
  out.rows = N;
  out.cols = I;
  out.q.resize(size_t(N * I));
  out.ds.resize(size_t(2 * total));
  const Q8Quantize run = chosen_kernels().q8_matmul.build.quantize;
  int8_t* q = out.q.data();
  float* ds = out.ds.data();
  if (total < 512) return run(x, total, q, ds);   // a decode row: not worth waking the threads
  over_outputs(total, [&](int64_t b0, int64_t b1) { run(x + b0 * q8::kBlock, b1 - b0, q + b0 * q8::kBlock, ds + 2 * b0); });
}

// ---- portable: the formulas of kernels/q8_activations.cuh one lane at a time ---------------
namespace {
// A weight block's 32 codes in element order (nibble types: element j from byte j's low nibble,
// j + 16 from its high one; Q5_0/Q5_1 add bit j of their qh as 16).
void block_codes(BlockType type, const uint8_t* blk, int* qw) {
  if (type == BlockType::Q8_0) {   // d, then 32 signed bytes
    for (int j = 0; j < 32; ++j) qw[j] = int8_t(blk[2 + j]);
    return;
  }
  const bool fifth_bit = type == BlockType::Q5_0 || type == BlockType::Q5_1;
  const int qs_at = 2 + (has_min(type) ? 2 : 0) + (fifth_bit ? 4 : 0);
  const uint32_t qh = fifth_bit ? quant::load_u32(blk + qs_at - 4) : 0;
  const int offset = type == BlockType::Q4_0 ? 8 : type == BlockType::Q5_0 ? 16 : 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = (blk[qs_at + j] & 0x0F) | int(((qh >> j) & 1u) << 4);
    const int hi = (blk[qs_at + j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
    if (type == BlockType::IQ4_NL) {
      qw[j] = quant::kIQ4NLValues[lo];
      qw[j + 16] = quant::kIQ4NLValues[hi];
    } else {
      qw[j] = lo - offset;
      qw[j + 16] = hi - offset;
    }
  }
}
}  // namespace

void q8_outputs_portable(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias, int64_t o0,
                         int64_t o1) {
  const int64_t O = W.rows, I = W.cols, nb = I / q8::kBlock;
  const bool min = has_min(W.type);
  // IQ4_NL: pairs of blocks into two sets of lanes, an odd last block alone (q8_activations.cuh)
  const bool pairs = W.type == BlockType::IQ4_NL;
  const int64_t lane_blocks = pairs ? nb / 2 * 2 : nb;
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = W.data + o * W.row_bytes();
    for (int64_t n = 0; n < x.rows; ++n) {
      float acc[2][q8::kLanes] = {}, summs = 0.0f;
      int qw[q8::kBlock];   // a block's codes in element order
      for (int64_t b = 0; b < lane_blocks; ++b) {
        const uint8_t* blk = row + b * W.block_bytes();
        const int8_t* qa = x.q.data() + n * I + b * q8::kBlock;
        block_codes(W.type, blk, qw);
        const float dd = quant::load_f16(blk) * x.d(n * nb + b);
        float* lanes = acc[pairs ? b % 2 : 0];
        for (int k = 0; k < q8::kLanes; ++k) {
          int isum = 0;
          for (int j = 4 * k; j < 4 * k + 4; ++j) isum += qw[j] * qa[j];
          lanes[k] = q8::fused(dd, float(isum), lanes[k]);
        }
        if (min) summs = q8::fused(quant::load_f16(blk + 2), x.s(n * nb + b), summs);
      }
      if (pairs)
        for (int k = 0; k < q8::kLanes; ++k) acc[0][k] += acc[1][k];
      float y = q8::lane_sum(acc[0]);
      if (min) y += summs;
      if (lane_blocks < nb) {   // IQ4_NL's odd last block
        const uint8_t* blk = row + (nb - 1) * W.block_bytes();
        const int8_t* qa = x.q.data() + n * I + (nb - 1) * q8::kBlock;
        block_codes(W.type, blk, qw);
        int isum = 0;
        for (int j = 0; j < q8::kBlock; ++j) isum += qw[j] * qa[j];
        const float dd = quant::load_f16(blk) * x.d(n * nb + nb - 1);
        y = y + dd * float(isum);   // two roundings (this file does not contract: above)
      }
      out[n * O + o] = y + (bias ? bias[o] : 0.0f);
    }
  }
}

namespace {

void check_shapes(const Q8Rows& x, const QuantBlocks& W) {
  if (!q8_matmul_supports(W.type))
    throw std::logic_error(std::string("q8_matmul: ") + block_type_name(W.type) + " weights are not supported");
  if (x.cols != W.cols || x.rows < 1)
    throw std::logic_error("q8_matmul: activations [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                           "] against weights of " + std::to_string(W.cols) + " columns");
}

}  // namespace

bool q8_matmul_supports(BlockType type) { return !is_k_quant(type); }

const char* q8_matmul_kernel() { return isa_name(chosen_kernels().q8_matmul.isa); }

namespace {
// The chosen build's GEMM from kQ8GemmMinRows rows on (q8_gemm.h: the same numbers), else its
// one-row kernel.
Q8Outputs for_rows(int64_t rows) {
  const Q8MatmulBuild& build = chosen_kernels().q8_matmul.build;
  return build.gemm && rows >= kQ8GemmMinRows ? build.gemm : build.outputs;
}
}  // namespace

void q8_matmul(float* out, const Q8Rows& x, const QuantBlocks& W, const float* bias) {
  check_shapes(x, W);
  const Q8Outputs run = for_rows(x.rows);
  over_outputs(W.rows, [&](int64_t o0, int64_t o1) { run(out, x, W, bias, o0, o1); });
}

void q8_matmul_group(const Q8Rows& x, const BlockMatmulJob* jobs, int count) {
  for (int j = 0; j < count; ++j) check_shapes(x, *jobs[j].W);
  const Q8Outputs run = for_rows(x.rows);
  over_job_outputs(
      count, [&](int j) { return jobs[j].W->rows; },
      [&](int j, int64_t o0, int64_t o1) { run(jobs[j].out, x, *jobs[j].W, jobs[j].bias, o0, o1); });
}

}  // namespace lmscope::cpu
