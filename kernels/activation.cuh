// Gated FFN activations, per element:
//   SwiGLU (Llama, Qwen):  act = silu(gate) * up,       silu(x) = x * sigmoid(x)
//   GeGLU (Gemma 3):       act = gelu_tanh(gate) * up,  HF's "gelu_pytorch_tanh"
#pragma once
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

LMSCOPE_HD float silu(float x) { return x / (1.0f + expf(-x)); }

LMSCOPE_HD float swiglu(float gate, float up) { return silu(gate) * up; }

// GELU's tanh approximation as PyTorch computes it (gelu(x, approximate="tanh"), its scalar
// kernel): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
LMSCOPE_HD float gelu_tanh(float x) {
  const float kBeta = 0.7978845608028654f;   // sqrt(2 / pi)
  const float kKappa = 0.044715f;
  const float inner = kBeta * (x + kKappa * (x * x * x));
  return 0.5f * x * (1.0f + tanhf(inner));
}

LMSCOPE_HD float geglu_tanh(float gate, float up) { return gelu_tanh(gate) * up; }

}  // namespace lmscope
