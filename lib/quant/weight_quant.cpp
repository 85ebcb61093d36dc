#include "quant/weight_quant.h"

#include <algorithm>
#include <cmath>

#include "kernels/dtype_convert.cuh"
#include "quant/int8_math.h"

namespace lmscope::quant {

namespace {

float max_abs(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

// Population standard deviation (NumPy's default ddof=0), accumulated in double.
double stddev(const float* x, int64_t n) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= double(n);
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  return std::sqrt(ss / double(n));
}

// Symmetric int8 of n values with one scale.
void sym_rows(const float* W, int64_t n, float scale, QuantizedMatrix& q, int64_t at) {
  for (int64_t i = 0; i < n; ++i) {
    bool sat = false;
    const int32_t c = sym_int8(W[i], scale, sat);
    q.codes[at + i] = int8_t(c);
    q.values[at + i] = sym_int8_value(c, scale);
    q.saturated += sat;
  }
}

void q4_0_block(const float* x, int64_t n, QuantizedMatrix& q, int64_t at) {
  float m = 0.0f;   // the element of largest magnitude, with its sign (the first on ties)
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  const float d = m / -8.0f;
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  const float dh = f16_to_f32(f32_to_f16(d));   // the stored half-precision scale
  q.scales.push_back(dh);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t c = q4_0_code(x[i], id);
    q.codes[at + i] = int8_t(c);
    q.values[at + i] = float(c - 8) * dh;
  }
}

}  // namespace

QuantizedMatrix quantize_matrix(const float* W, int64_t rows, int64_t cols, WeightScheme s) {
  QuantizedMatrix q;
  const int64_t n = rows * cols;
  q.values.assign(W, W + n);
  if (s == WeightScheme::Float) return q;
  q.codes.assign(size_t(n), 0);
  switch (s) {
    case WeightScheme::Channel:
    case WeightScheme::Std:
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = W + r * cols;
        const float scale = s == WeightScheme::Channel ? sym_scale(max_abs(row, cols))
                                                       : sym_scale(float(kStdMultiple * stddev(row, cols)));
        q.scales.push_back(scale);
        sym_rows(row, cols, scale, q, r * cols);
      }
      break;
    case WeightScheme::Tensor: {
      const float scale = sym_scale(max_abs(W, n));
      q.scales.push_back(scale);
      sym_rows(W, n, scale, q, 0);
      break;
    }
    case WeightScheme::Group4:
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < cols; g += kGroup) q4_0_block(W + r * cols + g, std::min(kGroup, cols - g), q, r * cols + g);
      break;
    case WeightScheme::Float:
      break;
  }
  return q;
}

int64_t matrix_bytes(int64_t rows, int64_t cols, WeightScheme s) {
  switch (s) {
    case WeightScheme::Float: return 4 * rows * cols;
    case WeightScheme::Channel:
    case WeightScheme::Std: return rows * cols + 4 * rows;
    case WeightScheme::Tensor: return rows * cols + 4;
    case WeightScheme::Group4: return rows * ((cols + kGroup - 1) / kGroup) * 18;
  }
  return 0;
}

}  // namespace lmscope::quant
