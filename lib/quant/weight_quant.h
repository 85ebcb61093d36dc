// Weight quantization of one matrix, simulated: quantize -> dequantize back to float32, so
// the forward runs unchanged on the values a quantized model would compute with. Each scheme
// keeps its integer codes and scales too (tests compare them with NumPy's bit for bit).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmscope::quant {

enum class WeightScheme {
  Float,     // unchanged
  Channel,   // w8-channel: symmetric int8, one scale per output row: max|W_r| / 127
  Tensor,    // w8-tensor: symmetric int8, one scale for the matrix: max|W| / 127
  Std,       // w8-std: symmetric int8 per row, scale = kStdMultiple * std(W_r) / 127 (clips)
  Group4,    // w4-group: GGUF Q4_0, blocks of 32 along a row (int8_math.h q4_0_code)
};

// w8-std's clipping range in standard deviations: the three-sigma rule (a normal
// distribution has 99.73% of its mass within 3 std), the usual choice of std-based clipping.
// The weights beyond it saturate; quantize_matrix counts them.
constexpr double kStdMultiple = 3.0;
constexpr int64_t kGroup = 32;   // w4-group block (GGUF QK4_0)

struct QuantizedMatrix {
  std::vector<float> values;    // rows * cols, dequantized
  std::vector<int8_t> codes;    // rows * cols: int8 in [-127,127], or Q4_0's 0..15
  std::vector<float> scales;    // per row (Channel, Std), one (Tensor), per block (Group4: half(d))
  int64_t saturated = 0;        // weights the clamp changed (Std can clip; the max schemes cannot)
};

// W is row-major [rows, cols]. Group4 groups 32 consecutive weights of a row; a row whose
// length is not a multiple of 32 (tiny test models) ends in one shorter group.
QuantizedMatrix quantize_matrix(const float* W, int64_t rows, int64_t cols, WeightScheme s);

// Bytes the matrix takes stored in the scheme: codes plus scales (float32 scales; Q4_0's
// 18-byte blocks = half d + 16 bytes of nibbles). Float: 4 bytes a weight.
int64_t matrix_bytes(int64_t rows, int64_t cols, WeightScheme s);

}  // namespace lmscope::quant
