// The CUDA backend's backward ops (cuda_backward.h). Matmuls through cuBLAS, row-major as
// column-major (cuda_backend.cpp derives the forward's): a row-major [R,C] matrix with row
// stride ld is a column-major [C,R] one with leading dimension ld.
#include "backend/cuda/cuda_backward.h"

#include <stdexcept>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "kernels/launch.h"

namespace lmscope::cuda {

namespace {

float* f(Tensor& t) { return static_cast<float*>(t.raw()); }
const float* f(const Tensor& t) { return static_cast<const float*>(t.raw()); }

void require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("cuda backend (backward): ") + what);
}

void require_device_f32(const Tensor& t, const char* what) {
  if (t.device() != Device::Cuda || t.dtype() != DType::F32)
    throw std::logic_error(std::string("cuda backend (backward): ") + what + " must be a float32 tensor on the device");
}

// C = alpha op(A) op(B) + beta C, column-major, float32 (cublasSgemm).
void sgemm(const BackwardContext& c, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
           float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  LMSCOPE_CUBLAS_CHECK(cublasSgemm(c.blas, ta, tb, int(m), int(n), int(k), &alpha, A, int(lda), B, int(ldb), &beta, C,
                                   int(ldc)));
}

}  // namespace

// dx [N,I] = dy [N,O] @ W [O,I]. Column-major: dx^T [I,N] = W^T [I,O] . dy^T [O,N], where W
// read as column-major is [I,O] (lda = I) and dy is [O,N] (ldb = O): no transposes.
void linear_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& W) {
  if (W.dtype() == DType::BF16)
    throw std::runtime_error("gradients: the cuda backend's --dtype bf16 has no backward ops (use --dtype f32)");
  require_device_f32(W, "linear_backward's weight");
  require_device_f32(dy, "linear_backward's dy");
  const int64_t O = W.dim(0), I = W.dim(1), N = dy.numel() / O;
  require(dy.dim(-1) == O && dx.numel() == N * I, "linear_backward: shapes");
  if (N == 0 || I == 0) return;
  if (O == 0) {
    LMSCOPE_CUDA_CHECK(cudaMemsetAsync(f(dx), 0, dx.nbytes(), c.st));
    return;
  }
  sgemm(c, CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, 1.0f, f(W), I, f(dy), O, 0.0f, f(dx), I);
}

void rmsnorm_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight,
                      float eps) {
  const int64_t D = x.dim(-1), N = x.numel() / D;
  require(dy.numel() == x.numel() && dx.numel() == x.numel() && weight.numel() == D, "rmsnorm_backward: shapes");
  require_device_f32(x, "rmsnorm_backward's x");
  cuda::rmsnorm_backward(f(dx), f(dy), f(x), f(weight), eps, N, D, c.st);
}

void swiglu_backward(const BackwardContext& c, Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                     const Tensor& up) {
  const int64_t n = gate.numel();
  require(up.numel() == n && dact.numel() == n && dgate.numel() == n && dup.numel() == n, "swiglu_backward: shapes");
  cuda::swiglu_backward(f(dgate), f(dup), f(dact), f(gate), f(up), n, c.st);
}

void geglu_tanh_backward(const BackwardContext& c, Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                         const Tensor& up) {
  const int64_t n = gate.numel();
  require(up.numel() == n && dact.numel() == n && dgate.numel() == n && dup.numel() == n,
          "geglu_tanh_backward: shapes");
  cuda::geglu_tanh_backward(f(dgate), f(dup), f(dact), f(gate), f(up), n, c.st);
}

void rope_backward(const BackwardContext& c, Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin) {
  const int64_t B = dy.dim(0), Hx = dy.dim(1), T = dy.dim(2), hd = dy.dim(3);
  require(dx.numel() == dy.numel() && cos.numel() == B * T * hd && sin.numel() == B * T * hd, "rope_backward: shapes");
  cuda::rope_backward(f(dx), f(dy), f(cos), f(sin), B, Hx, T, hd, c.st);
}

void merge_heads(const BackwardContext& c, Tensor& out, const Tensor& x) {
  const int64_t B = x.dim(0), Hx = x.dim(1), T = x.dim(2), hd = x.dim(3);
  require(out.numel() == x.numel(), "merge_heads: sizes");
  cuda::merge_heads(f(out), f(x), B, T, Hx, hd, c.st);
}

// Per batch row b and query head h (KV head g = h / (H / Hkv)), as the CPU's
// (cpu_backward.cpp), with dz_h [T,hd] the head's columns of dz (row stride H*hd):
//   dprobs_h  [T,S]  = dz_h @ v_g^T          column-major: [S,T] = v_g^T' [S,hd] . dz_h^T [hd,T]
//   dscores_h [T,S]  = softmax' (kernel)
//   dq_h      [T,hd] = scale dscores_h @ k_g          [hd,T] = k_g^T [hd,S] . dscores_h^T [S,T]
//   dk_g     += scale dscores_h^T @ q_h               [hd,S] = q_h^T [hd,T] . dscores_h [T,S]
//   dv_g     += probs_h^T @ dz_h                      [hd,S] = dz_h^T [hd,T] . probs_h [T,S]
// The softmax' of every head runs as one launch between the two rounds of matmuls.
void attention_backward(const BackwardContext& c, Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs,
                        const Tensor& dz, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& probs,
                        float scale) {
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), hd = q.dim(3), Hkv = k.dim(1), S = k.dim(2);
  require(S == T && probs.dim(3) == S && probs.numel() == B * H * T * S && dz.numel() == q.numel() &&
              v.numel() == k.numel() && Hkv > 0 && H % Hkv == 0,
          "attention_backward: shapes");
  require_device_f32(probs, "attention_backward's probs");
  const int64_t group = H / Hkv;
  if (dk.nbytes()) LMSCOPE_CUDA_CHECK(cudaMemsetAsync(f(dk), 0, dk.nbytes(), c.st));
  if (dv.nbytes()) LMSCOPE_CUDA_CHECK(cudaMemsetAsync(f(dv), 0, dv.nbytes(), c.st));
  if (B * H * T == 0 || hd == 0) return;
  auto head = [&](int64_t b, int64_t h) { return (b * H + h) * T; };   // first row of (b, h) in [B,H,T,...]
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = b * Hkv + h / group;
      sgemm(c, CUBLAS_OP_T, CUBLAS_OP_N, S, T, hd, 1.0f, f(v) + g * S * hd, hd, f(dz) + (b * T * H + h) * hd, H * hd,
            0.0f, f(dprobs) + head(b, h) * S, S);
    }
  cuda::softmax_backward(f(dscores), f(dprobs), f(probs), B * H * T, S, c.st);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = b * Hkv + h / group;
      const float* dsh = f(dscores) + head(b, h) * S;   // [T,S]
      const float* dzh = f(dz) + (b * T * H + h) * hd;  // [T,hd], row stride H*hd
      sgemm(c, CUBLAS_OP_N, CUBLAS_OP_N, hd, T, S, scale, f(k) + g * S * hd, hd, dsh, S, 0.0f,
            f(dq) + head(b, h) * hd, hd);
      sgemm(c, CUBLAS_OP_N, CUBLAS_OP_T, hd, S, T, scale, f(q) + head(b, h) * hd, hd, dsh, S, 1.0f,
            f(dk) + g * S * hd, hd);
      sgemm(c, CUBLAS_OP_N, CUBLAS_OP_T, hd, S, T, 1.0f, dzh, H * hd, f(probs) + head(b, h) * S, S, 1.0f,
            f(dv) + g * S * hd, hd);
    }
}

}  // namespace lmscope::cuda
