// Row and element kernels of the CUDA backend's backward ops (backend.h, "backward ops"):
// RMSNorm's, SwiGLU's and RoPE's input gradients, merge_heads (split_heads' transpose) and
// softmax's input gradient for attention. The per-element math is kernels/backward_math.cuh,
// the CPU backend's (backend/cpu/cpu_backward.cpp); these kernels add only the indexing and
// the row sums. The matmuls of the backward (dx = dy @ W, attention's four per head) are
// cuBLAS calls in lib/backend/cuda/cuda_backward.cpp.
//
// Launch shape as kernels/elementwise.cu: flat kernels one thread per output element in
// blocks of 256, every index bounded; row kernels one block of 256 per row.
#include "kernels/backward_math.cuh"
#include "kernels/kernel_launch.cuh"
#include "kernels/launch.h"

namespace lmscope::cuda {

namespace {

constexpr int kBlock = 256;
inline unsigned blocks_for(int64_t n) { return unsigned((n + kBlock - 1) / kBlock); }

// The sum of v over a block of kBlock threads, in every thread: warp shuffles, then one value
// per warp through shared memory. Every thread of the block must call it.
__device__ double block_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __shared__ double warp_sums[kBlock / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();   // a previous call's readers are done with warp_sums
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kBlock / 32; ++w) total += warp_sums[w];
  return total;
}

// One block per row of D: the row's sum(x^2) and sum(dy w x) in double, then each element.
__global__ void rmsnorm_backward_kernel(float* dx, const float* dy, const float* x, const float* weight, float eps,
                                        int64_t D) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * D;
  const float* gr = dy + row * D;
  double sum_sq = 0, sum_gx = 0;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    sum_sq += double(xr[i]) * xr[i];
    sum_gx += double(gr[i]) * weight[i] * xr[i];
  }
  sum_sq = block_sum(sum_sq);
  sum_gx = block_sum(sum_gx);
  const double r = rmsnorm_backward_inv_rms(sum_sq, double(D), eps);
  const double c = rmsnorm_backward_row_term(r, sum_gx, double(D));
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) dx[row * D + i] = rmsnorm_backward_apply(gr[i], xr[i], weight[i], r, c);
}

// The gated units' backward, one thread per element: SwiGLU, or with kGelu Gemma 3's GeGLU.
template <bool kGelu>
__global__ void glu_backward_kernel(float* dgate, float* dup, const float* dact, const float* gate, const float* up,
                                    int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (kGelu)
    lmscope::geglu_tanh_backward(dact[i], gate[i], up[i], &dgate[i], &dup[i]);
  else
    lmscope::swiglu_backward(dact[i], gate[i], up[i], &dgate[i], &dup[i]);
}

// dx, dy [B,Hx,T,hd], cos/sin [B,T,hd]; one thread per element of dx.
__global__ void rope_backward_kernel(float* dx, const float* dy, const float* cos, const float* sin, int64_t Hx,
                                     int64_t T, int64_t n, int64_t hd) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= n) return;
  const int64_t i = o % hd, row = o / hd, t = row % T, b = row / (T * Hx);
  const int64_t cs = (b * T + t) * hd;   // this token's cos/sin row
  dx[o] = rope_rotate_back(dy + row * hd, int(i), int(hd), cos + cs, sin + cs);
}

// out[b,t,h,i] = x[b,h,t,i]; one thread per output element
__global__ void merge_heads_kernel(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= B * T * Hx * hd) return;
  const int64_t i = o % hd, h = (o / hd) % Hx, t = (o / (hd * Hx)) % T, b = o / (hd * Hx * T);
  out[o] = x[((b * Hx + h) * T + t) * hd + i];
}

// One block per row of S: dot = sum(dprobs * probs) in double, then each entry.
__global__ void softmax_backward_kernel(float* dscores, const float* dprobs, const float* probs, int64_t S) {
  const int64_t row = blockIdx.x;
  const float* dp = dprobs + row * S;
  const float* p = probs + row * S;
  double dot = 0;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) dot += double(dp[s]) * p[s];
  dot = block_sum(dot);
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) dscores[row * S + s] = lmscope::softmax_backward(p[s], dp[s], dot);
}

}  // namespace

void rmsnorm_backward(float* dx, const float* dy, const float* x, const float* weight, float eps, int64_t N, int64_t D,
                      cudaStream_t st) {
  if (N == 0) return;
  launch<rmsnorm_backward_kernel>(unsigned(N), kBlock, 0, st, dx, dy, x, weight, eps, D);
  LMSCOPE_LAUNCHED(rmsnorm_backward_kernel);
}

void swiglu_backward(float* dgate, float* dup, const float* dact, const float* gate, const float* up, int64_t n,
                     cudaStream_t st) {
  if (n == 0) return;
  launch<glu_backward_kernel<false>>(blocks_for(n), kBlock, 0, st, dgate, dup, dact, gate, up, n);
  LMSCOPE_LAUNCHED(glu_backward_kernel<false>);
}

void geglu_tanh_backward(float* dgate, float* dup, const float* dact, const float* gate, const float* up, int64_t n,
                         cudaStream_t st) {
  if (n == 0) return;
  launch<glu_backward_kernel<true>>(blocks_for(n), kBlock, 0, st, dgate, dup, dact, gate, up, n);
  LMSCOPE_LAUNCHED(glu_backward_kernel<true>);
}

void rope_backward(float* dx, const float* dy, const float* cos, const float* sin, int64_t B, int64_t Hx, int64_t T,
                   int64_t hd, cudaStream_t st) {
  const int64_t n = B * Hx * T * hd;
  if (n == 0) return;
  launch<rope_backward_kernel>(blocks_for(n), kBlock, 0, st, dx, dy, cos, sin, Hx, T, n, hd);
  LMSCOPE_LAUNCHED(rope_backward_kernel);
}

void merge_heads(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd, cudaStream_t st) {
  const int64_t n = B * T * Hx * hd;
  if (n == 0) return;
  launch<merge_heads_kernel>(blocks_for(n), kBlock, 0, st, out, x, B, T, Hx, hd);
  LMSCOPE_LAUNCHED(merge_heads_kernel);
}

void softmax_backward(float* dscores, const float* dprobs, const float* probs, int64_t rows, int64_t S,
                      cudaStream_t st) {
  if (rows == 0 || S == 0) return;
  launch<softmax_backward_kernel>(unsigned(rows), kBlock, 0, st, dscores, dprobs, probs, S);
  LMSCOPE_LAUNCHED(softmax_backward_kernel);
}

}  // namespace lmscope::cuda
