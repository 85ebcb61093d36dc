// QuantBlocks: a weight matrix as GGUF quantization blocks: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or
// IQ4_NL (32 weights per block) or the K-quants Q4_K, Q5_K, Q6_K (256 weights per super-block; a
// Q4_K_M file mixes Q4_K and Q6_K, and Q5_0 / Q8_0 where a row is not a multiple of 256: the
// fallbacks llama-quantize writes, docs/gguf.md); a row = cols / block_elems() blocks. The GGUF loader holds such a weight as its blocks
// only (Tensor::from_blocks: no float32 copy beside them, so that a model takes about its file's
// size in memory). The CPU backend multiplies by the blocks (decode: block_matmul.h; prefill:
// block_prefill.h dequantizes a panel of rows at a time); every other reader of the values
// asks for them (Tensor::values_f32, or dequantize_block_rows for a few rows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lmscope {

enum class BlockType : uint8_t { Q8_0, Q4_1, Q4_K, Q5_K, Q6_K, Q5_0, Q4_0, Q5_1, IQ4_NL };

// Weights per block, bytes per block (ggml-common.h's layouts, kernels/quant_blocks.cuh), and
// the ggml type number (GGML_TYPE_*).
constexpr int64_t block_elems(BlockType t) {
  return t == BlockType::Q4_K || t == BlockType::Q5_K || t == BlockType::Q6_K ? 256 : 32;
}
constexpr size_t block_bytes(BlockType t) {
  switch (t) {
    case BlockType::Q8_0: return 34;
    case BlockType::Q4_1: return 20;
    case BlockType::Q4_K: return 144;
    case BlockType::Q5_K: return 176;
    case BlockType::Q6_K: return 210;
    case BlockType::Q5_0: return 22;
    case BlockType::Q4_0: return 18;
    case BlockType::Q5_1: return 24;
    case BlockType::IQ4_NL: return 18;
  }
  return 0;
}
constexpr uint32_t ggml_type_of(BlockType t) {
  switch (t) {
    case BlockType::Q8_0: return 8;
    case BlockType::Q4_1: return 3;
    case BlockType::Q4_K: return 12;
    case BlockType::Q5_K: return 13;
    case BlockType::Q6_K: return 14;
    case BlockType::Q5_0: return 6;
    case BlockType::Q4_0: return 2;
    case BlockType::Q5_1: return 7;
    case BlockType::IQ4_NL: return 20;
  }
  return 0;
}
constexpr bool is_k_quant(BlockType t) { return block_elems(t) == 256; }
const char* block_type_name(BlockType t);   // "Q8_0", ..., "Q6_K", "Q5_0", "Q4_0", "Q5_1", "IQ4_NL"
// Q4_1 and Q5_1 blocks carry a min m beside the scale d: y = d * q + m (the others y = d * q).
constexpr bool has_min(BlockType t) { return t == BlockType::Q4_1 || t == BlockType::Q5_1; }
// The block type of a ggml type name ("Q4_K"...); false for any other type.
bool block_type_of(const std::string& ggml_name, BlockType* out);

struct QuantBlocks {
  BlockType type;
  int64_t rows = 0, cols = 0;                 // the matrix [rows, cols]; cols % block_elems() == 0
  const uint8_t* data = nullptr;              // rows * row_bytes() bytes
  std::shared_ptr<const void> owner;          // keeps `data` alive (the mapped file, or `copy`)

  int64_t block_elems() const { return lmscope::block_elems(type); }
  size_t block_bytes() const { return lmscope::block_bytes(type); }
  int64_t row_blocks() const { return cols / block_elems(); }
  size_t row_bytes() const { return size_t(row_blocks()) * block_bytes(); }
};

// Rows [row0, row0 + n) of `b` as float32 into out[n, b.cols]: the loader's own per-block
// math (kernels/quant_blocks.cuh), bit-identical to io/gguf_dequant.h. One thread.
void dequantize_block_rows(const QuantBlocks& b, int64_t row0, int64_t n, float* out);

// One block at `blk` (block_elems(type) weights) as float32 into y: the same per-block math.
void dequantize_block(BlockType type, const uint8_t* blk, float* y);

}  // namespace lmscope
