// The DeepSeek-R1-Distill-Qwen tokenizer of the R1 header GGUF against Hugging Face
// (golden/tokenizers/r1/refs.json, made by golden/make_r1_refs.py: an HF `tokenizers` Tokenizer
// built from the GGUF's tokens and merges plus the model's tokenizer.json settings, and
// transformers' apply_chat_template with the GGUF's own chat template). Skipped, saying why,
// when scripts/fetch-r1-tokenizer.sh has not been run.
#include <gtest/gtest.h>

#include <memory>

#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/chat.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

const std::string kR1 = kRoot + "/models/DeepSeek-R1-Distill-Qwen-7B.Q4_K_M.header.gguf";
#define SKIP_WITHOUT_R1() SKIP_WITHOUT_FILE(kR1, "scripts/fetch-r1-tokenizer.sh")

const nlohmann::json& r1_refs() {
  static const nlohmann::json j = read_json("golden/tokenizers/r1/refs.json");
  return j;
}

const tok::Tokenizer& r1() {
  static const std::unique_ptr<tok::Tokenizer> t = std::make_unique<tok::Tokenizer>(tok::Tokenizer::load(kR1));
  return *t;
}

TEST(R1Refs, TextsGiveHfIdsWithAndWithoutSpecialTokens) {
  SKIP_WITHOUT_R1();
  int checked = 0;
  for (const nlohmann::json& r : r1_refs()["texts"]) {
    const std::string text = r["text"].get<std::string>();
    EXPECT_EQ(r1().encode(text, false), r["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(r1().encode(text, true), r["ids_special"].get<std::vector<int32_t>>()) << text;
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

TEST(R1Refs, EveryCorpusStringGivesHfIds) {
  SKIP_WITHOUT_R1();
  const nlohmann::json& ids = r1_refs()["corpus_ids"];
  const std::vector<std::string>& texts = corpus();
  ASSERT_EQ(ids.size(), texts.size()) << "golden/tokenizers/r1/refs.json is older than corpus.json";
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(r1().encode(texts[i], false), ids[i].get<std::vector<int32_t>>()) << "corpus string " << i;
}

// The GGUF's own template (tokenizer.chat_template), the tool's default chat format.
TEST(R1Refs, ChatTemplateOfTheFileRendersLikeTransformers) {
  SKIP_WITHOUT_R1();
  static const nlohmann::json convs = read_json("golden/tokenizers/chat/conversations.json");
  int checked = 0, with_think = 0;
  for (const nlohmann::json& r : r1_refs()["renders"]) {
    const size_t ci = r["conversation"].get<size_t>();
    const auto conv = tok::parse_chat_json(convs[ci].dump(), "conversation " + std::to_string(ci));
    const bool gen = r["add_generation_prompt"].get<bool>();
    const std::string got = tok::format_chat(r1(), conv, gen);
    EXPECT_EQ(got, r["text"].get<std::string>()) << "conversation " << ci << " gen " << gen;
    EXPECT_EQ(r1().encode(got, false), r["ids"].get<std::vector<int32_t>>()) << "conversation " << ci;
    for (const tok::ChatMessage& m : conv) with_think += m.role == "assistant" && m.content.find("</think>") != std::string::npos;
    ++checked;
  }
  EXPECT_EQ(checked, int(convs.size()) * 2);
  EXPECT_GT(with_think, 0);   // the <think> rule (keep what follows the last </think>) is exercised
}

TEST(R1Refs, CliJsonGivesHfIds) {
  SKIP_WITHOUT_R1();
  const nlohmann::json& first = r1_refs()["texts"][0];
  ASSERT_EQ(first["text"], "中华人民共和国成立于 1949 年。");
  testing_util::CliRun r = testing_util::run_cli(kBin + "/lmscope-bpe --tokenizer " + kR1 + " --json '中华人民共和国成立于 1949 年。'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], first["ids_special"]);
  r = testing_util::run_cli(kBin + "/lmscope-bpe --tokenizer " + kR1 + " --json --no-special '中华人民共和国成立于 1949 年。'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], first["ids"]);
}

}  // namespace
