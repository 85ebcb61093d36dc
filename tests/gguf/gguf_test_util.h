// Helpers for the GGUF tests: a GGUF writer that can be told to lie (counts, offsets, types),
// tiny Llama/Qwen2 GGUF models, hex decoding of the committed references.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../io/io_test_util.h"  // write_file, expect_error (and tests/test_util.h: TempDir)

namespace ggtest {

// Little-endian byte appends.
inline void put(std::string& s, const void* p, size_t n) { s.append(static_cast<const char*>(p), n); }
inline void u8(std::string& s, uint8_t v) { put(s, &v, 1); }
inline void u32(std::string& s, uint32_t v) { put(s, &v, 4); }
inline void u64(std::string& s, uint64_t v) { put(s, &v, 8); }
inline void f32(std::string& s, float v) { put(s, &v, 4); }
inline void str(std::string& s, const std::string& v) {
  u64(s, v.size());
  s += v;
}

enum VT : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };

struct Tensor {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order
  uint32_t type;
  std::string data;
  int64_t offset = -1;       // -1: packed in order
};

class Writer {
 public:
  uint32_t version = 3;
  uint64_t alignment = 32;          // padding used (write general.alignment yourself to change it)
  int64_t tensor_count = -1;        // -1: the real count
  int64_t kv_count = -1;
  std::string magic = "GGUF";

  // A key with a raw value (type + payload already encoded).
  void kv_raw(const std::string& key, uint32_t type, const std::string& payload) {
    str(kvs_, key);
    u32(kvs_, type);
    kvs_ += payload;
    ++n_kv_;
  }
  void kv_u32(const std::string& k, uint32_t v) { std::string p; u32(p, v); kv_raw(k, U32, p); }
  void kv_i32(const std::string& k, int32_t v) { std::string p; put(p, &v, 4); kv_raw(k, I32, p); }
  void kv_u64(const std::string& k, uint64_t v) { std::string p; u64(p, v); kv_raw(k, U64, p); }
  void kv_f32(const std::string& k, float v) { std::string p; f32(p, v); kv_raw(k, F32, p); }
  void kv_bool(const std::string& k, bool v) { std::string p; u8(p, v); kv_raw(k, BOOL, p); }
  void kv_str(const std::string& k, const std::string& v) { std::string p; str(p, v); kv_raw(k, STRING, p); }
  void kv_str_array(const std::string& k, const std::vector<std::string>& v) {
    std::string p;
    u32(p, STRING);
    u64(p, v.size());
    for (const auto& e : v) str(p, e);
    kv_raw(k, ARRAY, p);
  }
  void kv_i32_array(const std::string& k, const std::vector<int32_t>& v) {
    std::string p;
    u32(p, I32);
    u64(p, v.size());
    for (int32_t e : v) put(p, &e, 4);
    kv_raw(k, ARRAY, p);
  }
  void kv_f32_array(const std::string& k, const std::vector<float>& v) {   // tokenizer.ggml.scores
    std::string p;
    u32(p, F32);
    u64(p, v.size());
    for (float e : v) f32(p, e);
    kv_raw(k, ARRAY, p);
  }

  void tensor(Tensor t) { tensors_.push_back(std::move(t)); }
  void tensor_f32(const std::string& name, std::vector<uint64_t> ne, const std::vector<float>& v) {
    std::string d(v.size() * 4, '\0');
    std::memcpy(d.data(), v.data(), d.size());
    tensors_.push_back({name, std::move(ne), 0, d});
  }

  std::string build() const {
    std::string s = magic;
    u32(s, version);
    u64(s, tensor_count >= 0 ? uint64_t(tensor_count) : tensors_.size());
    u64(s, kv_count >= 0 ? uint64_t(kv_count) : n_kv_);
    s += kvs_;
    std::string data;
    for (const auto& t : tensors_) {
      str(s, t.name);
      u32(s, uint32_t(t.ne.size()));
      for (uint64_t n : t.ne) u64(s, n);
      u32(s, t.type);
      const uint64_t off = t.offset >= 0 ? uint64_t(t.offset) : data.size();
      u64(s, off);
      if (t.offset < 0) {
        data += t.data;
        while (data.size() % alignment) data += '\0';
      }
    }
    while (s.size() % alignment) s += '\0';
    return s + data;
  }

 private:
  std::string kvs_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

// ---- hex (the committed references store bytes and float32 bit patterns as hex) ----
inline std::vector<uint8_t> unhex(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(std::stoul(h.substr(2 * i, 2), nullptr, 16));
  return out;
}
inline std::vector<float> unhex_f32(const std::string& h) {
  const auto b = unhex(h);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- a tiny model: D=8, F=16, H=2, Hkv=1, hd=4, V=10, 2 layers ----
struct TinyGguf {
  std::string arch = "llama";
  bool tied = true;
  bool permute_qk = true;  // write q/k permuted as convert_hf_to_gguf does for Llama
  uint32_t block_count = 2;  // what the metadata claims (the file always holds 2 layers)
};

// HF-order value of element i of tensor number `base` (recognizable, distinct per tensor).
inline std::vector<float> tiny_values(int64_t n, float base) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = base + float(i) / 1000.0f;
  return v;
}

// llama.cpp's permute on rows: HF row h*hd + i*hd/2 + j goes to row h*hd + 2j + i.
inline std::vector<float> permute_rows(const std::vector<float>& w, int64_t rows, int64_t cols, int n_head) {
  std::vector<float> out(w.size());
  const int64_t hd = rows / n_head, half = hd / 2;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < half; ++j)
        std::memcpy(&out[size_t((h * hd + 2 * j + i) * cols)], &w[size_t((h * hd + i * half + j) * cols)],
                    size_t(cols) * 4);
  return out;
}

inline Writer tiny_gguf(const TinyGguf& s) {
  const uint64_t D = 8, F = 16, Q = 8, KV = 4, V = 10;
  Writer w;
  const std::string a = s.arch + ".";
  w.kv_str("general.architecture", s.arch);
  w.kv_str("general.name", "tiny");
  w.kv_u32(a + "block_count", s.block_count);
  w.kv_u32(a + "context_length", 64);
  w.kv_u32(a + "embedding_length", D);
  w.kv_u32(a + "feed_forward_length", F);
  w.kv_u32(a + "attention.head_count", 2);
  w.kv_u32(a + "attention.head_count_kv", 1);
  w.kv_f32(a + "rope.freq_base", 10000.0f);
  w.kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.kv_u32(a + "rope.dimension_count", 4);
  if (s.arch == "gemma3") w.kv_u32(a + "attention.sliding_window", 3);
  w.kv_u32("tokenizer.ggml.bos_token_id", 1);
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  w.kv_u32("tokenizer.ggml.padding_token_id", 0);
  std::vector<std::string> toks;
  for (uint64_t i = 0; i < V; ++i) toks.push_back(std::string(1, 't').append(std::to_string(i)));
  w.kv_str_array("tokenizer.ggml.tokens", toks);
  float base = 0;
  auto add = [&](const std::string& name, uint64_t rows, uint64_t cols, int perm_heads = 0) {
    auto v = tiny_values(int64_t(rows * cols), base);
    base += 1;
    if (perm_heads) v = permute_rows(v, int64_t(rows), int64_t(cols), perm_heads);
    if (cols == 1) w.tensor_f32(name, {rows}, v);
    else w.tensor_f32(name, {cols, rows}, v);
  };
  const bool qwen = s.arch == "qwen2";
  const int pq = s.permute_qk ? 2 : 0, pk = s.permute_qk ? 1 : 0;
  add("token_embd.weight", V, D);
  add("output_norm.weight", D, 1);
  if (!s.tied) add("output.weight", V, D);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", D, 1);
    add(p + "attn_q.weight", Q, D, pq);
    add(p + "attn_k.weight", KV, D, pk);
    add(p + "attn_v.weight", KV, D);
    if (qwen) {
      add(p + "attn_q.bias", Q, 1);
      add(p + "attn_k.bias", KV, 1);
      add(p + "attn_v.bias", KV, 1);
    }
    add(p + "attn_output.weight", D, Q);
    const bool gemma = s.arch == "gemma3";
    if (s.arch == "qwen3" || gemma) {   // [hd]: HF's q_norm / k_norm
      add(p + "attn_q_norm.weight", Q / 2, 1);
      add(p + "attn_k_norm.weight", Q / 2, 1);
    }
    if (gemma) add(p + "post_attention_norm.weight", D, 1);   // HF's post_attention_layernorm
    add(p + "ffn_norm.weight", D, 1);
    add(p + "ffn_gate.weight", F, D);
    add(p + "ffn_up.weight", F, D);
    add(p + "ffn_down.weight", D, F);
    if (gemma) add(p + "post_ffw_norm.weight", D, 1);         // HF's post_feedforward_layernorm
  }
  return w;
}

}  // namespace ggtest
