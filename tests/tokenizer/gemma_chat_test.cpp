// --chat-format gemma (tokenizer/chat.h): Gemma 3's chat template run by lib/jinja on the Gemma 3
// 270M file's tokenizer, against HF's apply_chat_template with the same template
// (golden/gemma3/chat.json, made by golden/make_gemma3_chat.py): the prompt text, its ids, and the
// template's refusal of roles that do not alternate. Skipped, saying so, when the file is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

using namespace lmscope::tok;

TEST(GemmaChat, MatchesHuggingFace) {
  const std::string root = LMSCOPE_SOURCE_DIR;
  std::ifstream in(root + "/golden/gemma3/chat.json");
  ASSERT_TRUE(in) << "golden/gemma3/chat.json is missing";
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::string model = root + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-gemma3-model.sh";
  const Tokenizer t = Tokenizer::load(model);
  ASSERT_TRUE(t.chat_template().empty());   // a base model: the format is the built-in one
  int refused = 0;
  for (const auto& c : ref["cases"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    const bool gen = c["add_generation_prompt"];
    SCOPED_TRACE(c["messages"].dump());
    if (c.contains("error")) {
      try {
        format_chat(t, messages, gen, ChatFormat::Gemma);
        ADD_FAILURE() << "no error";
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos) << e.what();
        ++refused;
      }
      continue;
    }
    const std::string text = format_chat(t, messages, gen, ChatFormat::Gemma);
    EXPECT_EQ(text, c["text"].get<std::string>());
    // apply_chat_template(tokenize=True): no BOS of the tokenizer's own, the template wrote it.
    EXPECT_EQ(t.encode(text, false), c["ids"].get<std::vector<int32_t>>());
  }
  EXPECT_EQ(refused, 1);
}

// The format needs Gemma's turn tokens: a vocabulary without them is refused by name.
TEST(GemmaChat, NeedsTheTurnTokens) {
  const Tokenizer t = Tokenizer::load(std::string(LMSCOPE_SOURCE_DIR) + "/golden/tokenizers/qwen-bpe");
  try {
    format_chat(t, {{"user", "hi"}}, true, ChatFormat::Gemma);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--chat-format gemma: the vocabulary has no token '<start_of_turn>'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse_chat_format("gemma"), ChatFormat::Gemma);
}
