// Weights: every tensor of a Llama/Qwen2/Qwen3/Gemma 3 decoder, named for what it is, in the type it is
// stored in (F32/F16/BF16 views into memory-mapped safetensors or GGUF files, GGUF blocks:
// tensor/quant_blocks.h).
// HF names in comments; shapes are PyTorch's [out, in] for Linear weights.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "tensor/tensor.h"

namespace lmscope {

struct LayerWeights {
  Tensor attn_norm;   // [D]            model.layers.L.input_layernorm.weight
  Tensor wq;          // [H*hd, D]      model.layers.L.self_attn.q_proj.weight
  Tensor wk;          // [Hkv*hd, D]    ...k_proj.weight
  Tensor wv;          // [Hkv*hd, D]    ...v_proj.weight
  Tensor bq, bk, bv;  // [H*hd] / [Hkv*hd] (undefined when the model has no q/k/v bias)
  Tensor q_norm;      // [hd]           ...self_attn.q_norm.weight (Qwen3 only)
  Tensor k_norm;      // [hd]           ...self_attn.k_norm.weight (Qwen3 only)
  Tensor wo;          // [D, H*hd]      ...o_proj.weight
  Tensor bo;          // [D] (Llama/Qwen3 attention_bias only)
  Tensor attn_post_norm; // [D]         Gemma 3 only: model.layers.L.post_attention_layernorm.weight
  Tensor ffn_norm;    // [D]            model.layers.L.post_attention_layernorm.weight
                      //                (Gemma 3: ...pre_feedforward_layernorm.weight)
  Tensor w_gate;      // [F, D]         model.layers.L.mlp.gate_proj.weight
  Tensor w_up;        // [F, D]         ...up_proj.weight
  Tensor w_down;      // [D, F]         ...down_proj.weight
  Tensor ffn_post_norm; // [D]          Gemma 3 only: model.layers.L.post_feedforward_layernorm.weight
};

struct Weights {
  Tensor embed;                     // [V, D]  model.embed_tokens.weight
  std::vector<LayerWeights> layers; // num_layers
  Tensor final_norm;                // [D]     model.norm.weight
  Tensor lm_head;                   // [V, D]  lm_head.weight (same storage as embed when tied)
  std::shared_ptr<void> storage;    // keeps the memory maps alive
};

// Every defined tensor of `w` by its Hugging Face name (the names above; a tied lm_head is
// listed too, viewing the embedding), in the model's order. Gemma 3's norms are listed as
// held: the multiplier 1 + w, not HF's w.
std::vector<std::pair<std::string, const Tensor*>> named_weights(const Weights& w);

// Gemma 3's RMSNorm weight w as HF stores it -> the multiplier 1 + w, float32 (config.h).
Tensor gemma_norm_multiplier(const Tensor& w);

// Loads every tensor the config implies from `dir` (model.safetensors, or the shards named
// by model.safetensors.index.json), checking presence and shape. Throws std::runtime_error
// naming the file and tensor on any problem.
Weights load_weights(const ModelConfig& cfg, const std::string& dir);

}  // namespace lmscope
