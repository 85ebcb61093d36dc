// Per-element math of the backward ops (backend.h, "backward ops"), shared by the CPU backend
// (backend/cpu/cpu_backward.cpp) and the CUDA kernels (kernels/backward.cu): one definition,
// so that the two backends differ only in how they sum (rows, matmuls). The formulas are
// docs/gradients.md's table. Products and row sums in double where the CPU keeps them in
// double, the result rounded to float32 once.
#pragma once
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

// RMSNorm y = w * x * r, r = 1 / sqrt(mean(x^2) + eps). For a row with sum(x^2) = sum_sq and
// sum(dy * w * x) = sum_gx over D elements: r, and c = r^3 sum_gx / D, the two row constants
// of the input gradient.
LMSCOPE_HD double rmsnorm_backward_inv_rms(double sum_sq, double D, float eps) {
  return 1.0 / sqrt(sum_sq / D + double(eps));
}
LMSCOPE_HD double rmsnorm_backward_row_term(double r, double sum_gx, double D) { return r * r * r * sum_gx / D; }
// One element: dx = r (dy w) - x c.
LMSCOPE_HD float rmsnorm_backward_apply(float dy, float x, float weight, double r, double c) {
  return float(r * double(dy) * weight - double(x) * c);
}

// act = silu(g) * u with silu(g) = g s, s = sigmoid(g), silu'(g) = s (1 + g (1 - s)):
//   dgate = dact u silu'(g),  dup = dact silu(g)
LMSCOPE_HD void swiglu_backward(float dact, float gate, float up, float* dgate, float* dup) {
  const double s = 1.0 / (1.0 + exp(-double(gate)));
  *dgate = float(double(dact) * up * s * (1.0 + gate * (1.0 - s)));
  *dup = float(double(dact) * gate * s);
}

// Gemma 3's GeGLU: act = gelu_tanh(g) * u with gelu_tanh(g) = 0.5 g (1 + t),
// t = tanh(c (g + k g^3)), c = sqrt(2/pi), k = 0.044715 (PyTorch's approximate="tanh"), so
//   gelu_tanh'(g) = 0.5 (1 + t) + 0.5 g (1 - t^2) c (1 + 3 k g^2)
//   dgate = dact u gelu_tanh'(g),  dup = dact gelu_tanh(g)
LMSCOPE_HD void geglu_tanh_backward(float dact, float gate, float up, float* dgate, float* dup) {
  const double c = 0.7978845608028654, k = 0.044715, x = gate;
  const double t = tanh(c * (x + k * x * x * x));
  const double slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * k * x * x);
  *dgate = float(double(dact) * up * slope);
  *dup = float(double(dact) * 0.5 * x * (1.0 + t));
}

// RoPE's transpose (a rotation by -theta) for element i of a head vector's gradient dy
// (length hd) with that row's cos/sin. The forward (rope.cuh, rotate_half) is
//   y1 = x1 c1 - x2 s1,  y2 = x2 c2 + x1 s2      (x1 = x[:hd/2], x2 = x[hd/2:])
// so dx1 = dy1 c1 + dy2 s2, dx2 = dy2 c2 - dy1 s1.
LMSCOPE_HD float rope_rotate_back(const float* dy, int i, int hd, const float* cos, const float* sin) {
  const int half = hd / 2;
  if (i < half) return dy[i] * cos[i] + dy[i + half] * sin[i + half];
  return dy[i] * cos[i] - dy[i - half] * sin[i - half];
}

// Softmax's input gradient for one entry of a row: dscore = p (dp - dot), dot = sum over the
// row of dp * p (in double). Exactly 0 where p is 0 (a masked key).
LMSCOPE_HD float softmax_backward(float p, float dp, double dot) { return float(p * (dp - dot)); }

}  // namespace lmscope
