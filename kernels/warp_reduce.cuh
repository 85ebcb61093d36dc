// Reductions across the 32 lanes of a warp (device code only). Every lane must take part:
// the full mask says so, and the callers keep whole warps together.
#pragma once

namespace lmscope::cuda {

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace lmscope::cuda
