// The K-quant q8 prefill GEMM (lib/backend/cpu/q8k_gemm.h) against the one-row kernel it stands
// in for:
//  * every output of q8k_gemm_outputs_<kernel> equals q8k_outputs_portable's bit for bit (so the
//    one-row SIMD kernels' and llama.cpp's vec_dot: tests/engine/q8k_matmul_test.cpp,
//    tests/llamacpp/ggml_kquant_test.cpp), for Q4_K, Q5_K and Q6_K, row counts that fill groups
//    of 8 exactly and that leave a short last group (9, 15, 17, 23, 37), rows of 1 to 35
//    super-blocks (8960 columns: a group's codes past L1, a chunk of fewer outputs), output
//    counts that leave a short last chunk, with and without a bias, split over the threads;
//  * edge inputs: all-zero activation rows (d_a = 0), super-blocks from 1e-6 to 1e3 in magnitude,
//    every code at its largest (the int16 sums of two quads at their bound);
//  * a call writes exactly its slice of outputs for its real rows: the padding of the last
//    group, and outputs outside [o0, o1), stay untouched;
//  * q8k_matmul takes the GEMM from kQ8KGemmMinRows rows on (the kernel table's `gemm`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8k_gemm.h"
#include "backend/cpu/q8k_matmul.h"
#include "gemm_slice_check.h"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;

namespace {

struct Gemm {
  const char* name;
  cpu::Q8KOutputs run;
  bool runs;
};
std::vector<Gemm> gemms() {
  return {{"avx2", cpu::q8k_gemm_outputs_avx2, cpu::q8k_avx2_available()},
          {"avx512", cpu::q8k_gemm_outputs_avx512, cpu::q8k_avx512_available()}};
}

const std::vector<BlockType> kTypes = {BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K};

// Rows [N, I] of standard-normal values, each super-block scaled by 10^u, u uniform in [-6, 3];
// row 1 (where there is one) all zero.
cpu::Q8KRows spread_rows(int64_t N, int64_t I, uint64_t seed) {
  Tensor x = randn({N, I}, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> exponent(-6.0f, 3.0f);
  for (int64_t b = 0; b < N * I / 256; ++b) {
    const float s = std::pow(10.0f, exponent(rng));
    for (int j = 0; j < 256; ++j) x.f32()[b * 256 + j] *= s;
  }
  if (N > 1)
    for (int64_t i = 0; i < I; ++i) x.f32()[I + i] = 0.0f;
  cpu::Q8KRows r;
  cpu::quantize_rows_q8k(x.f32(), N, I, r);
  return r;
}

std::vector<float> over_threads(cpu::Q8KOutputs kernel, const cpu::Q8KRows& x, const QuantBlocks& W,
                                const float* bias) {
  std::vector<float> out(size_t(x.rows * W.rows), NAN);
  cpu::over_outputs(W.rows, [&](int64_t o0, int64_t o1) { kernel(out.data(), x, W, bias, o0, o1); });
  return out;
}

// The first differing output, as "row r output o: a vs b", or "" when all bits agree.
std::string first_difference(const std::vector<float>& want, const std::vector<float>& got, int64_t O) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], 4) != 0)
      return "row " + std::to_string(int64_t(i) / O) + " output " + std::to_string(int64_t(i) % O) + ": " +
             std::to_string(want[i]) + " vs " + std::to_string(got[i]);
  return "";
}

}  // namespace

TEST(Q8KGemm, EqualsTheOneRowKernelBitForBit) {
  int compared = 0;
  for (const Gemm& g : gemms()) {
    if (!g.runs) {
      std::printf("[ skipped  ] gemm %s: this processor lacks its instructions\n", g.name);
      continue;
    }
    for (BlockType type : kTypes)
      for (int64_t nb : {1, 3, 35}) {
        const int64_t O = nb == 35 ? 37 : 71, I = nb * 256;   // short last chunks (32 and 15 outputs a chunk)
        const RandomBlocks w = random_blocks(type, O, I, 300 + nb);
        const Tensor bias = randn({O}, 7);
        for (int64_t N : {8, 9, 15, 16, 17, 23, 37}) {
          if (nb == 35 && N != 17) continue;   // the widest rows once: the portable reference is slow
          const cpu::Q8KRows x = spread_rows(N, I, 11 * N + nb);
          for (const float* b : {static_cast<const float*>(nullptr), bias.f32()}) {
            const std::vector<float> want = over_threads(cpu::q8k_outputs_portable, x, *w.q, b);
            const std::vector<float> got = over_threads(g.run, x, *w.q, b);
            ASSERT_EQ(first_difference(want, got, O), "")
                << g.name << " " << block_type_name(type) << " nb " << nb << " N " << N << (b ? " bias" : "");
            compared += int(want.size());
          }
        }
      }
  }
  std::printf("[ measure ] %d K-quant GEMM outputs equal to the portable one-row kernel's bit for bit\n", compared);
}

// The GEMM adds two quads' products in one int16 before it scales them (q8k_gemm.h): the
// largest such sum, 4 x 63 x 127 = 32004 (Q6_K codes at 63, activation codes at +-127), must
// come out as the one-row kernel's. Every code byte 0xFF (Q4_K 15, Q5_K 31, Q6_K 63; the
// 6-bit scales and mins 63); the activations +-1 with one sign per quad, so every quad's codes
// are all 127 or all -127 (Q8_K maps the row's first largest |x| to -127), the signs uneven so
// that the sums do not cancel.
TEST(Q8KGemm, TheLargestQuadSumsAreExact) {
  const int64_t O = 19, I = 768, N = 16;
  Tensor x = Tensor::zeros({N, I});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < I; ++i) x.f32()[n * I + i] = ((i / 4 * 7 + n * 3) % 5 < 2) ? -1.0f : 1.0f;
  cpu::Q8KRows xq;
  cpu::quantize_rows_q8k(x.f32(), N, I, xq);
  for (int64_t i = 0; i < N * I; ++i) ASSERT_EQ(std::abs(int(xq.q[size_t(i)])), 127) << "element " << i;
  for (const Gemm& g : gemms()) {
    if (!g.runs) continue;
    for (BlockType type : kTypes) {
      RandomBlocks w = random_blocks(type, O, I, 60);
      const size_t f16_at = type == BlockType::Q6_K ? 208 : 0, f16_bytes = type == BlockType::Q6_K ? 2 : 4;
      for (size_t at = 0; at < w.bytes->size(); at += w.q->block_bytes())
        for (size_t k = 0; k < w.q->block_bytes(); ++k)
          if (k < f16_at || k >= f16_at + f16_bytes) (*w.bytes)[at + k] = 0xFF;
      if (type == BlockType::Q6_K)   // its int8 scales: 127 and -128 rather than 0xFF's -1
        for (size_t at = 0; at < w.bytes->size(); at += w.q->block_bytes())
          for (int k = 0; k < 16; ++k) (*w.bytes)[at + 192 + size_t(k)] = k % 2 ? 0x80 : 0x7F;
      EXPECT_EQ(first_difference(over_threads(cpu::q8k_outputs_portable, xq, *w.q, nullptr),
                                 over_threads(g.run, xq, *w.q, nullptr), O),
                "")
          << g.name << " " << block_type_name(type);
    }
  }
}

TEST(Q8KGemm, WritesOnlyItsSliceOfTheRealRows) {
  const int64_t O = 45, I = 512, N = 10, o0 = 5, o1 = 38;   // an odd slice, a group of 8 and one of 2
  for (const Gemm& g : gemms()) {
    if (!g.runs) continue;
    for (BlockType type : kTypes) {
      const RandomBlocks w = random_blocks(type, O, I, 21);
      const cpu::Q8KRows x = spread_rows(N, I, 22);
      std::vector<float> got(size_t(N * O + 64), NAN);   // 64 more: a write past the last row shows
      g.run(got.data(), x, *w.q, nullptr, o0, o1);
      const std::vector<float> want = over_threads(cpu::q8k_outputs_portable, x, *w.q, nullptr);
      testing_util::expect_only_the_slice_written(got, want, N, O, o0, o1, g.name);
    }
  }
}

TEST(Q8KGemm, EachSimdBuildOfTheKQuantFamilyHasItsGemm) {
  const auto& builds = cpu::kernel_table().q8k_matmul.builds;
  EXPECT_EQ(builds[int(cpu::Isa::portable)].gemm, nullptr);   // the reference has no GEMM form
  EXPECT_EQ(builds[int(cpu::Isa::avx2)].gemm, cpu::q8k_gemm_outputs_avx2);
  EXPECT_EQ(builds[int(cpu::Isa::avx512)].gemm, cpu::q8k_gemm_outputs_avx512);
}

// q8k_matmul (what the backend calls) gives the portable numbers on either side of the GEMM's
// threshold.
TEST(Q8KGemm, Q8KMatmulAtAndBelowTheThreshold) {
  const int64_t O = 33, I = 768;
  for (BlockType type : kTypes) {
    const RandomBlocks w = random_blocks(type, O, I, 40);
    for (int64_t N : {cpu::kQ8KGemmMinRows - 1, cpu::kQ8KGemmMinRows}) {
      const cpu::Q8KRows x = spread_rows(N, I, 41 + N);
      std::vector<float> got(size_t(N * O), NAN);
      cpu::q8k_matmul(got.data(), x, *w.q, nullptr);
      EXPECT_EQ(first_difference(over_threads(cpu::q8k_outputs_portable, x, *w.q, nullptr), got, O), "")
          << block_type_name(type) << " N " << N;
    }
  }
}
