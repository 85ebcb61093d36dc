// SwiGLU per-element math: act = silu(gate) * up,  silu(x) = x * sigmoid(x).
#pragma once
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

LMSCOPE_HD float silu(float x) { return x / (1.0f + expf(-x)); }

LMSCOPE_HD float swiglu(float gate, float up) { return silu(gate) * up; }

}  // namespace lmscope
