#include "tensor/quant_blocks.h"

#include <stdexcept>
#include <string>

#include "kernels/quant_blocks.cuh"

// (d * q) + m must round twice, as gguf-py computes it (kernels/quant_blocks.cuh mul_add):
// no fused multiply-add in this file, whatever the target.
#pragma GCC optimize("fp-contract=off")

namespace lmscope {

void dequantize_block_rows(const QuantBlocks& b, int64_t row0, int64_t n, float* out) {
  if (row0 < 0 || n < 0 || row0 + n > b.rows)
    throw std::logic_error("dequantize_block_rows: rows [" + std::to_string(row0) + "," + std::to_string(row0 + n) +
                           ") outside [0," + std::to_string(b.rows) + ")");
  const int64_t nb = b.cols / QuantBlocks::kBlock;
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* row = b.data + (row0 + r) * b.row_bytes();
    float* y = out + r * b.cols;
    for (int64_t k = 0; k < nb; ++k) {
      const uint8_t* blk = row + k * b.block_bytes();
      if (b.type == BlockType::Q8_0)
        quant::dequant_q8_0(blk, y + k * QuantBlocks::kBlock);
      else
        quant::dequant_q4_1(blk, y + k * QuantBlocks::kBlock);
    }
  }
}

}  // namespace lmscope
