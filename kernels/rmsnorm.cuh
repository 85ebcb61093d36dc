// RMSNorm per-element math (HF Qwen2RMSNorm / LlamaRMSNorm):
//   h = x * rsqrt(mean(x^2) + eps);  out = weight * h        (all in float32)
#pragma once
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

// 1 / sqrt(mean_sq + eps): the per-row scale.
LMSCOPE_HD float rmsnorm_inv_rms(float mean_sq, float eps) { return 1.0f / sqrtf(mean_sq + eps); }

// One element: HF multiplies by the inverse rms first, then by the weight.
LMSCOPE_HD float rmsnorm_apply(float x, float inv_rms, float weight) { return weight * (x * inv_rms); }

}  // namespace lmscope
