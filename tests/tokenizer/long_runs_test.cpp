// Long whitespace runs (docs/tokenizer.md, "Long whitespace runs"): a run is one pre-tokenized
// word, so a 100k-space run is one BPE word of 100k symbols. What must hold, with no clock:
//  * the traced merge (lmscope-bpe, trace files) finds each merge's position in O(log n)
//    steps: Bpe::trace_position_steps() counts them and stays within the Fenwick tree's
//    bound, 2 * bit_width(n) a merge. Counting the live symbols left of each merge instead
//    takes about n^2/2 steps here (measured with that loop counted: 8.5e9 for 2^17 spaces,
//    against the bound's 4.7e6; the Fenwick tree takes 2.2e6);
//  * the traced ids are the untraced ones;
//  * a run longer than PCRE2's default match limit (10^7 steps; `\s*[\r\n]+` steps back over
//    the whole run before it fails) is split as the pattern says, not refused.
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "tests/tokenizer/tok_test_util.h"
#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"

using namespace lmscope;
using namespace lmscope::tok_test;

namespace {

TEST(LongRuns, TracedMergePositionsAreNLogN) {
  const tok::Tokenizer& t = tokenizer("qwen-bpe");
  const size_t n = size_t(1) << 17;
  std::string mixed;   // spaces with a newline every 1000 and last: one word (`\s*[\r\n]+`)
  for (size_t i = 0; i < n; ++i) mixed += i % 1000 == 999 || i + 1 == n ? '\n' : ' ';
  for (const std::string& text : {std::string(n, ' '), mixed}) {
    EncodeTrace tr;
    const uint64_t before = tok::Bpe::trace_position_steps();
    const std::vector<int32_t> ids = t.encode(text, false, &tr);
    const uint64_t steps = tok::Bpe::trace_position_steps() - before;
    ASSERT_EQ(tr.words.size(), 1u);
    const WordTrace& w = tr.words[0];
    ASSERT_EQ(w.symbols.size(), n);
    EXPECT_EQ(w.symbols.size() - w.merges.size(), ids.size());
    EXPECT_LE(steps, 2 * uint64_t(std::bit_width(n)) * w.merges.size());
    EXPECT_EQ(ids, t.encode(text, false));
    std::printf("[ measure ] %zu-byte run: %zu merges, %llu position steps (bound %llu)\n", n, w.merges.size(),
                (unsigned long long)steps, (unsigned long long)(2 * std::bit_width(n) * w.merges.size()));
  }
}

TEST(LongRuns, PastPcre2sDefaultMatchLimit) {
  const std::string pattern = read_json("golden/tokenizers/qwen-bpe/tokenizer.json")
                                  .at("pre_tokenizer")
                                  .at("pretokenizers")
                                  .at(0)
                                  .at("pattern")
                                  .at("Regex");
  const tok::Regex re(pattern);
  const size_t n = 12'000'000;
  std::vector<std::pair<size_t, size_t>> got;
  re.find_all(std::string(n, ' ') + "x", got);   // `\s+(?!\S)`: all but the last space
  EXPECT_EQ(got, (std::vector<std::pair<size_t, size_t>>{{0, n - 1}, {n - 1, n + 1}}));
  got.clear();
  re.find_all("\n" + std::string(n, ' ') + "\n", got);   // `\s*[\r\n]+`: the whole run
  EXPECT_EQ(got, (std::vector<std::pair<size_t, size_t>>{{0, n + 2}}));
}

}  // namespace
