// Row and element kernels of the CUDA backend: embedding gather, RMSNorm, bias, head split,
// RoPE, SwiGLU, residual add, bf16/f32 conversion. The per-element math is the one of
// kernels/*.cuh that the CPU backend calls too; these files only add the indexing.
//
// Launch shape: flat kernels take one thread per output element in blocks of 256 and bound
// every index (sizes are never assumed to be multiples of the block); row kernels take one
// block per row.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "kernels/activation.cuh"
#include "kernels/dtype_convert.cuh"
#include "kernels/kernel_launch.cuh"
#include "kernels/launch.h"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"

namespace lmscope::cuda {

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error: launch of ") + kernel + " failed at " + file + ":" +
                             std::to_string(line) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) +
                             ")");
}

namespace {

constexpr int kBlock = 256;
inline unsigned blocks_for(int64_t n) { return unsigned((n + kBlock - 1) / kBlock); }

// ---- embedding gather -------------------------------------------------------------------
template <bool kBf16>
__global__ void embed_kernel(float* out, const int32_t* ids, const void* table, int64_t N, int64_t D, int64_t V) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;   // over N*D
  if (i >= N * D) return;
  const int64_t n = i / D, d = i % D;
  const int32_t id = ids[n];
  if (id < 0 || id >= V) {
    out[i] = 0.0f;
    return;
  }
  if constexpr (kBf16)
    out[i] = lmscope::bf16_to_f32(static_cast<const uint16_t*>(table)[int64_t(id) * D + d]);
  else
    out[i] = static_cast<const float*>(table)[int64_t(id) * D + d];
}

// ---- RMSNorm: one block per row; the sum of squares in double, as the CPU reference ----
__global__ void rmsnorm_kernel(float* out, const float* x, const float* weight, float eps, int64_t D) {
  const float* row = x + int64_t(blockIdx.x) * D;
  float* orow = out + int64_t(blockIdx.x) * D;
  double sum_sq = 0;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) sum_sq += double(row[i]) * row[i];
  // block reduction: warp shuffles, then one value per warp through shared memory
  for (int off = 16; off > 0; off >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, off);
  __shared__ double warp_sums[32];
  __shared__ float inv_shared;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = sum_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < int(blockDim.x / 32); ++w) total += warp_sums[w];
    inv_shared = rmsnorm_inv_rms(float(total / double(D)), eps);
  }
  __syncthreads();
  const float inv = inv_shared;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) orow[i] = rmsnorm_apply(row[i], inv, weight[i]);
}

__global__ void add_bias_kernel(float* out, const float* bias, int64_t N, int64_t O) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N * O) out[i] += bias[i % O];
}

// out[b,h,t,i] = x[b,t,h,i]; one thread per output element
__global__ void split_heads_kernel(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= B * Hx * T * hd) return;
  const int64_t i = o % hd, t = (o / hd) % T, h = (o / (hd * T)) % Hx, b = o / (hd * T * Hx);
  out[o] = x[((b * T + t) * Hx + h) * hd + i];
}

__global__ void rope_kernel(float* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t Hx,
                            int64_t T, int64_t hd) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= B * Hx * T * hd) return;
  const int64_t i = o % hd, row = o / hd, t = row % T, b = row / (T * Hx);
  const int64_t cs = (b * T + t) * hd + i;   // cos/sin [B,T,hd]
  out[o] = rope_rotate(x + row * hd, int(i), int(hd), cos[cs], sin[cs]);
}

__global__ void swiglu_kernel(float* out, const float* gate, const float* up, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lmscope::swiglu(gate[i], up[i]);
}

__global__ void geglu_tanh_kernel(float* out, const float* gate, const float* up, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lmscope::geglu_tanh(gate[i], up[i]);
}

__global__ void add_kernel(float* out, const float* a, const float* b, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void scale_kernel(float* out, const float* x, float s, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = s * x[i];
}

__global__ void f32_to_bf16_kernel(uint16_t* out, const float* x, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lmscope::f32_to_bf16(x[i]);
}

__global__ void bf16_to_f32_kernel(float* out, const uint16_t* x, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lmscope::bf16_to_f32(x[i]);
}

// The device's nanosecond timer (PTX %globaltimer); the emulator reads the host's clock.
__device__ __forceinline__ uint64_t globaltimer_ns() {
#if defined(LMSCOPE_EMULATED_DEVICE_CODE)
  return lmscope::cuda_emu::host_clock_ns();
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

}  // namespace

void spin(int64_t us, cudaStream_t st) {
  launch<spin_kernel>(1, 1, 0, st, uint64_t(us) * 1000);
  LMSCOPE_LAUNCHED(spin_kernel);
}

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&add_kernel));
  if (e != cudaSuccess) (void)cudaGetLastError();   // clear it
  return e;
}

void embed(float* out, const int32_t* ids, const void* table, bool table_bf16, int64_t N, int64_t D, int64_t V,
           cudaStream_t st) {
  if (N * D == 0) return;
  if (table_bf16)
    launch<embed_kernel<true>>(blocks_for(N * D), kBlock, 0, st, out, ids, table, N, D, V);
  else
    launch<embed_kernel<false>>(blocks_for(N * D), kBlock, 0, st, out, ids, table, N, D, V);
  LMSCOPE_LAUNCHED(embed_kernel);
}

void rmsnorm(float* out, const float* x, const float* weight, float eps, int64_t N, int64_t D, cudaStream_t st) {
  if (N == 0) return;
  launch<rmsnorm_kernel>(unsigned(N), kBlock, 0, st, out, x, weight, eps, D);
  LMSCOPE_LAUNCHED(rmsnorm_kernel);
}

void add_bias(float* out, const float* bias, int64_t N, int64_t O, cudaStream_t st) {
  if (N * O == 0) return;
  launch<add_bias_kernel>(blocks_for(N * O), kBlock, 0, st, out, bias, N, O);
  LMSCOPE_LAUNCHED(add_bias_kernel);
}

void split_heads(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd, cudaStream_t st) {
  const int64_t n = B * T * Hx * hd;
  if (n == 0) return;
  launch<split_heads_kernel>(blocks_for(n), kBlock, 0, st, out, x, B, T, Hx, hd);
  LMSCOPE_LAUNCHED(split_heads_kernel);
}

void rope(float* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t Hx, int64_t T,
          int64_t hd, cudaStream_t st) {
  const int64_t n = B * Hx * T * hd;
  if (n == 0) return;
  launch<rope_kernel>(blocks_for(n), kBlock, 0, st, out, x, cos, sin, B, Hx, T, hd);
  LMSCOPE_LAUNCHED(rope_kernel);
}

void swiglu(float* out, const float* gate, const float* up, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<swiglu_kernel>(blocks_for(n), kBlock, 0, st, out, gate, up, n);
  LMSCOPE_LAUNCHED(swiglu_kernel);
}

void geglu_tanh(float* out, const float* gate, const float* up, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<geglu_tanh_kernel>(blocks_for(n), kBlock, 0, st, out, gate, up, n);
  LMSCOPE_LAUNCHED(geglu_tanh_kernel);
}

void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<add_kernel>(blocks_for(n), kBlock, 0, st, out, a, b, n);
  LMSCOPE_LAUNCHED(add_kernel);
}

void scale(float* out, const float* x, float s, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<scale_kernel>(blocks_for(n), kBlock, 0, st, out, x, s, n);
  LMSCOPE_LAUNCHED(scale_kernel);
}

void f32_to_bf16(uint16_t* out, const float* x, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<f32_to_bf16_kernel>(blocks_for(n), kBlock, 0, st, out, x, n);
  LMSCOPE_LAUNCHED(f32_to_bf16_kernel);
}

void bf16_to_f32(float* out, const uint16_t* x, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  launch<bf16_to_f32_kernel>(blocks_for(n), kBlock, 0, st, out, x, n);
  LMSCOPE_LAUNCHED(bf16_to_f32_kernel);
}

}  // namespace lmscope::cuda
