// Skinny matmul for decode: out[n,o] = sum_i x[n,i] * W[o,i] (+ bias[o]) for a few input rows
// (N <= kGemvMaxRows; a decode step has N = batch rows). cuBLAS's GEMM is built for big
// tiles; at N = 1 a step is a matrix-vector product bound by reading W once, and the bf16
// path would also pay a kernel to round x and another to add the bias. Here one warp owns an
// output o: it streams W's row o with 16-byte loads (8 bf16 or 4 f32 per lane), multiplies
// by every input row (x is small and shared by all the warps of a multiprocessor through
// L1), sums across the warp, and lane 0 writes the N outputs with the bias added.
//
// Numbers: the same as the cuBLAS path's, in another summation order: float32 products and
// sums; for a bf16 W, x is rounded to bf16 as it is read (matmul_operand_bf16), exactly as
// the cuBLAS path rounds it into a bf16 copy first.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/dtype_convert.cuh"
#include "kernels/kernel_launch.cuh"
#include "kernels/launch.h"
#include "kernels/warp_reduce.cuh"

namespace lmscope::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;   // a block: 4 outputs (small O still spreads over the SMs)
constexpr int kLoads = 8;           // 16-byte loads of W in flight per lane

__device__ __forceinline__ float weight_f32(float w) { return w; }
__device__ __forceinline__ float weight_f32(uint16_t w) { return lmscope::bf16_to_f32(w); }

// x as the matmul reads it: rounded to bf16 when W is bf16, as is for a float32 W.
template <typename WT>
__device__ __forceinline__ float operand(float x) {
  if constexpr (sizeof(WT) == 2)
    return matmul_operand_bf16(x);
  else
    return x;
}

// grid ceil(O / kWarpsPerBlock), block kWarpsPerBlock * 32. NR = N input rows (1..4).
// vec: W rows and x rows start 16-byte aligned and I is a multiple of the vector width, so
// both can be read 16 bytes at a time; otherwise one element per lane per step.
template <typename WT, int NR>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(float* __restrict__ out, const float* __restrict__ x, const WT* __restrict__ W,
                const float* __restrict__ bias, int64_t O, int64_t I, bool vec) {
  constexpr int kVec = 16 / sizeof(WT);   // elements per 16-byte load: 8 bf16, 4 f32
  const int lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (o >= O) return;   // the whole warp leaves together: the shuffles below see 32 lanes
  const WT* w = W + o * I;

  float acc[NR];
#pragma unroll
  for (int n = 0; n < NR; ++n) acc[n] = 0.0f;

  if (vec) {
    // kLoads 16-byte loads of W in flight per lane before any is used: a warp alone keeps
    // 4 KiB on the way to the multiprocessor, which a memory-bound kernel needs when there
    // are few outputs per multiprocessor (O = 1536 is ~12 warps each).
    constexpr int64_t kStride = 32 * kVec;   // elements a warp covers per load
    for (int64_t base = int64_t(lane) * kVec; base < I; base += kStride * kLoads) {
      uint4 wraw[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t i0 = base + u * kStride;
        wraw[u] = i0 < I ? __ldg(reinterpret_cast<const uint4*>(w + i0)) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int64_t i0 = base + u * kStride;
        if (i0 >= I) break;
        const WT* wv = reinterpret_cast<const WT*>(&wraw[u]);               // kVec weights
#pragma unroll
        for (int n = 0; n < NR; ++n) {
          float4 xraw[kVec / 4];                                             // kVec inputs
#pragma unroll
          for (int j = 0; j < kVec / 4; ++j) xraw[j] = __ldg(reinterpret_cast<const float4*>(x + n * I + i0) + j);
          const float* xv = reinterpret_cast<const float*>(xraw);
#pragma unroll
          for (int j = 0; j < kVec; ++j) acc[n] = fmaf(weight_f32(wv[j]), operand<WT>(xv[j]), acc[n]);
        }
      }
    }
  } else {
    for (int64_t i = lane; i < I; i += 32) {
      const float wf = weight_f32(w[i]);
#pragma unroll
      for (int n = 0; n < NR; ++n) acc[n] = fmaf(wf, operand<WT>(x[n * I + i]), acc[n]);
    }
  }
#pragma unroll
  for (int n = 0; n < NR; ++n) acc[n] = warp_sum(acc[n]);
  if (lane == 0) {
    const float b = bias ? bias[o] : 0.0f;
#pragma unroll
    for (int n = 0; n < NR; ++n) out[n * O + o] = acc[n] + b;
  }
}

template <typename WT>
void launch_gemv(float* out, const float* x, const WT* W, const float* bias, int64_t N, int64_t O, int64_t I,
                 cudaStream_t st) {
  constexpr int kVec = 16 / sizeof(WT);
  const bool vec = I % kVec == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(W) % 16 == 0;
  const unsigned grid = unsigned((O + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const unsigned block = kWarpsPerBlock * 32;
  switch (N) {
    case 1: launch<gemv_kernel<WT, 1>>(grid, block, 0, st, out, x, W, bias, O, I, vec); break;
    case 2: launch<gemv_kernel<WT, 2>>(grid, block, 0, st, out, x, W, bias, O, I, vec); break;
    case 3: launch<gemv_kernel<WT, 3>>(grid, block, 0, st, out, x, W, bias, O, I, vec); break;
    case 4: launch<gemv_kernel<WT, 4>>(grid, block, 0, st, out, x, W, bias, O, I, vec); break;
    default: throw std::logic_error("gemv: N = " + std::to_string(N) + " rows, at most 4");
  }
  LMSCOPE_LAUNCHED(gemv_kernel);
}

}  // namespace

bool gemv_fits(int64_t N, int64_t I) { return N >= 1 && N <= kGemvMaxRows && N * I * 4 <= kGemvMaxInputBytes; }

void gemv(float* out, const float* x, const void* W, bool w_bf16, const float* bias, int64_t N, int64_t O, int64_t I,
          cudaStream_t st) {
  if (N * O == 0) return;
  if (w_bf16)
    launch_gemv(out, x, static_cast<const uint16_t*>(W), bias, N, O, I, st);
  else
    launch_gemv(out, x, static_cast<const float*>(W), bias, N, O, I, st);
}

}  // namespace lmscope::cuda
