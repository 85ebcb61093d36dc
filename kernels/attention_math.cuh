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

// Query head h reads KV head h / group (HF repeat_kv = repeat_interleave on the head axis).
LMSCOPE_HD int kv_head_of(int h, int group) { return h / group; }

}  // namespace lmscope
