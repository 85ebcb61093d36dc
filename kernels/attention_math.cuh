// Attention per-element math shared by the CPU backend and the CUDA kernels.
#pragma once
#include <cfloat>
#include <cmath>
#include "kernels/hd.cuh"

namespace lmscope {

// What the combined mask adds at a masked position. HF's eager path adds the dtype's lowest
// finite value (torch.finfo(float32).min), not -inf: a fully masked row (a pad query under
// left padding) then softmaxes to a uniform row instead of NaN. We do the same.
constexpr float kMaskedScore = -FLT_MAX;

// Combined additive mask entry: query at absolute column q_col (past + t) may see key
// column s iff s <= q_col (causal) and the key is a real token (padding).
LMSCOPE_HD float combined_mask(int s, int q_col, int key_is_real) {
  return (s <= q_col && key_is_real) ? 0.0f : kMaskedScore;
}

// One attention score, HF eager's order: (q . k) * scaling, then + the additive mask.
LMSCOPE_HD float attention_score(float dot, float scale, float mask) { return dot * scale + mask; }

// A masked entry: the sentinel above, or -inf as other producers write it. The one test of
// "masked" for the kernels (a masked key gets probability exactly 0, unless the whole row is
// masked: then every score is the sentinel and the row is uniform) and for lmscope-diff (two
// masked entries are equal, a masked one against a real one is a mismatch).
// Why half the sentinel (about -1.7e38): a masked score is the sentinel plus a finite q.k, and
// float32 rounds that sum back to the sentinel (or past it, to -inf); bf16's lowest,
// -3.39e38, is below it too. No real activation comes within orders of magnitude of it, so
// a value above it (-1e31, say) is a number, never a mask. A template so that the device
// tests floats and lmscope-diff its doubles without a narrowing conversion.
constexpr float kMaskedAtOrBelow = 0.5f * kMaskedScore;
template <typename Real>
LMSCOPE_HD bool is_masked(Real v) { return v <= Real(kMaskedAtOrBelow); }

// The unnormalized softmax weight of score w in a row whose largest score is wmax.
LMSCOPE_HD float softmax_weight(float w, float wmax) { return expf(w - wmax); }

// exp(x) for x <= 0 (a score minus its row's running max) without libm, so that a vector
// version (backend/cpu/attention_block.cpp) computes the same float in every lane: the tiled
// CPU prefill's softmax weights and rescale factors. x = n ln2 + r with n = rint(x / ln2),
// |r| <= ln2 / 2; exp(r) by its Taylor series to r^7 / 7! (the first term left out,
// 0.347^8 / 8! = 5e-9, is under float32's half ulp 6e-8 at 1); 2^n from the exponent bits.
// ln2 as two floats: kLn2Hi is ln 2 rounded to float, kLn2Lo the rest, so r = x - n ln2 keeps
// the bits n * kLn2Hi alone would round away. Below -87 (exp < 1.7e-38) the result is 0: next
// to the row's largest weight, exp(0) = 1, it is under the sum's rounding anyway; -inf (the
// rescale of a row that has seen nothing yet) gives 0 too. Within 1 ulp of exp (tested).
constexpr float kLn2Hi = 0.693147182464599609375f;
constexpr float kLn2Lo = -1.904654323148236e-09f;
constexpr float kLog2e = 1.44269502162933349609375f;
constexpr float kExpFlushBelow = -87.0f;
LMSCOPE_HD float softmax_exp(float x) {
  if (!(x >= kExpFlushBelow)) return 0.0f;
  const float n = rintf(x * kLog2e);
  const float r = fmaf(-n, kLn2Lo, fmaf(-n, kLn2Hi, x));
  float p = 1.0f / 5040;
  p = fmaf(p, r, 1.0f / 720);
  p = fmaf(p, r, 1.0f / 120);
  p = fmaf(p, r, 1.0f / 24);
  p = fmaf(p, r, 1.0f / 6);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int bits = (int(n) + 127) << 23;   // 2^n, n in [-126, 0]
#if LMSCOPE_DEVICE_CODE
  return p * __int_as_float(bits);
#else
  float two_n;
  __builtin_memcpy(&two_n, &bits, sizeof two_n);
  return p * two_n;
#endif
}

// Query head h reads KV head h / group (HF repeat_kv = repeat_interleave on the head axis).
LMSCOPE_HD int kv_head_of(int h, int group) { return h / group; }

}  // namespace lmscope
