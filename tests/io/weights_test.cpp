// load_weights: every tensor the config implies is found, shaped right, and wired up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "io_test_util.h"
#include "model/config.h"
#include "model/weights.h"

using namespace iotest;
using lmscope::testing_util::TempDir;
using lmscope::load_weights;
using lmscope::parse_model_config;

namespace {

// Writes config.json and model.safetensors for `spec`, after `edit` has changed the tensors.
void write_model(const TempDir& d, const TinySpec& spec,
                 const std::function<void(std::map<std::string, StTensor>&)>& edit = {}) {
  auto ts = tiny_tensors(spec);
  if (edit) edit(ts);
  write_file(d.file("config.json"), tiny_config_json(spec));
  write_file(d.file("model.safetensors"), build_safetensors(values(ts)));
}

float first(const lmscope::Tensor& t) { return t.to_f32().f32()[0]; }

}  // namespace

TEST(Weights, LoadsTinyQwen2Tied) {
  TempDir d;
  TinySpec spec;
  write_model(d, spec, [](auto& ts) {
    // Extra tensors a checkpoint may carry are ignored, even in a dtype we cannot use.
    ts["model.layers.0.self_attn.rotary_emb.inv_freq"] = f32_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", {2});
    ts["zz.ids"] = {"zz.ids", "I64", {1}, std::string(8, '\0')};
  });
  const auto cfg = lmscope::load_model_config(d.str());
  const auto w = load_weights(cfg, d.str());
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.embed.shape(), (lmscope::Shape{10, 8}));
  EXPECT_EQ(w.lm_head.raw(), w.embed.raw());  // tied: same storage
  const auto& L1 = w.layers[1];
  EXPECT_TRUE(L1.bq.defined());
  EXPECT_EQ(L1.bk.shape(), (lmscope::Shape{4}));
  EXPECT_FALSE(L1.bo.defined());  // Qwen2 has no o_proj bias
  EXPECT_EQ(L1.wo.shape(), (lmscope::Shape{8, 8}));
  EXPECT_EQ(L1.w_down.shape(), (lmscope::Shape{8, 16}));
  // Values come from the right tensors (each got a distinct base in tiny_tensors).
  const auto ts = tiny_tensors(spec);
  float want;
  std::memcpy(&want, ts.at("model.layers.1.self_attn.v_proj.weight").bytes.data(), 4);
  EXPECT_EQ(first(L1.wv), want);
  EXPECT_NE(first(L1.wv), first(L1.wk));
}

TEST(Weights, LlamaUntiedNeedsLmHead) {
  TempDir d;
  TinySpec spec{"LlamaForCausalLM", "llama", /*tie=*/false, false, ""};
  write_model(d, spec);
  const auto cfg = lmscope::load_model_config(d.str());
  const auto w = load_weights(cfg, d.str());
  EXPECT_NE(w.lm_head.raw(), w.embed.raw());
  EXPECT_FALSE(w.layers[0].bq.defined());  // Llama without attention_bias
  EXPECT_FALSE(w.layers[0].bo.defined());

  TempDir d2;
  write_model(d2, spec, [](auto& ts) { ts.erase("lm_head.weight"); });
  expect_error([&] { load_weights(cfg, d2.str()); }, d2.str() + ": ", {"tensor 'lm_head.weight' is missing"});
}

TEST(Weights, LlamaAttentionBiasIncludesOProj) {
  TempDir d;
  TinySpec spec{"LlamaForCausalLM", "llama", true, /*attention_bias=*/true, ""};
  write_model(d, spec);
  const auto cfg = lmscope::load_model_config(d.str());
  const auto w = load_weights(cfg, d.str());
  EXPECT_TRUE(w.layers[1].bq.defined());
  EXPECT_EQ(w.layers[1].bo.shape(), (lmscope::Shape{8}));

  TempDir d2;
  write_model(d2, spec, [](auto& ts) { ts.erase("model.layers.0.self_attn.o_proj.bias"); });
  expect_error([&] { load_weights(cfg, d2.str()); }, d2.str() + ": ",
               {"tensor 'model.layers.0.self_attn.o_proj.bias' is missing"});
}

TEST(Weights, TiedIgnoresAStrayLmHead) {
  TempDir d;
  write_model(d, TinySpec{}, [](auto& ts) { ts["lm_head.weight"] = f32_tensor("lm_head.weight", {10, 8}, 99); });
  const auto w = load_weights(lmscope::load_model_config(d.str()), d.str());
  EXPECT_EQ(w.lm_head.raw(), w.embed.raw());
}

TEST(Weights, MissingTensor) {
  TempDir d;
  write_model(d, TinySpec{}, [](auto& ts) { ts.erase("model.layers.1.self_attn.q_proj.weight"); });
  expect_error([&] { load_weights(lmscope::load_model_config(d.str()), d.str()); }, d.str() + ": ",
               {"tensor 'model.layers.1.self_attn.q_proj.weight' is missing"});
}

TEST(Weights, WrongShape) {
  TempDir d;
  write_model(d, TinySpec{}, [](auto& ts) {
    ts["model.layers.1.mlp.up_proj.weight"] = f32_tensor("model.layers.1.mlp.up_proj.weight", {16, 4});
  });
  expect_error([&] { load_weights(lmscope::load_model_config(d.str()), d.str()); }, d.str() + ": ",
               {"tensor 'model.layers.1.mlp.up_proj.weight' has shape [16,4], expected [16,8]"});
}

TEST(Weights, UnsupportedDtypeOfANeededTensor) {
  TempDir d;
  write_model(d, TinySpec{}, [](auto& ts) {
    ts["model.norm.weight"] = {"model.norm.weight", "F64", {8}, std::string(64, '\0')};
  });
  expect_error([&] { load_weights(lmscope::load_model_config(d.str()), d.str()); }, d.file("model.safetensors") + ": ",
               {"tensor 'model.norm.weight': dtype 'F64' is not supported"});
}

TEST(Weights, ShardedModel) {
  TempDir d;
  TinySpec spec;
  auto ts = tiny_tensors(spec);
  // Layer 1 in the second shard, everything else in the first.
  std::vector<StTensor> s1, s2;
  std::string map;
  for (const auto& [n, t] : ts) {
    const bool second = n.rfind("model.layers.1.", 0) == 0;
    (second ? s2 : s1).push_back(t);
    map += std::string(map.empty() ? "" : ",") + "\"" + n + "\":\"" + (second ? "s2.safetensors" : "s1.safetensors") + "\"";
  }
  write_file(d.file("config.json"), tiny_config_json(spec));
  write_file(d.file("s1.safetensors"), build_safetensors(s1));
  write_file(d.file("s2.safetensors"), build_safetensors(s2));
  write_file(d.file("model.safetensors.index.json"), "{\"weight_map\":{" + map + "}}");
  const auto w = load_weights(lmscope::load_model_config(d.str()), d.str());
  EXPECT_EQ(w.layers[1].w_gate.shape(), (lmscope::Shape{16, 8}));
  EXPECT_NE(first(w.layers[1].w_gate), first(w.layers[0].w_gate));
}

TEST(Weights, NoWeightFiles) {
  TempDir d;
  write_file(d.file("config.json"), tiny_config_json(TinySpec{}));
  expect_error([&] { load_weights(lmscope::load_model_config(d.str()), d.str()); }, d.str() + ": ",
               {"no model.safetensors or model.safetensors.index.json"});
}

// The golden tiny model (committed, made by golden/make_golden.py): absent is a failure.
TEST(Weights, GoldenTinyQwen2) {
  const std::string dir = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";
  ASSERT_TRUE(std::filesystem::exists(dir + "/config.json")) << dir << " is missing (golden/make_golden.py makes it)";
  const auto cfg = lmscope::load_model_config(dir);
  EXPECT_EQ(cfg.arch, lmscope::Arch::Qwen2);
  const auto w = load_weights(cfg, dir);
  ASSERT_EQ(int(w.layers.size()), cfg.num_layers);
  EXPECT_EQ(w.embed.shape(), (lmscope::Shape{cfg.vocab_size, cfg.hidden_size}));
  EXPECT_EQ(w.lm_head.shape(), (lmscope::Shape{cfg.vocab_size, cfg.hidden_size}));
  EXPECT_TRUE(w.layers[0].bq.defined());
  // Every weight is readable and finite.
  for (const auto* t : {&w.embed, &w.final_norm, &w.layers.back().w_down, &w.layers.back().bv}) {
    lmscope::Tensor f = t->to_f32();
    for (int64_t i = 0; i < f.numel(); ++i) ASSERT_TRUE(std::isfinite(f.f32()[i]));
  }
}
