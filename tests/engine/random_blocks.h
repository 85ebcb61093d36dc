// Random GGUF blocks for the CPU matmul tests: [O, I] of Q8_0 or Q4_1 with scales of either
// sign and every nibble/byte value used, and the same weights as float32 dequantized block by
// block with the loader's per-block functions (kernels/quant_blocks.cuh), the reference; random
// activations and the tolerance the kernels are held to.
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
  for (size_t at = 0; at < bytes.size(); at += b.q->block_bytes()) {
    for (size_t k = 0; k < b.q->block_bytes(); ++k) bytes[at + k] = uint8_t(byte(rng));
    const int scales = type == BlockType::Q4_1 ? 2 : 1;   // d (and m): finite f16
    for (int s = 0; s < scales; ++s) {
      const uint16_t h = f32_to_f16(scale(rng));
      bytes[at + 2 * s] = uint8_t(h & 0xFF);
      bytes[at + 2 * s + 1] = uint8_t(h >> 8);
    }
  }
  b.q->data = bytes.data();
  b.q->owner = b.bytes;
  b.w = Tensor::zeros({O, I});
  for (int64_t r = 0; r < O; ++r)
    for (int64_t blk = 0; blk < I / 32; ++blk) {
      const uint8_t* src = bytes.data() + r * b.q->row_bytes() + blk * b.q->block_bytes();
      float* dst = b.w.f32() + r * I + blk * 32;
      if (type == BlockType::Q8_0)
        quant::dequant_q8_0(src, dst);
      else
        quant::dequant_q4_1(src, dst);
    }
  return b;
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
