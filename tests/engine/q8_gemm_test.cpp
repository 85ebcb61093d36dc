// The q8 prefill GEMM (lib/backend/cpu/q8_gemm.h) against the one-row kernel it stands in for:
//  * every output of q8_gemm_outputs_<kernel> equals q8_outputs_portable's bit for bit (so the
//    one-row SIMD kernels' and llama.cpp's: tests/engine/q8_matmul_test.cpp,
//    tests/llamacpp/ggml_q8_test.cpp), for every 32-weight block type, row counts that fill groups of
//    8 exactly and that leave a short last group (9, 15, 17, 23, 37), row lengths of 1 to 152
//    blocks (4864 columns, a whole group row past L1), output counts that leave a short last
//    chunk, with and without a bias, split over the threads and as one odd slice;
//  * edge inputs: Q8_0 codes of -128, all-zero activation rows (d_a = 0), activation blocks from
//    1e-6 to 1e3 in magnitude;
//  * a call writes exactly its slice of outputs for its real rows: the padding of the last
//    group, and outputs outside [o0, o1), stay untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8_gemm.h"
#include "backend/cpu/q8_matmul.h"
#include "gemm_slice_check.h"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;

namespace {

struct Gemm {
  const char* name;
  cpu::Q8Outputs run;
  bool runs;
};
std::vector<Gemm> gemms() {
  return {{"avx2", cpu::q8_gemm_outputs_avx2, cpu::q8_avx2_available()},
          {"avx512", cpu::q8_gemm_outputs_avx512, cpu::q8_avx512_available()}};
}

const std::vector<BlockType>& kQ8Types = test::q8_block_types();

// Rows [N, I] of standard-normal values, each block scaled by 10^u, u uniform in [-6, 3]; row 1
// (where there is one) all zero.
cpu::Q8Rows spread_rows(int64_t N, int64_t I, uint64_t seed) {
  Tensor x = randn({N, I}, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> exponent(-6.0f, 3.0f);
  for (int64_t b = 0; b < N * I / 32; ++b) {
    const float s = std::pow(10.0f, exponent(rng));
    for (int j = 0; j < 32; ++j) x.f32()[b * 32 + j] *= s;
  }
  if (N > 1)
    for (int64_t i = 0; i < I; ++i) x.f32()[I + i] = 0.0f;
  cpu::Q8Rows r;
  cpu::quantize_rows_q8(x.f32(), N, I, r);
  return r;
}

std::vector<float> over_threads(cpu::Q8Outputs kernel, const cpu::Q8Rows& x, const QuantBlocks& W, const float* bias) {
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

TEST(Q8Gemm, EqualsTheOneRowKernelBitForBit) {
  int compared = 0;
  for (const Gemm& g : gemms()) {
    if (!g.runs) {
      std::printf("[ skipped  ] gemm %s: this processor lacks its instructions\n", g.name);
      continue;
    }
    for (BlockType type : kQ8Types)
      for (int64_t nb : {1, 3, 28, 152}) {
        const int64_t O = 71, I = nb * 32;   // 71: two chunks of 32 and a short one
        const RandomBlocks w = random_blocks(type, O, I, 300 + nb);
        const Tensor bias = randn({O}, 7);
        for (int64_t N : {8, 9, 15, 16, 17, 23, 37}) {
          const cpu::Q8Rows x = spread_rows(N, I, 11 * N + nb);
          for (const float* b : {static_cast<const float*>(nullptr), bias.f32()}) {
            const std::vector<float> want = over_threads(cpu::q8_outputs_portable, x, *w.q, b);
            const std::vector<float> got = over_threads(g.run, x, *w.q, b);
            ASSERT_EQ(first_difference(want, got, O), "")
                << g.name << " " << block_type_name(type) << " nb " << nb << " N " << N << (b ? " bias" : "");
            compared += int(want.size());
          }
        }
      }
  }
  std::printf("[ measure ] %d GEMM outputs equal to the portable one-row kernel's bit for bit\n", compared);
}

TEST(Q8Gemm, Q8_0CodesOfMinus128) {
  const int64_t O = 5, I = 64, N = 11;
  RandomBlocks w = random_blocks(BlockType::Q8_0, O, I, 5);
  for (int64_t o = 0; o < O; ++o)
    for (int j = 0; j < 32; j += 3) (*w.bytes)[size_t(o * w.q->row_bytes() + 2 + j)] = 0x80;
  Tensor x = randn({N, I}, 8);
  x.f32()[0] = -50.0f;   // a code of -127
  cpu::Q8Rows q;
  cpu::quantize_rows_q8(x.f32(), N, I, q);
  const std::vector<float> want = over_threads(cpu::q8_outputs_portable, q, *w.q, nullptr);
  for (const Gemm& g : gemms()) {
    if (g.runs) {
      EXPECT_EQ(first_difference(want, over_threads(g.run, q, *w.q, nullptr), O), "") << g.name;
    }
  }
}

TEST(Q8Gemm, WritesOnlyItsSliceOfTheRealRows) {
  const int64_t O = 45, I = 96, N = 10, o0 = 5, o1 = 38;   // an odd slice, a group of 8 and one of 2
  for (const Gemm& g : gemms()) {
    if (!g.runs) continue;
    for (BlockType type : kQ8Types) {
      const RandomBlocks w = random_blocks(type, O, I, 21);
      const cpu::Q8Rows x = spread_rows(N, I, 22);
      std::vector<float> got(size_t(N * O + 64), NAN);   // 64 more: a write past the last row shows
      g.run(got.data(), x, *w.q, nullptr, o0, o1);
      const std::vector<float> want = over_threads(cpu::q8_outputs_portable, x, *w.q, nullptr);
      testing_util::expect_only_the_slice_written(got, want, N, O, o0, o1, g.name);
    }
  }
}

TEST(Q8Gemm, EachSimdBuildOfTheQ8FamilyHasItsGemm) {
  const auto& builds = cpu::kernel_table().q8_matmul.builds;
  EXPECT_EQ(builds[int(cpu::Isa::portable)].gemm, nullptr);   // the reference has no GEMM form
  EXPECT_EQ(builds[int(cpu::Isa::avx2)].gemm, cpu::q8_gemm_outputs_avx2);
  EXPECT_EQ(builds[int(cpu::Isa::avx512)].gemm, cpu::q8_gemm_outputs_avx512);
}
