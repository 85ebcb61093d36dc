// The per-element quantization formulas, written once; every scheme (weight_quant.cpp,
// act_quant.cpp) and every test reference computes with exactly these expressions, in float32,
// as NumPy does on float32 arrays (docs/quantization.md states each formula and its source).
#pragma once
#include <cmath>
#include <cstdint>

namespace lmscope::quant {

// Symmetric int8: q = clamp(round(x / scale), -127, 127), round half to even (NumPy's
// np.round, torch.round). `saturated` is set when the clamp changed the value.
inline int32_t sym_int8(float x, float scale, bool& saturated) {
  const float r = std::nearbyint(x / scale);
  saturated = r > 127.0f || r < -127.0f;
  return int32_t(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
}
inline float sym_int8_value(int32_t q, float scale) { return float(q) * scale; }

// The symmetric scale for a largest magnitude `amax`: amax / 127, or 1 when amax is 0 (an
// all-zero row quantizes to zeros with any scale; 1 avoids 0/0).
inline float sym_scale(float amax) { return amax > 0.0f ? amax / 127.0f : 1.0f; }

// Asymmetric uint8 over a calibrated range [lo, hi] (lo <= 0 <= hi is forced, so that 0 is
// exact): scale = (hi - lo) / 255, zero_point = round(-lo / scale) in [0, 255],
// q = clamp(round(x / scale) + zero_point, 0, 255), x' = (q - zero_point) * scale.
struct AffineU8 {
  float scale = 1.0f;
  int32_t zero_point = 0;
};
inline AffineU8 affine_u8(float lo, float hi) {
  lo = lo < 0.0f ? lo : 0.0f;
  hi = hi > 0.0f ? hi : 0.0f;
  AffineU8 a;
  a.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  const float z = std::nearbyint(-lo / a.scale);
  a.zero_point = int32_t(z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z);
  return a;
}
inline int32_t affine_u8_code(float x, const AffineU8& a, bool& saturated) {
  const float r = std::nearbyint(x / a.scale) + float(a.zero_point);
  saturated = r > 255.0f || r < 0.0f;
  return int32_t(r > 255.0f ? 255.0f : r < 0.0f ? 0.0f : r);
}
inline float affine_u8_value(int32_t q, const AffineU8& a) { return float(q - a.zero_point) * a.scale; }

// GGUF Q4_0 (ggml-quants.c quantize_row_q4_0_ref; gguf-py quants.Q4_0.quantize_blocks): per
// block of 32, m = the element of largest magnitude (with its sign), d = m / -8, id = 1 / d
// (0 when d is 0), q = min(15, trunc(x * id + 8.5)); stored d is half precision and the value
// is (q - 8) * half(d).
inline int32_t q4_0_code(float x, float id) {
  const float t = std::trunc(x * id + 8.5f);
  return int32_t(t > 15.0f ? 15.0f : t < 0.0f ? 0.0f : t);
}

}  // namespace lmscope::quant
