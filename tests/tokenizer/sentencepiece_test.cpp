// SentencePiece BPE (tokenizer/sentencepiece.h): merges by score on a hand-made vocabulary, "▁",
// byte fallback, user-defined tokens cut out first, BOS; then Gemma 3 270M's vocabulary against
// HF's ids of the same GGUF (golden/gemma3/tokenizer.json, made by golden/make_golden.py
// --gemma3-tokenizer), skipped when the file is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "tokenizer/sentencepiece.h"

using namespace lmscope;
using namespace lmscope::tok;

namespace {

// ids: 0 <pad>, 1 <eos>, 2 <bos>, 3 <0xC3>, 4 <0xA9>, 5 ▁, 6 a, 7 b, 8 c, 9 ab, 10 bc, 11 abc,
// 12 ▁a, 13 "\n\n" and 14 "\n" (user-defined).
SpmVocab tiny_vocab(bool space_prefix) {
  SpmVocab v;
  v.pieces = {"<pad>", "<eos>", "<bos>", "<0xC3>", "<0xA9>", "\xE2\x96\x81", "a", "b", "c", "ab", "bc", "abc",
              "\xE2\x96\x81" "a", "\n\n", "\n"};
  v.scores = {0, 0, 0, 0, 0, -1, -1, -1, -1, -5, -2, -3, -10, 0, 0};
  v.types = {3, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4};
  v.bos = 2;
  v.add_space_prefix = space_prefix;
  v.index();
  return v;
}

}  // namespace

// "abc": bc (score -2) is merged before ab (-5), then a + bc spells abc (-3). A left-to-right
// merge would take ab first and never reach abc.
TEST(SentencePiece, MergesTheHighestScoreFirst) {
  const SpmVocab v = tiny_vocab(false);
  std::vector<SpmMerge> merges;
  EXPECT_EQ(spm_encode(v, "abc", true, &merges), (std::vector<int>{2, 11}));
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges[0].left + "+" + merges[0].right, "b+c");
  EXPECT_EQ(merges[0].score, -2.0f);
  EXPECT_EQ(merges[1].left + "+" + merges[1].right, "a+bc");
  EXPECT_EQ(spm_encode(v, "abc", false), (std::vector<int>{11}));
  EXPECT_EQ(spm_encode(v, "", true), (std::vector<int>{2}));
}

// A space is "▁": "ab c" is ab, ▁, c (no token spells "ab▁" or "▁c").
TEST(SentencePiece, SpacesAreTheMetaSymbol) {
  const SpmVocab v = tiny_vocab(false);
  EXPECT_EQ(spm_encode(v, "ab c", false), (std::vector<int>{9, 5, 8}));
  // With add_space_prefix a fragment starts with one: "a" is "▁a".
  EXPECT_EQ(spm_encode(tiny_vocab(true), "a", false), (std::vector<int>{12}));
}

// é (C3 A9) is no token: its bytes are.
TEST(SentencePiece, ByteFallback) {
  const SpmVocab v = tiny_vocab(false);
  std::vector<std::string> fallbacks;
  EXPECT_EQ(spm_encode(v, "a\xC3\xA9", false, nullptr, &fallbacks), (std::vector<int>{6, 3, 4}));
  EXPECT_EQ(fallbacks, (std::vector<std::string>{"\xC3\xA9"}));
  SpmVocab no_bytes = tiny_vocab(false);
  no_bytes.pieces[4] = "<0xZZ>";
  no_bytes.index();
  EXPECT_THROW(spm_encode(no_bytes, "\xC3\xA9", false), std::runtime_error);
}

// User-defined tokens are cut out first, the longest first: "\n\n\n" is "\n\n" then "\n"; with
// add_space_prefix the text after a token starts with a space again.
TEST(SentencePiece, UserDefinedTokensFirst) {
  EXPECT_EQ(spm_encode(tiny_vocab(false), "a\n\n\nb", false), (std::vector<int>{6, 13, 14, 7}));
  EXPECT_EQ(spm_encode(tiny_vocab(true), "a\n\na", false), (std::vector<int>{12, 13, 12}));
}

TEST(SentencePiece, Gemma3MatchesHuggingFace) {
  const std::string root = LMSCOPE_SOURCE_DIR;
  std::ifstream in(root + "/golden/gemma3/tokenizer.json");
  ASSERT_TRUE(in) << "golden/gemma3/tokenizer.json is missing";
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::string model = root + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-gemma3-model.sh";
  const SpmVocab v = load_spm_vocab(GgufFile::open(model, GgufOpen::MetadataOnly));
  EXPECT_FALSE(v.add_space_prefix);
  EXPECT_EQ(v.bos, 2);
  EXPECT_EQ(v.user_defined.size(), 165u);
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(spm_encode(v, text, v.add_bos), c["ids"].get<std::vector<int>>()) << text;
  }
}

TEST(SentencePiece, RefusesAByteLevelTokenizer) {
  const std::string root = LMSCOPE_SOURCE_DIR;
  const std::string smol = root + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(smol)) GTEST_SKIP() << smol << " is absent: run scripts/fetch-model.sh";
  try {
    load_spm_vocab(GgufFile::open(smol, GgufOpen::MetadataOnly));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'tokenizer.ggml.model' is 'gpt2': not a SentencePiece"), std::string::npos)
        << e.what();
  }
}
