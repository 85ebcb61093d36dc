// ModelConfig: the numbers of a Llama/Qwen2/Qwen3/Gemma 3 decoder, read from a Hugging Face config.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmscope {

enum class Arch { Llama, Qwen2, Qwen3, Gemma3 };

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string architecture;       // "LlamaForCausalLM" / "Qwen2ForCausalLM" / "Qwen3ForCausalLM" / "Gemma3ForCausalLM"
  int hidden_size = 0;            // D
  int intermediate_size = 0;      // F
  int num_layers = 0;             // num_hidden_layers
  int num_heads = 0;              // H  (num_attention_heads)
  int num_kv_heads = 0;           // Hkv (num_key_value_heads, defaults to H)
  int head_dim = 0;               // hd  (head_dim if given, else D / H)
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.0f;
  int max_position_embeddings = 0;
  int vocab_size = 0;             // V
  bool tie_word_embeddings = false;
  bool attention_bias = false;    // q/k/v bias (Qwen2: always true); Llama, Qwen3: also o_proj bias
  bool o_proj_bias = false;       // Llama/Qwen3 with attention_bias=true have an o_proj bias, Qwen2 never
  bool qk_norm = false;           // Qwen3: per-head RMSNorm over hd on q and k before RoPE
  bool mlp_bias = false;          // Llama mlp_bias: always false (config.cpp refuses true)
  // Gemma 3 (all off for the others). Its RMSNorms compute x * (1 + w) with w as HF stores
  // it; lmscope's norm weights always hold the multiplier, so load_weights adds the 1 to an HF
  // checkpoint's (in float32, as HF's 1.0 + w.float()) and a GGUF file already holds 1 + w
  // (convert_hf_to_gguf adds it).
  bool embed_scaled = false;      // the embedding times sqrt(D) (Gemma3TextScaledWordEmbedding)
  bool post_branch_norms = false; // RMSNorm on the attention and MLP outputs before each residual add
  bool gelu_tanh_ffn = false;     // GeGLU: gelu_tanh(gate) * up instead of SwiGLU
  float query_pre_attn_scalar = 0;// attention scale = query_pre_attn_scalar^-0.5 (0: hd^-0.5)
  int sliding_window = 0;         // a sliding layer's query sees itself and window - 1 columns before
  std::vector<bool> sliding_layers; // per layer (empty: every layer attends to every column)
  float rope_theta_local = 0;     // the RoPE base of the sliding layers (rope_theta: the others)
  std::vector<int> bos_token_ids; // may be empty
  std::vector<int> eos_token_ids; // eos_token_id may be an int or a list
  int pad_token_id = -1;          // -1 when config.json has none
  std::string torch_dtype;        // "float32", "bfloat16", "float16" or ""
  std::string json_text;          // the config.json text, for the trace's root attribute

  int kv_group() const { return num_heads / num_kv_heads; }  // query heads per KV head
  bool is_sliding(int layer) const { return layer < int(sliding_layers.size()) && sliding_layers[layer]; }
  bool any_sliding() const;
  float attention_scale() const;  // what q.k is multiplied by before the mask and softmax
};

// Reads and validates `<dir>/config.json` (or the file itself if `path` is a file).
// Throws std::runtime_error with a one-line message naming the file and field, e.g.
//   "config.json: field 'rope_scaling': type 'yarn' is not supported".
ModelConfig load_model_config(const std::string& path);
// Same, from JSON text; `source` names the origin in error messages.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);

}  // namespace lmscope
