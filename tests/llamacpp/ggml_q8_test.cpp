// --cpu-activations q8 on GGUF Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL weights (every 32-weight
// block type lmscope holds as stored) against llama.cpp's own functions (the
// libggml-base.so / libggml-cpu.so of scripts/build-llamacpp.sh, tests/llamacpp/ggml_lib.h),
// for every q8 kernel lmscope can pick on the processor the test runs on (portable always, avx2
// and avx512 where q8_avx2_available() / q8_avx512_available(): LMSCOPE_CPU_KERNEL's choices).
// Every quantized input is llama.cpp's: the weights from its reference quantizer
// (ggml_get_type_traits(type)->from_float_ref, what llama-quantize writes into a GGUF), the
// activations from the CPU backend's quantizer of the weight type's vec_dot_type
// (ggml_get_type_traits_cpu(Q8_0 / Q8_1)->from_float: quantize_row_q8_0 / _q8_1, what its matmul
// runs on the activations; Q4_0's, Q5_0's and IQ4_NL's vec_dot_type is Q8_0, Q4_1's and Q5_1's
// Q8_1; their vec_dot ggml_vec_dot_q4_0_q8_0, ..., ggml_vec_dot_iq4_nl_q8_0). What must hold:
//  * the weights: our dequantization of llama.cpp's blocks (dequantize_block, the loader's) equals
//    its own to_float (dequantize_row_*) bit for bit;
//  * activation quantization: ours (q8_quantize_portable and, where it runs, q8_quantize_avx2)
//    gives llama.cpp's block_q8_0 / block_q8_1 bit for bit: the 32 codes, d and (q8_1) s;
//  * the dot products: each output of q8_outputs_<kernel>, for every row of a batch of N = 1..17
//    (tile heights 1..8 and more tiles; outputs in groups of 4 and 2, an odd count so that a
//    group repeats its last output), and of the prefill GEMM q8_gemm_outputs_<kernel> (q8_gemm.h:
//    groups of 8 rows, a short last group padded), equals vec_dot(weight row, activation row) bit for bit
//    (q8_matmul.h: llama.cpp's x86 order: per block an exact integer dot in 8 lanes, one FMA a
//    lane with the combined scale d_w * d_a, Q4_1's fma(m, s, summs) on the side, the lanes
//    summed as hsum_float_8, then + summs). The llama.cpp build is -march=native, so its
//    vec_dot is the AVX2 (or AVX-512) one of the processor the test runs on; the order is the
//    same in both, and the integer dot is exact whatever instruction computes it. The check tells
//    orders apart: the same products summed block after block in one float differ from vec_dot
//    in 24-54 of the 63 outputs of each shape below (measured).
// Inputs: random rows with a spread of block magnitudes (10^-6..10^3) and edge blocks: all zero
// (d = 0), constant, one huge value, the largest value of either sign. Row lengths of 1, 7 and
// 64 blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/q8_gemm.h"
#include "backend/cpu/q8_matmul.h"
#include "kernels/quant_blocks.cuh"
#include "tensor/quant_blocks.h"
#include "tests/engine/random_blocks.h"
#include "tests/gguf/gguf_test_util.h"   // bits
#include "tests/llamacpp/ggml_lib.h"

using namespace lmscope;
using namespace lmscope::ggml_lib;

namespace {

// ggml-common.h's block_q8_0 / block_q8_1 sizes (ggml_half d[, s]; int8_t qs[32]).
constexpr size_t kQ8_0Bytes = 34, kQ8_1Bytes = 36;

// Rows [N, I] with a spread of block magnitudes; the edge cases in the first blocks of row 0.
std::vector<float> rows(int64_t N, int64_t I, uint64_t seed) {
  const Tensor t = test::randn({N, I}, seed);
  std::vector<float> x(t.f32(), t.f32() + t.numel());
  std::mt19937_64 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> spread(-6.0f, 3.0f);
  for (int64_t b = 0; b < N * I / 32; ++b) {
    const float s = std::pow(10.0f, spread(rng));
    for (int j = 0; j < 32; ++j) x[size_t(b * 32 + j)] *= s;
  }
  if (I >= 5 * 32) {
    for (int j = 0; j < 32; ++j) x[size_t(j)] = 0.0f, x[size_t(32 + j)] = 0.75f;   // all zero; constant
    x[64 + 3] = 3e4f;                                                                // one huge value
    x[96 + 5] = -50.0f;                                                              // largest negative
    x[128 + 1] = 50.0f, x[128 + 2] = -50.0f;                                         // a tie of magnitudes
  }
  return x;
}

struct Case {
  BlockType type;
  int ggml_type, act_type;   // the weight's ggml type, its vec_dot_type
  size_t act_bytes;
};

// llama.cpp's quantization of x [N, I] as `type` (a whole row per call, as its matmul does).
std::vector<uint8_t> ggml_quantize(from_float_t f, const std::vector<float>& x, int64_t N, int64_t I,
                                   size_t block_size) {
  std::vector<uint8_t> out(size_t(N * I / 32) * block_size);
  for (int64_t n = 0; n < N; ++n) f(x.data() + n * I, out.data() + size_t(n * I / 32) * block_size, I);
  return out;
}

// llama.cpp's block_q8_0 / block_q8_1 rows as our Q8Rows (the scales widened, exactly; a
// block_q8_0 has no s: the Q8_0 kernels do not read it).
cpu::Q8Rows to_q8rows(const std::vector<uint8_t>& blocks, size_t block_size, int64_t N, int64_t I) {
  cpu::Q8Rows r;
  r.rows = N, r.cols = I;
  const int64_t nb = N * I / 32;
  r.q.resize(size_t(N * I));
  r.ds.resize(size_t(2 * nb));
  const size_t qs = block_size == kQ8_1Bytes ? 4 : 2;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks.data() + size_t(b) * block_size;
    std::memcpy(r.q.data() + b * 32, blk + qs, 32);
    r.ds[size_t(2 * b)] = quant::load_f16(blk);
    r.ds[size_t(2 * b + 1)] = block_size == kQ8_1Bytes ? quant::load_f16(blk + 2) : 0.0f;
  }
  return r;
}

struct Kernel {
  const char* name;
  cpu::Q8Outputs run;
  bool available;
};
std::vector<Kernel> kernels() {
  return {{"portable", cpu::q8_outputs_portable, true},
          {"avx2", cpu::q8_outputs_avx2, cpu::q8_avx2_available()},
          {"avx512", cpu::q8_outputs_avx512, cpu::q8_avx512_available()},
          {"gemm-avx2", cpu::q8_gemm_outputs_avx2, cpu::q8_avx2_available()},
          {"gemm-avx512", cpu::q8_gemm_outputs_avx512, cpu::q8_avx512_available()}};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {{BlockType::Q8_0, 8, 8, kQ8_0Bytes},   {BlockType::Q4_0, 2, 8, kQ8_0Bytes},
                                       {BlockType::Q4_1, 3, 9, kQ8_1Bytes},   {BlockType::Q5_0, 6, 8, kQ8_0Bytes},
                                       {BlockType::Q5_1, 7, 9, kQ8_1Bytes},   {BlockType::IQ4_NL, 20, 8, kQ8_0Bytes}};
  return c;
}

}  // namespace

TEST(GgmlQ8, ActivationQuantizationIsLlamaCpps) {
  SKIP_WITHOUT_GGML();
  const int64_t N = 3, I = 2048;
  const std::vector<float> x = rows(N, I, 5);
  int compared = 0;
  for (const Case& c : cases()) {
    ASSERT_EQ(ggml().traits_cpu(c.ggml_type)->vec_dot_type, c.act_type) << block_type_name(c.type);
    ASSERT_EQ(ggml().traits(c.act_type)->type_size, c.act_bytes);
    const std::vector<uint8_t> want = ggml_quantize(ggml().traits_cpu(c.act_type)->from_float, x, N, I, c.act_bytes);
    const cpu::Q8Rows ref = to_q8rows(want, c.act_bytes, N, I);
    struct Ours {
      const char* name;
      void (*run)(const float*, int64_t, int8_t*, float*);
      bool available;
    };
    for (const Ours& q : {Ours{"portable", cpu::q8_quantize_portable, true},
                          Ours{"avx2", cpu::q8_quantize_avx2, cpu::q8_avx2_available()}}) {
      if (!q.available) continue;
      std::vector<int8_t> codes(size_t(N * I));
      std::vector<float> ds(size_t(2 * N * I / 32));
      q.run(x.data(), N * I / 32, codes.data(), ds.data());
      EXPECT_EQ(codes, ref.q) << ggml().traits(c.act_type)->type_name << " codes, " << q.name;
      for (size_t b = 0; b < ds.size() / 2; ++b) {
        EXPECT_EQ(ggtest::bits(ref.ds[2 * b]), ggtest::bits(ds[2 * b])) << q.name << " d of block " << b;
        if (c.act_bytes == kQ8_1Bytes) {
          EXPECT_EQ(ggtest::bits(ref.ds[2 * b + 1]), ggtest::bits(ds[2 * b + 1])) << q.name << " s of block " << b;
        }
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 3);
}

TEST(GgmlQ8, WeightsDequantizeAsLlamaCpps) {
  SKIP_WITHOUT_GGML();
  const int64_t O = 5, I = 64 * 32;
  for (const Case& c : cases()) {
    ASSERT_EQ(ggml_type_of(c.type), uint32_t(c.ggml_type)) << block_type_name(c.type);
    const std::vector<float> w = rows(O, I, 50 + uint64_t(c.ggml_type));
    const std::vector<uint8_t> wq = ggml_quantize(ggml().traits(c.ggml_type)->from_float_ref, w, O, I, block_bytes(c.type));
    std::vector<float> want(size_t(O * I)), got(size_t(O * I), NAN);
    ggml().traits(c.ggml_type)->to_float(wq.data(), want.data(), O * I);
    dequantize_block_rows(QuantBlocks{c.type, O, I, wq.data(), nullptr}, 0, O, got.data());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(ggtest::bits(want[i]), ggtest::bits(got[i])) << block_type_name(c.type) << " element " << i;
  }
}

TEST(GgmlQ8, DotProductsAreLlamaCppsBitForBitOnEveryKernel) {
  SKIP_WITHOUT_GGML();
  const int64_t O = 7, kMaxN = 17;
  std::string ran;
  for (const Kernel& k : kernels()) ran += std::string(ran.empty() ? "" : ", ") + k.name + (k.available ? "" : " (not on this CPU)");
  int compared = 0;
  for (const Case& c : cases()) {
    const TypeTraitsCpu& tc = *ggml().traits_cpu(c.ggml_type);
    ASSERT_EQ(tc.vec_dot_type, c.act_type);
    ASSERT_EQ(ggml().traits(c.ggml_type)->type_size, block_bytes(c.type));
    for (const int64_t I : {32, 7 * 32, 64 * 32}) {
      const std::vector<float> w = rows(O, I, 100 + uint64_t(I) + uint64_t(c.ggml_type));
      const std::vector<uint8_t> wq = ggml_quantize(ggml().traits(c.ggml_type)->from_float_ref, w, O, I, block_bytes(c.type));
      const QuantBlocks W{c.type, O, I, wq.data(), nullptr};
      const std::vector<float> x = rows(kMaxN, I, 200 + uint64_t(I) + uint64_t(c.ggml_type));
      const std::vector<uint8_t> xq = ggml_quantize(ggml().traits_cpu(c.act_type)->from_float, x, kMaxN, I, c.act_bytes);
      std::vector<float> want(size_t(kMaxN * O));   // [n, o]
      for (int64_t n = 0; n < kMaxN; ++n)
        for (int64_t o = 0; o < O; ++o)
          tc.vec_dot(int(I), &want[size_t(n * O + o)], 0, wq.data() + size_t(o) * W.row_bytes(), 0,
                     xq.data() + size_t(n * I / 32) * c.act_bytes, 0, 1);
      for (const Kernel& k : kernels()) {
        if (!k.available) continue;
        for (int64_t N = 1; N <= kMaxN; ++N) {
          const cpu::Q8Rows xr = to_q8rows(xq, c.act_bytes, N, I);   // the first N rows
          std::vector<float> got(size_t(N * O), NAN);
          k.run(got.data(), xr, W, nullptr, 0, O);
          for (int64_t i = 0; i < N * O; ++i) {
            EXPECT_EQ(ggtest::bits(want[size_t(i)]), ggtest::bits(got[size_t(i)]))
                << block_type_name(c.type) << " I " << I << ", " << k.name << " kernel, N " << N << ": row " << i / O
                << " output " << i % O << ": " << want[size_t(i)] << " vs " << got[size_t(i)];
            ++compared;
          }
        }
      }
    }
  }
  std::printf("[ measure ] %d Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/IQ4_NL q8 dot products equal to llama.cpp's vec_dot bit for "
              "bit; kernels: %s\n",
              compared, ran.c_str());
}
