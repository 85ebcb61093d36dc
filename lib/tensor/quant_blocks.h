// QuantBlocks: a weight matrix as GGUF quantization blocks (Q8_0 or Q4_1: 32 weights per
// block, a row = cols/32 blocks). The GGUF loader holds such a weight as its blocks only
// (Tensor::from_blocks: no float32 copy beside them, so that a model takes about its file's
// size in memory). The CPU backend multiplies by the blocks (decode: block_matmul.h; prefill:
// block_prefill.h dequantizes a panel of rows at a time); every other reader of the values
// asks for them (Tensor::values_f32, or dequantize_block_rows for a few rows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace lmscope {

enum class BlockType : uint8_t { Q8_0, Q4_1 };

struct QuantBlocks {
  BlockType type;
  int64_t rows = 0, cols = 0;                 // the matrix [rows, cols]; cols % 32 == 0
  const uint8_t* data = nullptr;              // rows * row_bytes() bytes
  std::shared_ptr<const void> owner;          // keeps `data` alive (the mapped file, or `copy`)

  static constexpr int64_t kBlock = 32;       // weights per block, both types
  size_t block_bytes() const { return type == BlockType::Q8_0 ? 34 : 20; }
  size_t row_bytes() const { return size_t(cols / kBlock) * block_bytes(); }
};

// Rows [row0, row0 + n) of `b` as float32 into out[n, b.cols]: the loader's own per-block
// math (kernels/quant_blocks.cuh), bit-identical to io/gguf_dequant.h. One thread.
void dequantize_block_rows(const QuantBlocks& b, int64_t row0, int64_t n, float* out);

}  // namespace lmscope
