// parse_model_config: fields, defaults, and one-line refusals that name the field.
#include <gtest/gtest.h>

#include <cmath>

#include "io_test_util.h"
#include "model/config.h"

using namespace iotest;
using lmscope::testing_util::TempDir;
using lmscope::Arch;
using lmscope::parse_model_config;

namespace {

const std::string kSrc = "config.json";

// A config.json's text from its fields: `replace` edits them (an empty value removes the
// field), `extra` is spliced in before the closing brace.
std::string config_text(std::map<std::string, std::string> f, const std::map<std::string, std::string>& replace,
                        const std::string& extra) {
  for (auto& [k, v] : replace) {
    if (v.empty()) f.erase(k);
    else f[k] = v;
  }
  std::string s = "{";
  for (auto& [k, v] : f) {
    if (s.size() > 1) s += ",";
    s += "\"" + k + "\":" + v;
  }
  return s + extra + "}";
}

// A valid Qwen2 config, with `extra` fields spliced in (later keys do not override earlier
// ones in nlohmann, so `replace` edits the base text instead).
std::string qwen2(const std::string& extra = "", std::map<std::string, std::string> replace = {}) {
  std::map<std::string, std::string> f = {
      {"architectures", "[\"Qwen2ForCausalLM\"]"}, {"model_type", "\"qwen2\""},
      {"hidden_size", "64"}, {"intermediate_size", "128"}, {"num_hidden_layers", "2"},
      {"num_attention_heads", "4"}, {"num_key_value_heads", "2"}, {"rms_norm_eps", "1e-06"},
      {"rope_theta", "1000000.0"}, {"max_position_embeddings", "128"}, {"vocab_size", "100"},
      {"hidden_act", "\"silu\""}, {"bos_token_id", "1"}, {"eos_token_id", "2"},
      {"torch_dtype", "\"bfloat16\""}, {"use_sliding_window", "false"}, {"sliding_window", "64"}};
  return config_text(std::move(f), replace, extra);
}

void expect_config_error(const std::string& text, std::initializer_list<std::string> parts) {
  expect_error([&] { parse_model_config(text, kSrc); }, kSrc + ": ", parts);
}

}  // namespace

TEST(Config, ParsesQwen2WithDefaults) {
  const auto c = parse_model_config(qwen2(), kSrc);
  EXPECT_EQ(c.arch, Arch::Qwen2);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.kv_group(), 2);
  EXPECT_EQ(c.head_dim, 16);  // derived: 64 / 4
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.max_position_embeddings, 128);
  EXPECT_EQ(c.vocab_size, 100);
  EXPECT_FALSE(c.tie_word_embeddings);  // absent -> false, as Qwen2Config
  EXPECT_TRUE(c.attention_bias);        // Qwen2 always has q/k/v bias...
  EXPECT_FALSE(c.o_proj_bias);          // ...and never an o_proj bias
  EXPECT_EQ(c.bos_token_ids, std::vector<int>{1});
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(c.pad_token_id, -1);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.json_text, qwen2());
}

TEST(Config, KvHeadsDefaultToHeads) {
  const auto c = parse_model_config(qwen2("", {{"num_key_value_heads", ""}}), kSrc);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(parse_model_config(qwen2("", {{"num_key_value_heads", "null"}}), kSrc).num_kv_heads, 4);
}

TEST(Config, LlamaAttentionBiasAndTying) {
  const std::string base = qwen2(",\"tie_word_embeddings\":true",
                                 {{"architectures", "[\"LlamaForCausalLM\"]"}, {"model_type", "\"llama\""}});
  auto c = parse_model_config(base, kSrc);
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  c = parse_model_config(qwen2(",\"attention_bias\":true",
                               {{"architectures", "[\"LlamaForCausalLM\"]"}, {"model_type", "\"llama\""}}),
                         kSrc);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.o_proj_bias);
}

// Qwen3: head_dim stated (HF's default is a fixed 128, not D / H), q/k norms, biases only with
// attention_bias (then on o too, as Qwen3Attention), model_type alone names it.
TEST(Config, Qwen3) {
  const std::map<std::string, std::string> qwen3 = {{"architectures", "[\"Qwen3ForCausalLM\"]"},
                                                    {"model_type", "\"qwen3\""}};
  auto c = parse_model_config(qwen2(",\"head_dim\":32,\"attention_bias\":false", qwen3), kSrc);
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(c.head_dim, 32);   // not 64 / 4
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  c = parse_model_config(qwen2(",\"head_dim\":16,\"attention_bias\":true", qwen3), kSrc);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.o_proj_bias);
  EXPECT_FALSE(parse_model_config(qwen2(), kSrc).qk_norm);   // Qwen2 has none
  EXPECT_EQ(parse_model_config(qwen2(",\"head_dim\":16", {{"architectures", ""}, {"model_type", "\"qwen3\""}}), kSrc).arch,
            Arch::Qwen3);
  EXPECT_EQ(parse_model_config(qwen2(",\"head_dim\":16", {{"max_position_embeddings", ""}, {"architectures", ""}, {"model_type", "\"qwen3\""}}), kSrc)
                .max_position_embeddings,
            32768);   // Qwen3Config's default
  expect_config_error(qwen2("", qwen3), {"field 'head_dim' is missing", "not D / H"});
  expect_config_error(qwen2(",\"head_dim\":16", {{"architectures", "[\"Qwen3ForCausalLM\"]"}}),
                      {"field 'model_type': 'qwen2' does not match architectures 'Qwen3ForCausalLM' (expected 'qwen3')"});
  // The sliding-window refusal of Qwen2 holds for Qwen3 too.
  auto sliding = qwen3;
  sliding["use_sliding_window"] = "true";
  expect_config_error(qwen2(",\"head_dim\":16", sliding), {"field 'use_sliding_window'", "is not supported"});
}

// Gemma 3 as transformers 5 saves it (golden/models/tiny-gemma3's fields), with `extra`
// spliced in and `replace` editing the base.
std::string gemma3(const std::string& extra = "", std::map<std::string, std::string> replace = {}) {
  std::map<std::string, std::string> f = {
      {"architectures", "[\"Gemma3ForCausalLM\"]"}, {"model_type", "\"gemma3_text\""},
      {"hidden_size", "48"}, {"intermediate_size", "128"}, {"num_hidden_layers", "3"},
      {"num_attention_heads", "2"}, {"num_key_value_heads", "1"}, {"head_dim", "32"},
      {"rms_norm_eps", "1e-06"}, {"vocab_size", "100"}, {"hidden_activation", "\"gelu_pytorch_tanh\""},
      {"query_pre_attn_scalar", "24"}, {"sliding_window", "4"},
      {"layer_types", "[\"sliding_attention\",\"sliding_attention\",\"full_attention\"]"},
      {"rope_parameters", "{\"full_attention\":{\"rope_theta\":1000000.0,\"rope_type\":\"default\"},"
                          "\"sliding_attention\":{\"rope_theta\":10000.0,\"rope_type\":\"default\"}}"},
      {"final_logit_softcapping", "null"}, {"attn_logit_softcapping", "null"},
      {"use_bidirectional_attention", "false"}, {"tie_word_embeddings", "true"}};
  return config_text(std::move(f), replace, extra);
}

// Gemma 3: which layers slide and their RoPE base, the attention scale, and the refusals that
// name the key (soft-capping, another activation, bidirectional attention, rope scaling).
TEST(Config, Gemma3) {
  auto c = parse_model_config(gemma3(), kSrc);
  EXPECT_EQ(c.arch, Arch::Gemma3);
  EXPECT_TRUE(c.qk_norm && c.embed_scaled && c.post_branch_norms && c.gelu_tanh_ffn);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_window, 4);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, true, false}));
  EXPECT_TRUE(c.is_sliding(0) && !c.is_sliding(2) && !c.is_sliding(3));
  EXPECT_EQ(c.rope_theta, 1000000.0f);
  EXPECT_EQ(c.rope_theta_local, 10000.0f);
  EXPECT_EQ(c.attention_scale(), float(1.0 / std::sqrt(24.0)));   // not 32^-0.5
  EXPECT_EQ(parse_model_config(qwen2(), kSrc).attention_scale(), 1.0f / std::sqrt(16.0f));

  // transformers 4 spelling: rope_theta + rope_local_base_freq, the pattern as an int (every
  // 6th layer global, Gemma3TextConfig's default).
  c = parse_model_config(gemma3(",\"rope_theta\":1000.0,\"rope_local_base_freq\":50.0,\"sliding_window_pattern\":2",
                                {{"rope_parameters", ""}, {"layer_types", ""}, {"num_hidden_layers", "4"}}),
                         kSrc);
  EXPECT_EQ(c.rope_theta, 1000.0f);
  EXPECT_EQ(c.rope_theta_local, 50.0f);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, false, true, false}));
  c = parse_model_config(gemma3("", {{"layer_types", ""}, {"num_hidden_layers", "7"}}), kSrc);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, true, true, true, true, false, true}));

  expect_config_error(gemma3("", {{"final_logit_softcapping", "30.0"}}),
                      {"field 'final_logit_softcapping' = 30.0: soft-capping is not supported"});
  expect_config_error(gemma3("", {{"attn_logit_softcapping", "50.0"}}), {"field 'attn_logit_softcapping'"});
  expect_config_error(gemma3("", {{"hidden_activation", "\"gelu\""}}),
                      {"field 'hidden_activation': 'gelu' is not supported (only 'gelu_pytorch_tanh')"});
  expect_config_error(gemma3("", {{"use_bidirectional_attention", "true"}}), {"field 'use_bidirectional_attention'"});
  expect_config_error(gemma3("", {{"layer_types", "[\"full_attention\"]"}}),
                      {"field 'layer_types' must be a list of 3 strings"});
  expect_config_error(gemma3("", {{"layer_types", "[\"full_attention\",\"chunked_attention\",\"full_attention\"]"}}),
                      {"field 'layer_types': entry 1 is \"chunked_attention\""});
  expect_config_error(gemma3("", {{"rope_parameters", "{\"full_attention\":{\"rope_type\":\"linear\",\"factor\":8.0}}"}}),
                      {"field 'rope_parameters.full_attention': type 'linear' is not supported"});
  expect_config_error(gemma3("", {{"head_dim", ""}}), {"field 'head_dim' is missing"});
}

TEST(Config, LayerTypes) {
  EXPECT_NO_THROW(parse_model_config(qwen2(",\"layer_types\":[\"full_attention\",\"full_attention\"]"), kSrc));
  expect_config_error(qwen2(",\"layer_types\":[\"full_attention\",\"sliding_attention\"]"),
                      {"field 'layer_types': entry 1 is \"sliding_attention\": only 'full_attention' is supported"});
  expect_config_error(qwen2(",\"layer_types\":\"full\""), {"field 'layer_types' must be a list of strings, got string"});
}

TEST(Config, HeadDimGivenVersusDerived) {
  EXPECT_EQ(parse_model_config(qwen2(",\"head_dim\":32"), kSrc).head_dim, 32);  // not 64/4
  EXPECT_EQ(parse_model_config(qwen2(",\"head_dim\":null"), kSrc).head_dim, 16);
  // With head_dim given, heads need not divide hidden.
  EXPECT_EQ(parse_model_config(qwen2(",\"head_dim\":8", {{"num_attention_heads", "6"}, {"num_key_value_heads", "3"}}), kSrc)
                .head_dim, 8);
  expect_config_error(qwen2("", {{"num_attention_heads", "6"}, {"num_key_value_heads", "3"}}),
                      {"field 'num_attention_heads' (6) does not divide 'hidden_size' (64)"});
  expect_config_error(qwen2(",\"head_dim\":7"), {"field 'head_dim'", "even"});
}

TEST(Config, EosIntListOrNull) {
  EXPECT_EQ(parse_model_config(qwen2("", {{"eos_token_id", "[2, 7, 9]"}}), kSrc).eos_token_ids,
            (std::vector<int>{2, 7, 9}));
  EXPECT_TRUE(parse_model_config(qwen2("", {{"eos_token_id", "null"}}), kSrc).eos_token_ids.empty());
  EXPECT_TRUE(parse_model_config(qwen2("", {{"bos_token_id", ""}}), kSrc).bos_token_ids.empty());
  expect_config_error(qwen2("", {{"eos_token_id", "\"</s>\""}}), {"field 'eos_token_id'", "got string"});
  expect_config_error(qwen2("", {{"eos_token_id", "[2, 100]"}}), {"field 'eos_token_id' = 100 is outside the vocabulary"});
  EXPECT_EQ(parse_model_config(qwen2(",\"pad_token_id\":-1"), kSrc).pad_token_id, -1);
  EXPECT_EQ(parse_model_config(qwen2(",\"pad_token_id\":5"), kSrc).pad_token_id, 5);
}

TEST(Config, RopeParametersForm) {
  // transformers 5: no top-level rope_theta, "dtype" instead of "torch_dtype".
  const auto c = parse_model_config(
      qwen2(",\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":500000.0},\"dtype\":\"float32\"",
            {{"rope_theta", ""}, {"torch_dtype", ""}}),
      kSrc);
  EXPECT_FLOAT_EQ(c.rope_theta, 5e5f);
  EXPECT_EQ(c.torch_dtype, "float32");
  expect_config_error(qwen2(",\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":500000.0}"),
                      {"field 'rope_theta'", "disagrees with 'rope_parameters.rope_theta'"});
  expect_config_error(qwen2(",\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":1000000.0}"),
                      {"field 'rope_parameters': type 'llama3' is not supported"});
}

TEST(Config, RopeScaling) {
  EXPECT_NO_THROW(parse_model_config(qwen2(",\"rope_scaling\":null"), kSrc));
  EXPECT_NO_THROW(parse_model_config(qwen2(",\"rope_scaling\":{\"rope_type\":\"default\"}"), kSrc));
  expect_config_error(qwen2(",\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4.0}"),
                      {"field 'rope_scaling': type 'yarn' is not supported"});
  expect_config_error(qwen2(",\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":2.0}"),
                      {"field 'rope_scaling': type 'linear' is not supported"});
}

TEST(Config, SlidingWindow) {
  expect_config_error(qwen2("", {{"use_sliding_window", "true"}}),
                      {"field 'use_sliding_window'", "sliding_window 64 < max_position_embeddings 128",
                       "sliding window attention in use is not supported"});
  // A window as long as the context, or a null window, never slides.
  EXPECT_NO_THROW(parse_model_config(qwen2("", {{"use_sliding_window", "true"}, {"sliding_window", "128"}}), kSrc));
  EXPECT_NO_THROW(parse_model_config(qwen2("", {{"use_sliding_window", "true"}, {"sliding_window", "null"}}), kSrc));
  expect_config_error(qwen2("", {{"use_sliding_window", "\"yes\""}}), {"field 'use_sliding_window' must be a boolean, got string"});
}

TEST(Config, WrongFieldType) {
  expect_config_error(qwen2("", {{"hidden_size", "\"64\""}}), {"field 'hidden_size' must be an integer, got string"});
  expect_config_error(qwen2("", {{"num_hidden_layers", "2.5"}}), {"field 'num_hidden_layers' must be an integer, got float"});
  expect_config_error(qwen2("", {{"rope_theta", "\"big\""}}), {"field 'rope_theta' must be a number, got string"});
  expect_config_error(qwen2(",\"tie_word_embeddings\":1"), {"field 'tie_word_embeddings' must be a boolean, got integer"});
  expect_config_error(qwen2("", {{"architectures", "\"Qwen2ForCausalLM\""}}), {"field 'architectures' must be a non-empty list"});
  expect_config_error(qwen2("", {{"rope_scaling", "\"yarn\""}}), {"field 'rope_scaling' must be an object or null, got string"});
}

TEST(Config, UnsupportedArchitecture) {
  expect_config_error(qwen2("", {{"architectures", "[\"MistralForCausalLM\"]"}, {"model_type", "\"mistral\""}}),
                      {"field 'architectures': 'MistralForCausalLM' is not supported (Qwen2ForCausalLM, Qwen3ForCausalLM, LlamaForCausalLM, "
                       "Gemma3ForCausalLM)"});
  expect_config_error(qwen2("", {{"model_type", "\"llama\""}}),
                      {"field 'model_type': 'llama' does not match architectures 'Qwen2ForCausalLM'"});
  // Without "architectures", model_type decides.
  EXPECT_EQ(parse_model_config(qwen2("", {{"architectures", ""}, {"model_type", "\"llama\""}}), kSrc).arch, Arch::Llama);
}

TEST(Config, InvalidJsonIsOneLineWithPosition) {
  expect_config_error("{\n  \"hidden_size\": 64,\n  oops\n}", {"invalid JSON", "line 3"});
  expect_config_error("[1, 2]", {"must be a JSON object, got array"});
}

TEST(Config, SizesAndDivisibility) {
  expect_config_error(qwen2("", {{"hidden_size", "0"}}), {"field 'hidden_size' must be positive, got 0"});
  expect_config_error(qwen2("", {{"vocab_size", "-5"}}), {"field 'vocab_size' must be positive, got -5"});
  expect_config_error(qwen2("", {{"intermediate_size", ""}}), {"field 'intermediate_size' is missing"});
  expect_config_error(qwen2("", {{"num_key_value_heads", "3"}}),
                      {"field 'num_key_value_heads' (3) must divide 'num_attention_heads' (4)"});
  expect_config_error(qwen2("", {{"hidden_size", "99999999999"}}), {"field 'hidden_size'", "out of range"});
}

TEST(Config, OtherRefusals) {
  const std::map<std::string, std::string> llama = {{"architectures", "[\"LlamaForCausalLM\"]"}, {"model_type", "\"llama\""}};
  expect_config_error(qwen2(",\"mlp_bias\":true", llama), {"field 'mlp_bias' is true"});
  EXPECT_NO_THROW(parse_model_config(qwen2(",\"mlp_bias\":false", llama), kSrc));
  expect_config_error(qwen2("", {{"hidden_act", "\"gelu\""}}), {"field 'hidden_act': 'gelu' is not supported"});
  expect_config_error(qwen2("", {{"torch_dtype", "\"float64\""}}), {"field 'torch_dtype': 'float64' is not supported"});
  expect_config_error(qwen2(",\"quantization_config\":{\"quant_method\":\"gptq\"}"), {"field 'quantization_config'"});
  expect_config_error(qwen2("", {{"rms_norm_eps", "0"}}), {"field 'rms_norm_eps' must be positive"});
}

TEST(Config, LoadFromDirectoryOrFile) {
  TempDir d;
  write_file(d.file("config.json"), qwen2());
  EXPECT_EQ(lmscope::load_model_config(d.str()).hidden_size, 64);
  EXPECT_EQ(lmscope::load_model_config(d.file("config.json")).hidden_size, 64);
  write_file(d.file("config.json"), qwen2("", {{"hidden_size", "\"x\""}}));
  expect_error([&] { lmscope::load_model_config(d.str()); }, d.file("config.json") + ": ",
               {"field 'hidden_size' must be an integer, got string"});
  TempDir empty;
  expect_error([&] { lmscope::load_model_config(empty.str()); }, empty.file("config.json") + ": ", {"cannot open"});
}

// A value nested 100,000 deep is quoted cut to 60 characters, in one line, without
// recursing through it (recursion that deep would overflow the stack).
TEST(Config, DeeplyNestedValueInAnError) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_config_error(qwen2("", {{"architectures", deep}}),
                      {"field 'architectures' must be a non-empty list of strings, got [[[[[[[[[[", "..."});
}
