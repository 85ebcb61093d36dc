// Prefill's matmul over GGUF blocks held without a float32 copy (lib/backend/cpu/block_prefill.h)
// against sgemm on the same weights dequantized block by block (random_blocks.h): Q8_0, Q4_1,
// Q4_K, Q5_K and Q6_K, output counts that are not a multiple of the panel height nor of the thread count,
// token counts that are multiples of nothing (1, 9, 13, 131), with and without bias, on 1 and
// 3 threads. Then the blocks-only tensor itself (Tensor::from_blocks) and CpuBackend's use of
// it: linear (decode over the blocks, prefill over panels, LMSCOPE_CPU_BLOCKS=0) and embed.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_prefill.h"
#include "backend/cpu/cpu_backend.h"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::all_block_types;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;
using lmscope::test::close;

namespace {


bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.f32(), b.f32(), size_t(a.numel()) * 4) == 0;
}

// Runs `body` on `threads` OpenMP threads, restoring the previous count.
template <class Body>
void with_threads(int threads, const Body& body) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  body();
  omp_set_num_threads(before);
}

}  // namespace

TEST(BlockPrefill, PanelHeightFollowsTheRowWidth) {
  // 2 MiB of float32 rows: 576 columns (2304 bytes) -> 910 rows; 8960 -> 58; 65536 -> 8,
  // raised to 16.
  EXPECT_EQ(cpu::prefill_panel_rows(576), 910);
  EXPECT_EQ(cpu::prefill_panel_rows(8960), 58);
  EXPECT_EQ(cpu::prefill_panel_rows(65536), cpu::kPrefillMinRows);
}

// The panel's values are the loader's, bit for bit, whichever implementation runs: every
// byte value and scales of either sign (random_blocks.h), rows from the middle of the matrix.
TEST(BlockPrefill, PanelDequantizationIsBitIdenticalToTheLoaders) {
  for (BlockType type : all_block_types()) {
    const int64_t I = 5 * block_elems(type);
    RandomBlocks b = random_blocks(type, 40, I, 11);
    std::vector<float> want(size_t(7 * I)), got(size_t(7 * I), NAN);
    dequantize_block_rows(*b.q, 30, 7, want.data());
    EXPECT_EQ(0, std::memcmp(want.data(), b.w.f32() + 30 * I, want.size() * 4)) << "dequantize_block_rows";
    cpu::dequantize_panel(*b.q, 30, 7, got.data());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << "dequantize_panel " << block_type_name(type);
    if (cpu::dequantize_panel_simd_available()) {
      std::fill(got.begin(), got.end(), NAN);
      cpu::dequantize_panel_avx2(*b.q, 30, 7, got.data());
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << "avx2";
    }
  }
  if (!cpu::dequantize_panel_simd_available()) std::printf("this processor has no AVX2: portable path only\n");
}

TEST(BlockPrefill, MatchesSgemmOnTheDequantizedWeights) {
  CpuBackend cpu;
  for (BlockType type : all_block_types())
    for (int64_t blocks : {1, 18, 129}) {
      const int64_t I = is_k_quant(type) ? 256 * (blocks == 129 ? 17 : blocks == 18 ? 6 : 1) : 32 * blocks;
      // Two full panels and 5 rows more: the last panel is short, and 3 threads split the
      // outputs at places that are not panel boundaries.
      const int64_t O = 2 * cpu::prefill_panel_rows(I) + 5;
      RandomBlocks b = random_blocks(type, O, I, uint64_t(O + I));
      const Tensor bias = randn({O}, 9);
      for (int64_t N : {1, 9, 13, 131}) {
        const Tensor x = randn({N, I}, uint64_t(N + 5));
        for (bool with_bias : {false, true}) {
          Tensor ref = cpu.alloc({N, O});
          cpu.linear(ref, x, b.w, with_bias ? bias : Tensor());   // float32 values only: sgemm
          for (int threads : {1, 3}) {
            std::vector<float> out(size_t(N * O), NAN);
            with_threads(threads, [&] {
              cpu::block_prefill_matmul(out.data(), x.f32(), *b.q, with_bias ? bias.f32() : nullptr, N);
            });
            EXPECT_TRUE(close(out.data(), ref))
                << block_type_name(type) << " N=" << N << " O=" << O << " I=" << I
                << (with_bias ? " +bias" : "") << " threads=" << threads;
          }
        }
      }
    }
}

TEST(BlockPrefill, BlocksOnlyTensorHasNoFloatsUntilAsked) {
  RandomBlocks b = random_blocks(BlockType::Q4_1, 5, 64, 1);
  const Tensor t = Tensor::from_blocks(b.q);
  EXPECT_EQ(t.shape(), (Shape{5, 64}));
  EXPECT_TRUE(t.defined());
  EXPECT_FALSE(t.has_storage());
  EXPECT_EQ(t.raw(), nullptr);
  EXPECT_THROW(t.f32(), std::logic_error);
  EXPECT_TRUE(same_bits(t.values_f32(), b.w));
  EXPECT_TRUE(same_bits(t.to_f32(), b.w));
  EXPECT_TRUE(t.same_storage(t.reshape({64, 5})));
  EXPECT_FALSE(t.same_storage(Tensor::from_blocks(random_blocks(BlockType::Q4_1, 5, 64, 1).q)));
  EXPECT_TRUE(same_bits(b.w.values_f32(), b.w));
  EXPECT_EQ(b.w.values_f32().raw(), b.w.raw()) << "a float32 tensor is its own values";
}

// rows_f32: rows [r0, r0 + n) as to_f32 gives them, for blocks, F32 and F16; rows past the
// first axis refused.
TEST(BlockPrefill, RowsF32AreToF32sRows) {
  RandomBlocks b = random_blocks(BlockType::Q4_1, 5, 64, 2);
  Tensor half = Tensor::zeros({5, 64}, DType::F16);
  auto* h = static_cast<uint16_t*>(half.raw());
  for (int64_t i = 0; i < half.numel(); ++i) h[i] = uint16_t(0x3C00 + i * 37 % 2048);   // 1.0 .. 2.0 and on
  for (const Tensor& t : {Tensor::from_blocks(b.q), b.w, half}) {
    const Tensor all = t.to_f32();
    std::vector<float> rows(3 * 64, NAN);
    t.rows_f32(1, 3, rows.data());
    EXPECT_EQ(std::memcmp(rows.data(), all.f32() + 64, rows.size() * 4), 0) << dtype_name(t.dtype());
    EXPECT_THROW(t.rows_f32(3, 3, rows.data()), std::out_of_range);
    EXPECT_THROW(t.rows_f32(-1, 1, rows.data()), std::out_of_range);
  }
}

// linear on a blocks-only weight: block_matmul up to kBlockMatmulMaxRows rows, the panels
// beyond, and the panels for every N under LMSCOPE_CPU_BLOCKS=0; always close to sgemm on
// the float32 values.
TEST(BlockPrefill, LinearOnBlocksOnlyWeights) {
  RandomBlocks b = random_blocks(BlockType::Q8_0, 37, 96, 4);
  const Tensor W = Tensor::from_blocks(b.q), bias = randn({37}, 2);
  CpuBackend cpu;
  ::setenv("LMSCOPE_CPU_BLOCKS", "0", 1);
  CpuBackend off;
  ::unsetenv("LMSCOPE_CPU_BLOCKS");
  for (int64_t N : {int64_t(1), cpu::kBlockMatmulMaxRows, cpu::kBlockMatmulMaxRows + 1, int64_t(40)}) {
    const Tensor x = randn({N, 96}, uint64_t(N));
    Tensor ref = cpu.alloc({N, 37}), got = cpu.alloc({N, 37}), got_off = off.alloc({N, 37});
    cpu.linear(ref, x, b.w, bias);
    cpu.linear(got, x, W, bias);
    off.linear(got_off, x, W, bias);
    EXPECT_TRUE(close(got.f32(), ref)) << "N=" << N;
    EXPECT_TRUE(close(got_off.f32(), ref)) << "N=" << N << " LMSCOPE_CPU_BLOCKS=0";
    std::vector<float> panels(size_t(N * 37)), blocks(size_t(N * 37));
    cpu::block_prefill_matmul(panels.data(), x.f32(), *b.q, bias.f32(), N);
    EXPECT_EQ(0, std::memcmp(got_off.f32(), panels.data(), panels.size() * 4)) << "N=" << N << ": not the panels";
    if (N <= cpu::kBlockMatmulMaxRows) {
      cpu::block_matmul(blocks.data(), x.f32(), *b.q, bias.f32(), N);
      EXPECT_EQ(0, std::memcmp(got.f32(), blocks.data(), blocks.size() * 4)) << "N=" << N << ": not block_matmul";
    } else {
      EXPECT_EQ(0, std::memcmp(got.f32(), panels.data(), panels.size() * 4)) << "N=" << N << ": not the panels";
    }
  }
}

// The embedding lookup of a blocks-only table dequantizes the rows it copies: bit for bit the
// rows of the float32 table.
TEST(BlockPrefill, EmbedDequantizesTheRowsOfABlocksOnlyTable) {
  RandomBlocks b = random_blocks(BlockType::Q8_0, 50, 64, 7);
  CpuBackend cpu;
  Tensor ids = Tensor::zeros({1, 4}, DType::I32);
  const int32_t pick[4] = {0, 49, 17, 17};
  std::memcpy(ids.i32(), pick, sizeof pick);
  Tensor got = cpu.alloc({1, 4, 64}), want = cpu.alloc({1, 4, 64});
  cpu.embed(got, ids, Tensor::from_blocks(b.q));
  cpu.embed(want, ids, b.w);
  EXPECT_TRUE(same_bits(got, want));
  ids.i32()[1] = 50;
  EXPECT_THROW(cpu.embed(got, ids, Tensor::from_blocks(b.q)), std::runtime_error);
}
