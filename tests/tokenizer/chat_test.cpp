// Chat formatting: byte-identical to transformers' apply_chat_template on the committed
// conversations (golden/tokenizers/chat), for every template, and the built-in formats.
#include <gtest/gtest.h>

#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/chat.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

const nlohmann::json& chat_refs() {
  static const nlohmann::json j = read_json("golden/tokenizers/chat/refs.json");
  return j;
}

std::vector<tok::ChatMessage> conversation(size_t i) {
  static const nlohmann::json convs = read_json("golden/tokenizers/chat/conversations.json");
  return tok::parse_chat_json(convs[i].dump(), "conversation " + std::to_string(i));
}

std::string template_text(const std::string& name) {
  return read_text(kRoot + "/golden/tokenizers/chat/templates/" + name);
}

const tok::Tokenizer& tokenizer_for_dir(const std::string& dir) {
  for (const auto& [name, d] : vocab_dirs())
    if (d == dir) return tokenizer(name);
  throw std::runtime_error("no tokenizer for " + dir);
}

TEST(Chat, EveryTemplateRendersLikeTransformers) {
  int checked = 0;
  for (const auto& [name, entry] : chat_refs()["templates"].items()) {
    const tok::Tokenizer& t = tokenizer_for_dir(entry["tokenizer"].get<std::string>());
    std::string tmpl = template_text(name);
    for (const nlohmann::json& r : entry["renders"]) {
      auto conv = conversation(r["conversation"].get<size_t>());
      bool gen = r["add_generation_prompt"].get<bool>();
      ASSERT_FALSE(r.contains("error")) << name << ": the reference raised " << r["error"];
      std::string got = tok::format_chat(t, conv, gen, tok::ChatFormat::Template, tmpl);
      EXPECT_EQ(got, r["text"].get<std::string>()) << name << " conversation " << r["conversation"] << " gen " << gen;
      // apply_chat_template(tokenize=True) == encode(prompt, add_special=false)
      EXPECT_EQ(t.encode(got, false), r["ids"].get<std::vector<int32_t>>()) << name << " conversation " << r["conversation"];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 22);
  std::printf("[ chat ] %d renders byte-identical to transformers, ids identical\n", checked);
}

// The tokenizers' own chat_template (tokenizer_config.json) is the one used by default.
TEST(Chat, TheTokenizersOwnTemplateIsTheDefault) {
  for (const auto& [tmpl_name, vocab] : std::vector<std::pair<std::string, std::string>>{
           {"qwen3.jinja", "qwen-bpe"}, {"deepseek-v3.jinja", "deepseek-v3-bpe"}}) {
    const tok::Tokenizer& t = tokenizer(vocab);
    EXPECT_EQ(t.chat_template(), template_text(tmpl_name));
    for (const nlohmann::json& r : chat_refs()["templates"][tmpl_name]["renders"]) {
      auto conv = conversation(r["conversation"].get<size_t>());
      EXPECT_EQ(tok::format_chat(t, conv, r["add_generation_prompt"].get<bool>()), r["text"].get<std::string>());
    }
  }
}

// The built-in formats equal the templates they stand for.
TEST(Chat, BuiltInFormatsMatchTheirTemplates) {
  for (const auto& [format, tmpl_name] : std::vector<std::pair<tok::ChatFormat, std::string>>{
           {tok::ChatFormat::ChatML, "chatml.jinja"}, {tok::ChatFormat::DeepSeekR1, "deepseek-r1.jinja"}}) {
    const nlohmann::json& entry = chat_refs()["templates"][tmpl_name];
    const tok::Tokenizer& t = tokenizer_for_dir(entry["tokenizer"].get<std::string>());
    for (const nlohmann::json& r : entry["renders"]) {
      auto conv = conversation(r["conversation"].get<size_t>());
      EXPECT_EQ(tok::format_chat(t, conv, r["add_generation_prompt"].get<bool>(), format), r["text"].get<std::string>())
          << tok::chat_format_name(format) << " conversation " << r["conversation"];
    }
  }
}

TEST(Chat, DeepSeekR1GenerationPromptOpensTheReasoning) {
  std::string s = tok::format_chat(tokenizer("deepseek-v3-bpe"), {{"user", "Hi"}}, true, tok::ChatFormat::DeepSeekR1);
  EXPECT_EQ(s, "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think>\n");
}

TEST(Chat, ErrorsPointAtChatFormat) {
  const tok::Tokenizer& tiny = tokenizer("tiny-qwen2");   // has no chat template
  try {
    tok::format_chat(tiny, {{"user", "hi"}}, true);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--chat-format"), std::string::npos) << e.what();
  }
  try {
    tok::format_chat(tiny, {{"user", "hi"}}, true, tok::ChatFormat::Template, "{% macro m() %}x{% endmacro %}{{ m() }}");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("macro"), std::string::npos) << w;
    EXPECT_NE(w.find("chat template 1:4"), std::string::npos) << w;   // tests/jinja has the rest
    EXPECT_NE(w.find("--chat-format"), std::string::npos) << w;
  }
  try {
    tok::format_chat(tiny, {{"user", "hi"}}, true, tok::ChatFormat::Template,
                     "{% if messages[0].role != 'system' %}{{ raise_exception('System first!') }}{% endif %}");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "chat template raised an exception: System first!");   // no hint
  }
  EXPECT_THROW(tok::parse_chat_format("llama3"), std::runtime_error);
  EXPECT_THROW(tok::format_chat(tiny, {{"tool", "x"}}, true, tok::ChatFormat::ChatML), std::runtime_error);
  EXPECT_THROW(tok::parse_chat_json("[{\"role\": \"user\"}]", "c.json"), std::runtime_error);
}

}  // namespace

// A built-in format over a vocabulary that lacks its special tokens is refused, naming the
// token: qwen-bpe has no <｜User｜> (it would encode as 5 pieces).
TEST(Chat, BuiltInFormatNeedsItsSpecialTokensInTheVocabulary) {
  try {
    tok::format_chat(tokenizer("qwen-bpe"), {{"user", "Hi"}}, true, tok::ChatFormat::DeepSeekR1);
    FAIL() << "deepseek-r1 over qwen-bpe was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'<｜User｜>'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("deepseek-r1"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(tok::format_chat(tokenizer("qwen-bpe"), {{"user", "Hi"}}, true, tok::ChatFormat::ChatML));
}
