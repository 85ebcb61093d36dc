// Masked softmax attention with GQA, two paths (kernels/launch.h):
//
//   fused         online softmax per query row; the [T,S] score matrix is never written.
//                 Used whenever neither attn.scores nor attn.probs is hooked.
//   materialized  scores -> softmax -> probs @ v, three kernels, for those two hooks.
//
// Both read K/V [B,Hkv,Smax,hd] in place: query head h reads KV head kv_head_of(h, H/Hkv),
// nothing is copied per query head. The math is kernels/attention_math.cuh's, the CPU's:
// score = (q.k)*scale + mask, weight = exp(score - max), probs = weight / sum.
//
// Masked keys (the -FLT_MAX sentinel) have probability exactly 0 in the eager softmax unless
// the whole row is masked, where every score is the sentinel and the row is uniform (HF's
// pad query rows). The fused path skips masked keys and, for a row with none left, takes the
// uniform average of v over the S keys: the same numbers, and pad rows can never produce NaN.
#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "kernels/attention_math.cuh"
#include "kernels/kernel_launch.cuh"
#include "kernels/launch.h"
#include "kernels/warp_reduce.cuh"

namespace lmscope::cuda {

namespace {

constexpr int kWarps = 8;         // warps per block in the fused kernel (256 threads)
constexpr int kKeysInFlight = 4;  // keys a warp loads before it reduces (latency hiding)

// ---- fused ------------------------------------------------------------------------------
// grid (rows = B*H*T, splits); block kWarps*32. Block (row, split) takes keys
// [split*per_split, min(S, (split+1)*per_split)); its warps take kKeysInFlight keys at a time,
// round robin. Lane holds head-dim elements lane + 32*j, j < P (hd <= 32*P).
// splits == 1: z is written here. splits > 1: (max, sum, acc[hd]) go to
// scratch[(row*splits + split)*(hd+2) ...] for attention_combine_kernel.
template <int P>
__global__ void __launch_bounds__(kWarps * 32)
    attention_fused_kernel(AttentionArgs a, int64_t per_split, float* scratch) {
  const int64_t row = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int64_t t = row % a.T, h = (row / a.T) % a.H, b = row / (a.T * a.H);
  const int64_t kvh = kv_head_of(int(h), int(a.H / a.Hkv));
  const int64_t hd = a.hd;
  const float* q = a.q + row * hd;
  const float* K = a.k + (b * a.Hkv + kvh) * a.Smax * hd;
  const float* V = a.v + (b * a.Hkv + kvh) * a.Smax * hd;
  const float* mrow = a.mask + (b * a.T + t) * a.S;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t s_begin = split * per_split, s_end = min(a.S, s_begin + per_split);

  float qr[P], acc[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int64_t i = lane + 32 * j;
    qr[j] = i < hd ? q[i] : 0.0f;
    acc[j] = 0.0f;
  }
  float mx = -INFINITY, l = 0.0f;
  for (int64_t s0 = s_begin + int64_t(warp) * kKeysInFlight; s0 < s_end; s0 += kWarps * kKeysInFlight) {
    float mv[kKeysInFlight], dot[kKeysInFlight], kr[kKeysInFlight][P], vr[kKeysInFlight][P];
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      const int64_t s = s0 + u;
      const bool in = s < s_end;
      mv[u] = in ? mrow[s] : kMaskedScore;
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const int64_t i = lane + 32 * j;
        kr[u][j] = (in && i < hd) ? K[s * hd + i] : 0.0f;
        vr[u][j] = (in && i < hd) ? V[s * hd + i] : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      float d = 0.0f;
#pragma unroll
      for (int j = 0; j < P; ++j) d += qr[j] * kr[u][j];
      dot[u] = d;
    }
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
      for (int u = 0; u < kKeysInFlight; ++u) dot[u] += __shfl_xor_sync(0xffffffffu, dot[u], off);
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      if (is_masked(mv[u])) continue;   // probability 0 (or out of range)
      const float w = attention_score(dot[u], a.scale, mv[u]);
      const float nm = fmaxf(mx, w);
      const float corr = softmax_weight(mx, nm), p = softmax_weight(w, nm);   // exp(-inf) = 0 first time
      l = l * corr + p;
#pragma unroll
      for (int j = 0; j < P; ++j) acc[j] = acc[j] * corr + p * vr[u][j];
      mx = nm;
    }
  }

  // combine the warps of this block
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_acc[kWarps][32 * P];
  if (lane == 0) sm_m[warp] = mx, sm_l[warp] = l;
#pragma unroll
  for (int j = 0; j < P; ++j) sm_acc[warp][lane + 32 * j] = acc[j];
  __syncthreads();
  float M = -INFINITY;
  for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm_m[w]);
  float L = 0.0f;
  for (int w = 0; w < kWarps; ++w) L += sm_l[w] * (sm_m[w] == -INFINITY ? 0.0f : softmax_weight(sm_m[w], M));
  for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
    float A = 0.0f;
    if (M != -INFINITY)
      for (int w = 0; w < kWarps; ++w)
        if (sm_m[w] != -INFINITY) A += sm_acc[w][i] * softmax_weight(sm_m[w], M);
    if (splits > 1) {
      float* part = scratch + (row * splits + split) * (hd + 2);
      part[2 + i] = A;
      if (i == 0) part[0] = M, part[1] = L;
      continue;
    }
    float z;
    if (M == -INFINITY) {   // every key masked: the eager softmax is uniform over all S keys
      const float inv = float(1.0 / double(a.S));
      z = 0.0f;
      for (int64_t s = 0; s < a.S; ++s) z += inv * V[s * hd + i];
    } else {
      z = A / L;
    }
    a.z[((b * a.T + t) * a.H + h) * hd + i] = z;
  }
}

// Combines the splits of each row: grid rows, block 128 threads over the head dim.
__global__ void attention_combine_kernel(AttentionArgs a, int splits, const float* scratch) {
  const int64_t row = blockIdx.x, hd = a.hd;
  const int64_t t = row % a.T, h = (row / a.T) % a.H, b = row / (a.T * a.H);
  const float* parts = scratch + row * splits * (hd + 2);
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, parts[s * (hd + 2)]);
  float L = 0.0f;
  if (M != -INFINITY)
    for (int s = 0; s < splits; ++s) {
      const float m = parts[s * (hd + 2)];
      if (m != -INFINITY) L += parts[s * (hd + 2) + 1] * softmax_weight(m, M);
    }
  const int64_t kvh = kv_head_of(int(h), int(a.H / a.Hkv));
  const float* V = a.v + (b * a.Hkv + kvh) * a.Smax * hd;
  for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
    float z;
    if (M == -INFINITY) {   // fully masked row: uniform, as in the single-block case
      const float inv = float(1.0 / double(a.S));
      z = 0.0f;
      for (int64_t s = 0; s < a.S; ++s) z += inv * V[s * hd + i];
    } else {
      float A = 0.0f;
      for (int s = 0; s < splits; ++s) {
        const float m = parts[s * (hd + 2)];
        if (m != -INFINITY) A += parts[s * (hd + 2) + 2 + i] * softmax_weight(m, M);
      }
      z = A / L;
    }
    a.z[((b * a.T + t) * a.H + h) * hd + i] = z;
  }
}

// ---- materialized -----------------------------------------------------------------------
// scores[row, s] = (q . k_s) * scale + mask; grid rows, block 128: one warp per key.
__global__ void attention_scores_kernel(AttentionArgs a, float* scores) {
  const int64_t row = blockIdx.x, hd = a.hd;
  const int64_t t = row % a.T, h = (row / a.T) % a.H, b = row / (a.T * a.H);
  const int64_t kvh = kv_head_of(int(h), int(a.H / a.Hkv));
  const float* q = a.q + row * hd;
  const float* K = a.k + (b * a.Hkv + kvh) * a.Smax * hd;
  const float* mrow = a.mask + (b * a.T + t) * a.S;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  for (int64_t s = warp; s < a.S; s += nwarps) {
    float d = 0.0f;
    for (int64_t i = lane; i < hd; i += 32) d += q[i] * K[s * hd + i];
    d = warp_sum(d);
    if (lane == 0) scores[row * a.S + s] = attention_score(d, a.scale, mrow[s]);
  }
}

// probs = softmax(scores) per row as the CPU reference: float weights, their sum in double,
// then weight * float(1 / sum). grid rows, block 256.
__global__ void attention_softmax_kernel(const float* scores, float* probs, int64_t S) {
  const float* w = scores + int64_t(blockIdx.x) * S;
  float* p = probs + int64_t(blockIdx.x) * S;
  __shared__ float sm_max[32];
  __shared__ double sm_sum[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) mx = fmaxf(mx, w[s]);
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  if (lane == 0) sm_max[warp] = mx;
  __syncthreads();
  mx = sm_max[0];
  for (int i = 1; i < nwarps; ++i) mx = fmaxf(mx, sm_max[i]);
  double sum = 0;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
    const float e = softmax_weight(w[s], mx);
    p[s] = e;
    sum += e;
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) sm_sum[warp] = sum;
  __syncthreads();
  double total = 0;
  for (int i = 0; i < nwarps; ++i) total += sm_sum[i];
  const float inv = float(1.0 / total);
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) p[s] *= inv;
}

// z[b,t,h,i] = sum_s probs[row,s] * v[s,i], keys in order, zero weights skipped (as the CPU).
__global__ void attention_apply_kernel(AttentionArgs a, const float* probs) {
  const int64_t row = blockIdx.x, hd = a.hd;
  const int64_t t = row % a.T, h = (row / a.T) % a.H, b = row / (a.T * a.H);
  const int64_t kvh = kv_head_of(int(h), int(a.H / a.Hkv));
  const float* V = a.v + (b * a.Hkv + kvh) * a.Smax * hd;
  const float* p = probs + row * a.S;
  for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
    float z = 0.0f;
    for (int64_t s = 0; s < a.S; ++s) {
      const float ps = p[s];
      if (ps != 0.0f) z += ps * V[s * hd + i];
    }
    a.z[((b * a.T + t) * a.H + h) * hd + i] = z;
  }
}

void check_shapes(const AttentionArgs& a) {
  if (a.hd > 256) throw std::runtime_error("cuda attention: head_dim " + std::to_string(a.hd) + " > 256");
  if (a.Hkv <= 0 || a.H % a.Hkv != 0 || a.S > a.Smax)
    throw std::logic_error("cuda attention: bad shapes (H % Hkv, S <= Smax)");
}

}  // namespace

int64_t attention_fused_plan(const AttentionArgs& a, int sm_count, int* splits) {
  const int64_t rows = a.B * a.H * a.T;
  // Enough blocks for two waves over the multiprocessors, but at least 64 keys per block.
  int64_t n = 1;
  if (rows > 0 && rows < 2 * int64_t(sm_count)) {
    n = (2 * int64_t(sm_count) + rows - 1) / rows;
    n = std::min<int64_t>(n, (a.S + 63) / 64);
    n = std::max<int64_t>(n, 1);
  }
  *splits = int(n);
  return n > 1 ? rows * n * (a.hd + 2) : 0;
}

void attention_fused(const AttentionArgs& a, int splits, float* scratch, cudaStream_t st) {
  check_shapes(a);
  const int64_t rows = a.B * a.H * a.T;
  if (rows == 0) return;
  if (splits < 1 || (splits > 1 && !scratch)) throw std::logic_error("attention_fused: splits/scratch");
  const int64_t per_split = (a.S + splits - 1) / splits;
  const dim3 grid{unsigned(rows), unsigned(splits)};
  if (a.hd <= 128)
    launch<attention_fused_kernel<4>>(grid, kWarps * 32, 0, st, a, per_split, scratch);
  else
    launch<attention_fused_kernel<8>>(grid, kWarps * 32, 0, st, a, per_split, scratch);
  LMSCOPE_LAUNCHED(attention_fused_kernel);
  if (splits > 1) {
    launch<attention_combine_kernel>(unsigned(rows), 128, 0, st, a, splits, scratch);
    LMSCOPE_LAUNCHED(attention_combine_kernel);
  }
}

void attention_scores(const AttentionArgs& a, float* scores, cudaStream_t st) {
  check_shapes(a);
  const int64_t rows = a.B * a.H * a.T;
  if (rows == 0) return;
  launch<attention_scores_kernel>(unsigned(rows), 128, 0, st, a, scores);
  LMSCOPE_LAUNCHED(attention_scores_kernel);
}

void attention_softmax(const float* scores, float* probs, int64_t rows, int64_t S, cudaStream_t st) {
  if (rows == 0 || S == 0) return;
  launch<attention_softmax_kernel>(unsigned(rows), 256, 0, st, scores, probs, S);
  LMSCOPE_LAUNCHED(attention_softmax_kernel);
}

void attention_apply(const AttentionArgs& a, const float* probs, cudaStream_t st) {
  check_shapes(a);
  const int64_t rows = a.B * a.H * a.T;
  if (rows == 0) return;
  launch<attention_apply_kernel>(unsigned(rows), 128, 0, st, a, probs);
  LMSCOPE_LAUNCHED(attention_apply_kernel);
}

}  // namespace lmscope::cuda
