// Synthetic models: a ModelConfig from numbers and random float32 weights, for benchmarks
// and tests that need a model's shapes but not its knowledge.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "model/weights.h"

namespace lmscope {

// Shapes of SmolLM2-135M-Instruct (Llama: 30 layers, D 576, GQA 9/3, F 1536, V 49152, tied).
ModelConfig smollm2_135m_shapes();
// Shapes of DeepSeek-R1-Distill-Qwen-1.5B (Qwen2: 28 layers, D 1536, GQA 12/2, hd 128,
// F 8960, V 151936, q/k/v bias, untied head): the CUDA benchmark's model.
ModelConfig deepseek_r1_distill_qwen_1_5b_shapes();
// Shapes of golden/models/tiny-qwen2 (Qwen2: 3 layers, D 64, GQA 4/2, hd 16, F 176, bias).
ModelConfig tiny_qwen2_shapes(int vocab_size);

// Normal(0, std) weights from a seeded generator; norm weights 1 + 0.1 * normal.
Weights random_weights(const ModelConfig& cfg, uint64_t seed, float std = 0.02f);

}  // namespace lmscope
