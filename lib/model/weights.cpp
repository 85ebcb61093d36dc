// load_weights: map HF tensor names onto Weights, checking presence and shape.
#include "model/weights.h"

#include <stdexcept>

#include "io/safetensors.h"

namespace lmscope {
namespace {

// Fetches named tensors from one model's safetensors, with errors that start with `dir`.
class Fetcher {
 public:
  Fetcher(const SafetensorsModel& st, const std::string& dir) : st_(st), dir_(dir) {}

  Tensor get(const std::string& name, const Shape& expected) const {
    if (!st_.has(name)) throw std::runtime_error(dir_ + ": tensor '" + name + "' is missing");
    // info() refuses dtypes we cannot compute with (F64, I64...) with the shard's path.
    const TensorInfo info = st_.info(name);
    if (info.shape != expected)
      throw std::runtime_error(dir_ + ": tensor '" + name + "' has shape " + shape_str(info.shape) +
                               ", expected " + shape_str(expected));
    return st_.tensor(name);
  }

 private:
  const SafetensorsModel& st_;
  const std::string& dir_;
};

}  // namespace

Weights load_weights(const ModelConfig& cfg, const std::string& dir) {
  const SafetensorsModel st = SafetensorsModel::open(dir);
  const Fetcher f(st, dir);
  const int64_t D = cfg.hidden_size, F = cfg.intermediate_size, V = cfg.vocab_size;
  const int64_t Q = int64_t(cfg.num_heads) * cfg.head_dim;      // q_proj width
  const int64_t KV = int64_t(cfg.num_kv_heads) * cfg.head_dim;  // k/v_proj width
  // Qwen2 always has q/k/v biases; Llama and Qwen3 only with attention_bias (which also adds
  // o's: config.cpp sets o_proj_bias so).
  const bool qkv_bias = cfg.attention_bias || cfg.arch == Arch::Qwen2;
  const bool o_bias = cfg.o_proj_bias && cfg.arch != Arch::Qwen2;
  const int64_t hd = cfg.head_dim;

  // Gemma 3's norms hold w of x * (1 + w): ours hold the multiplier (config.h).
  const bool gemma = cfg.arch == Arch::Gemma3;
  auto norm = [&](const std::string& name, int64_t n) {
    const Tensor t = f.get(name, {n});
    return gemma ? gemma_norm_multiplier(t) : t;
  };

  Weights w;
  w.storage = st.storage();
  w.embed = f.get("model.embed_tokens.weight", {V, D});
  w.final_norm = norm("model.norm.weight", D);
  // Tied: lm_head *is* embed_tokens (HF ties the parameters), so a stray lm_head.weight in
  // the file is ignored, as HF's tie_weights() does.
  w.lm_head = cfg.tie_word_embeddings ? w.embed : f.get("lm_head.weight", {V, D});

  // Extra tensors (rotary_emb.inv_freq, ...) are simply never asked for.
  // The last layer's tensors must be in the file before room is made for every layer: a
  // num_hidden_layers of 10^7 would take gigabytes before the first missing tensor.
  if (cfg.num_layers > 0) {
    const std::string last = "model.layers." + std::to_string(cfg.num_layers - 1) + ".input_layernorm.weight";
    if (!st.has(last))
      throw std::runtime_error(dir + ": num_hidden_layers is " + std::to_string(cfg.num_layers) + " but tensor '" +
                               last + "' is missing");
  }
  w.layers.resize(cfg.num_layers);
  for (int l = 0; l < cfg.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = norm(p + "input_layernorm.weight", D);
    L.wq = f.get(p + "self_attn.q_proj.weight", {Q, D});
    L.wk = f.get(p + "self_attn.k_proj.weight", {KV, D});
    L.wv = f.get(p + "self_attn.v_proj.weight", {KV, D});
    if (qkv_bias) {
      L.bq = f.get(p + "self_attn.q_proj.bias", {Q});
      L.bk = f.get(p + "self_attn.k_proj.bias", {KV});
      L.bv = f.get(p + "self_attn.v_proj.bias", {KV});
    }
    if (cfg.qk_norm) {
      L.q_norm = norm(p + "self_attn.q_norm.weight", hd);
      L.k_norm = norm(p + "self_attn.k_norm.weight", hd);
    }
    L.wo = f.get(p + "self_attn.o_proj.weight", {D, Q});
    if (o_bias) L.bo = f.get(p + "self_attn.o_proj.bias", {D});
    if (gemma) {   // Gemma 3: post_attention_layernorm is the attention branch's output norm
      L.attn_post_norm = norm(p + "post_attention_layernorm.weight", D);
      L.ffn_norm = norm(p + "pre_feedforward_layernorm.weight", D);
      L.ffn_post_norm = norm(p + "post_feedforward_layernorm.weight", D);
    } else {
      L.ffn_norm = f.get(p + "post_attention_layernorm.weight", {D});
    }
    L.w_gate = f.get(p + "mlp.gate_proj.weight", {F, D});
    L.w_up = f.get(p + "mlp.up_proj.weight", {F, D});
    L.w_down = f.get(p + "mlp.down_proj.weight", {D, F});
  }
  return w;
}

Tensor gemma_norm_multiplier(const Tensor& w) {
  const Tensor w32 = w.to_f32();
  Tensor out = Tensor::zeros(w32.shape());
  for (int64_t i = 0; i < w32.numel(); ++i) out.f32()[i] = 1.0f + w32.f32()[i];
  return out;
}

std::vector<std::pair<std::string, const Tensor*>> named_weights(const Weights& w) {
  std::vector<std::pair<std::string, const Tensor*>> out;
  auto add = [&](const std::string& name, const Tensor& t) {
    if (t.defined()) out.emplace_back(name, &t);
  };
  add("model.embed_tokens.weight", w.embed);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", L.attn_norm);
    add(p + "self_attn.q_proj.weight", L.wq);
    add(p + "self_attn.q_proj.bias", L.bq);
    add(p + "self_attn.k_proj.weight", L.wk);
    add(p + "self_attn.k_proj.bias", L.bk);
    add(p + "self_attn.v_proj.weight", L.wv);
    add(p + "self_attn.v_proj.bias", L.bv);
    add(p + "self_attn.o_proj.weight", L.wo);
    add(p + "self_attn.o_proj.bias", L.bo);
    add(p + "self_attn.q_norm.weight", L.q_norm);   // after o_proj, as Qwen3Attention declares them
    add(p + "self_attn.k_norm.weight", L.k_norm);
    if (L.attn_post_norm.defined()) {   // Gemma 3's four norms (each its multiplier 1 + w)
      add(p + "post_attention_layernorm.weight", L.attn_post_norm);
      add(p + "pre_feedforward_layernorm.weight", L.ffn_norm);
    } else {
      add(p + "post_attention_layernorm.weight", L.ffn_norm);
    }
    add(p + "mlp.gate_proj.weight", L.w_gate);
    add(p + "mlp.up_proj.weight", L.w_up);
    add(p + "mlp.down_proj.weight", L.w_down);
    add(p + "post_feedforward_layernorm.weight", L.ffn_post_norm);
  }
  add("model.norm.weight", w.final_norm);
  add("lm_head.weight", w.lm_head);
  return out;
}

}  // namespace lmscope
