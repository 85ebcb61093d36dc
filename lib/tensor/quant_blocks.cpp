#include "tensor/quant_blocks.h"

#include <stdexcept>
#include <string>

#include "kernels/quant_blocks.cuh"

// (d * q) + m must round twice, as gguf-py computes it (kernels/quant_blocks.cuh mul_add):
// no fused multiply-add in this file, whatever the target.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

namespace lmscope {

namespace {
constexpr BlockType kTypes[] = {BlockType::Q8_0, BlockType::Q4_1, BlockType::Q4_K, BlockType::Q5_K, BlockType::Q6_K,
                                BlockType::Q5_0, BlockType::Q4_0, BlockType::Q5_1, BlockType::IQ4_NL};
}

const char* block_type_name(BlockType t) {
  switch (t) {
    case BlockType::Q8_0: return "Q8_0";
    case BlockType::Q4_1: return "Q4_1";
    case BlockType::Q4_K: return "Q4_K";
    case BlockType::Q5_K: return "Q5_K";
    case BlockType::Q6_K: return "Q6_K";
    case BlockType::Q5_0: return "Q5_0";
    case BlockType::Q4_0: return "Q4_0";
    case BlockType::Q5_1: return "Q5_1";
    case BlockType::IQ4_NL: return "IQ4_NL";
  }
  return "?";
}

bool block_type_of(const std::string& ggml_name, BlockType* out) {
  for (BlockType t : kTypes)
    if (ggml_name == block_type_name(t)) {
      *out = t;
      return true;
    }
  return false;
}

void dequantize_block(BlockType type, const uint8_t* blk, float* y) {
  switch (type) {
    case BlockType::Q8_0: return quant::dequant_q8_0(blk, y);
    case BlockType::Q4_1: return quant::dequant_q4_1(blk, y);
    case BlockType::Q4_K: return quant::dequant_q4_k(blk, y);
    case BlockType::Q5_K: return quant::dequant_q5_k(blk, y);
    case BlockType::Q6_K: return quant::dequant_q6_k(blk, y);
    case BlockType::Q5_0: return quant::dequant_q5_0(blk, y);
    case BlockType::Q4_0: return quant::dequant_q4_0(blk, y);
    case BlockType::Q5_1: return quant::dequant_q5_1(blk, y);
    case BlockType::IQ4_NL: return quant::dequant_iq4_nl(blk, y);
  }
}

void dequantize_block_rows(const QuantBlocks& b, int64_t row0, int64_t n, float* out) {
  if (row0 < 0 || n < 0 || row0 + n > b.rows)
    throw std::logic_error("dequantize_block_rows: rows [" + std::to_string(row0) + "," + std::to_string(row0 + n) +
                           ") outside [0," + std::to_string(b.rows) + ")");
  const int64_t nb = b.row_blocks(), be = b.block_elems();
  const size_t bb = b.block_bytes();
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* row = b.data + (row0 + r) * b.row_bytes();
    float* y = out + r * b.cols;
    for (int64_t k = 0; k < nb; ++k) dequantize_block(b.type, row + k * bb, y + k * be);
  }
}

}  // namespace lmscope
