// Helpers for the io tests: a safetensors writer that can be told to lie (bad offsets, bad
// header), a tiny-model writer, and an error matcher. The temp directory is tests/test_util.h's.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"   // TempDir

namespace iotest {
namespace fs = std::filesystem;

inline void write_file(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}
inline std::string u16_bytes(const std::vector<uint16_t>& v) {
  std::string s(v.size() * 2, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// The 8-byte little-endian header length, the header, then the data section.
inline std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

struct StTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64"...
  std::vector<int64_t> shape;
  std::string bytes;
};

inline std::string shape_json(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) o += ",";
    o += std::to_string(s[i]);
  }
  return o + "]";
}

// A well-formed file with the tensors packed in order, header padded to 8 bytes with spaces
// as the reference writer does.
inline std::string build_safetensors(const std::vector<StTensor>& ts, const std::string& metadata = "") {
  std::string h = "{";
  std::string data;
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":" + metadata;
    first = false;
  }
  for (const auto& t : ts) {
    h += std::string(first ? "" : ",") + "\"" + t.name + "\":{\"dtype\":\"" + t.dtype +
         "\",\"shape\":" + shape_json(t.shape) + ",\"data_offsets\":[" +
         std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
    first = false;
  }
  h += "}";
  while (h.size() % 8) h += ' ';
  return raw_safetensors(h, data);
}

// F32 tensor of the given shape whose element i is base + i/1000 (recognizable values).
inline StTensor f32_tensor(const std::string& name, std::vector<int64_t> shape, float base = 0) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = base + float(i) / 1000.0f;
  return {name, "F32", std::move(shape), f32_bytes(v)};
}

// Runs `fn`, expecting a std::runtime_error whose message is one line, starts with `prefix`
// and contains each of `parts`.
inline void expect_error(const std::function<void()>& fn, const std::string& prefix,
                         std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "does not start with '" << prefix << "': " << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "no '" << p << "' in: " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return;
  }
  ADD_FAILURE() << "no exception thrown";
}

// ---- a tiny Llama/Qwen2 model: D=8, F=16, H=2, Hkv=1, hd=4, V=10, 2 layers ----
struct TinySpec {
  std::string arch = "Qwen2ForCausalLM";
  std::string model_type = "qwen2";
  bool tie = true;
  bool attention_bias = false;  // Llama, Qwen3 (Qwen3 needs extra_config ",\"head_dim\":4")
  std::string extra_config;     // appended fields, e.g. ",\"head_dim\":4"
};

inline std::string tiny_config_json(const TinySpec& s) {
  return std::string("{\"architectures\":[\"") + s.arch + "\"],\"model_type\":\"" + s.model_type +
         "\",\"hidden_size\":8,\"intermediate_size\":16,\"num_hidden_layers\":2,"
         "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"rms_norm_eps\":1e-6,"
         "\"rope_theta\":10000.0,\"max_position_embeddings\":64,\"vocab_size\":10,"
         "\"hidden_act\":\"silu\",\"tie_word_embeddings\":" + (s.tie ? "true" : "false") +
         ",\"attention_bias\":" + (s.attention_bias ? "true" : "false") +
         ",\"bos_token_id\":1,\"eos_token_id\":2,\"torch_dtype\":\"float32\"" + s.extra_config + "}";
}

// Every tensor the spec implies, in HF names, with distinct recognizable values.
inline std::map<std::string, StTensor> tiny_tensors(const TinySpec& s) {
  const int64_t D = 8, F = 16, Q = 8, KV = 4, V = 10;
  std::map<std::string, StTensor> m;
  float base = 0;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) {
    m[n] = f32_tensor(n, std::move(shape), base);
    base += 1;
  };
  const bool qwen = s.arch == "Qwen2ForCausalLM";
  const bool qk_norm = s.arch == "Qwen3ForCausalLM";
  add("model.embed_tokens.weight", {V, D});
  add("model.norm.weight", {D});
  if (!s.tie) add("lm_head.weight", {V, D});
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {D});
    add(p + "self_attn.q_proj.weight", {Q, D});
    add(p + "self_attn.k_proj.weight", {KV, D});
    add(p + "self_attn.v_proj.weight", {KV, D});
    if (qwen || s.attention_bias) {
      add(p + "self_attn.q_proj.bias", {Q});
      add(p + "self_attn.k_proj.bias", {KV});
      add(p + "self_attn.v_proj.bias", {KV});
    }
    add(p + "self_attn.o_proj.weight", {D, Q});
    if (qk_norm) {   // [hd], hd = Q / 2 heads
      add(p + "self_attn.q_norm.weight", {Q / 2});
      add(p + "self_attn.k_norm.weight", {Q / 2});
    }
    if (!qwen && s.attention_bias) add(p + "self_attn.o_proj.bias", {D});
    add(p + "post_attention_layernorm.weight", {D});
    add(p + "mlp.gate_proj.weight", {F, D});
    add(p + "mlp.up_proj.weight", {F, D});
    add(p + "mlp.down_proj.weight", {D, F});
  }
  return m;
}

inline std::vector<StTensor> values(const std::map<std::string, StTensor>& m) {
  std::vector<StTensor> v;
  for (const auto& [n, t] : m) v.push_back(t);
  return v;
}

}  // namespace iotest
