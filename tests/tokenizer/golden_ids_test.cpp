// Every corpus string, every shipped vocabulary: our ids == HF tokenizers' ids (committed by
// golden/make_tokenizer_refs.py), our decode == HF decode, and decode(encode(s)) == s.
#include <gtest/gtest.h>

#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/utf8.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

class GoldenIds : public ::testing::TestWithParam<std::string> {};

TEST(GoldenCorpus, HasAtLeast300StringsAndMatchesTheRefs) {
  EXPECT_GE(corpus().size(), 300u);
  for (const auto& [name, dir] : vocab_dirs()) {
    const nlohmann::json& r = refs(name);
    EXPECT_EQ(r["cases"].size(), corpus().size()) << name << ": rerun golden/make_tokenizer_refs.py";
    EXPECT_EQ(r["tokenizer"].get<std::string>(), dir);
  }
}

TEST_P(GoldenIds, EncodeMatchesHuggingFaceOnEveryString) {
  const std::string name = GetParam();
  const tok::Tokenizer& t = tokenizer(name);
  const nlohmann::json& cases = refs(name)["cases"];
  ASSERT_EQ(cases.size(), corpus().size());
  int exact = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const std::string& s = corpus()[i];
    const nlohmann::json& c = cases[i];
    auto want = c["ids"].get<std::vector<int32_t>>();
    auto want_plain = c.contains("plain") ? c["plain"].get<std::vector<int32_t>>() : want;
    auto got = t.encode(s, true);
    auto got_plain = t.encode(s, false);
    EXPECT_EQ(got, want) << name << " string " << i << " \"" << utf8::readable(s.substr(0, 80)) << "\"\n  ours " << ids_str(got)
                         << "\n  HF   " << ids_str(want);
    EXPECT_EQ(got_plain, want_plain) << name << " string " << i << " (add_special=false)";
    exact += got == want && got_plain == want_plain;
  }
  EXPECT_EQ(exact, int(corpus().size()));
  std::printf("[ %s ] %d / %zu strings exact\n", name.c_str(), exact, corpus().size());
}

TEST_P(GoldenIds, DecodeMatchesHuggingFace) {
  const std::string name = GetParam();
  const tok::Tokenizer& t = tokenizer(name);
  const nlohmann::json& cases = refs(name)["cases"];
  for (size_t i = 0; i < corpus().size(); ++i) {
    const nlohmann::json& c = cases[i];
    auto plain = c.contains("plain") ? c["plain"].get<std::vector<int32_t>>() : c["ids"].get<std::vector<int32_t>>();
    std::string want = c.contains("decoded") ? c["decoded"].get<std::string>() : corpus()[i];
    std::string want_skip = c.contains("decoded_skip") ? c["decoded_skip"].get<std::string>() : want;
    EXPECT_EQ(t.decode(plain, false), want) << name << " string " << i;
    EXPECT_EQ(t.decode(plain, true), want_skip) << name << " string " << i << " (skip_special)";
  }
  for (const nlohmann::json& d : refs(name)["decode_cases"]) {
    auto ids = d["ids"].get<std::vector<int32_t>>();
    bool skip = d.value("skip_special", false);
    EXPECT_EQ(t.decode(ids, skip), d["text"].get<std::string>()) << name << " decode " << ids_str(ids);
  }
}

TEST_P(GoldenIds, TokenStringsOfTheSampleMatchHuggingFace) {
  const std::string name = GetParam();
  const tok::Tokenizer& t = tokenizer(name);
  const nlohmann::json& sample = refs(name)["sample"];
  auto ids = t.encode(sample["text"].get<std::string>(), true);
  ASSERT_EQ(ids, sample["ids"].get<std::vector<int32_t>>());
  auto tokens = sample["tokens"].get<std::vector<std::string>>();
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(t.token_text(ids[i]), tokens[i]);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GoldenIds,
                         ::testing::Values("qwen-bpe", "deepseek-v3-bpe", "tiny-qwen2", "tiny-options-a", "tiny-options-b"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// decode(encode(s)) == s for the shipped vocabularies. Qwen's NFC normalizer changes the
// strings that are not in NFC (decomposed accents, Hangul jamo, the Angstrom sign, CJK
// compatibility ideographs): for those the round trip gives NFC(s), which is what HF gives
// too (checked against its decode above).
class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, DecodeOfEncodeIsTheInput) {
  const std::string name = GetParam();
  const tok::Tokenizer& t = tokenizer(name);
  const nlohmann::json& cases = refs(name)["cases"];
  int same = 0, normalized = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const std::string& s = corpus()[i];
    std::string back = t.decode(t.encode(s, false), false);
    if (back == s) {
      ++same;
      continue;
    }
    // Only a normalizer may change the text, and then HF's decode shows the same change.
    ASSERT_TRUE(cases[i].contains("decoded")) << name << " string " << i << " \"" << utf8::readable(s) << "\" -> \""
                                              << utf8::readable(back) << "\"";
    EXPECT_EQ(back, cases[i]["decoded"].get<std::string>());
    ++normalized;
  }
  std::printf("[ %s ] decode(encode(s)) == s for %d strings, == NFC(s) != s for %d\n", name.c_str(), same, normalized);
  if (name == "deepseek-v3-bpe") {
    EXPECT_EQ(normalized, 0);   // no normalizer
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, RoundTrip, ::testing::Values("qwen-bpe", "deepseek-v3-bpe", "tiny-qwen2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
