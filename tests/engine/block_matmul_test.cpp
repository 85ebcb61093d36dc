// Decode's matmul over GGUF blocks (lib/backend/cpu/block_matmul.h) against sgemm on the same
// weights dequantized by the loader's own per-block functions (kernels/quant_blocks.cuh):
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (widths of 1, 3, 18 and 48 blocks of 32) and Q4_K,
// Q5_K, Q6_K (1, 3, 6 and 9 super-blocks of 256), 1 to 8 rows, output counts that do not divide
// between the threads, with and without bias; the AVX-512, AVX2 and portable implementations
// each (the SIMD ones also against the portable one, their reference); a row's result the same
// in any batch; which one block_matmul runs; CpuBackend::linear choosing it only when it
// should; and the x86 kernels' vector decoding of the Q4_K/Q5_K scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/avx2.h"
#include "backend/cpu/block_matmul.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernel_table.h"
#include "kernels/quant_blocks.cuh"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::all_block_types;
using lmscope::test::close;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;

namespace {

using Kernel = void (*)(float*, const float*, const QuantBlocks&, const float*, int64_t);
struct Simd {
  const char* name;
  Kernel run;
  bool runs;   // this processor has the instructions
};
std::vector<Simd> simd_kernels() {
  return {{"avx2", cpu::block_matmul_avx2, cpu::block_matmul_simd_available()},
          {"avx512", cpu::block_matmul_avx512, cpu::block_matmul_avx512_available()}};
}

}  // namespace

TEST(BlockMatmul, EveryImplementationMatchesSgemmOnTheDequantizedWeights) {
  CpuBackend cpu;
  for (BlockType type : all_block_types())
    for (auto [O, blocks] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 3}, {65, 18}, {9, 48}})
      for (int64_t N : {1, 2, 3, 8}) {
        const int64_t I = is_k_quant(type) ? 256 * (blocks == 18 ? 6 : blocks == 48 ? 9 : blocks) : 32 * blocks;
        RandomBlocks b = random_blocks(type, O, I, uint64_t(O * 31 + I + N));
        Tensor x = randn({N, I}, uint64_t(N + 5)), bias = randn({O}, 9);
        for (bool with_bias : {false, true}) {
          Tensor ref = cpu.alloc({N, O});
          cpu.linear(ref, x, b.w, with_bias ? bias : Tensor());   // no blocks attached: sgemm
          const std::string where = std::string(block_type_name(type)) + " N=" +
                                    std::to_string(N) + " O=" + std::to_string(O) + " I=" + std::to_string(I) +
                                    (with_bias ? " +bias" : "");
          const float* bp = with_bias ? bias.f32() : nullptr;
          Tensor portable = cpu.alloc({N, O});
          std::fill(portable.f32(), portable.f32() + N * O, NAN);
          cpu::block_matmul_portable(portable.f32(), x.f32(), *b.q, bp, N);
          EXPECT_TRUE(close(portable.f32(), ref)) << where << " portable";
          for (const auto& [name, run, runs] : simd_kernels()) {
            if (!runs) continue;
            std::vector<float> out(size_t(N * O), NAN);
            run(out.data(), x.f32(), *b.q, bp, N);
            EXPECT_TRUE(close(out.data(), ref)) << where << " " << name << " vs sgemm";
            EXPECT_TRUE(close(out.data(), portable)) << where << " " << name << " vs portable";
          }
        }
      }
  for (const auto& [name, run, runs] : simd_kernels())
    if (!runs) std::printf("this processor does not run the %s implementation: not tested\n", name);
}

// Each implementation computes a row with the same operations in the same order whatever the
// number of rows beside it (the kernels are instantiated per row count, but a row's blocks go
// to its own accumulators in the same arrangement): row n of an 8-row product is the 1-row
// product of x's row n, bit for bit, so a sequence decodes to the same numbers in any batch.
TEST(BlockMatmul, ARowsResultDoesNotDependOnTheRowsBesideIt) {
  std::vector<Simd> all = simd_kernels();
  all.push_back({"portable", cpu::block_matmul_portable, true});
  for (BlockType type : all_block_types()) {
    const int64_t O = 13, I = 5 * block_elems(type), N = cpu::kBlockMatmulMaxRows;   // 5 blocks: an odd last one
    RandomBlocks b = random_blocks(type, O, I, 77);
    Tensor x = randn({N, I}, 78), bias = randn({O}, 79);
    for (const auto& [name, run, runs] : all) {
      if (!runs) continue;
      for (int64_t rows = 2; rows <= N; ++rows) {
        std::vector<float> batch(size_t(rows * O), NAN), one(size_t(O), NAN);
        run(batch.data(), x.f32(), *b.q, bias.f32(), rows);
        for (int64_t n = 0; n < rows; ++n) {
          run(one.data(), x.f32() + n * I, *b.q, bias.f32(), 1);
          EXPECT_EQ(0, std::memcmp(one.data(), batch.data() + n * O, size_t(O) * 4))
              << name << " " << block_type_name(type) << " row " << n << " of " << rows;
        }
      }
    }
  }
}

// linear takes the blocks for up to kBlockMatmulMaxRows rows, sgemm beyond (prefill) and
// when LMSCOPE_CPU_BLOCKS=0: then the result is sgemm's, bit for bit.
TEST(BlockMatmul, LinearUsesTheBlocksOnlyForDecode) {
  RandomBlocks b = random_blocks(BlockType::Q4_1, 33, 64, 3);
  Tensor with = b.w.reshape(b.w.shape());
  with.set_blocks(b.q);
  CpuBackend cpu;
  for (int64_t N : {int64_t(1), cpu::kBlockMatmulMaxRows, cpu::kBlockMatmulMaxRows + 1}) {
    Tensor x = randn({N, 64}, uint64_t(N)), plain = cpu.alloc({N, 33}), blocked = cpu.alloc({N, 33});
    cpu.linear(plain, x, b.w, Tensor());
    cpu.linear(blocked, x, with, Tensor());
    EXPECT_TRUE(close(blocked.f32(), plain)) << "N=" << N;
    std::vector<float> portable(size_t(N * 33));
    if (N <= cpu::kBlockMatmulMaxRows) {
      cpu::block_matmul_portable(portable.data(), x.f32(), *b.q, nullptr, N);
      EXPECT_TRUE(close(portable.data(), blocked)) << "N=" << N << ": the blocks were not used";
    } else {
      EXPECT_EQ(0, std::memcmp(blocked.f32(), plain.f32(), size_t(N * 33) * 4)) << "prefill must stay on sgemm";
    }
  }
  ::setenv("LMSCOPE_CPU_BLOCKS", "0", 1);
  CpuBackend off;
  ::unsetenv("LMSCOPE_CPU_BLOCKS");
  Tensor x = randn({1, 64}, 1), plain = off.alloc({1, 33}), blocked = off.alloc({1, 33});
  off.linear(plain, x, b.w, Tensor());
  off.linear(blocked, x, with, Tensor());
  EXPECT_EQ(0, std::memcmp(blocked.f32(), plain.f32(), 33 * 4)) << "LMSCOPE_CPU_BLOCKS=0";
}

// Several matrices in one parallel region (a layer's q/k/v, gate/up): each output is computed
// by the same per-output code whichever thread takes it, so every job's result is
// block_matmul's alone, bit for bit; and sgemm's on its dequantized weights up to rounding.
TEST(BlockMatmul, GroupGivesEachMatrixItsOwnResult) {
  CpuBackend cpu;
  // Q4_1/Q8_0 as a SmolLM2 file mixes them; Q4_K/Q6_K/Q5_K as a Q4_K_M/Q5_K_M file does
  for (const auto& [ta, tb, tc, I] : std::vector<std::tuple<BlockType, BlockType, BlockType, int64_t>>{
           {BlockType::Q4_1, BlockType::Q8_0, BlockType::Q4_1, 96},
           {BlockType::Q4_K, BlockType::Q6_K, BlockType::Q5_K, 512}})
  for (int64_t N : {1, 3, 8}) {
    RandomBlocks a = random_blocks(ta, 65, I, 21), b = random_blocks(tb, 7, I, 22), c = random_blocks(tc, 1, I, 23);
    Tensor x = randn({N, I}, uint64_t(40 + N)), bias = randn({65}, 41);
    std::vector<float> ga(size_t(N * 65), NAN), gb(size_t(N * 7), NAN), gc(size_t(N), NAN);
    const cpu::BlockMatmulJob jobs[] = {{ga.data(), a.q.get(), bias.f32()}, {gb.data(), b.q.get(), nullptr},
                                        {gc.data(), c.q.get(), nullptr}};
    cpu::block_matmul_group(x.f32(), N, jobs, 3);
    std::vector<float> sa(ga.size()), sb(gb.size()), sc(gc.size());
    cpu::block_matmul(sa.data(), x.f32(), *a.q, bias.f32(), N);
    cpu::block_matmul(sb.data(), x.f32(), *b.q, nullptr, N);
    cpu::block_matmul(sc.data(), x.f32(), *c.q, nullptr, N);
    const std::string where = std::string(block_type_name(ta)) + " N=" + std::to_string(N);
    EXPECT_EQ(0, std::memcmp(ga.data(), sa.data(), ga.size() * 4)) << where;
    EXPECT_EQ(0, std::memcmp(gb.data(), sb.data(), gb.size() * 4)) << where;
    EXPECT_EQ(0, std::memcmp(gc.data(), sc.data(), gc.size() * 4)) << where;
    Tensor ref = cpu.alloc({N, 65});
    cpu.linear(ref, x, a.w, bias);
    EXPECT_TRUE(close(ga.data(), ref)) << where << " vs sgemm";
  }
}

// CpuBackend::linear_group gives what linear gives for each job: over the blocks for decode,
// over sgemm past kBlockMatmulMaxRows rows.
TEST(BlockMatmul, LinearGroupEqualsLinearForEachJob) {
  RandomBlocks a = random_blocks(BlockType::Q4_1, 33, 64, 5), b = random_blocks(BlockType::Q8_0, 17, 64, 6);
  Tensor wa = a.w.reshape(a.w.shape()), wb = b.w.reshape(b.w.shape());
  wa.set_blocks(a.q);
  wb.set_blocks(b.q);
  CpuBackend cpu;
  const Tensor none, bias = randn({17}, 8);
  for (int64_t N : {int64_t(1), cpu::kBlockMatmulMaxRows + 1}) {
    Tensor x = randn({N, 64}, uint64_t(N + 9));
    Tensor ga = cpu.alloc({N, 33}), gb = cpu.alloc({N, 17}), la = cpu.alloc({N, 33}), lb = cpu.alloc({N, 17});
    cpu.linear_group(x, {{&ga, &wa, &none}, {&gb, &wb, &bias}});
    cpu.linear(la, x, wa, none);
    cpu.linear(lb, x, wb, bias);
    EXPECT_EQ(0, std::memcmp(ga.f32(), la.f32(), size_t(N * 33) * 4)) << "N=" << N;
    EXPECT_EQ(0, std::memcmp(gb.f32(), lb.f32(), size_t(N * 17) * 4)) << "N=" << N;
  }
}

#if defined(__x86_64__)
namespace {
LMSCOPE_AVX2 void x86_scales_mins(const uint8_t* blk, uint8_t* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), cpu::scales_mins_k4_x86(blk));
}
}  // namespace

// scales_mins_k4_x86 (the q8 and exact K-quant kernels' decoding of a super-block's eight
// 6-bit scales and mins) against ggml's get_scale_min_k4, one scale at a time
// (quant::scale_min_k4), on random bytes and on all-zero and all-one scale bytes.
TEST(BlockMatmul, VectorScaleDecodingIsGetScaleMinK4) {
  if (!cpu::processor_runs(cpu::Isa::avx2)) GTEST_SKIP() << "this processor has no AVX2 + FMA + F16C";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int t = 0; t < 2000; ++t) {
    uint8_t blk[16];   // d, dmin (not read), then the 12 bytes of scales
    for (uint8_t& b : blk) b = uint8_t(t == 0 ? 0 : t == 1 ? 255 : byte(rng));
    uint8_t got[16];
    x86_scales_mins(blk, got);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      quant::scale_min_k4(j, blk + 4, &sc, &m);
      ASSERT_EQ(got[j], sc) << "scale " << j << ", block " << t;
      ASSERT_EQ(got[8 + j], m) << "min " << j << ", block " << t;
    }
  }
}
#endif

// Under --cpu-activations q8 a Q5_0 matrix takes int8 activations (q8_matmul.h, held to
// llama.cpp in tests/llamacpp): in a group beside a Q8_0 matrix the rows are quantized once for
// both, with the numbers each gives alone, which differ from the float32 activations' (decode
// and prefill alike), and quant.* codes are made for it.
TEST(BlockMatmul, Q5_0TakesInt8ActivationsUnderQ8) {
  CpuBackend q8(CpuActivations::Q8), f32;
  const RandomBlocks a = random_blocks(BlockType::Q5_0, 29, 96, 61), c = random_blocks(BlockType::Q8_0, 7, 96, 62);
  const Tensor A = Tensor::from_blocks(a.q), C = Tensor::from_blocks(c.q), bias = randn({29}, 8), none;
  for (int64_t N : {1, 3, 12}) {
    const Tensor x = randn({1, N, 96}, uint64_t(N));
    auto values = [](const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); };
    Tensor exact = Tensor::zeros({1, N, 29}), got = Tensor::zeros({1, N, 29}), ga = Tensor::zeros({1, N, 29}),
           gc = Tensor::zeros({1, N, 7}), lc = Tensor::zeros({1, N, 7});
    f32.linear(exact, x, A, bias);
    q8.linear(got, x, A, bias);
    EXPECT_NE(values(got), values(exact)) << "N " << N;
    q8.linear_group(x, {{&ga, &A, &bias}, {&gc, &C, &none}});
    q8.linear(lc, x, C, none);
    EXPECT_EQ(values(ga), values(got)) << "group N " << N;
    EXPECT_EQ(values(gc), values(lc)) << "group N " << N;
    Tensor codes, scales;
    EXPECT_TRUE(q8.quantize_activations_for_hook(x, A, codes, scales));
    EXPECT_TRUE(q8.quantize_activations_for_hook(x, C, codes, scales));
  }
}
