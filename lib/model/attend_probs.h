// Attention made again on the host from an edited intermediate (docs/interventions.md).
//
// The attention output from given probabilities: z [B,T,H,hd] = probs [B,H,T,S] @ values
// [B,Hkv,S,hd], query head h reading KV head h / (H/Hkv). The forward uses it after an
// intervention edited attn.probs (docs/interventions.md). Computed on the host in float32,
// summing over the keys in order (a round trip through Backend::to_host / upload, so every
// backend has it); `values` may be a cache holding more than S positions.
#pragma once
#include "backend/backend.h"

namespace lmscope {

Tensor attend_probs(Backend& be, const Tensor& probs, const Tensor& values, int64_t S);

// The probabilities from given scores: probs [B,H,T,S] = softmax over S of scores [B,H,T,S],
// after an intervention edited attn.scores. The mask [B,T,S] (host: 0 visible, -FLT_MAX
// masked) still decides which keys a query sees: a masked key gets probability 0 whatever its
// edited score (zeroing the scores makes a query attend evenly to the keys it could see, not
// to the future or to padding). A query that sees no key (none in a causal forward) gets all
// zeros. Float32 on the host: the max subtracted first, the exponentials summed in key order.
Tensor probs_from_scores(Backend& be, const Tensor& scores, const Tensor& mask_host);

}  // namespace lmscope
