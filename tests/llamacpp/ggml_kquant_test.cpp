// --cpu-activations q8 on K-quant weights against llama.cpp's own functions, bit for bit: the
// libggml-cpu.so / libggml-base.so that scripts/build-llamacpp.sh builds, loaded with dlopen,
// their public type traits (ggml_get_type_traits_cpu(type)->from_float and ->vec_dot,
// ggml_get_type_traits(type)->to_float). Skipped with one line when llama.cpp is not built.
//  * Q8_K activation quantization: from_float of GGML_TYPE_Q8_K against quantize_rows_q8k (the
//    d, the 256 codes and the 16 bsums of each super-block), on random rows of several scales and
//    on edge cases (an all-zero super-block, one huge value, a largest value of either sign);
//  * the dot products: vec_dot of Q4_K, Q5_K and Q6_K against the portable, AVX2 and AVX-512
//    q8k implementations (each the processor runs), on super-blocks llama.cpp's quantizer wrote (golden/gguf/ggml_quantized_kquants.json)
//    and on random ones (tests/engine/random_blocks.h);
//  * dequantization: to_float of each type against ours (and so against gguf-py, which
//    tests/gguf holds ours to).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/q8k_matmul.h"
#include "tensor/quant_blocks.h"
#include "tests/engine/random_blocks.h"
#include "tests/gguf/gguf_test_util.h"   // unhex
#include "tests/llamacpp/ggml_lib.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::ggml_lib;

namespace {

// ggml-common.h's block_q8_K.
struct BlockQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8K) == 292, "block_q8_K");
constexpr int kGgmlQ8K = 15;

// llama.cpp's Q8_K of rows x [N, I], as block_q8_K structs.
std::vector<BlockQ8K> ggml_q8k(const float* x, int64_t N, int64_t I) {
  std::vector<BlockQ8K> out(size_t(N * I / 256));
  for (int64_t n = 0; n < N; ++n) ggml().traits_cpu(kGgmlQ8K)->from_float(x + n * I, out.data() + n * I / 256, I);
  return out;
}

// Rows with a spread of magnitudes and the edge cases in their first super-blocks.
Tensor activations(int64_t N, int64_t I, uint64_t seed) {
  Tensor x = test::randn({N, I}, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> spread(-6.0f, 3.0f);
  for (int64_t b = 0; b < N * I / 256; ++b) {
    const float s = std::pow(10.0f, spread(rng));
    for (int j = 0; j < 256; ++j) x.f32()[b * 256 + j] *= s;
  }
  if (N * I >= 4 * 256) {
    for (int j = 0; j < 256; ++j) x.f32()[j] = 0.0f;   // all zero
    x.f32()[256 + 7] = 3e4f;                           // one huge value
    x.f32()[512 + 9] = -50.0f;                         // the largest negative: iscale > 0
    x.f32()[768 + 1] = 50.0f, x.f32()[768 + 2] = -50.0f;   // a tie of magnitudes: the first wins
  }
  return x;
}

nlohmann::json quantized_refs() {
  std::ifstream in(std::string(LMSCOPE_SOURCE_DIR) + "/golden/gguf/ggml_quantized_kquants.json");
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

}  // namespace

TEST(GgmlKQuant, Q8KQuantizationIsLlamaCpps) {
  SKIP_WITHOUT_GGML();
  const int64_t N = 5, I = 2048;
  const Tensor x = activations(N, I, 3);
  const std::vector<BlockQ8K> want = ggml_q8k(x.f32(), N, I);
  cpu::Q8KRows got;
  cpu::quantize_rows_q8k(x.f32(), N, I, got);
  for (size_t b = 0; b < want.size(); ++b) {
    EXPECT_EQ(ggtest::bits(want[b].d), ggtest::bits(got.d[b])) << "super-block " << b;
    EXPECT_EQ(0, std::memcmp(want[b].qs, got.q.data() + b * 256, 256)) << "codes of super-block " << b;
    if (want[b].d != 0.0f) {   // llama.cpp leaves an all-zero super-block's bsums unwritten
      EXPECT_EQ(0, std::memcmp(want[b].bsums, got.bsums.data() + b * 16, 32)) << "bsums of super-block " << b;
    }
  }
}

TEST(GgmlKQuant, DotProductsAreLlamaCppsBitForBit) {
  SKIP_WITHOUT_GGML();
  struct Case {
    std::string what;
    BlockType type;
    std::vector<uint8_t> bytes;   // one row of whole super-blocks
  };
  std::vector<Case> cases;
  const nlohmann::json refs = quantized_refs();   // (a temporary would die before the loop)
  for (const auto& e : refs.at("entries")) {
    BlockType t;
    ASSERT_TRUE(block_type_of(e.at("type").get<std::string>(), &t));
    cases.push_back({"ggml_quantize_chunk " + e.at("type").get<std::string>(), t, ggtest::unhex(e.at("block_bytes"))});
  }
  for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K}) {
    const test::RandomBlocks r = test::random_blocks(t, 1, 7 * 256, 11 + int(t));
    cases.push_back({std::string("random ") + block_type_name(t), t, *r.bytes});
  }
  int compared = 0;
  for (const Case& c : cases) {
    const int64_t nb = int64_t(c.bytes.size() / block_bytes(c.type)), I = nb * 256;
    const Tensor x = activations(3, I, 17 + nb);
    const std::vector<BlockQ8K> ya = ggml_q8k(x.f32(), 3, I);
    cpu::Q8KRows ours;
    cpu::quantize_rows_q8k(x.f32(), 3, I, ours);
    const QuantBlocks W{c.type, 1, I, c.bytes.data(), nullptr};
    for (int64_t n = 0; n < 3; ++n) {
      float want = NAN;
      ggml().traits_cpu(int(ggml_type_of(c.type)))->vec_dot(int(I), &want, 0, c.bytes.data(), 0, ya.data() + n * nb, 0, 1);
      cpu::Q8KRows row = ours;   // row n alone
      row.rows = 1;
      row.q.assign(ours.q.begin() + n * I, ours.q.begin() + (n + 1) * I);
      row.bsums.assign(ours.bsums.begin() + n * I / 16, ours.bsums.begin() + (n + 1) * I / 16);
      row.d.assign(ours.d.begin() + n * nb, ours.d.begin() + (n + 1) * nb);
      float portable = NAN;
      cpu::q8k_outputs_portable(&portable, row, W, nullptr, 0, 1);
      EXPECT_EQ(ggtest::bits(want), ggtest::bits(portable)) << c.what << " row " << n << ": " << want << " vs " << portable;
      for (const cpu::Q8KImplementation& k : cpu::q8k_simd_implementations()) {
        if (!k.runs) continue;
        float got = NAN;
        k.outputs(&got, row, W, nullptr, 0, 1);
        EXPECT_EQ(ggtest::bits(want), ggtest::bits(got)) << c.what << " row " << n << " (" << k.name << ")";
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 18);
  std::printf("[ measure ] %d K-quant dot products (%zu weight rows x 3 activation rows) equal to llama.cpp's vec_dot "
              "bit for bit\n", compared, cases.size());
}

TEST(GgmlKQuant, DequantizationIsLlamaCpps) {
  SKIP_WITHOUT_GGML();
  int compared = 0;
  const nlohmann::json refs = quantized_refs();   // (a temporary would die before the loop)
  for (const auto& e : refs.at("entries")) {
    BlockType t;
    ASSERT_TRUE(block_type_of(e.at("type").get<std::string>(), &t));
    const std::vector<uint8_t> bytes = ggtest::unhex(e.at("block_bytes"));
    const int64_t n = int64_t(bytes.size() / block_bytes(t)) * 256;
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    ggml().traits(int(ggml_type_of(t)))->to_float(bytes.data(), want.data(), n);
    dequantize_block_rows(QuantBlocks{t, 1, n, bytes.data(), nullptr}, 0, 1, got.data());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), size_t(n) * 4)) << e.at("type").get<std::string>();
    ++compared;
  }
  EXPECT_EQ(compared, 3);
}
