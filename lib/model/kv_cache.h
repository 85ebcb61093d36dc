// KVCache: per layer, the RoPE-rotated keys and the values of every position seen so far.
// Positions are columns of the batch (pads included), exactly like HF's DynamicCache.
// A sliding-window layer (Gemma 3) keeps every position too, not only its last window: the
// window is its attention mask (model/masks.h), so the cache is right past the window at the
// cost of memory HF's sliding cache layers would not hold (DynamicSlidingWindowLayer keeps
// window - 1 positions).
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace lmscope {

struct KVCache {
  std::vector<Tensor> k;   // per layer [B,Hkv,Smax,hd]
  std::vector<Tensor> v;   // per layer [B,Hkv,Smax,hd]
  int64_t length = 0;      // positions filled (the same for every layer after a forward)
  int64_t capacity = 0;    // Smax

  KVCache(Backend& backend, const ModelConfig& cfg, int64_t batch, int64_t capacity);
  int64_t bytes() const;   // memory held by the cache
};

}  // namespace lmscope
