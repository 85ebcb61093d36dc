// The attention output from given probabilities: z [B,T,H,hd] = probs [B,H,T,S] @ values
// [B,Hkv,S,hd], query head h reading KV head h / (H/Hkv). The forward uses it after an
// intervention edited attn.probs (docs/interventions.md). Computed on the host in float32,
// summing over the keys in order (a round trip through Backend::to_host / upload, so every
// backend has it); `values` may be a cache holding more than S positions.
#pragma once
#include "backend/backend.h"

namespace lmscope {

Tensor attend_probs(Backend& be, const Tensor& probs, const Tensor& values, int64_t S);

}  // namespace lmscope
