// Random GGUF blocks for the CPU matmul tests: [O, I] of any BlockType (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL, Q4_K, Q5_K, Q6_K) with scales of either sign and every nibble/byte value used (a K-quant's 6-bit sub-block scales
// and mins too), and the same weights as float32 dequantized block by block with the loader's
// per-block functions (kernels/quant_blocks.cuh), the reference; random activations and the
// tolerance the kernels are held to.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "kernels/dtype_convert.cuh"
#include "kernels/quant_blocks.cuh"
#include "tensor/tensor.h"

namespace lmscope::test {

struct RandomBlocks {
  std::shared_ptr<std::vector<uint8_t>> bytes;
  std::shared_ptr<QuantBlocks> q;   // owns `bytes`
  Tensor w;                         // float32 values, no blocks attached
};

inline RandomBlocks random_blocks(BlockType type, int64_t O, int64_t I, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  RandomBlocks b;
  b.q = std::make_shared<QuantBlocks>();
  b.q->type = type;
  b.q->rows = O;
  b.q->cols = I;
  b.bytes = std::make_shared<std::vector<uint8_t>>(size_t(O) * b.q->row_bytes());
  std::vector<uint8_t>& bytes = *b.bytes;
  // The f16 fields of each type (d; Q4_1, Q5_1: d, m; Q4_K/Q5_K: d, dmin; Q6_K: d at its end)
  // are finite values; every other byte is random.
  std::vector<size_t> f16_at = {0};
  if (has_min(type) || type == BlockType::Q4_K || type == BlockType::Q5_K) f16_at = {0, 2};
  if (type == BlockType::Q6_K) f16_at = {208};
  for (size_t at = 0; at < bytes.size(); at += b.q->block_bytes()) {
    for (size_t k = 0; k < b.q->block_bytes(); ++k) bytes[at + k] = uint8_t(byte(rng));
    for (size_t f : f16_at) {
      const uint16_t h = f32_to_f16(scale(rng));
      bytes[at + f] = uint8_t(h & 0xFF);
      bytes[at + f + 1] = uint8_t(h >> 8);
    }
  }
  b.q->data = bytes.data();
  b.q->owner = b.bytes;
  b.w = Tensor::zeros({O, I});
  dequantize_block_rows(*b.q, 0, O, b.w.f32());
  return b;
}

// Each block type, for the tests that go over all of them.
inline const std::vector<BlockType>& all_block_types() {
  static const std::vector<BlockType> types = {BlockType::Q8_0, BlockType::Q4_0, BlockType::Q4_1, BlockType::Q5_0,
                                               BlockType::Q5_1, BlockType::IQ4_NL, BlockType::Q4_K, BlockType::Q5_K,
                                               BlockType::Q6_K};
  return types;
}

// The 32-weight block types, which --cpu-activations q8 multiplies by int8 rows of Q8_0/Q8_1
// blocks (q8_matmul.h, q8_gemm.h; the K-quants go through q8k_matmul.h).
inline const std::vector<BlockType>& q8_block_types() {
  static const std::vector<BlockType> types = {BlockType::Q8_0,  BlockType::Q4_0, BlockType::Q4_1,
                                               BlockType::Q5_0,  BlockType::Q5_1, BlockType::IQ4_NL};
  return types;
}

// Standard-normal float32 values of shape s, drawn from rng (the activations x of the matmul
// tests, the q/k/v of the attention tests).
inline Tensor randn(const Shape& s, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t = Tensor::zeros(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
  return t;
}
inline Tensor randn(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return randn(s, rng);
}

// |a - ref| <= 1e-5 * (1 + max|ref|) everywhere: float32 sums in another order.
inline ::testing::AssertionResult close(const float* a, const Tensor& ref) {
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) scale = std::max(scale, double(std::fabs(ref.f32()[i])));
  int64_t at = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double d = std::isfinite(a[i]) ? std::fabs(double(a[i]) - ref.f32()[i]) : INFINITY;
    if (d > worst) worst = d, at = i;
  }
  if (worst <= 1e-5 * (1 + scale)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |diff| " << worst << " at " << at << " (scale " << scale << ")";
}

}  // namespace lmscope::test
