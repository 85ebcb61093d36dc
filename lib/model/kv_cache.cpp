#include "model/kv_cache.h"

namespace lmscope {

KVCache::KVCache(Backend& backend, const ModelConfig& cfg, int64_t batch, int64_t cap)
    : capacity(cap) {
  const Shape shape = {batch, cfg.num_kv_heads, cap, cfg.head_dim};
  for (int l = 0; l < cfg.num_layers; ++l) {
    k.push_back(backend.alloc(shape));
    v.push_back(backend.alloc(shape));
  }
}

int64_t KVCache::bytes() const {
  int64_t n = 0;
  for (const Tensor& t : k) n += int64_t(t.nbytes());
  for (const Tensor& t : v) n += int64_t(t.nbytes());
  return n;
}

}  // namespace lmscope
