// --cpu-activations q8 (lib/backend/cpu/q8_matmul.h, kernels/q8_activations.cuh):
//  * the portable quantizer against a straightforward restatement of llama.cpp's
//    quantize_row_q8_0/_1 (its own rounding to even; the fp16 scales rounded by arithmetic,
//    tests/engine/f16_reference.h), on random blocks and on the edge cases: an all-zero block,
//    one huge value, values landing exactly on .5 after scaling, negative zero;
//  * the portable matmul against sgemm on the dequantized weights and the exact activations,
//    within the bound int8 rounding implies (derived at q8_bound);
//  * the AVX2 and AVX-512 VNNI kernels against the portable one, bit for bit;
//  * CpuBackend's q8 mode (linear, linear_group) running exactly those numbers, for any N.
// Every 32-weight block type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), N = 1..8 and 37, odd block
// counts, output counts the threads do not divide.
#include <gtest/gtest.h>

#include "tests/engine/f16_reference.h"

#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/over_rows.h"
#include "backend/cpu/q8_matmul.h"
#include "kernels/q8_activations.cuh"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::random_blocks;
using lmscope::test::RandomBlocks;
using lmscope::test::randn;

namespace {

// ---- the straightforward restatement ---------------------------------------------------
int round_even(float v) {   // floor, then the tie to the even neighbour
  const double f = std::floor(double(v)), frac = double(v) - f;
  int r = int(f);
  if (frac > 0.5 || (frac == 0.5 && (r % 2 != 0))) ++r;
  return r;
}
float to_f16(float v) { return test_f16::round_trip(v); }   // by arithmetic, not our bit manipulation

struct Expected {
  std::vector<int> q;
  float d, s;
};
Expected straightforward(const float* x) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f, id = amax == 0.0f ? 0.0f : 127.0f / amax;
  Expected e;
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    e.q.push_back(round_even(x[j] * id));
    sum += e.q.back();
  }
  e.d = to_f16(d);
  e.s = to_f16(d * float(sum));
  return e;
}

void expect_block(const float* x, const cpu::Q8Rows& r, int64_t b, const char* what) {
  const Expected e = straightforward(x);
  for (int j = 0; j < 32; ++j) ASSERT_EQ(int(r.q[size_t(b * 32 + j)]), e.q[size_t(j)]) << what << " element " << j;
  EXPECT_EQ(r.d(b), e.d) << what;
  EXPECT_EQ(r.s(b), e.s) << what;
}

// ---- the matmul bound ------------------------------------------------------------------
// Each activation x_j becomes d_h * q_j with q_j = round(x_j * 127 / amax) and d_h = f16(d),
// d = amax / 127. So |x_j - d q_j| <= d/2 (plus float's rounding of x_j * id: 1e-5 d), and
// |d q_j - d_h q_j| <= 127 |d - d_h|. With w_j the dequantized weight, the block contributes
// at most sum_j |w_j| (d/2 + 127 |d - d_h|) to |q8 - exact|. A Q4_1 block adds its min m times
// the rounding of s: m (d_h sum q - s_h), and so does a Q5_1 block. Float accumulation: 1e-5 of sum |w_j x_j| more.
double q8_bound(const float* w, const float* x, int64_t I, BlockType type, const uint8_t* wrow, size_t bb) {
  double bound = 0, mag = 0;
  for (int64_t b = 0; b < I / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const double d = amax / 127.0f, dh = to_f16(float(d));
    double wsum = 0;
    for (int j = 0; j < 32; ++j) wsum += std::fabs(w[b * 32 + j]), mag += std::fabs(double(w[b * 32 + j]) * xb[j]);
    bound += wsum * (d * (0.5 + 1e-5) + 127 * std::fabs(d - dh));
    if (has_min(type)) {
      const Expected e = straightforward(xb);
      int sum = 0;
      for (int v : e.q) sum += v;
      bound += std::fabs(quant::load_f16(wrow + b * bb + 2)) * std::fabs(dh * sum - e.s);
    }
  }
  return bound + 1e-5 * (1 + mag);
}

cpu::Q8Rows quantized(const Tensor& x, int64_t I) {
  cpu::Q8Rows r;
  cpu::quantize_rows_q8(x.f32(), x.numel() / I, I, r);
  return r;
}

std::vector<float> run(cpu::Q8Outputs kernel, const cpu::Q8Rows& x, const QuantBlocks& W, const float* bias) {
  std::vector<float> out(size_t(x.rows * W.rows), NAN);
  cpu::over_outputs(W.rows, [&](int64_t o0, int64_t o1) { kernel(out.data(), x, W, bias, o0, o1); });
  return out;
}

struct Simd {
  const char* name;
  cpu::Q8Outputs run;
  bool runs;
};
std::vector<Simd> simd_kernels() {
  return {{"avx2", cpu::q8_outputs_avx2, cpu::q8_avx2_available()},
          {"avx512", cpu::q8_outputs_avx512, cpu::q8_avx512_available()}};
}

const std::vector<int64_t> kRows = {1, 2, 3, 4, 5, 6, 7, 8, 37};
const std::vector<BlockType>& kQ8Types = test::q8_block_types();

}  // namespace

TEST(Q8Quantize, RandomBlocksMatchTheStraightforwardFormula) {
  for (float spread : {1e-3f, 1.0f, 300.0f}) {
    Tensor x = randn({5, 7 * 32}, 11);
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] *= spread;
    const cpu::Q8Rows r = quantized(x, 7 * 32);
    for (int64_t b = 0; b < 5 * 7; ++b) expect_block(x.f32() + b * 32, r, b, "random");
  }
}

TEST(Q8Quantize, EdgeCases) {
  std::vector<float> x(4 * 32, 0.0f);
  // block 0: all zero (d = 0, id = 0: every code 0, s = 0)
  // block 1: one huge value among small ones: it alone gets 127, the rest round to 0
  for (int j = 0; j < 32; ++j) x[32 + j] = 1e-3f * float(j - 16);
  x[32 + 5] = -3e30f;
  // block 2: amax = 127 makes id exactly 1, so x * id lands on .5: ties go to the even code
  const float ties[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -125.5f};
  for (int j = 0; j < 8; ++j) x[64 + j] = ties[j];
  x[64 + 31] = 127.0f;
  // block 3: negative zero next to ordinary values
  x[96] = -0.0f;
  x[97] = 2.0f;
  Tensor xt = Tensor::zeros({1, 128});
  std::memcpy(xt.f32(), x.data(), x.size() * sizeof(float));
  const cpu::Q8Rows r = quantized(xt, 128);
  for (int b = 0; b < 4; ++b) expect_block(x.data() + 32 * b, r, b, "edge");
  // The expectations by hand, so that a shared mistake in both formulas cannot pass:
  for (int j = 0; j < 32; ++j) EXPECT_EQ(r.q[size_t(j)], 0);
  EXPECT_EQ(r.d(0), 0.0f);
  EXPECT_EQ(r.q[32 + 5], -127);
  EXPECT_EQ(r.q[32 + 4], 0);
  EXPECT_EQ(r.d(1), to_f16(3e30f / 127.0f));   // above fp16's range: inf, as llama.cpp stores it
  const int8_t tie_codes[] = {0, 2, 2, 0, -2, -2, 126, -126};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(r.q[size_t(64 + j)], tie_codes[j]) << ties[j];
  EXPECT_EQ(r.d(2), 1.0f);
  EXPECT_EQ(r.q[96], 0);
  EXPECT_EQ(r.q[97], 127);
}

// round_half_even's host form (llama.cpp's nearest_int, an addition of 1.5 * 2^23) against
// std::nearbyint in the default rounding mode: every quarter in [-130, 130] (the ties, and the
// codes' whole range), the neighbours of each tie, and random values up to 2^21.
TEST(Q8Quantize, RoundHalfEvenIsNearbyint) {
  std::vector<float> v;
  for (int k = -520; k <= 520; ++k) {
    const float q = 0.25f * float(k);
    v.insert(v.end(), {q, std::nextafter(q, -1e9f), std::nextafter(q, 1e9f)});
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-2097152.0f, 2097152.0f);
  for (int i = 0; i < 10000; ++i) v.push_back(wide(rng));
  for (float x : v) ASSERT_EQ(q8::round_half_even(x), int(std::nearbyint(x))) << x;
}

TEST(Q8Matmul, PortableWithinTheInt8RoundingBoundOfSgemm) {
  for (BlockType type : kQ8Types)
    for (int64_t nb : {1, 3, 5, 49}) {
      const int64_t O = 67, I = nb * 32;
      const RandomBlocks w = random_blocks(type, O, I, 100 + nb);
      for (int64_t N : kRows) {
        const Tensor x = randn({N, I}, 7 * N + nb);
        std::vector<float> exact(size_t(N * O));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(N), int(O), int(I), 1.0f, x.f32(), int(I),
                    w.w.f32(), int(I), 0.0f, exact.data(), int(O));
        const std::vector<float> got = run(cpu::q8_outputs_portable, quantized(x, I), *w.q, nullptr);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t o = 0; o < O; ++o) {
            const double bound = q8_bound(w.w.f32() + o * I, x.f32() + n * I, I, type,
                                          w.q->data + o * w.q->row_bytes(), w.q->block_bytes());
            ASSERT_LE(std::fabs(double(got[size_t(n * O + o)]) - exact[size_t(n * O + o)]), bound)
                << block_type_name(type) << " nb " << nb << " N " << N << " o " << o;
          }
      }
    }
}

TEST(Q8Matmul, SimdKernelsMatchThePortableOneBitForBit) {
  for (const Simd& k : simd_kernels()) {
    if (!k.runs) {
      std::printf("[ skipped  ] %s: this processor lacks its instructions\n", k.name);
      continue;
    }
    for (BlockType type : kQ8Types)
      for (int64_t nb : {1, 3, 18, 49}) {
        const int64_t O = 131, I = nb * 32;
        const RandomBlocks w = random_blocks(type, O, I, 200 + nb);
        const Tensor bias = randn({O}, 3);
        for (int64_t N : kRows) {
          const cpu::Q8Rows x = quantized(randn({N, I}, 9 * N + nb), I);
          for (const float* b : {static_cast<const float*>(nullptr), bias.f32()}) {
            const std::vector<float> ref = run(cpu::q8_outputs_portable, x, *w.q, b), got = run(k.run, x, *w.q, b);
            ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * 4), 0)
                << k.name << " " << block_type_name(type) << " nb " << nb << " N " << N;
          }
        }
      }
  }
}

// A Q8_0 weight of -128 (a valid byte the quantizer never writes) moves its sign onto the
// activation: -(-127) still fits, so the product stays exact.
TEST(Q8Matmul, Q8_0WeightOfMinus128) {
  RandomBlocks w = random_blocks(BlockType::Q8_0, 3, 64, 5);
  for (int64_t o = 0; o < 3; ++o)
    for (int j = 0; j < 32; ++j) (*w.bytes)[size_t(o * w.q->row_bytes() + 2 + j)] = 0x80;
  Tensor x = randn({2, 64}, 8);
  x.f32()[0] = -50.0f;   // a code of -127
  const cpu::Q8Rows q = quantized(x, 64);
  const std::vector<float> ref = run(cpu::q8_outputs_portable, q, *w.q, nullptr);
  for (const Simd& k : simd_kernels()) {
    if (k.runs) {
      EXPECT_EQ(run(k.run, q, *w.q, nullptr), ref) << k.name;
    }
  }
}

TEST(Q8Matmul, CpuBackendRunsTheChosenKernelForAnyN) {
  CpuBackend q8(CpuActivations::Q8), f32;
  for (BlockType type : kQ8Types) {
    const int64_t O = 45, I = 96;
    const RandomBlocks wa = random_blocks(type, O, I, 41), wb = random_blocks(type, O + 3, I, 42);
    const Tensor A = Tensor::from_blocks(wa.q), Bw = Tensor::from_blocks(wb.q), bias = randn({O}, 4), none;
    for (int64_t N : kRows) {
      const Tensor x = randn({1, N, I}, N);
      const cpu::Q8Rows xq = quantized(x, I);
      Tensor out = Tensor::zeros({1, N, O}), ga = Tensor::zeros({1, N, O}), gb = Tensor::zeros({1, N, O + 3});
      q8.linear(out, x, A, bias);
      EXPECT_EQ(std::vector<float>(out.f32(), out.f32() + out.numel()),
                run(cpu::q8_outputs_portable, xq, *wa.q, bias.f32())) << "linear N " << N;
      q8.linear_group(x, {{&ga, &A, &bias}, {&gb, &Bw, &none}});
      EXPECT_EQ(std::vector<float>(ga.f32(), ga.f32() + ga.numel()),
                run(cpu::q8_outputs_portable, xq, *wa.q, bias.f32())) << "group N " << N;
      EXPECT_EQ(std::vector<float>(gb.f32(), gb.f32() + gb.numel()), run(cpu::q8_outputs_portable, xq, *wb.q, nullptr))
          << "group N " << N;
      // f32 mode ignores all this: its numbers differ from q8's.
      Tensor exact = Tensor::zeros({1, N, O});
      f32.linear(exact, x, A, bias);
      EXPECT_NE(std::memcmp(exact.f32(), out.f32(), out.nbytes()), 0);
    }
  }
}

TEST(Q8Matmul, HookCodesAreTheMatmulsOwn) {
  CpuBackend q8(CpuActivations::Q8), f32;
  const RandomBlocks w = random_blocks(BlockType::Q4_1, 8, 96, 3);
  const Tensor W = Tensor::from_blocks(w.q), dense = Tensor::zeros({8, 96});
  const Tensor x = randn({1, 5, 96}, 2);
  Tensor codes, scales;
  EXPECT_FALSE(f32.quantize_activations_for_hook(x, W, codes, scales));
  EXPECT_FALSE(q8.quantize_activations_for_hook(x, dense, codes, scales));   // float32 weights stay float32
  // Q5_0 weights (a Q4_K_M file's fallback for rows not a multiple of 256) take q8 inputs too
  const RandomBlocks w5 = random_blocks(BlockType::Q5_0, 8, 96, 4);
  EXPECT_TRUE(q8.quantize_activations_for_hook(x, Tensor::from_blocks(w5.q), codes, scales));
  ASSERT_TRUE(q8.quantize_activations_for_hook(x, W, codes, scales));
  EXPECT_EQ(codes.shape(), x.shape());
  EXPECT_EQ(scales.shape(), (Shape{1, 5, 3}));
  const cpu::Q8Rows r = quantized(x, 96);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(codes.f32()[i], float(r.q[size_t(i)]));
  for (int64_t i = 0; i < 15; ++i) ASSERT_EQ(scales.f32()[i], r.d(i));
}

TEST(Q8Quantize, Avx2QuantizerMatchesThePortableOneBitForBit) {
  if (!cpu::q8_avx2_available()) GTEST_SKIP() << "this processor has no AVX2+FMA+F16C";
  Tensor x = randn({9, 32}, 21);   // blocks 0-5 made edge cases, 6-8 random
  for (int j = 0; j < 32; ++j) x.f32()[j] = 0.0f;                                  // all zero
  x.f32()[32 + 3] = 1e30f;                                                        // one huge value
  for (int j = 0; j < 32; ++j) x.f32()[64 + j] = float(j) - 15.5f;                // id = 1 (amax 127 below): .5 ties
  x.f32()[64 + 31] = 127.0f;
  x.f32()[128] = -0.0f;
  for (int j = 0; j < 32; ++j) x.f32()[160 + j] *= 1e-6f;                          // a tiny block: subnormal fp16 d
  std::vector<int8_t> qa(9 * 32), qb(9 * 32);
  std::vector<float> da(18), db(18);
  cpu::q8_quantize_portable(x.f32(), 9, qa.data(), da.data());
  cpu::q8_quantize_avx2(x.f32(), 9, qb.data(), db.data());
  EXPECT_EQ(qa, qb);
  EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size() * 4), 0);
}

TEST(Q8Matmul, MakeBackendTakesTheMode) {
  EXPECT_EQ(make_backend("cpu", "f32", "q8")->name(), "cpu");
  EXPECT_EQ(make_backend("auto", "f32", "q8")->name(), "cpu");   // q8 is the cpu backend's mode
  auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message([] { make_backend("cpu", "f32", "q4"); }), "--cpu-activations: unknown 'q4' (f32, q8)");
  EXPECT_EQ(message([] { make_backend("cuda", "f32", "q8"); }),
            "--cpu-activations q8: a cpu backend mode; use --backend cpu");
}
