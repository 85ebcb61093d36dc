// QuantBlocks: a weight matrix as GGUF quantization blocks (Q8_0 or Q4_1: 32 weights per
// block, a row = cols/32 blocks), attached to the float32 tensor that holds the same values
// dequantized (Tensor::blocks). A backend that can multiply by the blocks directly reads
// ~6x fewer bytes per weight (CPU decode: lib/backend/cpu/block_matmul.h); every other use
// reads the float32 values.
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

}  // namespace lmscope
