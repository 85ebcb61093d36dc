#include "model/random_weights.h"

#include <random>

namespace lmscope {

ModelConfig smollm2_135m_shapes() {
  ModelConfig c;
  c.arch = Arch::Llama;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 576, c.intermediate_size = 1536, c.num_layers = 30;
  c.num_heads = 9, c.num_kv_heads = 3, c.head_dim = 64;
  c.rms_norm_eps = 1e-5f, c.rope_theta = 100000.0f, c.max_position_embeddings = 8192;
  c.vocab_size = 49152, c.tie_word_embeddings = true;
  c.eos_token_ids = {0};
  c.json_text = "{\"synthetic\": \"SmolLM2-135M shapes\"}";
  return c;
}

ModelConfig deepseek_r1_distill_qwen_1_5b_shapes() {
  ModelConfig c;
  c.arch = Arch::Qwen2;
  c.architecture = "Qwen2ForCausalLM";
  c.hidden_size = 1536, c.intermediate_size = 8960, c.num_layers = 28;
  c.num_heads = 12, c.num_kv_heads = 2, c.head_dim = 128;
  c.rms_norm_eps = 1e-6f, c.rope_theta = 10000.0f, c.max_position_embeddings = 131072;
  c.vocab_size = 151936, c.attention_bias = true, c.tie_word_embeddings = false;
  c.eos_token_ids = {151643};
  c.json_text = "{\"synthetic\": \"DeepSeek-R1-Distill-Qwen-1.5B shapes\"}";
  return c;
}

ModelConfig tiny_qwen2_shapes(int vocab_size) {
  ModelConfig c;
  c.arch = Arch::Qwen2;
  c.architecture = "Qwen2ForCausalLM";
  c.hidden_size = 64, c.intermediate_size = 176, c.num_layers = 3;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 16;
  c.rms_norm_eps = 1e-6f, c.rope_theta = 10000.0f, c.max_position_embeddings = 128;
  c.vocab_size = vocab_size, c.attention_bias = true;
  c.eos_token_ids = {0};
  c.json_text = "{\"synthetic\": \"tiny-qwen2 shapes\"}";
  return c;
}

Weights random_weights(const ModelConfig& c, uint64_t seed, float std) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto randn = [&](Shape shape, float scale, float offset = 0.0f) {
    Tensor t = Tensor::zeros(std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = offset + scale * normal(rng);
    return t;
  };
  const int64_t D = c.hidden_size, F = c.intermediate_size, q = int64_t(c.num_heads) * c.head_dim,
                kv = int64_t(c.num_kv_heads) * c.head_dim;
  Weights w;
  w.embed = randn({c.vocab_size, D}, std);
  for (int l = 0; l < c.num_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = randn({D}, 0.1f, 1.0f);
    lw.wq = randn({q, D}, std), lw.wk = randn({kv, D}, std), lw.wv = randn({kv, D}, std);
    if (c.attention_bias) lw.bq = randn({q}, std), lw.bk = randn({kv}, std), lw.bv = randn({kv}, std);
    if (c.o_proj_bias) lw.bo = randn({D}, std);
    lw.wo = randn({D, q}, std);
    lw.ffn_norm = randn({D}, 0.1f, 1.0f);
    lw.w_gate = randn({F, D}, std), lw.w_up = randn({F, D}, std), lw.w_down = randn({D, F}, std);
    // Drawn last, so a model without q/k norms keeps the weights it always had.
    if (c.qk_norm) lw.q_norm = randn({c.head_dim}, 0.1f, 1.0f), lw.k_norm = randn({c.head_dim}, 0.1f, 1.0f);
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = randn({D}, 0.1f, 1.0f);
  w.lm_head = c.tie_word_embeddings ? w.embed : randn({c.vocab_size, D}, std);
  return w;
}

}  // namespace lmscope
