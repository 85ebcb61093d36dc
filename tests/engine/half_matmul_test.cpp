// The matmul by bf16/f16 weights held as stored (lib/backend/cpu/half_matmul.h) against sgemm
// on the same values widened to float32 (the path before: a float32 copy of the matrix):
// bf16 and f16 (subnormal f16 values included), output and column counts that divide nothing
// (1, 7, 31, 33, 581 columns: a partial last chunk of 32), 1 to 8 rows, with and without
// bias; the AVX-512, AVX2 and portable implementations each, and bit for bit against each
// other (half_dot.h's arithmetic is theirs); a row's result the same in any batch and at any
// thread count; the group; prefill's panels bit for bit sgemm's on the float32 copy; and
// CpuBackend holding such a matrix as stored (prepare_weight, linear, linear_group, embed).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/block_matmul.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/half_matmul.h"
#include "kernels/dtype_convert.cuh"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::close;
using lmscope::test::randn;

namespace {

// A [O, I] bf16/f16 matrix of N(0, 0.05) values, one in 16 tiny (f16: subnormal), as a
// tensor with storage (what the safetensors loader gives), and its float32 widening.
struct RandomHalf {
  Tensor w;     // DType::BF16 or F16, [O, I]
  Tensor f32;   // the same values as float32
  cpu::HalfMatrix m() const { return {w.dtype(), w.dim(0), w.dim(1), static_cast<const uint16_t*>(w.raw())}; }
};

RandomHalf random_half(DType type, int64_t O, int64_t I, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  RandomHalf h;
  h.w = Tensor::zeros({O, I}, type);
  auto* bits = static_cast<uint16_t*>(h.w.raw());
  for (int64_t i = 0; i < O * I; ++i) {
    const float v = normal(rng) * (rng() % 16 == 0 ? 1e-4f : 1.0f);   // 5e-6 is an f16 subnormal
    bits[i] = type == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
  }
  h.f32 = h.w.to_f32();
  return h;
}

struct Impl {
  const char* name;
  cpu::HalfOutputs run;
  bool runs;   // this processor has the instructions
};
std::vector<Impl> implementations() {
  return {{"portable", cpu::half_matmul_portable_outputs, true},
          {"avx2", cpu::half_matmul_avx2_outputs, cpu::block_matmul_simd_available()},
          {"avx512", cpu::half_matmul_avx512_outputs, cpu::block_matmul_avx512_available()}};
}

const char* type_name(DType t) { return t == DType::BF16 ? "bf16" : "f16"; }

}  // namespace

TEST(HalfMatmul, EveryImplementationMatchesSgemmOnTheWidenedWeights) {
  CpuBackend cpu;
  for (DType type : {DType::BF16, DType::F16})
    for (auto [O, I] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 31}, {65, 33}, {9, 64}, {13, 581}})
      for (int64_t N : {1, 2, 3, 8}) {
        RandomHalf h = random_half(type, O, I, uint64_t(O * 131 + I * 7 + N));
        Tensor x = randn({N, I}, uint64_t(N + 11)), bias = randn({O}, 12);
        for (bool with_bias : {false, true}) {
          Tensor ref = cpu.alloc({N, O});
          cpu.linear(ref, x, h.f32, with_bias ? bias : Tensor());   // float32: sgemm
          const std::string where = std::string(type_name(type)) + " N=" + std::to_string(N) + " O=" +
                                    std::to_string(O) + " I=" + std::to_string(I) + (with_bias ? " +bias" : "");
          std::vector<float> portable;
          for (const auto& [name, run, runs] : implementations()) {
            if (!runs) continue;
            std::vector<float> out(size_t(N * O), NAN);
            run(out.data(), x.f32(), h.m(), with_bias ? bias.f32() : nullptr, N, 0, O);
            EXPECT_TRUE(close(out.data(), ref)) << where << " " << name << " vs sgemm";
            if (portable.empty()) {
              portable = out;
            } else {
              EXPECT_EQ(0, std::memcmp(out.data(), portable.data(), out.size() * 4)) << where << " " << name << " vs portable";
            }
          }
        }
      }
  for (const auto& [name, run, runs] : implementations())
    if (!runs) std::printf("this processor does not run the %s implementation: not tested\n", name);
}

// Row n of an 8-row product is the 1-row product of x's row n, bit for bit; and half_matmul's
// split of the outputs over 1 or 3 threads changes no bit.
TEST(HalfMatmul, AResultDependsNeitherOnTheRowsBesideItNorOnTheThreads) {
  const int64_t O = 37, I = 70, N = cpu::kBlockMatmulMaxRows;
  for (DType type : {DType::BF16, DType::F16}) {
    RandomHalf h = random_half(type, O, I, 5);
    Tensor x = randn({N, I}, 6), bias = randn({O}, 7);
    for (const auto& [name, run, runs] : implementations()) {
      if (!runs) continue;
      std::vector<float> batch(size_t(N * O)), one(static_cast<size_t>(O));
      run(batch.data(), x.f32(), h.m(), bias.f32(), N, 0, O);
      for (int64_t n = 0; n < N; ++n) {
        run(one.data(), x.f32() + n * I, h.m(), bias.f32(), 1, 0, O);
        EXPECT_EQ(0, std::memcmp(one.data(), batch.data() + n * O, size_t(O) * 4)) << name << " row " << n;
      }
    }
    std::vector<float> t1(size_t(N * O)), t3(size_t(N * O));
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    cpu::half_matmul(t1.data(), x.f32(), h.m(), bias.f32(), N);
    omp_set_num_threads(3);
    cpu::half_matmul(t3.data(), x.f32(), h.m(), bias.f32(), N);
    omp_set_num_threads(before);
    EXPECT_EQ(0, std::memcmp(t1.data(), t3.data(), t1.size() * 4)) << type_name(type) << " 1 vs 3 threads";
  }
}

TEST(HalfMatmul, GroupGivesEachMatrixItsOwnResult) {
  RandomHalf a = random_half(DType::BF16, 65, 96, 21), b = random_half(DType::BF16, 7, 96, 22),
             c = random_half(DType::F16, 1, 96, 23);
  for (int64_t N : {1, 3, 8}) {
    Tensor x = randn({N, 96}, uint64_t(40 + N)), bias = randn({65}, 41);
    std::vector<float> ga(size_t(N * 65)), gb(size_t(N * 7)), gc(static_cast<size_t>(N)), sa(ga.size()), sb(gb.size()), sc(gc.size());
    const cpu::HalfMatmulJob jobs[] = {{ga.data(), a.m(), bias.f32()}, {gb.data(), b.m(), nullptr}, {gc.data(), c.m(), nullptr}};
    cpu::half_matmul_group(x.f32(), N, jobs, 3);
    cpu::half_matmul(sa.data(), x.f32(), a.m(), bias.f32(), N);
    cpu::half_matmul(sb.data(), x.f32(), b.m(), nullptr, N);
    cpu::half_matmul(sc.data(), x.f32(), c.m(), nullptr, N);
    EXPECT_EQ(0, std::memcmp(ga.data(), sa.data(), ga.size() * 4)) << "N=" << N;
    EXPECT_EQ(0, std::memcmp(gb.data(), sb.data(), gb.size() * 4)) << "N=" << N;
    EXPECT_EQ(0, std::memcmp(gc.data(), sc.data(), gc.size() * 4)) << "N=" << N;
  }
}

// Prefill widens panels of rows (exactly: the float32 copy's values) and runs sgemm on them in
// the pieces the float32 path uses (sgemm_piece(O) rows, which a 2 MiB panel holds here): the
// result is the float32 path's, bit for bit, at 1 and 3 threads.
TEST(HalfMatmul, PrefillIsTheFloat32PathBitForBit) {
  CpuBackend cpu;
  for (DType type : {DType::BF16, DType::F16}) {
    RandomHalf h = random_half(type, 301, 77, 31);
    std::vector<float> widened(size_t(301 * 77), NAN), simd(widened.size(), NAN);
    cpu::widen_half_rows(h.m(), 0, 301, widened.data());
    EXPECT_EQ(0, std::memcmp(widened.data(), h.f32.f32(), widened.size() * 4)) << type_name(type) << " widening";
    if (cpu::block_matmul_simd_available()) {
      cpu::widen_half_rows_avx2(h.m(), 3, 290, simd.data());
      EXPECT_EQ(0, std::memcmp(simd.data(), h.f32.f32() + 3 * 77, size_t(290 * 77) * 4)) << type_name(type) << " avx2";
    }
    for (int64_t N : {9, 13, 131})
      for (int threads : {1, 3}) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        Tensor x = randn({N, 77}, uint64_t(N)), bias = randn({301}, 2), ref = cpu.alloc({N, 301}),
               out = cpu.alloc({N, 301});
        cpu.linear(ref, x, h.f32, bias);
        cpu::half_prefill_matmul(out.f32(), x.f32(), h.m(), bias.f32(), N);
        omp_set_num_threads(before);
        EXPECT_EQ(0, std::memcmp(out.f32(), ref.f32(), size_t(N * 301) * 4))
            << type_name(type) << " N=" << N << " threads=" << threads;
      }
  }
}

// prepare_weight keeps a bf16/f16 matrix as stored (the same bytes, no copy) and widens a
// vector; linear decodes over the stored values (half_matmul) and prefills through panels
// (the float32 path's bits), LMSCOPE_CPU_BLOCKS=0 sends decode through panels too;
// linear_group gives what linear gives; embed widens the rows it copies.
TEST(HalfMatmul, CpuBackendHoldsMatricesAsStored) {
  CpuBackend cpu;
  RandomHalf h = random_half(DType::BF16, 33, 64, 3), g = random_half(DType::BF16, 17, 64, 4);
  const Tensor w = cpu.prepare_weight(h.w);
  EXPECT_EQ(DType::BF16, w.dtype());
  EXPECT_EQ(h.w.raw(), w.raw()) << "the matrix was copied";
  const Tensor v = cpu.prepare_weight(h.w.reshape({33 * 64}));
  EXPECT_EQ(DType::F32, v.dtype()) << "a vector is widened";
  const Tensor none, bias = randn({17}, 8);
  for (int64_t N : {int64_t(1), cpu::kBlockMatmulMaxRows, cpu::kBlockMatmulMaxRows + 1}) {
    Tensor x = randn({N, 64}, uint64_t(N)), plain = cpu.alloc({N, 33}), held = cpu.alloc({N, 33});
    cpu.linear(plain, x, h.f32, none);
    cpu.linear(held, x, w, none);
    if (N <= cpu::kBlockMatmulMaxRows) {
      std::vector<float> direct(size_t(N * 33));
      cpu::half_matmul(direct.data(), x.f32(), h.m(), nullptr, N);
      EXPECT_EQ(0, std::memcmp(direct.data(), held.f32(), direct.size() * 4)) << "N=" << N << ": not half_matmul";
      EXPECT_TRUE(close(held.f32(), plain)) << "N=" << N;
    } else {
      EXPECT_EQ(0, std::memcmp(held.f32(), plain.f32(), size_t(N * 33) * 4)) << "prefill: the float32 path's bits";
    }
    Tensor ga = cpu.alloc({N, 33}), gb = cpu.alloc({N, 17}), lb = cpu.alloc({N, 17});
    cpu.linear_group(x, {{&ga, &w, &none}, {&gb, &g.w, &bias}});
    cpu.linear(lb, x, g.w, bias);
    EXPECT_EQ(0, std::memcmp(ga.f32(), held.f32(), size_t(N * 33) * 4)) << "group N=" << N;
    EXPECT_EQ(0, std::memcmp(gb.f32(), lb.f32(), size_t(N * 17) * 4)) << "group N=" << N;
  }
  ::setenv("LMSCOPE_CPU_BLOCKS", "0", 1);
  CpuBackend off;
  ::unsetenv("LMSCOPE_CPU_BLOCKS");
  Tensor x = randn({1, 64}, 1), plain = off.alloc({1, 33}), held = off.alloc({1, 33});
  off.linear(plain, x, h.f32, none);
  off.linear(held, x, w, none);
  EXPECT_EQ(0, std::memcmp(held.f32(), plain.f32(), 33 * 4)) << "LMSCOPE_CPU_BLOCKS=0";

  Tensor ids = Tensor::zeros({1, 3}, DType::I32);
  ids.i32()[0] = 32, ids.i32()[1] = 0, ids.i32()[2] = 7;
  Tensor rows = cpu.alloc({1, 3, 64});
  cpu.embed(rows, ids, w);
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(0, std::memcmp(rows.f32() + k * 64, h.f32.f32() + ids.i32()[k] * 64, 64 * 4)) << "embed row " << k;
}
