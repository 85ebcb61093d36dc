// config.json -> ModelConfig. Every field lmscope relies on is type-checked, and every
// setting that would change the forward pass in a way lmscope does not implement (rope
// scaling, sliding windows, MLP biases, quantization) is refused rather than ignored, so a
// model we cannot run exactly fails loudly instead of producing subtly wrong logits.
#include "model/config.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json_error.h"
#include "io/regular_file.h"

namespace lmscope {
namespace {

using nlohmann::json;

// Typed access to the top-level fields of one config.json, with one-line errors that start
// with the source and name the field.
class Fields {
 public:
  Fields(const json& j, const std::string& src) : j_(j), src_(src) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(one_line(src_ + ": " + msg));
  }
  [[noreturn]] void fail_field(const std::string& key, const std::string& msg) const {
    // "field 'k' must be..." or "field 'k': type 'yarn' is not supported"
    fail("field '" + key + "'" + (msg.rfind(":", 0) == 0 ? "" : " ") + msg);
  }

  // The value, or nullptr when absent or JSON null (HF writes null for "use the default").
  const json* get(const std::string& key) const {
    auto it = j_.find(key);
    return (it == j_.end() || it->is_null()) ? nullptr : &*it;
  }

  int integer(const std::string& key, const json& v) const {
    if (!v.is_number_integer()) fail_field(key, "must be an integer, got " + json_kind(v));
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT_MAX)
                               : (v.get<int64_t>() > INT_MAX || v.get<int64_t>() < INT_MIN))
      fail_field(key, "= " + json_short(v) + " is out of range");
    return v.get<int>();
  }
  int positive(const std::string& key, const json& v) const {
    int n = integer(key, v);
    if (n <= 0) fail_field(key, "must be positive, got " + std::to_string(n));
    return n;
  }
  int required_positive(const std::string& key) const {
    const json* v = get(key);
    if (!v) fail_field(key, "is missing");
    return positive(key, *v);
  }
  int optional_positive(const std::string& key, int def) const {
    const json* v = get(key);
    return v ? positive(key, *v) : def;
  }
  double positive_number(const std::string& key, const json& v) const {
    if (!v.is_number()) fail_field(key, "must be a number, got " + json_kind(v));
    double x = v.get<double>();
    if (!(x > 0) || !std::isfinite(x)) fail_field(key, "must be positive, got " + json_short(v));
    return x;
  }
  bool boolean(const std::string& key, bool def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_boolean()) fail_field(key, "must be a boolean, got " + json_kind(*v));
    return v->get<bool>();
  }
  std::string string(const std::string& key, const std::string& def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_string()) fail_field(key, "must be a string, got " + json_kind(*v));
    return v->get<std::string>();
  }
  // bos/eos ids: an int, a list of ints, or null; each must be a row of the embedding.
  std::vector<int> token_ids(const std::string& key, int vocab) const {
    const json* v = get(key);
    std::vector<int> out;
    if (!v) return out;
    if (v->is_array()) {
      for (const auto& e : *v) out.push_back(integer(key, e));
    } else if (v->is_number_integer()) {
      out.push_back(integer(key, *v));
    } else {
      fail_field(key, "must be an integer, a list of integers or null, got " + json_kind(*v));
    }
    for (int id : out)
      if (id < 0 || id >= vocab)
        fail_field(key, "= " + std::to_string(id) + " is outside the vocabulary [0," +
                            std::to_string(vocab) + ")");
    return out;
  }
  // rope_scaling / rope_parameters: only the plain rotary embedding is implemented.
  void require_default_rope(const std::string& key, const json& v) const {
    if (!v.is_object()) fail_field(key, "must be an object or null, got " + json_kind(v));
    auto t = v.find("rope_type");
    if (t == v.end()) t = v.find("type");  // the pre-4.4x spelling
    if (t == v.end()) {
      // transformers 5 nests one set of parameters per layer type for some models.
      for (const auto& [k, e] : v.items())
        if (e.is_object()) fail_field(key, ": per-layer-type entry '" + k + "' is not supported");
      if (key == "rope_scaling") fail_field(key, "has no 'rope_type'");
      return;
    }
    if (!t->is_string()) fail_field(key, "'rope_type' must be a string, got " + json_kind(*t));
    if (*t != "default")
      fail_field(key, ": type '" + t->get<std::string>() + "' is not supported (only 'default')");
    auto prf = v.find("partial_rotary_factor");
    if (prf != v.end() && !prf->is_null() && (!prf->is_number() || prf->get<double>() != 1.0))
      fail_field(key, ": partial_rotary_factor " + json_short(*prf) + " is not supported (only 1.0)");
  }

 private:
  const json& j_;
  const std::string& src_;
};

ModelConfig& finish_tokens_and_dtype(const Fields& f, ModelConfig& c);

// One RoPE entry of Gemma 3's rope_parameters (transformers 5: one per layer type): plain
// RoPE only; its rope_theta, or `dflt` when it has none.
float gemma3_rope_theta(const Fields& f, const std::string& key, const json* entry, float dflt) {
  if (!entry) return dflt;
  if (!entry->is_object()) f.fail_field(key, "must be an object, got " + json_kind(*entry));
  f.require_default_rope(key, *entry);
  auto t = entry->find("rope_theta");
  return t == entry->end() || t->is_null() ? dflt : float(f.positive_number(key + ".rope_theta", *t));
}

// Gemma3ForCausalLM (modeling_gemma3.py): q/k norms, four norms per block, GeGLU, the
// embedding scaled by sqrt(D), attention scaled by query_pre_attn_scalar^-0.5, and sliding
// window layers (by default 5 of every 6) with their own RoPE base.
void parse_gemma3(const Fields& f, ModelConfig& c) {
  c.qk_norm = c.embed_scaled = c.post_branch_norms = c.gelu_tanh_ffn = true;
  const std::string act = f.string("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh")
    f.fail_field("hidden_activation", ": '" + act + "' is not supported (only 'gelu_pytorch_tanh')");
  for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (const json* v = f.get(key)) f.fail_field(key, "= " + json_short(*v) + ": soft-capping is not supported");
  if (f.boolean("use_bidirectional_attention", false))
    f.fail_field("use_bidirectional_attention", "is true: only causal attention is supported");
  const json* qs = f.get("query_pre_attn_scalar");
  c.query_pre_attn_scalar = qs ? float(f.positive_number("query_pre_attn_scalar", *qs)) : 256.0f;
  c.sliding_window = f.optional_positive("sliding_window", 4096);

  // Which layers slide: layer_types, else every layer but each sliding_window_pattern-th.
  c.sliding_layers.assign(c.num_layers, false);
  if (const json* lt = f.get("layer_types")) {
    if (!lt->is_array() || int(lt->size()) != c.num_layers)
      f.fail_field("layer_types", "must be a list of " + std::to_string(c.num_layers) + " strings, got " +
                                      json_short(*lt));
    for (int i = 0; i < c.num_layers; ++i) {
      const json& e = (*lt)[i];
      if (e == "sliding_attention") c.sliding_layers[i] = true;
      else if (e != "full_attention")
        f.fail_field("layer_types", ": entry " + std::to_string(i) + " is " + json_short(e) +
                                        " (sliding_attention or full_attention)");
    }
  } else {
    const char* key = f.get("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    const int pattern = f.optional_positive(key, 6);
    for (int i = 0; i < c.num_layers; ++i) c.sliding_layers[i] = (i + 1) % pattern != 0;
  }

  // RoPE: global base (default 1e6) and local base (default 1e4), spelled either way.
  c.rope_theta = 1000000.0f;
  c.rope_theta_local = 10000.0f;
  if (const json* rs = f.get("rope_scaling")) f.require_default_rope("rope_scaling", *rs);
  if (const json* v = f.get("rope_theta")) c.rope_theta = float(f.positive_number("rope_theta", *v));
  if (const json* v = f.get("rope_local_base_freq"))
    c.rope_theta_local = float(f.positive_number("rope_local_base_freq", *v));
  if (const json* rp = f.get("rope_parameters")) {
    if (!rp->is_object()) f.fail_field("rope_parameters", "must be an object, got " + json_kind(*rp));
    for (const auto& [k, e] : rp->items())
      if (k != "full_attention" && k != "sliding_attention")
        f.fail_field("rope_parameters", ": entry '" + k + "' is not supported (full_attention, sliding_attention)");
    auto entry = [&](const char* k) { auto it = rp->find(k); return it == rp->end() ? nullptr : &*it; };
    c.rope_theta = gemma3_rope_theta(f, "rope_parameters.full_attention", entry("full_attention"), c.rope_theta);
    c.rope_theta_local =
        gemma3_rope_theta(f, "rope_parameters.sliding_attention", entry("sliding_attention"), c.rope_theta_local);
  }

  // Gemma3Attention: bias=attention_bias on q, k, v and o (default false); no MLP biases.
  c.attention_bias = c.o_proj_bias = f.boolean("attention_bias", false);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);   // Gemma3TextConfig's default
  c.mlp_bias = false;
}

}  // namespace

bool ModelConfig::any_sliding() const {
  return std::find(sliding_layers.begin(), sliding_layers.end(), true) != sliding_layers.end();
}

float ModelConfig::attention_scale() const {
  // HF's query_pre_attn_scalar**-0.5 is a Python (double) number, rounded once to float32.
  if (query_pre_attn_scalar > 0) return float(1.0 / std::sqrt(double(query_pre_attn_scalar)));
  return 1.0f / std::sqrt(float(head_dim));
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw std::runtime_error(one_line(source + ": invalid JSON: " + json_error_text(e)));
  }
  Fields f(j, source);
  if (!j.is_object()) f.fail("must be a JSON object, got " + json_kind(j));

  ModelConfig c;
  c.json_text = json_text;

  // ---- architecture: "architectures"[0], cross-checked with "model_type" ----
  const std::string model_type = f.string("model_type", "");
  if (const json* a = f.get("architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      f.fail_field("architectures", "must be a non-empty list of strings, got " + json_short(*a));
    c.architecture = (*a)[0].get<std::string>();
  } else if (model_type == "qwen2") {
    c.architecture = "Qwen2ForCausalLM";
  } else if (model_type == "qwen3") {
    c.architecture = "Qwen3ForCausalLM";
  } else if (model_type == "llama") {
    c.architecture = "LlamaForCausalLM";
  } else if (model_type == "gemma3_text") {
    c.architecture = "Gemma3ForCausalLM";
  } else {
    f.fail_field("architectures", "is missing (and 'model_type' does not name qwen2, qwen3, llama or gemma3_text)");
  }
  std::string expected_type;
  if (c.architecture == "Qwen2ForCausalLM") {
    c.arch = Arch::Qwen2;
    expected_type = "qwen2";
  } else if (c.architecture == "Qwen3ForCausalLM") {
    c.arch = Arch::Qwen3;
    expected_type = "qwen3";
  } else if (c.architecture == "LlamaForCausalLM") {
    c.arch = Arch::Llama;
    expected_type = "llama";
  } else if (c.architecture == "Gemma3ForCausalLM") {
    c.arch = Arch::Gemma3;
    expected_type = "gemma3_text";
  } else {
    f.fail_field("architectures", ": '" + c.architecture +
                                      "' is not supported (Qwen2ForCausalLM, Qwen3ForCausalLM, LlamaForCausalLM, "
                                      "Gemma3ForCausalLM)");
  }
  if (!model_type.empty() && model_type != expected_type)
    f.fail_field("model_type", ": '" + model_type + "' does not match architectures '" +
                                   c.architecture + "' (expected '" + expected_type + "')");
  if (f.get("quantization_config"))
    f.fail_field("quantization_config", "is present: quantized checkpoints are not supported");

  // ---- sizes ----
  // Required even though HF has defaults: a saved config always writes them, so a missing
  // one means a broken file, not a wish for a 4096-wide model.
  c.hidden_size = f.required_positive("hidden_size");
  c.intermediate_size = f.required_positive("intermediate_size");
  c.num_layers = f.required_positive("num_hidden_layers");
  c.num_heads = f.required_positive("num_attention_heads");
  c.vocab_size = f.required_positive("vocab_size");
  c.num_kv_heads = f.optional_positive("num_key_value_heads", c.num_heads);
  // HF defaults: LlamaConfig 2048, Qwen2Config and Qwen3Config 32768, Gemma3TextConfig 131072.
  c.max_position_embeddings = f.optional_positive(
      "max_position_embeddings", c.arch == Arch::Llama ? 2048 : c.arch == Arch::Gemma3 ? 131072 : 32768);
  if (const json* hd = f.get("head_dim")) {
    c.head_dim = f.positive("head_dim", *hd);
  } else if (c.arch == Arch::Qwen3 || c.arch == Arch::Gemma3) {
    // Qwen3Config's default is a fixed 128, Gemma3TextConfig's 256, not D / H; saved configs
    // always write it.
    f.fail_field("head_dim", "is missing (" + c.architecture + " sets it explicitly; it is not D / H)");
  } else {
    if (c.hidden_size % c.num_heads != 0)
      f.fail_field("num_attention_heads", "(" + std::to_string(c.num_heads) +
                                               ") does not divide 'hidden_size' (" +
                                               std::to_string(c.hidden_size) +
                                               ") and 'head_dim' is not given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0)  // RoPE rotates pairs (i, i + hd/2)
    f.fail_field("head_dim", "(" + std::to_string(c.head_dim) + ") must be even for RoPE");
  if (c.num_heads % c.num_kv_heads != 0)
    f.fail_field("num_key_value_heads", "(" + std::to_string(c.num_kv_heads) +
                                             ") must divide 'num_attention_heads' (" +
                                             std::to_string(c.num_heads) + ")");

  // ---- numerics ----
  if (const json* v = f.get("rms_norm_eps")) c.rms_norm_eps = float(f.positive_number("rms_norm_eps", *v));
  if (c.arch == Arch::Gemma3) {
    parse_gemma3(f, c);
    return finish_tokens_and_dtype(f, c);
  }
  const json* theta = f.get("rope_theta");
  if (theta) c.rope_theta = float(f.positive_number("rope_theta", *theta));
  if (const json* rs = f.get("rope_scaling")) f.require_default_rope("rope_scaling", *rs);
  // transformers 5 moves rope_theta into "rope_parameters".
  if (const json* rp = f.get("rope_parameters")) {
    f.require_default_rope("rope_parameters", *rp);
    auto t = rp->find("rope_theta");
    if (t != rp->end() && !t->is_null()) {
      double v = f.positive_number("rope_parameters.rope_theta", *t);
      if (theta && float(v) != c.rope_theta)
        f.fail_field("rope_theta", "(" + json_short(*theta) +
                                       ") disagrees with 'rope_parameters.rope_theta' (" +
                                       json_short(*t) + ")");
      c.rope_theta = float(v);
    }
  }
  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu") f.fail_field("hidden_act", ": '" + act + "' is not supported (only 'silu')");

  // ---- biases, tying, windows ----
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);  // Llama/Qwen2Config default
  const bool attention_bias = f.boolean("attention_bias", false);
  const bool mlp_bias = f.boolean("mlp_bias", false);
  if (c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3) {
    if (c.arch == Arch::Qwen2) {
      // Qwen2Attention hard-codes bias=True on q/k/v and False on o; the fields are ignored.
      c.attention_bias = true;
      c.o_proj_bias = false;
    } else {
      // Qwen3Attention: bias=attention_bias on q, k, v and o (default false), and q_norm /
      // k_norm, an RMSNorm over each head's hd values of q and k, before RoPE.
      c.attention_bias = attention_bias;
      c.o_proj_bias = attention_bias;
      c.qk_norm = true;
    }
    const bool use_sw = f.boolean("use_sliding_window", false);
    const json* sw = f.get("sliding_window");
    int window = sw ? f.positive("sliding_window", *sw) : 0;
    // Conservative: refused whatever max_window_layers says, since which layers slide has
    // changed meaning across transformers versions.
    if (use_sw && sw && window < c.max_position_embeddings)
      f.fail_field("use_sliding_window",
                   "is true with sliding_window " + std::to_string(window) +
                       " < max_position_embeddings " + std::to_string(c.max_position_embeddings) +
                       ": sliding window attention in use is not supported");
  } else {
    c.attention_bias = attention_bias;  // LlamaAttention: bias=attention_bias on q, k, v and o
    c.o_proj_bias = attention_bias;
    if (mlp_bias) f.fail_field("mlp_bias", "is true: MLP biases are not supported");
  }
  c.mlp_bias = false;
  // transformers 5 lists each layer's attention kind; every layer here attends to every position.
  if (const json* lt = f.get("layer_types")) {
    if (!lt->is_array()) f.fail_field("layer_types", "must be a list of strings, got " + json_kind(*lt));
    for (size_t i = 0; i < lt->size(); ++i)
      if (!(*lt)[i].is_string() || (*lt)[i] != "full_attention")
        f.fail_field("layer_types", ": entry " + std::to_string(i) + " is " + json_short((*lt)[i]) +
                                        ": only 'full_attention' is supported");
  }

  return finish_tokens_and_dtype(f, c);
}

namespace {
ModelConfig& finish_tokens_and_dtype(const Fields& f, ModelConfig& c) {
  // ---- tokens and dtype ----
  c.bos_token_ids = f.token_ids("bos_token_id", c.vocab_size);
  c.eos_token_ids = f.token_ids("eos_token_id", c.vocab_size);
  if (const json* p = f.get("pad_token_id")) {
    int id = f.integer("pad_token_id", *p);
    if (id >= c.vocab_size)
      f.fail_field("pad_token_id", "= " + std::to_string(id) + " is outside the vocabulary [0," +
                                       std::to_string(c.vocab_size) + ")");
    c.pad_token_id = id < 0 ? -1 : id;  // some old Llama configs write -1 for "none"
  }
  // transformers 5 writes "dtype"; older versions "torch_dtype".
  const char* dtype_key = f.get("dtype") ? "dtype" : "torch_dtype";
  c.torch_dtype = f.string(dtype_key, "");
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16")
    f.fail_field(dtype_key, ": '" + c.torch_dtype + "' is not supported (float32, float16, bfloat16)");
  return c;
}
}  // namespace

ModelConfig load_model_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  require_regular_file(file);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file + ": cannot open: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return parse_model_config(s.str(), file);
}

}  // namespace lmscope
