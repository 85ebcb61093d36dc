// The stepper's merges page (stepper.h, render_merges_page) on a SentencePiece encoding: each
// merge with the score that chose it (no merge list, so no rank), and the character spelled by
// bytes. The vocabulary is hand-made: bc (score -2) is merged before ab (-5) could be.
#include <gtest/gtest.h>

#include "stepper/stepper.h"
#include "tokenizer/encode_trace.h"
#include "tokenizer/sentencepiece.h"

using namespace lmscope;

TEST(MergesPage, SentencePieceShowsScoresAndByteFallback) {
  tok::SpmVocab v;
  v.pieces = {"<bos>", "<0xC3>", "<0xA9>", "a", "b", "c", "ab", "bc", "abc"};
  v.scores = {0, 0, 0, -1, -1, -1, -5, -2, -3};
  v.types = {3, 6, 6, 1, 1, 1, 1, 1, 1};
  v.bos = 0;
  v.add_space_prefix = false;
  v.index();
  EncodeTrace tr;
  ASSERT_EQ(tok::spm_encode(v, "abc\xC3\xA9", true, &tr), (std::vector<int>{0, 8, 1, 2}));
  const std::string page = render_merges_page(tr, [&](int32_t id) { return std::string(v.pieces.at(size_t(id))); });
  EXPECT_NE(page.find("merge score -2     [b] + [c] -> [bc]"), std::string::npos) << page;
  EXPECT_NE(page.find("merge score -3     [a] + [bc] -> [abc]"), std::string::npos) << page;
  EXPECT_NE(page.find("byte fallback: \"\xC3\xA9\" is no token"), std::string::npos) << page;
  EXPECT_EQ(page.find("merge rank"), std::string::npos) << page;
}
