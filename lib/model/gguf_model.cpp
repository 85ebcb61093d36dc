// load_gguf_model: llama.cpp metadata -> ModelConfig, llama.cpp tensor names -> Weights.
#include "model/gguf_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json_error.h"

namespace lmscope {
namespace {

// A positive int from an integer key (required, or `dflt` when absent and dflt > 0).
int positive(const GgufFile& f, const std::string& key, int64_t dflt = 0) {
  if (!f.has(key)) {
    if (dflt > 0) return int(dflt);
    fail_file(f.path(), "key '" + key + "' is missing");
  }
  const int64_t v = f.get_int(key);
  if (v <= 0 || v > (int64_t(1) << 30))
    fail_file(f.path(), "key '" + key + "' = " + std::to_string(v) + " is not a sensible positive size");
  return int(v);
}

int token_id(const GgufFile& f, const std::string& key, int vocab) {
  const int64_t v = f.get_int(key);
  if (v < 0 || v >= vocab)
    fail_file(f.path(), "key '" + key + "' = " + std::to_string(v) + " is outside the vocabulary [0," +
                       std::to_string(vocab) + ")");
  return int(v);
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string& path = f.path();
  ModelConfig c;
  const std::string arch = f.get_string("general.architecture");
  if (arch == "llama") {
    c.arch = Arch::Llama;
    c.architecture = "LlamaForCausalLM";
  } else if (arch == "qwen2") {
    c.arch = Arch::Qwen2;
    c.architecture = "Qwen2ForCausalLM";
  } else if (arch == "qwen3") {
    c.arch = Arch::Qwen3;
    c.architecture = "Qwen3ForCausalLM";
    c.qk_norm = true;   // blk.N.attn_q_norm / attn_k_norm: HF's q_norm / k_norm
  } else if (arch == "gemma3") {
    c.arch = Arch::Gemma3;
    c.architecture = "Gemma3ForCausalLM";
    c.qk_norm = c.embed_scaled = c.post_branch_norms = c.gelu_tanh_ffn = true;
  } else {
    fail_file(path, "key 'general.architecture' = '" + arch + "' is not supported (llama, qwen2, qwen3, gemma3)");
  }
  const std::string a = arch + ".";

  // ---- features we do not implement are refused, not ignored ----
  if (f.has(a + "expert_count") && f.get_int(a + "expert_count") > 0)
    fail_file(path, "key '" + a + "expert_count' > 0: mixture-of-experts models are not supported");
  if (f.has(a + "rope.scaling.type")) {
    const std::string t = f.get_string(a + "rope.scaling.type");
    if (t != "none")
      fail_file(path, "key '" + a + "rope.scaling.type' = '" + t + "' is not supported (only plain RoPE)");
  }
  if (c.arch != Arch::Gemma3 && f.has(a + "attention.sliding_window"))
    fail_file(path, "key '" + a + "attention.sliding_window' is present: sliding window attention is not supported");
  for (const char* cap : {"attn_logit_softcapping", "final_logit_softcapping"})
    if (f.has(a + cap)) fail_file(path, "key '" + a + cap + "' is present: soft-capping is not supported");

  // ---- sizes ----
  c.num_layers = positive(f, a + "block_count");
  c.hidden_size = positive(f, a + "embedding_length");
  c.intermediate_size = positive(f, a + "feed_forward_length");
  c.num_heads = positive(f, a + "attention.head_count");
  c.num_kv_heads = positive(f, a + "attention.head_count_kv", c.num_heads);
  c.max_position_embeddings = positive(f, a + "context_length", c.arch == Arch::Llama ? 2048 : 32768);
  // llama.cpp: n_embd_head_k = attention.key_length, default n_embd / n_head.
  if (f.has(a + "attention.key_length")) {
    c.head_dim = positive(f, a + "attention.key_length");
  } else {
    if (c.hidden_size % c.num_heads != 0)
      fail_file(path, "key '" + a + "attention.head_count' (" + std::to_string(c.num_heads) +
                     ") does not divide '" + a + "embedding_length' (" + std::to_string(c.hidden_size) +
                     ") and '" + a + "attention.key_length' is not given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (f.has(a + "attention.value_length") && positive(f, a + "attention.value_length") != c.head_dim)
    fail_file(path, "key '" + a + "attention.value_length' differs from the key length " +
                   std::to_string(c.head_dim) + ": not supported");
  if (f.has(a + "rope.dimension_count") && positive(f, a + "rope.dimension_count") != c.head_dim)
    fail_file(path, "key '" + a + "rope.dimension_count' = " + std::to_string(f.get_int(a + "rope.dimension_count")) +
                   " differs from the head size " + std::to_string(c.head_dim) +
                   ": partial rotary embeddings are not supported");
  if (c.head_dim % 2 != 0) fail_file(path, "head size " + std::to_string(c.head_dim) + " must be even for RoPE");
  if (c.num_heads % c.num_kv_heads != 0)
    fail_file(path, "key '" + a + "attention.head_count_kv' (" + std::to_string(c.num_kv_heads) +
                   ") must divide '" + a + "attention.head_count' (" + std::to_string(c.num_heads) + ")");

  // ---- vocabulary: <arch>.vocab_size, else the token list, else token_embd's rows ----
  if (f.has(a + "vocab_size")) {
    c.vocab_size = positive(f, a + "vocab_size");
  } else if (f.has("tokenizer.ggml.tokens") && f.value("tokenizer.ggml.tokens").type() == GgufType::Array) {
    c.vocab_size = int(f.value("tokenizer.ggml.tokens").as_array().size());
  } else if (f.has_tensor("token_embd.weight") && f.tensor_info("token_embd.weight").ne.size() == 2) {
    c.vocab_size = int(f.tensor_info("token_embd.weight").ne[1]);
  } else {
    fail_file(path, "cannot tell the vocabulary size: no '" + a + "vocab_size', 'tokenizer.ggml.tokens' or token_embd.weight");
  }

  // ---- numerics ----
  const std::string eps_key = a + "attention.layer_norm_rms_epsilon";
  c.rms_norm_eps = float(f.get_float(eps_key));
  if (!(c.rms_norm_eps > 0)) fail_file(path, "key '" + eps_key + "' must be positive");
  c.rope_theta = float(f.get_float(a + "rope.freq_base", c.arch == Arch::Gemma3 ? 1000000.0 : 10000.0));
  if (!(c.rope_theta > 0)) fail_file(path, "key '" + a + "rope.freq_base' must be positive");
  if (c.arch == Arch::Gemma3) {
    // The GGUF holds the window but neither which layers slide nor their RoPE base: llama.cpp
    // (src/llama-model.cpp, LLM_ARCH_GEMMA3) hard-codes both for the architecture, as
    // Gemma3TextConfig's defaults do: every layer but each 6th slides, local base 10,000.
    // Its attention scale is head_dim^-0.5 (query_pre_attn_scalar = head_dim in every Gemma 3
    // but the 27B, which llama.cpp special-cases and lmscope does not know from the file).
    c.sliding_window = positive(f, a + "attention.sliding_window", 4096);
    c.sliding_layers.assign(c.num_layers, false);
    for (int i = 0; i < c.num_layers; ++i) c.sliding_layers[i] = (i + 1) % 6 != 0;
    c.rope_theta_local = 10000.0f;
    c.query_pre_attn_scalar = float(c.head_dim);
  }

  // ---- tying and biases, from the tensors present (as HF's GGUF loader decides tying) ----
  c.tie_word_embeddings = !f.has_tensor("output.weight");
  if (c.arch == Arch::Qwen2) {
    c.attention_bias = true;
    c.o_proj_bias = false;
  } else {   // Llama, Qwen3: attention_bias puts a bias on q, k, v and o
    c.attention_bias = f.has_tensor("blk.0.attn_q.bias");
    c.o_proj_bias = c.attention_bias;
  }
  c.mlp_bias = false;

  // ---- special tokens ----
  if (f.has("tokenizer.ggml.bos_token_id")) c.bos_token_ids = {token_id(f, "tokenizer.ggml.bos_token_id", c.vocab_size)};
  if (f.has("tokenizer.ggml.eos_token_id")) c.eos_token_ids = {token_id(f, "tokenizer.ggml.eos_token_id", c.vocab_size)};
  if (f.has("tokenizer.ggml.padding_token_id"))
    c.pad_token_id = token_id(f, "tokenizer.ggml.padding_token_id", c.vocab_size);
  c.torch_dtype = "float32";  // HF dequantizes GGUF to float32; our F16/BF16 and block matrices compute in it too

  // The trace's root attribute: the derived config in HF's config.json spelling.
  nlohmann::json j = {
      {"architectures", {c.architecture}},
      {"model_type", arch},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"max_position_embeddings", c.max_position_embeddings},
      {"vocab_size", c.vocab_size},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"attention_bias", c.attention_bias},
      {"bos_token_id", c.bos_token_ids.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.bos_token_ids[0])},
      {"eos_token_id", c.eos_token_ids.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.eos_token_ids[0])},
      {"pad_token_id", c.pad_token_id < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.pad_token_id)},
      {"torch_dtype", "float32"},
      {"gguf_file", path},
      {"gguf_file_type", f.has("general.file_type") ? nlohmann::json(f.get_int("general.file_type")) : nlohmann::json(nullptr)},
      {"gguf_name", f.get_string("general.name", "")},
  };
  if (c.arch == Arch::Gemma3) {
    nlohmann::json types = nlohmann::json::array();
    for (int i = 0; i < c.num_layers; ++i) types.push_back(c.is_sliding(i) ? "sliding_attention" : "full_attention");
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
    j["sliding_window"] = c.sliding_window;
    j["layer_types"] = types;
    j["rope_local_base_freq"] = c.rope_theta_local;
  }
  c.json_text = j.dump();
  return c;
}

namespace {
// A 2-D Q8_0/Q4_1/Q4_K/Q5_K/Q6_K weight is held as its blocks only (tensor/quant_blocks.h): a
// view into the mapped file, no float32 copy. Null for any other tensor.
std::shared_ptr<const QuantBlocks> file_blocks(const GgufFile& f, const GgufTensorInfo& t) {
  BlockType type;
  const Shape shape = t.shape();
  if (shape.size() != 2 || !block_type_of(ggml_type_name(t.type), &type) || shape[1] % block_elems(type) != 0)
    return nullptr;
  auto b = std::make_shared<QuantBlocks>();
  b->type = type;
  b->rows = shape[0];
  b->cols = shape[1];
  if (t.nbytes != uint64_t(b->rows) * b->row_bytes()) return nullptr;   // not the layout we read: floats
  b->data = f.tensor_data(t);
  b->owner = f.owner();
  return b;
}

// A 2-D F16/BF16 weight is held as stored, 2 bytes a weight: a view of the mapped file (a copy
// when the file puts it at an odd address), the same F16/BF16 tensor an HF checkpoint's
// safetensors give, which the CPU backend multiplies in place (backend/cpu/half_matmul.h) and
// the CUDA backend widens or uploads as it does theirs. Undefined for any other tensor (1-D
// norms and biases are widened at load, as for safetensors).
Tensor file_half_matrix(const GgufFile& f, const GgufTensorInfo& t) {
  const std::string type = ggml_type_name(t.type);
  const Shape shape = t.shape();
  if (shape.size() != 2 || (type != "F16" && type != "BF16") || t.nbytes != uint64_t(shape_numel(shape)) * 2)
    return Tensor();
  return Tensor::view_or_copy(shape, type == "F16" ? DType::F16 : DType::BF16, f.tensor_data(t), f.owner());
}

// Un-permuting copies a q/k matrix (its blocks, or its 2-byte values); the file pages it read
// to do so would stay in the resident set beside the copy (8 MiB for SmolLM2). The mapping is
// read-only and private, so dropping them only means a later read faults them in again from
// the file. Whole pages inside the tensor's data only (its neighbours' pages stay).
void release_file_pages(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo& t = f.tensor_info(name);
  const uintptr_t data = uintptr_t(f.tensor_data(t));
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (data + page - 1) / page * page;
  const uintptr_t hi = (data + t.nbytes) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);   // advice: failure is harmless
}
}  // namespace

Tensor gguf_unpermute_rows(const Tensor& w, int n_head) {
  const int64_t rows = w.ndim() >= 1 ? w.dim(0) : 0;
  const int64_t cols = w.ndim() == 2 ? w.dim(1) : 1;
  if ((w.ndim() != 1 && w.ndim() != 2) || n_head <= 0 || rows % (2 * int64_t(n_head)) != 0)
    throw std::invalid_argument("gguf_unpermute_rows: " + shape_str(w.shape()) +
                                " cannot be split into " + std::to_string(n_head) + " heads of even size");
  const int64_t hd = rows / n_head, half = hd / 2;
  // row h*hd + i*half + j of the result is row h*hd + 2j + i of the file
  auto permute = [&](uint8_t* to, const uint8_t* from, size_t row_bytes) {
    for (int64_t h = 0; h < n_head; ++h)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < half; ++j)
          std::memcpy(to + (h * hd + i * half + j) * row_bytes, from + (h * hd + 2 * j + i) * row_bytes, row_bytes);
  };
  std::shared_ptr<const QuantBlocks> blocks;
  if (const auto& fb = w.blocks()) {   // the blocks move with their rows
    auto copy = std::make_shared<std::vector<uint8_t>>(size_t(rows) * fb->row_bytes());
    permute(copy->data(), fb->data, fb->row_bytes());
    auto b = std::make_shared<QuantBlocks>(*fb);
    b->data = copy->data();
    b->owner = copy;
    blocks = std::move(b);
  }
  if (!w.has_storage()) return Tensor::from_blocks(std::move(blocks));   // blocks only
  if (w.device() != Device::Host) throw std::invalid_argument("gguf_unpermute_rows: needs a host tensor");
  Tensor out = Tensor::zeros(w.shape(), w.dtype());   // float32, or F16/BF16 as stored
  permute(static_cast<uint8_t*>(out.raw()), static_cast<const uint8_t*>(w.raw()), size_t(cols) * dtype_size(w.dtype()));
  out.set_blocks(std::move(blocks));
  return out;
}

GgufModel load_gguf_model(const std::string& path) {
  const GgufFile f = GgufFile::open(path, GgufOpen::MetadataOnly);
  if (!f.has_tensor_data())   // e.g. models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf
    fail_file(path, "the file holds the GGUF header only (metadata and tensor infos, not all the tensor data): "
               "it can serve as a tokenizer (lmscope-bpe --tokenizer), not as a model");
  GgufModel m;
  m.cfg = gguf_model_config(f);
  const ModelConfig& c = m.cfg;
  const int64_t D = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t Q = int64_t(c.num_heads) * c.head_dim, KV = int64_t(c.num_kv_heads) * c.head_dim;
  const bool permuted = c.arch == Arch::Llama;  // llama.cpp permutes Llama q/k only (not Qwen2/Qwen3)

  std::set<std::string> used;
  auto get = [&](const std::string& name, const Shape& expected) {
    if (!f.has_tensor(name)) fail_file(path, "tensor '" + name + "' is missing");
    const GgufTensorInfo& t = f.tensor_info(name);
    if (t.shape() != expected)
      fail_file(path, "tensor '" + name + "' has shape " + shape_str(t.shape()) + " (ggml ne reversed), expected " +
                     shape_str(expected));
    used.insert(name);
    if (auto b = file_blocks(f, t)) return Tensor::from_blocks(std::move(b));
    if (Tensor h = file_half_matrix(f, t); h.defined()) return h;
    return f.to_f32(t);
  };

  Weights& w = m.weights;
  w.storage = f.owner();
  w.embed = get("token_embd.weight", {V, D});
  w.final_norm = get("output_norm.weight", {D});
  w.lm_head = c.tie_word_embeddings ? w.embed : get("output.weight", {V, D});
  // The last block's tensors must be in the file before room is made for every layer (a
  // block_count of 2^30 would take gigabytes first).
  if (c.num_layers > 0 && !f.has_tensor("blk." + std::to_string(c.num_layers - 1) + ".attn_norm.weight"))
    fail_file(path, "block_count is " + std::to_string(c.num_layers) + " but tensor 'blk." + std::to_string(c.num_layers - 1) +
                   ".attn_norm.weight' is missing");
  w.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = get(p + "attn_norm.weight", {D});
    L.wq = get(p + "attn_q.weight", {Q, D});
    L.wk = get(p + "attn_k.weight", {KV, D});
    L.wv = get(p + "attn_v.weight", {KV, D});
    if (c.attention_bias) {
      L.bq = get(p + "attn_q.bias", {Q});
      L.bk = get(p + "attn_k.bias", {KV});
      L.bv = get(p + "attn_v.bias", {KV});
    }
    if (permuted) {  // convert_hf_to_gguf permutes q with n_head, k with n_head_kv (bias too)
      L.wq = gguf_unpermute_rows(L.wq, c.num_heads);
      L.wk = gguf_unpermute_rows(L.wk, c.num_kv_heads);
      release_file_pages(f, p + "attn_q.weight");
      release_file_pages(f, p + "attn_k.weight");
      if (c.attention_bias) {
        L.bq = gguf_unpermute_rows(L.bq, c.num_heads);
        L.bk = gguf_unpermute_rows(L.bk, c.num_kv_heads);
      }
    }
    if (c.qk_norm) {
      L.q_norm = get(p + "attn_q_norm.weight", {c.head_dim});
      L.k_norm = get(p + "attn_k_norm.weight", {c.head_dim});
    }
    L.wo = get(p + "attn_output.weight", {D, Q});
    if (c.o_proj_bias) L.bo = get(p + "attn_output.bias", {D});
    // Gemma 3: post_attention_norm is HF's post_attention_layernorm, ffn_norm its
    // pre_feedforward_layernorm (not Llama's post_attention_layernorm), post_ffw_norm its
    // post_feedforward_layernorm; every norm already holds 1 + w.
    if (c.post_branch_norms) L.attn_post_norm = get(p + "post_attention_norm.weight", {D});
    L.ffn_norm = get(p + "ffn_norm.weight", {D});
    L.w_gate = get(p + "ffn_gate.weight", {F, D});
    L.w_up = get(p + "ffn_up.weight", {F, D});
    L.w_down = get(p + "ffn_down.weight", {D, F});
    if (c.post_branch_norms) L.ffn_post_norm = get(p + "post_ffw_norm.weight", {D});
  }
  for (const auto& t : f.tensors())
    if (!used.count(t.name))
      fail_file(path, "tensor '" + t.name + "' (" + ggml_type_name(t.type) +
                     ") is not part of a plain " + c.architecture + ": not supported");
  return m;
}

}  // namespace lmscope
