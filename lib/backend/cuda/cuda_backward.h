// The CUDA backend's backward ops (backend.h, "backward ops"; docs/gradients.md): the bodies
// of CudaBackend's overrides, on its stream and cuBLAS handle. The matmuls are cuBLAS calls
// (float32, CUBLAS_DEFAULT_MATH as the forward's); the rest are kernels/backward.cu, whose
// per-element math (kernels/backward_math.cuh) is the CPU backend's.
//
// Shapes as backend.h's: B batch, T tokens (a prefill: S = T), H query heads, Hkv KV heads, hd
// head dim, N rows, I a linear's inputs, O its outputs. Every tensor float32 on the device;
// the weights float32 (the backend's --dtype f32): a bf16 weight is refused in one line.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tensor/tensor.h"

namespace lmscope::cuda {

struct BackwardContext {
  cublasHandle_t blas;
  cudaStream_t st;
};

// dx [N,I] = dy [N,O] @ W [O,I]
void linear_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& W);
// dx, dy, x [..., D], weight [D]
void rmsnorm_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight,
                      float eps);
// all [N,F]
void swiglu_backward(const BackwardContext& c, Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                     const Tensor& up);
// all [N,F]
void geglu_tanh_backward(const BackwardContext& c, Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                         const Tensor& up);
// dx, dy [B,Hx,T,hd], cos, sin [B,T,hd]
void rope_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin);
// out [B,T,Hx*hd], x [B,Hx,T,hd]
void merge_heads(const BackwardContext& c, Tensor& out, const Tensor& x);
// dq [B,H,T,hd], dk/dv [B,Hkv,T,hd], dscores/dprobs [B,H,T,S]; dz [B,T,H,hd], q [B,H,T,hd],
// k/v [B,Hkv,S,hd], probs [B,H,T,S]
void attention_backward(const BackwardContext& c, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs,
                        const Tensor& dz, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& probs,
                        float scale);

}  // namespace lmscope::cuda
