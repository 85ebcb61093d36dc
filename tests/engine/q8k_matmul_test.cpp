// --cpu-activations q8 on K-quant weights (lib/backend/cpu/q8k_matmul.h,
// kernels/q8_k_activations.cuh); tests/llamacpp holds both to llama.cpp's own functions:
//  * the Q8_K quantizer on hand-worked super-blocks (all zero, the largest value negative, a tie
//    of magnitudes, .5 ties after scaling);
//  * the portable matmul against sgemm on the dequantized weights and the exact activations,
//    within the bound int8 rounding implies (q8k_bound);
//  * the AVX2 and AVX-512 kernels against the portable one, bit for bit (each the processor runs;
//    the AVX-512 one adds its integers in other groupings, which must not show);
//  * CpuBackend's q8 mode (linear, linear_group: K-quants together, and a group mixing a
//    K-quant with a Q8_0 weight) running exactly those numbers, and the hook's codes and scales.
// Q4_K, Q5_K, Q6_K; N = 1..8 and 37; odd super-block counts; output counts the threads do not
// divide.
#include <gtest/gtest.h>

#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8k_matmul.h"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;

namespace {

const std::vector<BlockType> kTypes = {BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K};
const std::vector<int64_t> kRows = {1, 2, 3, 4, 5, 6, 7, 8, 37};

cpu::Q8KRows quantized(const Tensor& x, int64_t I) {
  cpu::Q8KRows r;
  cpu::quantize_rows_q8k(x.f32(), x.numel() / I, I, r);
  return r;
}

std::vector<float> run(cpu::Q8KOutputs kernel, const cpu::Q8KRows& x, const QuantBlocks& W, const float* bias) {
  std::vector<float> out(size_t(x.rows * W.rows), NAN);
  cpu::over_outputs(W.rows, [&](int64_t o0, int64_t o1) { kernel(out.data(), x, W, bias, o0, o1); });
  return out;
}

// Each activation x_j becomes d q_j with q_j = round(x_j * iscale), iscale = -127 / max, d =
// 1 / iscale (|d| = amax / 127 up to a rounding): |x_j - d q_j| <= |d| / 2, plus float's
// roundings of iscale, of x_j * iscale and of d (a few ulps: 1e-5 |d| covers them). So a
// super-block contributes at most sum_j |w_j| |d| (0.5 + 1e-5). Float accumulation in another
// order: 1e-5 of sum |w_j x_j| more.
double q8k_bound(const float* w, const float* x, int64_t I) {
  double bound = 0, mag = 0;
  for (int64_t b = 0; b < I / 256; ++b) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[b * 256 + j]));
    double wsum = 0;
    for (int j = 0; j < 256; ++j) wsum += std::fabs(w[b * 256 + j]), mag += std::fabs(double(w[b * 256 + j]) * x[b * 256 + j]);
    bound += wsum * (amax / 127.0) * (0.5 + 1e-5);
  }
  return bound + 1e-5 * (1 + mag);
}

}  // namespace

TEST(Q8KQuantize, HandWorkedSuperBlocks) {
  Tensor x = Tensor::zeros({1, 4 * 256});
  float* v = x.f32();
  // super-block 0: all zero -> d 0, codes 0, bsums 0
  // super-block 1: the largest |x| is negative: iscale = -127 / -127 = 1, so x * iscale lands
  // on .5 exactly: ties go to the even code
  v[256 + 0] = -127.0f, v[256 + 1] = 0.5f, v[256 + 2] = 1.5f, v[256 + 3] = 2.5f, v[256 + 4] = 63.5f;
  // super-block 2: |x| ties between 3 and -3: the first (3) is max, iscale = -127/3 < 0
  v[512 + 10] = 3.0f, v[512 + 20] = -3.0f, v[512 + 30] = 1.0f;
  // super-block 3: one value: its code is -127 whatever its size
  v[768 + 255] = 7e20f;
  const cpu::Q8KRows r = quantized(x, 1024);
  for (int j = 0; j < 256; ++j) ASSERT_EQ(r.q[size_t(j)], 0);
  EXPECT_EQ(r.d[0], 0.0f);
  for (int g = 0; g < 16; ++g) EXPECT_EQ(r.bsums[size_t(g)], 0);
  EXPECT_EQ(r.q[256 + 0], -127);
  EXPECT_EQ(r.q[256 + 1], 0);
  EXPECT_EQ(r.q[256 + 2], 2);
  EXPECT_EQ(r.q[256 + 3], 2);
  EXPECT_EQ(r.q[256 + 4], 64);
  EXPECT_EQ(r.d[1], 1.0f);
  EXPECT_EQ(r.bsums[16], -127 + 0 + 2 + 2 + 64);
  EXPECT_EQ(r.q[512 + 10], -127);
  EXPECT_EQ(r.q[512 + 20], 127);
  EXPECT_EQ(r.q[512 + 30], int8_t(std::nearbyint(-127.0f / 3.0f)));
  EXPECT_EQ(r.d[2], 1.0f / (-127.0f / 3.0f));
  EXPECT_EQ(r.q[768 + 255], -127);
  EXPECT_EQ(r.bsums[3 * 16 + 15], -127);
}

TEST(Q8KMatmul, PortableWithinTheInt8RoundingBoundOfSgemm) {
  for (BlockType type : kTypes)
    for (int64_t nb : {1, 3, 7}) {
      const int64_t O = 37, I = nb * 256;
      const RandomBlocks w = random_blocks(type, O, I, 300 + nb);
      for (int64_t N : {1, 3, 8}) {
        const Tensor x = randn({N, I}, 11 * N + nb);
        std::vector<float> exact(size_t(N * O));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(N), int(O), int(I), 1.0f, x.f32(), int(I),
                    w.w.f32(), int(I), 0.0f, exact.data(), int(O));
        const std::vector<float> got = run(cpu::q8k_outputs_portable, quantized(x, I), *w.q, nullptr);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o)
            ASSERT_LE(std::fabs(double(got[size_t(n * O + o)]) - exact[size_t(n * O + o)]),
                      q8k_bound(w.w.f32() + o * I, x.f32() + n * I, I))
                << block_type_name(type) << " nb " << nb << " N " << N << " o " << o;
      }
    }
}

TEST(Q8KMatmul, SimdKernelsMatchThePortableOneBitForBit) {
  int ran = 0;
  for (const cpu::Q8KImplementation& k : cpu::q8k_simd_implementations()) {
    if (!k.runs) {
      std::printf("[ skipped ] %s: this processor does not run it\n", k.name);
      continue;
    }
    ++ran;
    for (BlockType type : kTypes)
      for (int64_t nb : {1, 6, 9}) {
        const int64_t O = 131, I = nb * 256;
        const RandomBlocks w = random_blocks(type, O, I, 400 + nb);
        const Tensor bias = randn({O}, 3);
        for (int64_t N : kRows) {
          const cpu::Q8KRows x = quantized(randn({N, I}, 13 * N + nb), I);
          const std::vector<float> ref = run(cpu::q8k_outputs_portable, x, *w.q, bias.f32()),
                                   got = run(k.outputs, x, *w.q, bias.f32());
          ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * 4), 0)
              << k.name << " " << block_type_name(type) << " nb " << nb << " N " << N;
        }
      }
  }
  if (ran == 0) GTEST_SKIP() << "this processor has no AVX2+FMA+F16C";
}

TEST(Q8KMatmul, CpuBackendRunsItForKQuantWeights) {
  CpuBackend q8(CpuActivations::Q8);
  const int64_t I = 512;
  const RandomBlocks a = random_blocks(BlockType::Q4_K, 45, I, 51), b = random_blocks(BlockType::Q6_K, 9, I, 52),
                     c = random_blocks(BlockType::Q8_0, 5, I, 53);
  const Tensor A = Tensor::from_blocks(a.q), B = Tensor::from_blocks(b.q), C = Tensor::from_blocks(c.q),
               bias = randn({45}, 4), none;
  cpu::Q8KOutputs chosen = cpu::q8k_outputs_portable;
  for (const cpu::Q8KImplementation& k : cpu::q8k_simd_implementations())
    if (std::string(cpu::q8k_matmul_kernel()) == k.name) chosen = k.outputs;
  for (int64_t N : kRows) {
    const Tensor x = randn({1, N, I}, N);
    const cpu::Q8KRows xq = quantized(x, I);
    auto values = [](const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); };
    Tensor out = Tensor::zeros({1, N, 45}), ga = Tensor::zeros({1, N, 45}), gb = Tensor::zeros({1, N, 9}),
           gc = Tensor::zeros({1, N, 5}), lc = Tensor::zeros({1, N, 5});
    q8.linear(out, x, A, bias);
    EXPECT_EQ(values(out), run(chosen, xq, *a.q, bias.f32())) << "linear N " << N;
    q8.linear_group(x, {{&ga, &A, &bias}, {&gb, &B, &none}});
    EXPECT_EQ(values(ga), run(chosen, xq, *a.q, bias.f32())) << "group N " << N;
    EXPECT_EQ(values(gb), run(chosen, xq, *b.q, nullptr)) << "group N " << N;
    // A group mixing the families: each weight as linear takes it.
    q8.linear_group(x, {{&ga, &A, &none}, {&gc, &C, &none}});
    q8.linear(lc, x, C, none);
    EXPECT_EQ(values(ga), run(chosen, xq, *a.q, nullptr)) << "mixed group N " << N;
    EXPECT_EQ(values(gc), values(lc)) << "mixed group N " << N;
  }
  Tensor codes, scales;
  const Tensor x = randn({1, 3, I}, 2);
  ASSERT_TRUE(q8.quantize_activations_for_hook(x, B, codes, scales));
  EXPECT_EQ(scales.shape(), (Shape{1, 3, 2}));
  const cpu::Q8KRows r = quantized(x, I);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(codes.f32()[i], float(r.q[size_t(i)]));
  for (int64_t i = 0; i < 6; ++i) ASSERT_EQ(scales.f32()[i], r.d[size_t(i)]);
}
