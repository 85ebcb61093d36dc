// Decoder: the Llama/Qwen2/Qwen3/Gemma 3 forward pass, written once against the Backend interface.
#pragma once
#include "backend/backend.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "trace/trace.h"

namespace lmscope {

struct StepInput {
  Tensor input_ids;       // [B,T] int32, host
  Tensor position_ids;    // [B,T] int32, host: RoPE positions of these tokens
  Tensor attention_mask;  // [B,S] int32, host: 1 real / 0 pad, S = past + T
};

enum class LogitsFor { AllPositions, LastPosition };

class Decoder {
 public:
  // Weights are prepared for the backend once here (CPU: bf16/f16 vectors widened to float32,
  // matrices kept as stored).
  Decoder(const ModelConfig& cfg, const Weights& weights, Backend& backend);

  // One forward over T new tokens per row. With a cache, keys/values are appended after
  // cache->length positions; without one (nullptr) the step sees only its own T tokens.
  // Returns host logits [B,T,V], or [B,1,V] for the last column only.
  Tensor forward(const StepInput& in, KVCache* cache, Trace* trace, LogitsFor which);

  const ModelConfig& config() const { return cfg_; }
  Backend& backend() { return backend_; }

 private:
  ModelConfig cfg_;
  Backend& backend_;
  Weights w_;   // prepared for backend_
  float embed_scale_ = 1.0f;   // Gemma 3: sqrt(D) in the compute dtype
};

}  // namespace lmscope
