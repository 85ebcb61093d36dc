// SentencePiece BPE (tokenizer/sentencepiece.h): merges by score on a hand-made vocabulary, "▁",
// byte fallback, control and user-defined tokens cut out first, BOS, the merge trace, the Tokenizer
// over it; then Gemma 3 270M's vocabulary against
// HF's ids of the same GGUF (golden/gemma3/tokenizer.json, made by golden/make_golden.py
// --gemma3-tokenizer), skipped when the file is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/tokenizer.h"

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
// merge would take ab first and never reach abc. The trace has the characters, each merge with
// its score and the left symbol's place, BOS as a word of its own.
TEST(SentencePiece, MergesTheHighestScoreFirst) {
  const SpmVocab v = tiny_vocab(false);
  EncodeTrace tr;
  EXPECT_EQ(spm_encode(v, "abc", true, &tr), (std::vector<int>{2, 11}));
  EXPECT_TRUE(tr.by_score);
  ASSERT_EQ(tr.words.size(), 2u);
  EXPECT_EQ(tr.words[0].kind, WordTrace::Kind::Post);
  const WordTrace& w = tr.words[1];
  EXPECT_EQ(w.symbols, (std::vector<int32_t>{6, 7, 8}));
  ASSERT_EQ(w.merges.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>({w.merges[0].left, w.merges[0].right, w.merges[0].merged, w.merges[0].position}),
            std::vector<int32_t>({7, 8, 10, 1}));
  EXPECT_EQ(w.merges[0].score, -2.0f);
  EXPECT_EQ(std::vector<int32_t>({w.merges[1].left, w.merges[1].right, w.merges[1].merged, w.merges[1].position}),
            std::vector<int32_t>({6, 10, 11, 0}));
  EXPECT_EQ(w.merges[1].score, -3.0f);
  EXPECT_EQ(w.ids, (std::vector<int32_t>{11}));
  EXPECT_EQ(tr.ids, (std::vector<int32_t>{2, 11}));
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

// é (C3 A9) is no token: its bytes are. The trace counts it as two symbols, so the merge of
// the "bc" after it is at position 3.
TEST(SentencePiece, ByteFallback) {
  const SpmVocab v = tiny_vocab(false);
  EncodeTrace tr;
  EXPECT_EQ(spm_encode(v, "a\xC3\xA9" "bc", false, &tr), (std::vector<int>{6, 3, 4, 10}));
  ASSERT_EQ(tr.words.size(), 1u);
  EXPECT_EQ(tr.words[0].byte_fallback, (std::vector<std::string>{"\xC3\xA9"}));
  EXPECT_EQ(tr.words[0].symbols, (std::vector<int32_t>{6, 3, 4, 7, 8}));
  ASSERT_EQ(tr.words[0].merges.size(), 1u);
  EXPECT_EQ(tr.words[0].merges[0].position, 3);
  SpmVocab no_bytes = tiny_vocab(false);
  PieceTable pieces;   // the same, with "<0xA9>" spelled wrong
  for (size_t id = 0; id < no_bytes.pieces.size(); ++id) pieces.push_back(id == 4 ? "<0xZZ>" : no_bytes.pieces[id]);
  no_bytes.pieces = pieces;
  no_bytes.index();
  EXPECT_THROW(spm_encode(no_bytes, "\xC3\xA9", false), std::runtime_error);
}

// Control and user-defined tokens are cut out first, the longest first: "\n\n\n" is "\n\n" then
// "\n", "<bos>" in the text is the token; with add_space_prefix the text after a token starts
// with a space again.
TEST(SentencePiece, WholeTokensFirst) {
  EXPECT_EQ(spm_encode(tiny_vocab(false), "a\n\n\nb", false), (std::vector<int>{6, 13, 14, 7}));
  EXPECT_EQ(spm_encode(tiny_vocab(true), "a\n\na", false), (std::vector<int>{12, 13, 12}));
  EncodeTrace tr;
  EXPECT_EQ(spm_encode(tiny_vocab(false), "a<bos>b", false, &tr), (std::vector<int>{6, 2, 7}));
  ASSERT_EQ(tr.words.size(), 3u);
  EXPECT_EQ(tr.words[1].kind, WordTrace::Kind::Added);
}

// The Tokenizer over a SentencePiece vocabulary: BOS from add_special, "▁" decoded as a space and
// "<0xNN>" as its byte, control tokens special (dropped by skip_special), user-defined not.
TEST(SentencePiece, TokenizerInterface) {
  const Tokenizer t = Tokenizer::from_sentencepiece(tiny_vocab(false), "tiny");
  EXPECT_TRUE(t.is_sentencepiece());
  EXPECT_EQ(t.encode("ab c\xC3\xA9"), (std::vector<int32_t>{2, 9, 5, 8, 3, 4}));
  EXPECT_EQ(t.encode("ab c", false), (std::vector<int32_t>{9, 5, 8}));
  EXPECT_EQ(t.decode({2, 9, 5, 8, 3, 4}), "<bos>ab c\xC3\xA9");
  EXPECT_EQ(t.decode({2, 9, 5, 8, 3, 4}, true), "ab c\xC3\xA9");
  EXPECT_EQ(t.decode({3}), "\xEF\xBF\xBD");   // half a character: U+FFFD
  EXPECT_EQ(t.token_bytes(12), " a");
  EXPECT_EQ(t.token_text(12), "\xE2\x96\x81" "a");
  EXPECT_TRUE(t.is_special(2));
  EXPECT_FALSE(t.is_special(13));
  EXPECT_TRUE(t.is_added(13));
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.token_to_id("bc"), 10);
  EXPECT_FALSE(t.token_to_id("zz"));
  EXPECT_THROW(t.token_text(15), std::out_of_range);
  IncrementalDecoder d = t.incremental_decoder();
  EXPECT_EQ(d.push(9), "ab");
  EXPECT_EQ(d.push(3), "");   // é waits for its second byte
  EXPECT_EQ(d.push(4), "\xC3\xA9");
  EXPECT_EQ(d.finish(), "");
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
  EXPECT_EQ(v.whole_tokens.size(), 165u + 6249u);   // user-defined + control
  // What every tool runs: Tokenizer::load of the file (add_special: BOS, as HF's add_special_tokens).
  const Tokenizer t = Tokenizer::load(model);
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    const std::vector<int> want = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(spm_encode(v, text, v.add_bos), want) << text;
    EXPECT_EQ(t.encode(text), std::vector<int32_t>(want.begin(), want.end())) << text;
    EXPECT_EQ(t.decode(t.encode(text), true), text);
  }
}

// llama.cpp's own tokenizer on the file (golden/gemma3/llamacpp_tokens.json, made by
// golden/make_gemma3_llamacpp_tokens.py: llama_tokenize with add_special and parse_special) on
// English, CJK, code, runs of spaces, newlines and tabs, byte fallback, emoji, a chat turn.
TEST(SentencePiece, Gemma3MatchesLlamaCpp) {
  const std::string root = LMSCOPE_SOURCE_DIR;
  std::ifstream in(root + "/golden/gemma3/llamacpp_tokens.json");
  ASSERT_TRUE(in) << "golden/gemma3/llamacpp_tokens.json is missing";
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::string model = root + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent: run scripts/fetch-gemma3-model.sh";
  const Tokenizer t = Tokenizer::load(model);
  ASSERT_GE(ref["cases"].size(), 15u);
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    EncodeTrace tr;
    EXPECT_EQ(t.encode(text, true, &tr), c["ids"].get<std::vector<int32_t>>()) << text;
    // The trace replays: each merge joins the two symbols at its position, and the symbols
    // left at the end are the word's ids.
    for (const WordTrace& w : tr.words) {
      std::vector<int32_t> now = w.symbols;
      for (const MergeStep& m : w.merges) {
        ASSERT_LT(size_t(m.position) + 1, now.size()) << text;
        EXPECT_EQ(now[size_t(m.position)], m.left) << text;
        EXPECT_EQ(now[size_t(m.position) + 1], m.right) << text;
        now[size_t(m.position)] = m.merged;
        now.erase(now.begin() + m.position + 1);
      }
      if (w.kind == WordTrace::Kind::Bpe) {
        EXPECT_EQ(now, w.ids) << text;
      }
    }
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
