// load_gguf_model / load_model: config from metadata, llama.cpp names, q/k un-permutation
// (tiny synthetic files, checked against the same model saved as safetensors), and the real
// SmolLM2 file against HF transformers' GGUF loader (golden/gguf/smollm2_hf.json).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gguf_test_util.h"
#include "model/gguf_model.h"
#include "model/load_model.h"
#include <cstring>
#include <vector>

using namespace lmscope;
using iotest::expect_error;
using testing_util::TempDir;

namespace {

std::string write_gguf(const TempDir& d, const ggtest::Writer& w, const std::string& name = "tiny.gguf") {
  const std::string p = d.file(name);
  iotest::write_file(p, w.build());
  return p;
}

// The tiny model of tests/io as a safetensors directory (same values, HF order).
std::string write_safetensors(const TempDir& d, const iotest::TinySpec& s) {
  const std::string dir = d.file("st");
  iotest::write_file(dir + "/config.json", iotest::tiny_config_json(s));
  iotest::write_file(dir + "/model.safetensors", iotest::build_safetensors(iotest::values(iotest::tiny_tensors(s))));
  return dir;
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const Tensor fa = a.to_f32(), fb = b.to_f32();
  EXPECT_EQ(std::memcmp(fa.f32(), fb.f32(), size_t(fa.numel()) * 4), 0) << what;
}

void expect_same_weights(const Weights& a, const Weights& b, bool biases) {
  expect_same(a.embed, b.embed, "embed");
  expect_same(a.final_norm, b.final_norm, "final_norm");
  expect_same(a.lm_head, b.lm_head, "lm_head");
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const auto &x = a.layers[l], &y = b.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    expect_same(x.attn_norm, y.attn_norm, p + "attn_norm");
    expect_same(x.wq, y.wq, p + "wq");
    expect_same(x.wk, y.wk, p + "wk");
    expect_same(x.wv, y.wv, p + "wv");
    expect_same(x.wo, y.wo, p + "wo");
    expect_same(x.ffn_norm, y.ffn_norm, p + "ffn_norm");
    expect_same(x.w_gate, y.w_gate, p + "w_gate");
    expect_same(x.w_up, y.w_up, p + "w_up");
    expect_same(x.w_down, y.w_down, p + "w_down");
    if (biases) {
      expect_same(x.bq, y.bq, p + "bq");
      expect_same(x.bk, y.bk, p + "bk");
      expect_same(x.bv, y.bv, p + "bv");
    }
  }
}

void expect_same_config(const ModelConfig& g, const ModelConfig& s) {
  EXPECT_EQ(g.arch, s.arch);
  EXPECT_EQ(g.architecture, s.architecture);
  EXPECT_EQ(g.hidden_size, s.hidden_size);
  EXPECT_EQ(g.intermediate_size, s.intermediate_size);
  EXPECT_EQ(g.num_layers, s.num_layers);
  EXPECT_EQ(g.num_heads, s.num_heads);
  EXPECT_EQ(g.num_kv_heads, s.num_kv_heads);
  EXPECT_EQ(g.head_dim, s.head_dim);
  EXPECT_EQ(g.rms_norm_eps, s.rms_norm_eps);
  EXPECT_EQ(g.rope_theta, s.rope_theta);
  EXPECT_EQ(g.max_position_embeddings, s.max_position_embeddings);
  EXPECT_EQ(g.vocab_size, s.vocab_size);
  EXPECT_EQ(g.tie_word_embeddings, s.tie_word_embeddings);
  EXPECT_EQ(g.attention_bias, s.attention_bias);
  EXPECT_EQ(g.bos_token_ids, s.bos_token_ids);
  EXPECT_EQ(g.eos_token_ids, s.eos_token_ids);
}

}  // namespace

TEST(GgufModel, UnpermuteInvertsLlamaCppPermute) {
  const int64_t rows = 12, cols = 3;  // 1, 2, 3 or 6 heads of 12, 6, 4 or 2 rows
  for (int heads : {1, 2, 3, 6}) {
    auto hf = ggtest::tiny_values(rows * cols, 0);
    auto perm = ggtest::permute_rows(hf, rows, cols, heads);
    Tensor t = Tensor::zeros({rows, cols});
    std::memcpy(t.f32(), perm.data(), perm.size() * 4);
    Tensor back = gguf_unpermute_rows(t, heads);
    EXPECT_EQ(std::memcmp(back.f32(), hf.data(), hf.size() * 4), 0) << heads << " heads";
  }
  // Within a head of 4: GGUF rows (0,1,2,3) hold HF rows (0,2,1,3).
  Tensor t = Tensor::zeros({4});
  for (int i = 0; i < 4; ++i) t.f32()[i] = float(i);
  Tensor u = gguf_unpermute_rows(t, 1);
  EXPECT_EQ(std::vector<float>(u.f32(), u.f32() + 4), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_THROW(gguf_unpermute_rows(Tensor::zeros({6, 2}), 2), std::invalid_argument);
}

TEST(GgufModel, TinyLlamaEqualsSafetensors) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir d;
    iotest::TinySpec spec;
    spec.arch = "LlamaForCausalLM";
    spec.model_type = "llama";
    spec.tie = tied;
    ggtest::TinyGguf g;
    g.tied = tied;
    const std::string gp = write_gguf(d, ggtest::tiny_gguf(g));
    const std::string sp = write_safetensors(d, spec);
    const LoadedModel a = load_model(gp), b = load_model(sp);
    EXPECT_EQ(a.source_kind, "gguf");
    EXPECT_EQ(b.source_kind, "safetensors");
    expect_same_config(a.cfg, b.cfg);
    EXPECT_EQ(a.cfg.pad_token_id, 0);
    EXPECT_EQ(a.cfg.torch_dtype, "float32");
    expect_same_weights(a.weights, b.weights, false);
    if (tied) {
      EXPECT_EQ(a.weights.lm_head.raw(), a.weights.embed.raw());
    }
    const auto j = nlohmann::json::parse(a.cfg.json_text);
    EXPECT_EQ(j.at("architectures")[0], "LlamaForCausalLM");
    EXPECT_EQ(j.at("gguf_file"), gp);
  }
}

TEST(GgufModel, TinyQwen2IsNotPermutedAndHasBiases) {
  TempDir d;
  iotest::TinySpec spec;  // Qwen2 by default
  ggtest::TinyGguf g;
  g.arch = "qwen2";
  g.permute_qk = false;  // llama.cpp does not permute Qwen2
  g.tied = spec.tie;
  const LoadedModel a = load_model(write_gguf(d, ggtest::tiny_gguf(g)));
  const LoadedModel b = load_model(write_safetensors(d, spec));
  expect_same_config(a.cfg, b.cfg);
  expect_same_weights(a.weights, b.weights, true);
}

// Qwen3: blk.N.attn_q_norm / attn_k_norm are HF's q_norm / k_norm; q/k not permuted (llama.cpp's
// converter treats Qwen3 as Qwen2), no biases.
TEST(GgufModel, TinyQwen3HasQKNormsAndIsNotPermuted) {
  TempDir d;
  iotest::TinySpec spec;
  spec.arch = "Qwen3ForCausalLM";
  spec.model_type = "qwen3";
  spec.extra_config = ",\"head_dim\":4";
  ggtest::TinyGguf g;
  g.arch = "qwen3";
  g.permute_qk = false;
  g.tied = spec.tie;
  const LoadedModel a = load_model(write_gguf(d, ggtest::tiny_gguf(g)));
  const LoadedModel b = load_model(write_safetensors(d, spec));
  expect_same_config(a.cfg, b.cfg);
  EXPECT_TRUE(a.cfg.qk_norm);
  EXPECT_FALSE(a.cfg.attention_bias);
  expect_same_weights(a.weights, b.weights, false);
  for (size_t l = 0; l < a.weights.layers.size(); ++l) {
    expect_same(a.weights.layers[l].q_norm, b.weights.layers[l].q_norm, "q_norm");
    expect_same(a.weights.layers[l].k_norm, b.weights.layers[l].k_norm, "k_norm");
  }
}

// Gemma 3: the window from the file; which layers slide, their RoPE base and the attention
// scale from the architecture (llama.cpp hard-codes them); ffn_norm is HF's
// pre_feedforward_layernorm and post_attention_norm its post_attention_layernorm; the norms are
// taken as stored (the file holds 1 + w).
TEST(GgufModel, TinyGemma3) {
  TempDir d;
  ggtest::TinyGguf g;
  g.arch = "gemma3";
  g.permute_qk = false;
  g.tied = true;
  const std::string path = write_gguf(d, ggtest::tiny_gguf(g));
  const GgufModel m = load_gguf_model(path);
  EXPECT_EQ(m.cfg.arch, Arch::Gemma3);
  EXPECT_TRUE(m.cfg.qk_norm && m.cfg.embed_scaled && m.cfg.post_branch_norms && m.cfg.gelu_tanh_ffn);
  EXPECT_EQ(m.cfg.sliding_window, 3);
  EXPECT_EQ(m.cfg.sliding_layers, (std::vector<bool>{true, true}));   // layers 0, 1 of the 6-pattern
  EXPECT_EQ(m.cfg.rope_theta, 10000.0f);                              // the file's freq_base
  EXPECT_EQ(m.cfg.rope_theta_local, 10000.0f);
  EXPECT_EQ(m.cfg.attention_scale(), 0.5f);                           // head_dim 4: 4^-0.5
  const GgufFile f = GgufFile::open(path);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const LayerWeights& L = m.weights.layers[l];
    expect_same(L.attn_post_norm, f.to_f32(f.tensor_info(p + "post_attention_norm.weight")), "attn_post_norm");
    expect_same(L.ffn_norm, f.to_f32(f.tensor_info(p + "ffn_norm.weight")), "ffn_norm");
    expect_same(L.ffn_post_norm, f.to_f32(f.tensor_info(p + "post_ffw_norm.weight")), "ffn_post_norm");
    expect_same(L.q_norm, f.to_f32(f.tensor_info(p + "attn_q_norm.weight")), "q_norm");
  }
  ggtest::Writer w = ggtest::tiny_gguf(g);
  w.kv_f32("gemma3.final_logit_softcapping", 30.0f);
  const std::string capped = write_gguf(d, w, "capped.gguf");
  expect_error([&] { load_gguf_model(capped); }, capped,
               {"key 'gemma3.final_logit_softcapping' is present: soft-capping is not supported"});
}

TEST(GgufModel, UppercaseExtensionAndMagicDispatch) {
  TempDir d;
  const std::string p = write_gguf(d, ggtest::tiny_gguf({}), "TINY.GGUF");
  EXPECT_TRUE(is_gguf_path(p));
  EXPECT_EQ(load_model(p).source_kind, "gguf");
  const std::string q = write_gguf(d, ggtest::tiny_gguf({}), "tiny.bin");
  EXPECT_TRUE(is_gguf_path(q));
  EXPECT_FALSE(is_gguf_path(d.str()));
}

TEST(GgufModel, RefusesWhatItCannotRun) {
  TempDir d;
  {
    ggtest::Writer w = ggtest::tiny_gguf({});
    w.tensor_f32("rope_freqs.weight", {2}, {1, 1});
    const std::string p = write_gguf(d, w, "a.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"tensor 'rope_freqs.weight'", "not supported"});
  }
  {
    ggtest::Writer w = ggtest::tiny_gguf({});
    w.kv_str("llama.rope.scaling.type", "yarn");
    const std::string p = write_gguf(d, w, "b.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"llama.rope.scaling.type", "yarn"});
  }
  {
    ggtest::Writer w = ggtest::tiny_gguf({});
    w.kv_u32("llama.expert_count", 8);
    const std::string p = write_gguf(d, w, "c.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"llama.expert_count"});
  }
  {
    ggtest::TinyGguf g;
    g.arch = "gemma";
    const std::string p = write_gguf(d, ggtest::tiny_gguf(g), "d.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"general.architecture", "gemma", "not supported"});
  }
  {
    ggtest::Writer w;  // llama without its sizes
    w.kv_str("general.architecture", "llama");
    const std::string p = write_gguf(d, w, "e.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"llama.block_count", "missing"});
  }
  {
    ggtest::Writer w = ggtest::tiny_gguf({});
    w.kv_u32("llama.vocab_size", 12);  // token_embd has 10 rows
    const std::string p = write_gguf(d, w, "f.gguf");
    expect_error([&] { load_gguf_model(p); }, p, {"token_embd.weight", "shape [10,8]", "expected [12,8]"});
  }
}

TEST(GgufModel, MissingTensorIsNamed) {
  TempDir d;
  ggtest::TinyGguf g;
  g.block_count = 3;
  const std::string p = write_gguf(d, ggtest::tiny_gguf(g));
  expect_error([&] { load_gguf_model(p); }, p, {"tensor 'blk.2.attn_norm.weight' is missing"});
}

// A block count far past the tensors is refused before room is made for that many layers.
TEST(GgufModel, BlockCountPastTheTensorsIsRefusedBeforeAllocating) {
  TempDir d;
  ggtest::TinyGguf g;
  g.block_count = 1u << 30;
  const std::string p = write_gguf(d, ggtest::tiny_gguf(g));
  expect_error([&] { load_gguf_model(p); }, p,
               {"block_count is 1073741824 but tensor 'blk.1073741823.attn_norm.weight' is missing"});
}

// ---- the real file -------------------------------------------------------------------

namespace {

std::string smollm2_path() {
  if (const char* e = std::getenv("LMSCOPE_SMOLLM2_GGUF")) return e;
  return std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

nlohmann::json hf_refs() {
  std::ifstream in(std::string(LMSCOPE_SOURCE_DIR) + "/golden/gguf/smollm2_hf.json");
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

#define SKIP_WITHOUT_SMOLLM2(path)                                                            \
  if (!std::filesystem::exists(path)) {                                                       \
    std::printf("[  SKIPPED ] %s is absent: run scripts/fetch-model.sh to test on it\n", (path).c_str()); \
    GTEST_SKIP() << (path) << " is absent (scripts/fetch-model.sh fetches it)";              \
  }

}  // namespace

// The tensor types llama.cpp's llama-quantize gives a tied-embedding Llama at ftype Q4_1
// (docs/gguf.md): Q4_1 matrices, the tied token_embd as the output tensor (Q6_K, falling back
// to Q8_0 since 576 % 256 != 0), F32 norms.
TEST(SmolLM2, FileHasLlamaQuantizesQ4_1Mix) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const GgufFile f = GgufFile::open(path);
  const auto ref = hf_refs();
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.tensors().size(), ref.at("tensor_count").get<size_t>());
  std::map<std::string, int> types;
  for (const auto& t : f.tensors()) types[ggml_type_name(t.type)]++;
  EXPECT_EQ(types, (std::map<std::string, int>{{"F32", 61}, {"Q4_1", 210}, {"Q8_0", 1}}));
  int64_t quantized = 0;
  for (const auto& t : f.tensors())
    if (t.type != 0) quantized += t.numel();
  EXPECT_EQ(quantized, 49152 * 576 + 30 * (2 * 576 * 576 + 2 * 192 * 576 + 3 * 1536 * 576));   // 134,479,872
  for (const auto& [k, v] : ref.at("file_tensor_types").items()) EXPECT_EQ(types[k], v.get<int>()) << k;
  EXPECT_EQ(ggml_type_name(f.tensor_info("token_embd.weight").type), "Q8_0");
  EXPECT_EQ(ggml_type_name(f.tensor_info("blk.7.attn_q.weight").type), "Q4_1");
  EXPECT_EQ(ggml_type_name(f.tensor_info("blk.7.ffn_norm.weight").type), "F32");
  EXPECT_FALSE(f.has_tensor("output.weight"));
  EXPECT_FALSE(f.has("general.alignment"));  // default 32
  EXPECT_EQ(f.get_int("general.file_type"), 3);  // MOSTLY_Q4_1
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "smollm");
}

TEST(SmolLM2, ConfigAndUnpermutedWeightsMatchHF) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const LoadedModel m = load_model(path);   // its speed: lmscope-bench --dequant (docs/gguf.md)
  const ModelConfig& c = m.cfg;
  EXPECT_EQ(m.source_kind, "gguf");
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.num_layers, 30);
  EXPECT_EQ(c.hidden_size, 576);
  EXPECT_EQ(c.intermediate_size, 1536);
  EXPECT_EQ(c.num_heads, 9);
  EXPECT_EQ(c.num_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab_size, 49152);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 8192);
  EXPECT_EQ(c.rope_theta, 100000.0f);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.bos_token_ids, std::vector<int>{1});
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(c.pad_token_id, 2);
  EXPECT_FALSE(c.attention_bias);

  const auto ref = hf_refs();
  const auto& hc = ref.at("hf_config");
  EXPECT_EQ(c.num_layers, hc.at("num_hidden_layers").get<int>());
  EXPECT_EQ(c.num_heads, hc.at("num_attention_heads").get<int>());
  EXPECT_EQ(c.num_kv_heads, hc.at("num_key_value_heads").get<int>());
  EXPECT_EQ(c.head_dim, hc.at("head_dim").get<int>());
  EXPECT_EQ(c.vocab_size, hc.at("vocab_size").get<int>());
  EXPECT_EQ(c.tie_word_embeddings, hc.at("tie_word_embeddings").get<bool>());
  EXPECT_EQ(c.rms_norm_eps, float(hc.at("rms_norm_eps").get<double>()));
  EXPECT_EQ(c.rope_theta, float(ref.at("hf_rope_theta").get<double>()));
  EXPECT_EQ(c.pad_token_id, hc.at("pad_token_id").get<int>());
  EXPECT_TRUE(m.weights.lm_head.same_storage(m.weights.embed));

  auto param = [&](const std::string& hf_name) -> const Tensor& {
    const Weights& w = m.weights;
    if (hf_name == "model.embed_tokens.weight") return w.embed;
    if (hf_name == "model.norm.weight") return w.final_norm;
    const int layer = std::stoi(hf_name.substr(std::string("model.layers.").size()));
    if (hf_name.find("q_proj") != std::string::npos) return w.layers[size_t(layer)].wq;
    if (hf_name.find("k_proj") != std::string::npos) return w.layers[size_t(layer)].wk;
    throw std::runtime_error("no mapping for " + hf_name);
  };
  int rows_checked = 0;
  for (const auto& [hf_name, rows] : ref.at("rows").items()) {
    const Tensor t = param(hf_name).values_f32();   // Q8_0/Q4_1 matrices are held as blocks only
    const int64_t cols = t.ndim() == 2 ? t.dim(1) : t.dim(0);
    for (const auto& [row, hex] : rows.items()) {
      const auto want = ggtest::unhex_f32(hex.get<std::string>());
      ASSERT_EQ(int64_t(want.size()), cols) << hf_name;
      const float* got = t.f32() + std::stoll(row) * (t.ndim() == 2 ? cols : 0);
      int bad = 0;
      for (int64_t i = 0; i < cols; ++i) bad += ggtest::bits(got[i]) != ggtest::bits(want[size_t(i)]);
      EXPECT_EQ(bad, 0) << hf_name << " row " << row << " differs from HF in " << bad << " of " << cols;
      ++rows_checked;
    }
  }
  EXPECT_GE(rows_checked, 19);
  // And it really was permuted: the raw GGUF row 1 of layer 0 q is HF row 32.
  const GgufFile f = GgufFile::open(path);
  const Tensor raw_q = f.to_f32("blk.0.attn_q.weight");
  const Tensor wq = m.weights.layers[0].wq.values_f32();
  EXPECT_EQ(std::memcmp(raw_q.f32() + 576, wq.f32() + 32 * 576, 576 * 4), 0);
  EXPECT_NE(std::memcmp(raw_q.f32() + 576, wq.f32() + 576, 576 * 4), 0);
}

// Every Q4_1/Q8_0 matrix is held as its blocks only (no float32 copy beside them), and they
// dequantize to the file's own float32 values (GgufFile::to_f32, whole-tensor dequantization),
// the Llama q/k rows un-permuted with them.
TEST(SmolLM2, MatricesAreHeldAsBlocksOfTheFileValues) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  LoadedModel m = load_model(path);
  const GgufFile f = GgufFile::open(path);
  auto same = [&](const Tensor& w, const std::string& name, int unpermute_heads, const std::string& what) {
    ASSERT_TRUE(w.blocks()) << what << " has no blocks";
    EXPECT_FALSE(w.has_storage()) << what << " has a float32 copy beside its blocks";
    EXPECT_THROW(w.f32(), std::logic_error) << what;
    ASSERT_EQ(w.blocks()->rows, w.dim(0));
    ASSERT_EQ(w.blocks()->cols, w.dim(1));
    Tensor want = f.to_f32(name);
    if (unpermute_heads) want = gguf_unpermute_rows(want, unpermute_heads);
    const Tensor got = w.values_f32();
    ASSERT_EQ(got.numel(), want.numel()) << what;
    EXPECT_EQ(0, std::memcmp(got.f32(), want.f32(), want.nbytes())) << what;
  };
  same(m.weights.embed, "token_embd.weight", 0, "token_embd (Q8_0)");
  for (int l : {0, 29}) {
    const LayerWeights& L = m.weights.layers[size_t(l)];
    const std::string p = "blk." + std::to_string(l) + ".", n = "layer " + std::to_string(l);
    same(L.wq, p + "attn_q.weight", m.cfg.num_heads, n + " q (permuted)");
    same(L.wk, p + "attn_k.weight", m.cfg.num_kv_heads, n + " k (permuted)");
    same(L.wv, p + "attn_v.weight", 0, n + " v");
    same(L.w_down, p + "ffn_down.weight", 0, n + " down");
  }
  EXPECT_FALSE(m.weights.final_norm.blocks());   // F32 vectors: none
}
