#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cpu/attention_block.h"
#include "backend/cpu/attention_row.h"
#include "backend/cpu/block_matmul.h"
#include "backend/cpu/block_prefill.h"
#include "backend/cpu/half_matmul.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/over_rows.h"
#include "kernels/activation.cuh"
#include "kernels/attention_math.cuh"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"

namespace lmscope {

namespace {
// Below this many elements an op runs on one thread: waking the others costs more than the
// work (a decode step's element-wise ops are a few thousand floats).
constexpr int64_t kParallelFrom = int64_t(1) << 15;

void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("cpu backend: ") + what);
}

bool is_half(const Tensor& t) { return t.dtype() == DType::BF16 || t.dtype() == DType::F16; }

// A weight matrix held as stored in bf16/f16 (prepare_weight kept it so), as the kernels read it.
cpu::HalfMatrix half_matrix(const Tensor& W) {
  return {W.dtype(), W.dim(0), W.dim(1), static_cast<const uint16_t*>(W.raw())};
}

// out[i] = act(gate[i], up[i]): a gated FFN's activation (SwiGLU, GeGLU), element by element,
// with the per-element math of kernels/activation.cuh.
template <class Act>
void gated(Tensor& out, const Tensor& gate, const Tensor& up, Act act) {
  const int64_t n = out.numel();
  const float* g = gate.f32();
  const float* u = up.f32();
  float* o = out.f32();
#pragma omp parallel for if (n >= kParallelFrom)
  for (int64_t i = 0; i < n; ++i) o[i] = act(g[i], u[i]);
}
}  // namespace

// One threading runtime: OpenMP splits every matmul by output rows and OpenBLAS runs each
// slice on one thread. Letting Debian's (pthread) OpenBLAS start its own threads next to
// OpenMP's made them spin against each other: decode on SmolLM2's shapes fell from ~30 to
// under 1 token/s on 2 cores.
// LMSCOPE_CPU_BLOCKS=0: decode takes prefill's path for GGUF blocks and bf16/f16 matrices too
// (a panel dequantized or widened, then sgemm: the float32 numbers), instead of block_matmul
// and half_matmul.
CpuBackend::CpuBackend(CpuActivations activations) : activations_(activations) {
  openblas_set_num_threads(1);
  const char* blocks = std::getenv("LMSCOPE_CPU_BLOCKS");
  use_blocks_ = !(blocks && std::strcmp(blocks, "0") == 0);
  // The kernels' instruction set, chosen here on the calling thread: a bad LMSCOPE_CPU_KERNEL
  // is refused now, in one line, not from inside a parallel region at the first matmul.
  cpu::chosen_kernels();
}

// Unspecified contents, as Backend::alloc says: every op writes all of its output. (Checked by
// filling each new tensor with NaN: the whole test suite passed. Zeroing them cost 1.5% of a
// 1.5B-shaped q8 prefill's samples in memset.)
Tensor CpuBackend::alloc(const Shape& shape) { return Tensor::empty(shape, DType::F32); }

Tensor CpuBackend::prepare_weight(const Tensor& w) {
  if (w.dtype() == DType::F32) return w;   // mmapped float32 and GGUF blocks are used in place
  // A bf16/f16 matrix (the projections, the embedding, the head) too: half_matmul.h reads it
  // as stored, 2 bytes a weight. Vectors (norm weights, biases) are widened once (exact).
  if (is_half(w) && w.ndim() == 2 && w.device() == Device::Host && w.has_storage()) return w;
  return w.to_f32();
}

Tensor CpuBackend::to_host(const Tensor& t) { return t; }
Tensor CpuBackend::upload(const Tensor& host) { return host; }

void CpuBackend::embed(Tensor& out, const Tensor& ids, const Tensor& table) {
  const int64_t N = ids.numel(), D = table.dim(1), V = table.dim(0);
  check(out.numel() == N * D, "embed: output size");
  const int32_t* id = ids.i32();
  for (int64_t n = 0; n < N; ++n) {
    if (id[n] < 0 || id[n] >= V)
      throw std::runtime_error("token id " + std::to_string(id[n]) + " is outside the vocabulary [0," +
                               std::to_string(V) + ")");
    if (is_half(table))   // a bf16/f16 table: widen the one row (the SIMD build)
      cpu::widen_half_rows(half_matrix(table), id[n], 1, out.f32() + n * D);
    else   // float32 copied, GGUF blocks dequantized: the one row
      table.rows_f32(id[n], 1, out.f32() + n * D);
  }
}

void CpuBackend::rmsnorm(Tensor& out, const Tensor& x, const Tensor& weight, float eps) {
  const int64_t D = x.dim(-1), N = x.numel() / D;
  const float* X = x.f32();
  const float* W = weight.f32();
  float* O = out.f32();
#pragma omp parallel for if (N * D >= kParallelFrom)
  for (int64_t n = 0; n < N; ++n) {
    const float* row = X + n * D;
    double sum_sq = 0;   // double: the row mean is then exact to float rounding
    for (int64_t i = 0; i < D; ++i) sum_sq += double(row[i]) * row[i];
    float inv = rmsnorm_inv_rms(float(sum_sq / double(D)), eps);
    for (int64_t i = 0; i < D; ++i) O[n * D + i] = rmsnorm_apply(row[i], inv, W[i]);
  }
}

void CpuBackend::linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) {
  const int64_t O = W.dim(0), I = W.dim(1), N = x.numel() / I;
  check(x.dim(-1) == I && out.numel() == N * O, "linear: shapes");
  // Row-major out[N,O] = x[N,I] @ W[O,I]^T, in pieces of the O outputs (over_rows.h):
  //   out[:, o0:o1] = x @ W[o0:o1]^T   (ldc = O keeps the piece inside the full output)
  const float* X = x.f32();
  float* Y = out.f32();
  if (is_half(W)) {   // bf16/f16 as stored: decode multiplies them directly, prefill by panels
    const float* b = bias.defined() && bias.numel() > 0 ? bias.f32() : nullptr;
    if (decodes_over_blocks(N))
      cpu::half_matmul(Y, X, half_matrix(W), b, N);
    else
      cpu::half_prefill_matmul(Y, X, half_matrix(W), b, N);
    return;
  }
  // A GGUF weight's blocks: decode (a few rows) multiplies them directly (~6x fewer bytes than
  // float32); otherwise, when they are the only copy, a panel at a time is dequantized.
  const QuantBlocks* blocks = W.blocks().get();
  if (blocks) {
    check(blocks->rows == O && blocks->cols == I, "linear: blocks' shape");
    const float* b = bias.defined() && bias.numel() > 0 ? bias.f32() : nullptr;
    if (quantizes(W)) {   // --cpu-activations q8: int8 rows, integer products (any N)
      if (is_k_quant(blocks->type)) {
        cpu::quantize_rows_q8k(X, N, I, q8k_);
        cpu::q8k_matmul(Y, q8k_, *blocks, b);
      } else {
        cpu::quantize_rows_q8(X, N, I, q8_);
        cpu::q8_matmul(Y, q8_, *blocks, b);
      }
      return;
    }
    if (decodes_over_blocks(N)) {
      cpu::block_matmul(Y, X, *blocks, b, N);
      return;
    }
    if (!W.has_storage()) {
      cpu::block_prefill_matmul(Y, X, *blocks, b, N);
      return;
    }
  }
  const float* Wp = W.f32();
  cpu::over_pieces(O, cpu::sgemm_piece(O), [&](int64_t o0, int64_t o1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(N), int(o1 - o0), int(I), 1.0f, X, int(I), Wp + o0 * I,
                int(I), 0.0f, Y + o0, int(O));
  });
  if (bias.defined() && bias.numel() > 0) {
    const float* b = bias.f32();
    float* o = out.f32();
#pragma omp parallel for if (N * O >= kParallelFrom)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < O; ++j) o[n * O + j] += b[j];
  }
}

// Decode over blocks for every job: one parallel region for all of them (block_matmul_group);
// anything else, one linear after another.
// Under q8 the rows are quantized once for all the jobs, and any N goes this way.
void CpuBackend::linear_group(const Tensor& x, std::initializer_list<LinearJob> jobs) {
  const int64_t I = x.dim(-1), N = x.numel() / I;
  if (jobs.size() && is_half(*jobs.begin()->W)) return half_group(x, jobs);
  const bool q8 = activations_ == CpuActivations::Q8;
  std::vector<cpu::BlockMatmulJob> blocked;
  for (const LinearJob& j : jobs) {
    const QuantBlocks* q = j.W->blocks().get();
    // under q8 the rows are quantized once for all the jobs: every weight a K-quant, or none
    const bool mixed = q8 && q && !blocked.empty() && is_k_quant(q->type) != is_k_quant(blocked[0].W->type);
    if (!q || mixed || (q8 && !quantizes(*j.W)) || !(q8 || decodes_over_blocks(N)) || q->rows != j.W->dim(0) || q->cols != I || j.W->dim(1) != I ||
        j.out->numel() != N * q->rows)
      return Backend::linear_group(x, jobs);
    blocked.push_back({j.out->f32(), q, j.bias->defined() && j.bias->numel() > 0 ? j.bias->f32() : nullptr});
  }
  if (q8 && is_k_quant(blocked[0].W->type)) {
    cpu::quantize_rows_q8k(x.f32(), N, I, q8k_);
    cpu::q8k_matmul_group(q8k_, blocked.data(), int(blocked.size()));
    return;
  }
  if (q8) {
    cpu::quantize_rows_q8(x.f32(), N, I, q8_);
    cpu::q8_matmul_group(q8_, blocked.data(), int(blocked.size()));
    return;
  }
  cpu::block_matmul_group(x.f32(), N, blocked.data(), int(blocked.size()));
}

// Decode over bf16/f16 matrices, every job one: one parallel region (half_matmul_group), under
// q8 too (these weights multiply float32 activations); anything else, one linear at a time.
void CpuBackend::half_group(const Tensor& x, std::initializer_list<LinearJob> jobs) {
  const int64_t I = x.dim(-1), N = x.numel() / I;
  std::vector<cpu::HalfMatmulJob> half;
  for (const LinearJob& j : jobs) {
    const Tensor& W = *j.W;
    if (!decodes_over_blocks(N) || !is_half(W) || W.ndim() != 2 || W.dim(1) != I || j.out->numel() != N * W.dim(0))
      return Backend::linear_group(x, jobs);
    half.push_back({j.out->f32(), half_matrix(W), j.bias->defined() && j.bias->numel() > 0 ? j.bias->f32() : nullptr});
  }
  cpu::half_matmul_group(x.f32(), N, half.data(), int(half.size()));
}

// The rows as linear quantizes them (quantize_rows_q8, or quantize_rows_q8k for a K-quant
// weight), widened to float32 for the trace.
bool CpuBackend::quantize_activations_for_hook(const Tensor& x, const Tensor& W, Tensor& codes, Tensor& scales) {
  if (!quantizes(W)) return false;
  const int64_t I = x.dim(-1), N = x.numel() / I;
  const bool k = is_k_quant(W.blocks()->type);
  cpu::Q8Rows rows;
  cpu::Q8KRows krows;
  if (k)
    cpu::quantize_rows_q8k(x.f32(), N, I, krows);
  else
    cpu::quantize_rows_q8(x.f32(), N, I, rows);
  const std::vector<int8_t>& q = k ? krows.q : rows.q;
  codes = Tensor::zeros(x.shape());
  for (int64_t i = 0; i < N * I; ++i) codes.f32()[i] = float(q[size_t(i)]);
  Shape scale_shape = x.shape();
  scale_shape.back() = I / (k ? 256 : 32);
  scales = Tensor::zeros(scale_shape);
  for (int64_t b = 0; b < scales.numel(); ++b) scales.f32()[b] = k ? krows.d[size_t(b)] : rows.d(b);
  return true;
}

void CpuBackend::split_heads(Tensor& out, const Tensor& x) {
  const int64_t B = out.dim(0), Hx = out.dim(1), T = out.dim(2), hd = out.dim(3);
  check(x.numel() == out.numel(), "split_heads: sizes");
  const float* X = x.f32();
  float* Y = out.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hx; ++h)
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(Y + ((b * Hx + h) * T + t) * hd, X + ((b * T + t) * Hx + h) * hd, hd * sizeof(float));
}

void CpuBackend::rope(Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t B = x.dim(0), Hx = x.dim(1), T = x.dim(2), hd = x.dim(3);
  const float* X = x.f32();
  float* Y = out.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hx; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const float* row = X + ((b * Hx + h) * T + t) * hd;
        const float* c = cos.f32() + (b * T + t) * hd;
        const float* s = sin.f32() + (b * T + t) * hd;
        float* o = Y + ((b * Hx + h) * T + t) * hd;
        for (int64_t i = 0; i < hd; ++i) o[i] = rope_rotate(row, int(i), int(hd), c[i], s[i]);
      }
}

void CpuBackend::kv_write(Tensor& cache, const Tensor& x, int64_t offset) {
  const int64_t B = x.dim(0), Hkv = x.dim(1), T = x.dim(2), hd = x.dim(3), Smax = cache.dim(2);
  if (offset + T > Smax) throw std::runtime_error("KV cache full: " + std::to_string(offset + T) +
                                                  " positions > capacity " + std::to_string(Smax));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      std::memcpy(cache.f32() + ((b * Hkv + h) * Smax + offset) * hd, x.f32() + (b * Hkv + h) * T * hd,
                  T * hd * sizeof(float));
}

Tensor CpuBackend::kv_read(const Tensor& cache, int64_t S) {
  const int64_t B = cache.dim(0), Hkv = cache.dim(1), Smax = cache.dim(2), hd = cache.dim(3);
  Tensor out = alloc({B, Hkv, S, hd});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      std::memcpy(out.f32() + (b * Hkv + h) * S * hd, cache.f32() + (b * Hkv + h) * Smax * hd,
                  S * hd * sizeof(float));
  return out;
}

// HF eager attention:  w = (q . k) * scale + mask;  p = softmax(w) in float32;  z = p @ v
// Prefill (T > 1) runs in tiles (attention_block.h): the causal half of the keys skipped, the
// products as sgemm; a decode step (T = 1) one query row at a time (attention_row.h) with the
// loops kernel_table.h chose (attention_row_loops). Hooked scores and probs are written beside
// either without changing its arithmetic: the same z with the hooks or without them.
// LMSCOPE_CPU_ATTENTION=row sends prefill through the row path too.
void CpuBackend::attention(Tensor& z, const Tensor& q, const Tensor& k, const Tensor& v, int64_t S,
                           const Tensor& mask, float scale, Tensor* scores, Tensor* probs) {
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), hd = q.dim(3);
  const int64_t Hkv = k.dim(1), Smax = k.dim(2);
  check(S <= Smax && mask.dim(2) == S, "attention: S");
  const cpu::AttentionDims d{B, H, Hkv, T, hd, S, Smax};
  const cpu::AttentionRowLoops& loops = cpu::attention_row_loops();
  float* sc = scores ? scores->f32() : nullptr;
  float* pr = probs ? probs->f32() : nullptr;
  if (T > 1 && cpu::attention_tiles_enabled())
    cpu::attention_blocked(z.f32(), q.f32(), k.f32(), v.f32(), mask.f32(), d, scale, loops, sc, pr);
  else
    cpu::attention_rows(loops, z.f32(), q.f32(), k.f32(), v.f32(), mask.f32(), d, scale, sc, pr);
}

void CpuBackend::swiglu(Tensor& out, const Tensor& gate, const Tensor& up) {
  gated(out, gate, up, [](float g, float u) { return lmscope::swiglu(g, u); });
}

void CpuBackend::geglu_tanh(Tensor& out, const Tensor& gate, const Tensor& up) {
  check(gate.numel() == out.numel() && up.numel() == out.numel(), "geglu_tanh: sizes");
  gated(out, gate, up, [](float g, float u) { return lmscope::geglu_tanh(g, u); });
}

void CpuBackend::add(Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t n = out.numel();
  check(a.numel() == n && b.numel() == n, "add: sizes");
  const float* A = a.f32();
  const float* Bp = b.f32();
  float* o = out.f32();
#pragma omp parallel for if (n >= kParallelFrom)
  for (int64_t i = 0; i < n; ++i) o[i] = A[i] + Bp[i];
}

void CpuBackend::scale(Tensor& out, const Tensor& x, float s) {
  const int64_t n = out.numel();
  check(x.numel() == n, "scale: sizes");
  const float* X = x.f32();
  float* o = out.f32();
#pragma omp parallel for if (n >= kParallelFrom)
  for (int64_t i = 0; i < n; ++i) o[i] = s * X[i];
}

void CpuBackend::select_column(Tensor& out, const Tensor& x, int64_t t) {
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
  check(t >= 0 && t < T && out.numel() == B * D, "select_column: shapes");
  for (int64_t b = 0; b < B; ++b) std::copy_n(x.f32() + (b * T + t) * D, D, out.f32() + b * D);
}

}  // namespace lmscope
