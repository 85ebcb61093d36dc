// The logit lens: what the model "would say" after layer l if the layers above it were
// skipped, i.e. its final RMSNorm and LM head applied to layer l's residual stream:
//
//   lens_l = lm_head( final_norm( resid_post_l ) )          [B,T,V]
//
// The forward (model/decoder.cpp) computes it with the same Backend ops and weights as the
// real logits, only for layers whose lens.* hooks a trace asked for; at the last layer it is
// the real logits. This file holds the part that is not a Backend op: each position's top K
// tokens and their softmax probabilities, kept instead of the [B,T,V] logits so that a trace
// of every layer stays small (SmolLM2, 30 layers, V = 49152: 5.9 MB of logits per position,
// 2.4 KB of top-10).
#pragma once
#include "tensor/tensor.h"

namespace lmscope {

struct LensTopK {
  Tensor ids;     // [B,T,K] int32, most probable first; equal probabilities: the lower id first
  Tensor probs;   // [B,T,K] float32, softmax over all V logits (computed in double)
};

// logits: host [B,T,V] float32. k is clamped to V.
LensTopK lens_top_k(const Tensor& logits, int k);

}  // namespace lmscope
