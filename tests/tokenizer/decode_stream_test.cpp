// The incremental decoder: streamed one id at a time, it never emits part of a UTF-8
// character, and what it emits adds up to decode() of all the ids.
#include <gtest/gtest.h>

#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/utf8.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

class Stream : public ::testing::TestWithParam<std::string> {};

TEST_P(Stream, EveryChunkIsWholeCharactersAndTheSumIsDecode) {
  const tok::Tokenizer& t = tokenizer(GetParam());
  int held_back = 0;
  for (bool skip : {false, true}) {
    for (size_t i = 0; i < corpus().size(); ++i) {
      std::vector<int32_t> ids = t.encode(corpus()[i], false);
      tok::IncrementalDecoder dec = t.incremental_decoder(skip);
      std::string streamed;
      for (int32_t id : ids) {
        std::string chunk = dec.push(id);
        ASSERT_EQ(utf8::invalid_offset(chunk), utf8::npos) << "string " << i << ": chunk is not whole UTF-8";
        if (corpus()[i].find("\xEF\xBF\xBD") == std::string::npos) {   // (one string holds U+FFFD itself)
          ASSERT_EQ(chunk.find("\xEF\xBF\xBD"), std::string::npos) << "string " << i << ": a U+FFFD mid-stream";
        }
        held_back += chunk.empty() && dec.pending_bytes() > 0;
        streamed += chunk;
      }
      streamed += dec.finish();
      EXPECT_EQ(streamed, t.decode(ids, skip)) << "string " << i;
    }
  }
  EXPECT_GT(held_back, 0) << "no id ever ended mid-character: the test proves nothing";
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, Stream, ::testing::Values("qwen-bpe", "deepseek-v3-bpe", "tiny-qwen2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Stream, AnUnfinishedCharacterAtTheEndBecomesOneReplacementCharacter) {
  const tok::Tokenizer& t = tokenizer("tiny-qwen2");
  // "中" is three byte-level ids in the tiny vocabulary: stop after two.
  std::vector<int32_t> ids = t.encode("中", false);
  ASSERT_GE(ids.size(), 2u);
  ids.pop_back();
  tok::IncrementalDecoder dec = t.incremental_decoder();
  std::string out;
  for (int32_t id : ids) out += dec.push(id);
  EXPECT_EQ(out, "");
  EXPECT_EQ(dec.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode(ids), "\xEF\xBF\xBD");
}

TEST(Stream, InvalidBytesAreNotHeldBack) {
  // A lone continuation byte can never complete: it is emitted (as U+FFFD) at once.
  const tok::Tokenizer& t = tokenizer("tiny-qwen2");
  std::vector<int32_t> ids = t.encode("中", false);   // E4 B8 AD as separate symbols
  tok::IncrementalDecoder dec = t.incremental_decoder();
  std::string last = t.token_text(ids.back());
  // Push only the last id: byte 0xAD alone.
  std::string out = dec.push(ids.back());
  EXPECT_EQ(out, "\xEF\xBF\xBD") << last;
  EXPECT_EQ(dec.pending_bytes(), 0u);
}

}  // namespace
