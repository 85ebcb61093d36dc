// Host-side launchers of the CUDA kernels (kernels/*.cu). Plain pointers and sizes, one
// stream; the CUDA backend (lib/backend/cuda) is their only caller, the tests reach them
// through it. Each launcher checks its launch (cudaGetLastError) and throws
// std::runtime_error naming the kernel, file and line.
//
// Shapes: B batch, T query tokens, S key positions (Smax: cache capacity), D hidden,
// H query heads, Hkv KV heads, hd head dim, N = B*T rows. Activations float32 ("f32").
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace lmscope::cuda {

// An error of the launch just made (or of an earlier asynchronous one) -> exception.
void check_launch(const char* kernel, const char* file, int line);
#define LMSCOPE_LAUNCHED(kernel) ::lmscope::cuda::check_launch(#kernel, __FILE__, __LINE__)

// cudaSuccess when this build carries code for the current device (a kernel's attributes
// can be read), else the error (cudaErrorNoKernelImageForDevice, ...).
cudaError_t probe_kernel_image();

// out[n,:] = table[ids[n],:]   out [N,D] f32; table [V,D] f32 (table_bf16 = false) or bf16.
// Ids outside [0,V) give a zero row (the backend checks them on the host first).
void embed(float* out, const int32_t* ids, const void* table, bool table_bf16, int64_t N, int64_t D, int64_t V,
           cudaStream_t st);
// out[n,:] = rmsnorm(x[n,:]) * weight     x, out [N,D]; weight [D]
void rmsnorm(float* out, const float* x, const float* weight, float eps, int64_t N, int64_t D, cudaStream_t st);
// out[n,o] += bias[o]     out [N,O]
void add_bias(float* out, const float* bias, int64_t N, int64_t O, cudaStream_t st);
// out[b,h,t,:] = x[b,t,h,:]     x [B,T,Hx*hd] -> out [B,Hx,T,hd]
void split_heads(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd, cudaStream_t st);
// out[b,h,t,i] = rope_rotate(x[b,h,t,:], i, cos[b,t,i], sin[b,t,i])     x, out [B,Hx,T,hd]
void rope(float* out, const float* x, const float* cos, const float* sin, int64_t B, int64_t Hx, int64_t T,
          int64_t hd, cudaStream_t st);
// out = silu(gate) * up,  out = gelu_tanh(gate) * up,  out = a + b    (n elements)
void swiglu(float* out, const float* gate, const float* up, int64_t n, cudaStream_t st);
void geglu_tanh(float* out, const float* gate, const float* up, int64_t n, cudaStream_t st);
void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t st);
// out = s * x    (n elements)
void scale(float* out, const float* x, float s, int64_t n, cudaStream_t st);
// Keeps the stream busy for about `us` microseconds (one thread reading the global timer):
// lets the host queue work ahead of the device (the per-op timer uses it).
void spin(int64_t us, cudaStream_t st);
// bf16 <-> f32, round to nearest even (kernels/dtype_convert.cuh)
void f32_to_bf16(uint16_t* out, const float* x, int64_t n, cudaStream_t st);
void bf16_to_f32(float* out, const uint16_t* x, int64_t n, cudaStream_t st);

// Skinny matmul for decode (kernels/gemv.cu): out[N,O] = x[N,I] @ W[O,I]^T (+ bias[O]),
// W float32 or bf16 (x then rounded to bf16 as it is read), float32 products and sums, bias
// added in the same kernel; bias may be null. For the shapes gemv_fits accepts: at most
// kGemvMaxRows rows whose x fits comfortably in a multiprocessor's L1 (every warp reads all
// of x); larger N goes to cuBLAS.
constexpr int64_t kGemvMaxRows = 4;
constexpr int64_t kGemvMaxInputBytes = int64_t(96) << 10;
bool gemv_fits(int64_t N, int64_t I);
void gemv(float* out, const float* x, const void* W, bool w_bf16, const float* bias, int64_t N, int64_t O, int64_t I,
          cudaStream_t st);

// Attention over keys/values [B,Hkv,Smax,hd] of which the first S are used; q [B,H,T,hd],
// mask [B,T,S] additive, z [B,T,H,hd]. Query head h reads KV head h / (H/Hkv) in place.
struct AttentionArgs {
  float* z;
  const float* q;
  const float* k;
  const float* v;
  const float* mask;
  int64_t B, H, Hkv, T, S, Smax, hd;
  float scale;
};
// Fused: an online softmax per query row; the [T,S] matrix is never written. When there are
// few query rows (decode), each row's keys are split over `splits` blocks whose partial
// results (max, sum, weighted values) go to `scratch` and are combined by a second kernel
// (flash-decoding). attention_fused_plan says how many splits and how many scratch floats.
int64_t attention_fused_plan(const AttentionArgs& a, int sm_count, int* splits);
void attention_fused(const AttentionArgs& a, int splits, float* scratch, cudaStream_t st);
// Materialized, for the attn.scores / attn.probs hooks: scores [B,H,T,S] (scores + mask),
// then probs [B,H,T,S] (softmax), then z = probs @ v. scores may equal probs (in place).
void attention_scores(const AttentionArgs& a, float* scores, cudaStream_t st);
void attention_softmax(const float* scores, float* probs, int64_t rows, int64_t S, cudaStream_t st);
void attention_apply(const AttentionArgs& a, const float* probs, cudaStream_t st);

// ---- backward ops (kernels/backward.cu; the math is kernels/backward_math.cuh) ----------
// dx[n,:] = rmsnorm's input gradient from dy[n,:], x[n,:]     dx, dy, x [N,D]; weight [D]
void rmsnorm_backward(float* dx, const float* dy, const float* x, const float* weight, float eps, int64_t N, int64_t D,
                      cudaStream_t st);
// dgate = dact up silu'(gate), dup = dact silu(gate)    (n elements)
void swiglu_backward(float* dgate, float* dup, const float* dact, const float* gate, const float* up, int64_t n,
                     cudaStream_t st);
// dgate = dact up gelu_tanh'(gate), dup = dact gelu_tanh(gate)    (n elements; Gemma 3)
void geglu_tanh_backward(float* dgate, float* dup, const float* dact, const float* gate, const float* up, int64_t n,
                         cudaStream_t st);
// dx = dy rotated by -theta     dx, dy [B,Hx,T,hd]; cos, sin [B,T,hd]
void rope_backward(float* dx, const float* dy, const float* cos, const float* sin, int64_t B, int64_t Hx, int64_t T,
                   int64_t hd, cudaStream_t st);
// out[b,t,h,:] = x[b,h,t,:]     x [B,Hx,T,hd] -> out [B,T,Hx*hd]  (split_heads' transpose)
void merge_heads(float* out, const float* x, int64_t B, int64_t T, int64_t Hx, int64_t hd, cudaStream_t st);
// dscores = probs (dprobs - rowsum(dprobs probs)) per row of S     all [rows,S]
void softmax_backward(float* dscores, const float* dprobs, const float* probs, int64_t rows, int64_t S,
                      cudaStream_t st);

}  // namespace lmscope::cuda
