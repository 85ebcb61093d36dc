// The CPU backend's backward ops (backend.h, "backward ops"): the input gradients of the
// forward's ops, for grad/decoder_backward.cpp. Plain loops and OpenBLAS sgemm; float32 like
// the forward, with the row sums of rmsnorm and softmax in double. The formulas are in
// docs/gradients.md's table; the per-element math is kernels/backward_math.cuh, which the CUDA
// backend's kernels (kernels/backward.cu) call too: these are their CPU references.
//
// Shapes: B batch, T tokens, S = T key positions (a prefill), H query heads, Hkv KV heads,
// hd head dim, N rows, I a linear's inputs, O its outputs.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cpu/block_prefill.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/half_matmul.h"
#include "kernels/backward_math.cuh"

namespace lmscope {

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("cpu backend (backward): ") + what);
}

// W's rows [row0, row0 + n) as float32 into panel[n, I], whatever form W is held in: a GGUF
// block-quantized weight dequantized one panel of block rows at a time, a bf16/f16 one widened,
// a float32 one copied. Never a float32 copy of the whole matrix.
void weight_rows(const Tensor& W, int64_t row0, int64_t n, float* panel) {
  const int64_t I = W.dim(1);
  if (W.dtype() == DType::BF16 || W.dtype() == DType::F16)
    cpu::widen_half_rows({W.dtype(), W.dim(0), I, static_cast<const uint16_t*>(W.raw())}, row0, n, panel);
  else if (W.has_storage())
    std::memcpy(panel, W.f32() + row0 * I, size_t(n * I) * sizeof(float));
  else
    cpu::dequantize_panel(*W.blocks(), row0, n, panel);
}

}  // namespace

// dx [N,I] = dy [N,O] @ W [O,I], as a sum over panels of W's rows:
//   dx += dy[:, o0:o0+n] @ W[o0:o0+n, :]
// Each thread sums its panels into its own dx; the threads' sums are added at the end.
void CpuBackend::linear_backward(Tensor& dx, const Tensor& dy, const Tensor& W) {
  const int64_t O = W.dim(0), I = W.dim(1), N = dy.numel() / O;
  require(dy.dim(-1) == O && dx.numel() == N * I, "linear_backward: shapes");
  const int64_t rows = cpu::prefill_panel_rows(I);
  const int64_t panels = (O + rows - 1) / rows;
  const int threads = std::max(1, std::min<int>(omp_get_max_threads(), int(panels)));
  std::vector<std::vector<float>> partial(threads, std::vector<float>(size_t(N * I), 0.0f));
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> panel(size_t(rows * I));   // W[o0:o0+n, :] as float32
    float* mine = partial[omp_get_thread_num()].data();
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t o0 = p * rows, n = std::min(rows, O - o0);
      weight_rows(W, o0, n, panel.data());
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(N), int(I), int(n), 1.0f, dy.f32() + o0, int(O),
                  panel.data(), int(I), 1.0f, mine, int(I));
    }
  }
  float* out = dx.f32();
  std::copy(partial[0].begin(), partial[0].end(), out);
  for (int t = 1; t < threads; ++t)
    for (int64_t i = 0; i < N * I; ++i) out[i] += partial[t][i];
}

// y = w * x * r with r = 1 / sqrt(mean(x^2) + eps); with g = dy * w:
//   dx = r * g - x * r^3 * sum(g * x) / D
void CpuBackend::rmsnorm_backward(Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& weight, float eps) {
  const int64_t D = x.dim(-1), N = x.numel() / D;
  require(dy.numel() == x.numel() && dx.numel() == x.numel() && weight.numel() == D, "rmsnorm_backward: shapes");
  const float* X = x.f32();
  const float* G = dy.f32();
  const float* w = weight.f32();
  float* out = dx.f32();
#pragma omp parallel for
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = X + n * D;
    const float* gr = G + n * D;
    double sum_sq = 0, gx = 0;
    for (int64_t i = 0; i < D; ++i) {
      sum_sq += double(xr[i]) * xr[i];
      gx += double(gr[i]) * w[i] * xr[i];
    }
    const double r = rmsnorm_backward_inv_rms(sum_sq, double(D), eps);
    const double c = rmsnorm_backward_row_term(r, gx, double(D));
    for (int64_t i = 0; i < D; ++i) out[n * D + i] = rmsnorm_backward_apply(gr[i], xr[i], w[i], r, c);
  }
}

// The gated units' backward, elementwise: op is swiglu_backward or geglu_tanh_backward of
// kernels/backward_math.cuh (their formulas there).
template <typename Op>
static void glu_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate, const Tensor& up,
                         const char* shapes_error, Op op) {
  const int64_t n = gate.numel();
  require(up.numel() == n && dact.numel() == n && dgate.numel() == n && dup.numel() == n,
          shapes_error);
  const float* g = gate.f32();
  const float* u = up.f32();
  const float* d = dact.f32();
  float* dg = dgate.f32();
  float* du = dup.f32();
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) op(d[i], g[i], u[i], &dg[i], &du[i]);
}

// act = silu(g) * u:   dgate = dact * u * silu'(g), dup = dact * silu(g)
void CpuBackend::swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                                 const Tensor& up) {
  glu_backward(dgate, dup, dact, gate, up, "swiglu_backward: shapes", lmscope::swiglu_backward);
}

// Gemma 3's GeGLU, act = gelu_tanh(g) * u:   dgate = dact * u * gelu_tanh'(g), dup = dact * gelu_tanh(g)
void CpuBackend::geglu_tanh_backward(Tensor& dgate, Tensor& dup, const Tensor& dact, const Tensor& gate,
                                     const Tensor& up) {
  glu_backward(dgate, dup, dact, gate, up, "geglu_tanh_backward: shapes", lmscope::geglu_tanh_backward);
}

// Forward, per row with h = hd/2: y1 = x1 c1 - x2 s1, y2 = x2 c2 + x1 s2 (rotate_half). Its
// transpose: dx1 = dy1 c1 + dy2 s2, dx2 = dy2 c2 - dy1 s1 (a rotation by -theta).
void CpuBackend::rope_backward(Tensor& dx, const Tensor& dy, const Tensor& cos, const Tensor& sin) {
  const int64_t B = dy.dim(0), Hx = dy.dim(1), T = dy.dim(2), hd = dy.dim(3);
  require(dx.numel() == dy.numel() && cos.numel() == B * T * hd, "rope_backward: shapes");
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hx; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const float* g = dy.f32() + ((b * Hx + h) * T + t) * hd;
        const float* c = cos.f32() + (b * T + t) * hd;
        const float* s = sin.f32() + (b * T + t) * hd;
        float* o = dx.f32() + ((b * Hx + h) * T + t) * hd;
        for (int64_t i = 0; i < hd; ++i) o[i] = rope_rotate_back(g, int(i), int(hd), c, s);
      }
}

void CpuBackend::merge_heads(Tensor& out, const Tensor& x) {
  const int64_t B = x.dim(0), Hx = x.dim(1), T = x.dim(2), hd = x.dim(3);
  require(out.numel() == x.numel(), "merge_heads: sizes");
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hx; ++h)
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(out.f32() + ((b * T + t) * Hx + h) * hd, x.f32() + ((b * Hx + h) * T + t) * hd,
                    size_t(hd) * sizeof(float));
}

// Per batch row b and query head h (KV head g = h / (H / Hkv)), with dz_h [T,hd] the head's
// columns of dz (row stride H*hd):
//   dprobs_h  [T,S]  = dz_h @ v_g^T
//   dscores_h [T,S]  = probs_h * (dprobs_h - rowsum(dprobs_h * probs_h))   (softmax')
//   dq_h      [T,hd] = scale * dscores_h @ k_g
//   dk_g     += scale * dscores_h^T @ q_h,  dv_g += probs_h^T @ dz_h
void CpuBackend::attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dscores, Tensor& dprobs,
                                    const Tensor& dz, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& probs, float scale) {
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), hd = q.dim(3), Hkv = k.dim(1), S = k.dim(2);
  require(S == T && probs.dim(3) == S && dz.numel() == q.numel() && H % Hkv == 0, "attention_backward: shapes");
  const int64_t group = H / Hkv;
  std::fill_n(dk.f32(), dk.numel(), 0.0f);
  std::fill_n(dv.f32(), dv.numel(), 0.0f);
  // One (b, g) per iteration: the query heads of a KV head write only that head's dk/dv.
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < Hkv; ++g) {
      const float* kg = k.f32() + (b * Hkv + g) * S * hd;      // [S,hd]
      const float* vg = v.f32() + (b * Hkv + g) * S * hd;      // [S,hd]
      float* dkg = dk.f32() + (b * Hkv + g) * S * hd;          // [S,hd]
      float* dvg = dv.f32() + (b * Hkv + g) * S * hd;          // [S,hd]
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const float* dzh = dz.f32() + (b * T * H + h) * hd;    // [T,hd], row stride H*hd
        const float* qh = q.f32() + (b * H + h) * T * hd;      // [T,hd]
        const float* ph = probs.f32() + (b * H + h) * T * S;   // [T,S]
        float* dph = dprobs.f32() + (b * H + h) * T * S;       // [T,S]
        float* dsh = dscores.f32() + (b * H + h) * T * S;      // [T,S]
        float* dqh = dq.f32() + (b * H + h) * T * hd;          // [T,hd]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(S), int(hd), 1.0f, dzh, int(H * hd), vg,
                    int(hd), 0.0f, dph, int(S));
        for (int64_t t = 0; t < T; ++t) {
          double dot = 0;
          for (int64_t s = 0; s < S; ++s) dot += double(dph[t * S + s]) * ph[t * S + s];
          for (int64_t s = 0; s < S; ++s) dsh[t * S + s] = softmax_backward(ph[t * S + s], dph[t * S + s], dot);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(T), int(hd), int(S), scale, dsh, int(S), kg,
                    int(hd), 0.0f, dqh, int(hd));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(S), int(hd), int(T), scale, dsh, int(S), qh,
                    int(hd), 1.0f, dkg, int(hd));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(S), int(hd), int(T), 1.0f, ph, int(S), dzh,
                    int(H * hd), 1.0f, dvg, int(hd));
      }
    }
}

}  // namespace lmscope
