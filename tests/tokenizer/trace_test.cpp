// The merge trace (lmscope-bpe, /tokenizer/row_B in trace files) and the small pieces it is
// built from: the byte-level alphabet, lossy UTF-8, the merge order.
#include <gtest/gtest.h>

#include <thread>

#include "io/hdf5.h"
#include "tests/test_util.h"
#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

TEST(ByteLevel, Gpt2Alphabet) {
  EXPECT_EQ(byte_level::char_of(' '), 0x120u);    // Ġ
  EXPECT_EQ(byte_level::char_of('\n'), 0x10Au);   // Ċ
  EXPECT_EQ(byte_level::char_of('a'), uint32_t('a'));
  EXPECT_EQ(byte_level::char_of(0xAD), 0x143u);   // the last of the 68 remapped bytes
  EXPECT_EQ(byte_level::encode("中"), "ä¸Ń");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(byte_level::byte_of(byte_level::char_of(uint8_t(b))), b);
  std::string back;
  EXPECT_TRUE(byte_level::decode("ĠworldĊ", back));
  EXPECT_EQ(back, " world\n");
  EXPECT_FALSE(byte_level::decode("<｜User｜>", back));
}

TEST(Utf8, LossyLikeRust) {
  // Each maximal invalid subsequence becomes one U+FFFD (Rust String::from_utf8_lossy).
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8::lossy("a\xE4\xB8" "b"), "a" + R + "b");        // truncated 3-byte sequence: one
  EXPECT_EQ(utf8::lossy("\xF0\x90\x80" "A"), R + "A");
  EXPECT_EQ(utf8::lossy("\x80\x80"), R + R);                     // two lone continuations: two
  EXPECT_EQ(utf8::lossy("\xC0\xAF"), R + R);                     // overlong: C0 is never valid
  EXPECT_EQ(utf8::lossy("\xED\xA0\x80"), R + R + R);             // surrogate: ED then A0 breaks
  EXPECT_EQ(utf8::lossy("ok 中"), "ok 中");
  EXPECT_EQ(utf8::emittable_prefix("ab\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::emittable_prefix("ab\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(utf8::emittable_prefix("ab\xFF"), 3u);
  EXPECT_EQ(utf8::readable(" a\n\xE4\xB8"), " a\\n\\xE4\\xB8");
}

// Replaying the recorded merges on the recorded symbols gives the word's ids, ranks never
// go down (BPE builds every token from earlier merges), and the words' ids add up.
TEST(MergeTrace, ReplaysToTheIds) {
  for (const std::string name : {"qwen-bpe", "deepseek-v3-bpe", "tiny-qwen2"}) {
    const tok::Tokenizer& t = tokenizer(name);
    size_t merges = 0;
    for (size_t i = 0; i < corpus().size(); ++i) {
      EncodeTrace tr;
      std::vector<int32_t> ids = t.encode(corpus()[i], true, &tr);
      EXPECT_EQ(ids, t.encode(corpus()[i], true)) << name << " " << i << ": the traced path differs";
      EXPECT_EQ(tr.ids, ids);
      EXPECT_EQ(tr.text, corpus()[i]);
      std::vector<int32_t> concat;
      for (const WordTrace& w : tr.words) {
        concat.insert(concat.end(), w.ids.begin(), w.ids.end());
        if (w.kind != WordTrace::Kind::Bpe) continue;
        std::vector<int32_t> syms = w.symbols;
        int32_t last_rank = -1;
        for (const MergeStep& m : w.merges) {
          ASSERT_LT(size_t(m.position) + 1, syms.size());
          ASSERT_EQ(syms[size_t(m.position)], m.left);
          ASSERT_EQ(syms[size_t(m.position) + 1], m.right);
          EXPECT_EQ(t.token_text(m.merged), t.token_text(m.left) + t.token_text(m.right));
          EXPECT_GE(m.rank, last_rank);
          last_rank = m.rank;
          syms[size_t(m.position)] = m.merged;
          syms.erase(syms.begin() + m.position + 1);
        }
        EXPECT_EQ(syms, w.ids) << name << " word \"" << utf8::readable(w.text) << "\"";
        merges += w.merges.size();
      }
      EXPECT_EQ(concat, ids);
    }
    EXPECT_GT(merges, 1000u) << name;
  }
}

TEST(MergeTrace, WorkshopSentence) {
  const tok::Tokenizer& t = tokenizer("qwen-bpe");
  EncodeTrace tr;
  t.encode("中华人民共和国成立于 1949 年。", true, &tr);
  ASSERT_FALSE(tr.words.empty());
  const WordTrace& w = tr.words[0];
  EXPECT_EQ(w.text, "中华人民共和国成立于");
  EXPECT_EQ(w.symbols.size(), 30u);   // 10 characters x 3 bytes
  // the last merges build the words: 中华 + 人民 -> 中华人民, 成立 + 于 -> 成立于
  ASSERT_GE(w.merges.size(), 2u);
  EXPECT_EQ(t.token_display(w.merges[w.merges.size() - 2].merged), "中华人民");
  EXPECT_EQ(t.token_display(w.merges.back().merged), "成立于");
  EXPECT_EQ(t.token_display(w.merges.back().left), "成立");
  EXPECT_EQ(t.token_display(w.merges.back().right), "于");
}

TEST(MergeTrace, AddedAndPostProcessorTokensAreWords) {
  const tok::Tokenizer& t = tokenizer("tiny-options-a");   // TemplateProcessing <|im_start|> $A <|im_end|>
  EncodeTrace tr;
  std::vector<int32_t> ids = t.encode("hi<sep>there", true, &tr);
  ASSERT_GE(tr.words.size(), 4u);
  EXPECT_EQ(tr.words.front().kind, WordTrace::Kind::Post);
  EXPECT_EQ(tr.words.back().kind, WordTrace::Kind::Post);
  bool found = false;
  for (const WordTrace& w : tr.words) found |= w.kind == WordTrace::Kind::Added && w.text == "<sep>";
  EXPECT_TRUE(found);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
}

TEST(MergeTrace, WrittenToHdf5) {
  const tok::Tokenizer& t = tokenizer("qwen-bpe");
  testing_util::TempDir tmp;
  std::string path = tmp.file("tok.h5");
  EncodeTrace a, b;
  t.encode("Hello world", true, &a);
  t.encode("<|im_start|>中华", true, &b);
  {
    TraceWriter w(path);
    write_tokenizer_trace(w, 0, a, t);
    write_tokenizer_trace(w, 1, b, t);
    w.commit();
  }
  h5::File f = h5::File::open_read(path);
  const h5::Group& root = f.root();
  EXPECT_EQ(root.open_dataset("tokenizer/row_0/text").read_strings(), std::vector<std::string>{"Hello world"});
  h5::DatasetData ids = root.read_dataset("tokenizer/row_0/ids");
  ASSERT_EQ(ids.values.size(), a.ids.size());
  for (size_t i = 0; i < ids.values.size(); ++i) EXPECT_EQ(int32_t(ids.values[i]), a.ids[i]);
  EXPECT_EQ(root.open_dataset("tokenizer/row_0/words").read_strings(), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(root.open_dataset("tokenizer/row_1/word_kind").read_strings(), (std::vector<std::string>{"added", "bpe"}));
  EXPECT_EQ(root.open_dataset("tokenizer/row_0/pieces").read_strings(), (std::vector<std::string>{"Hello", " world"}));
  size_t n_merges = a.words[0].merges.size() + a.words[1].merges.size();
  EXPECT_EQ(root.read_dataset("tokenizer/row_0/merges/rank").values.size(), n_merges);
  EXPECT_EQ(root.open_dataset("tokenizer/row_0/merges/merged_text").read_strings().back(), " world");
  h5::DatasetData off = root.read_dataset("tokenizer/row_0/word_ids_offset");
  EXPECT_EQ(off.values, (std::vector<double>{0, 1, 2}));
}

// lmscope-step reads the group back into the EncodeTrace that was written (its merges page is
// then the one lmscope-trace --step drew from the live encode).
TEST(MergeTrace, ReadBackFromATrace) {
  testing_util::TempDir tmp;
  const std::string path = tmp.file("tok.h5");
  const tok::Tokenizer& q = tokenizer("qwen-bpe");
  const tok::Tokenizer& o = tokenizer("tiny-options-a");   // ignore_merges: whole words
  EncodeTrace a, b, c;
  q.encode("Hello world", true, &a);
  q.encode("<|im_start|>中华", true, &b);
  o.encode("hi<sep>there", true, &c);
  {
    TraceWriter w(path);
    write_tokenizer_trace(w, 0, a, q);
    write_tokenizer_trace(w, 1, b, q);
    write_tokenizer_trace(w, 2, c, o);
    w.commit();
  }
  TraceReader r(path);
  int n_whole = 0;
  for (int row = 0; row < 3; ++row) {
    const EncodeTrace& want = row == 0 ? a : row == 1 ? b : c;
    EncodeTrace got;
    ASSERT_TRUE(read_tokenizer_trace(r, row, got));
    EXPECT_EQ(got.text, want.text);
    EXPECT_EQ(got.ids, want.ids);
    ASSERT_EQ(got.words.size(), want.words.size());
    for (size_t w = 0; w < want.words.size(); ++w) {
      const WordTrace &g = got.words[w], &x = want.words[w];
      EXPECT_EQ(g.kind, x.kind);
      EXPECT_EQ(g.text, x.text);
      EXPECT_EQ(g.symbols, x.symbols);
      EXPECT_EQ(g.ids, x.ids);
      EXPECT_EQ(g.whole_word, x.whole_word) << "row " << row << " word " << w;
      n_whole += x.whole_word;
      ASSERT_EQ(g.merges.size(), x.merges.size());
      for (size_t m = 0; m < x.merges.size(); ++m) {
        EXPECT_EQ(g.merges[m].left, x.merges[m].left);
        EXPECT_EQ(g.merges[m].right, x.merges[m].right);
        EXPECT_EQ(g.merges[m].merged, x.merges[m].merged);
        EXPECT_EQ(g.merges[m].rank, x.merges[m].rank);
        EXPECT_EQ(g.merges[m].position, x.merges[m].position);
      }
    }
  }
  EXPECT_GT(n_whole, 0);   // the inference of whole_word was exercised
  EncodeTrace none;
  EXPECT_FALSE(read_tokenizer_trace(r, 3, none));
}

TEST(Cache, RepeatedWordsGiveTheSameIds) {
  const tok::Tokenizer& t = tokenizer("qwen-bpe");
  std::string text;
  for (int i = 0; i < 200; ++i) text += " the cat sat on the mat";
  std::vector<int32_t> first = t.encode(text);
  t.model().clear_cache();
  EXPECT_EQ(t.encode(text), first);
  EXPECT_EQ(t.encode(text), first);
}

// encode() is const and may run on several threads at once (shared word cache).
TEST(Cache, ConcurrentEncodesAgree) {
  const tok::Tokenizer& t = tokenizer("deepseek-v3-bpe");
  std::vector<std::vector<int32_t>> want;
  for (const std::string& s : corpus()) want.push_back(t.encode(s));
  t.model().clear_cache();
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < corpus().size(); ++i)
          bad[size_t(k)] += t.encode(corpus()[(i * 7 + size_t(k) * 13) % corpus().size()]) !=
                            want[(i * 7 + size_t(k) * 13) % corpus().size()];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

}  // namespace
