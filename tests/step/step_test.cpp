// lmscope-trace --step: through a pseudo-terminal (forkpty) Enter advances, `n` jumps to the
// next layer, `s` to the next step after this step's logits and sampling, `q` quits; without
// a terminal every page is printed. (Every key, on a stored trace: step_keys_test.cpp.)
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "stepper/stepper.h"
#include "tests/step/step_pty.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kTrace = LMSCOPE_BINARY_DIR "/lmscope-trace";
const std::string kTiny = LMSCOPE_SOURCE_DIR "/golden/models/tiny-qwen2";
const std::string kPrompt = "--prompt-ids 42,308,333,746,3";   // "Hello world!"
const std::string kKeys = stepper_key_line();   // printed after each page: the walk waits

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// lmscope-trace --step on a pseudo-terminal: the test types keys and reads the pages.
class Pty {
 public:
  explicit Pty(const std::vector<std::string>& args) {
    pid_ = step_test::spawn_in_pty(args, &fd_);
  }
  ~Pty() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }
  // Reads until `what` appears after `from` (or the child closes the terminal, or 20 s pass).
  bool read_until(const std::string& what, size_t from) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (out.find(what, from) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return out.find(what, from) != std::string::npos;
      out.append(buf, size_t(n));
    }
    return true;
  }
  // Waits for the next key prompt, then types `key`; returns the text of that page.
  std::string page_then(char key) {
    const size_t from = out.size();
    EXPECT_TRUE(read_until(kKeys, from)) << out.substr(from);
    std::string page = out.substr(from);
    EXPECT_EQ(::write(fd_, &key, 1), 1);
    return page;
  }
  int wait_exit() {
    read_until("\x04never", out.size());   // drain until the terminal closes
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string out;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
};

}  // namespace

TEST(Step, WithoutATerminalEveryPageIsPrinted) {
  TempDir dir;
  const std::string out = dir.file("out.txt");
  int rc = std::system((kTrace + " --model " + kTiny + " " + kPrompt + " --max-new-tokens 2 --step < /dev/null > '" +
                        out + "' 2>/dev/null")
                           .c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string s = read_text(out);
  // tokenizer page, then per step: inputs, embeddings, 3 layers x (rope, attention, FFN), logits, sampling
  EXPECT_EQ(count(s, "=== tokenizer ==="), 1u);
  EXPECT_EQ(count(s, "· tokens, positions and masks ==="), 2u);
  EXPECT_EQ(count(s, "· q/k before and after RoPE ==="), 6u);
  EXPECT_EQ(count(s, "· attention ==="), 6u);
  EXPECT_EQ(count(s, "· FFN ==="), 6u);
  EXPECT_EQ(count(s, "· next-token distribution ==="), 2u);
  EXPECT_EQ(count(s, "· sampling decision ==="), 2u);
  EXPECT_NE(s.find("=== end of the walk: 27 pages ==="), std::string::npos) << s.substr(s.size() - 200);
  EXPECT_EQ(s.find(kKeys), std::string::npos);   // never waits
  // What the pages show.
  EXPECT_NE(s.find("merge rank 256    [ w] + [or] -> [ wor]"), std::string::npos);
  EXPECT_NE(s.find("q4 |██████████|"), std::string::npos);       // the causal mask of the prompt
  EXPECT_NE(s.find("q head 0  before"), std::string::npos);
  EXPECT_NE(s.find("(k head 1 serves q heads 2..3)"), std::string::npos);
  EXPECT_NE(s.find("head 3 (KV head 1)"), std::string::npos);
  EXPECT_NE(s.find("gates below -2"), std::string::npos);
  EXPECT_NE(s.find("rank  id      token"), std::string::npos);
  EXPECT_NE(s.find("greedy: the argmax"), std::string::npos);
  EXPECT_NE(s.find("step 1 (decode) · layer 2 · FFN"), std::string::npos);
  EXPECT_NE(s.find("T = 1 new token(s) this step, S = 6 key positions (5 already in the KV cache)"), std::string::npos);
}

TEST(Step, SamplingPagesShowTheCutAndTheDraw) {
  TempDir dir;
  const std::string out = dir.file("out.txt");
  int rc = std::system((kTrace + " --model " + kTiny + " " + kPrompt +
                        " --max-new-tokens 1 --do-sample --temperature 0.7 --top-k 5 --top-p 0.9 --seed 3 --step "
                        "--hooks 'tokens.*,embed,layers.*.resid_post,logits,sample.*' < /dev/null > '" + out + "' 2>/dev/null")
                           .c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string s = read_text(out);
  EXPECT_NE(s.find("temperature 0.7, top-k 5, top-p 0.9, min-p 0 (off), seed 3"), std::string::npos) << s;
  EXPECT_NE(s.find("draw u = "), std::string::npos);
  EXPECT_NE(s.find(" cut\n"), std::string::npos);   // top-k 5 cuts the other candidates
  EXPECT_NE(s.find("chosen: "), std::string::npos);
  // pages say which hooks are missing
  EXPECT_NE(s.find("(not traced: layers.0.ffn.gate, layers.0.ffn.up, layers.0.ffn.act; "), std::string::npos);
}

// With only the inputs traced, no `embed` arrives to bring their page: it still comes, once a
// step (2 steps: 2 pages), with the mask of 2 rows (the second prompt left-padded by 2).
TEST(Step, TheInputsPageComesWithoutEmbed) {
  TempDir dir;
  const std::string out = dir.file("out.txt");
  int rc = std::system((kTrace + " --model " + kTiny + " --prompt-ids 42,308,333,746 --prompt-ids 43,392" +
                        " --max-new-tokens 2 --step --hooks 'tokens.*,mask.*' < /dev/null > '" + out + "' 2>/dev/null")
                           .c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string s = read_text(out);
  size_t n = 0;
  for (size_t at = s.find("tokens, positions and masks"); at != std::string::npos; at = s.find("tokens, positions and masks", at + 1)) ++n;
  EXPECT_EQ(n, 2u) << s;
  EXPECT_NE(s.find("(pad: masked as a key)"), std::string::npos) << s;
}

TEST(Step, ALongPromptsTokenPagesSayWhichColumnsAreAbove) {
  // 30 prompt tokens: the inputs and embeddings pages list the last 24 (columns 6..29) and say
  // that columns 0..5 are not shown, instead of opening mid-way without a word.
  TempDir dir;
  const std::string out = dir.file("out.txt");
  std::string ids = "42";
  for (int i = 1; i < 30; ++i) ids += ',' + std::to_string(300 + i);
  int rc = std::system((kTrace + " --model " + kTiny + " --prompt-ids " + ids + " --max-new-tokens 1 --step --hooks 'tokens.*,embed'" +
                        " < /dev/null > '" + out + "' 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string s = read_text(out), note = "(columns 0..5 are not shown: the last 24 of this step's 30 tokens follow)";
  const size_t inputs = s.find("tokens, positions and masks"), embed = s.find("embedding table");
  ASSERT_NE(inputs, std::string::npos) << s;
  ASSERT_NE(embed, std::string::npos) << s;
  EXPECT_NE(s.find(note, inputs), std::string::npos) << s;
  EXPECT_NE(s.find(note, embed), std::string::npos) << s;
  EXPECT_NE(s.find("\n           6  306", inputs), std::string::npos) << "the first column listed is 6: " << s;
}

TEST(Step, TheKeysTokensAreListedWholeUnderTheGrid) {
  // Above the grid " world" is three slices written downwards (␣w, or, ld); under it, whole.
  TempDir dir;
  const std::string out = dir.file("out.txt");
  int rc = std::system((kTrace + " --model " + kTiny + " --prompt-ids 42,308,333,746,3 --max-new-tokens 1 --step" +
                        " --hooks 'tokens.*,mask.*,layers.0.attn.*' < /dev/null > '" + out + "' 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  const std::string s = read_text(out);
  EXPECT_NE(s.find("q4 |      \u2588\u2588  |\nkeys:  0 H  1 el  2 lo  3 \u2423world  4 !\n"), std::string::npos) << s;
}

TEST(Step, InATerminalEnterAdvancesNSkipsALayerAndQQuits) {
  ASSERT_TRUE(std::filesystem::exists(kTrace));
  TempDir dir;
  const std::string trace = dir.file("walk.h5");
  Pty t({kTrace, "--model", kTiny, "--prompt-ids", "42,308,333,746,3", "--max-new-tokens", "2", "--step", "--out", trace});
  ASSERT_TRUE(t.started());
  EXPECT_NE(t.page_then('\n').find("=== tokenizer ==="), std::string::npos);
  EXPECT_NE(t.page_then('\n').find("step 0 (prefill) · tokens, positions and masks"), std::string::npos);
  // `n` on a page before the layers: straight to layer 0
  EXPECT_NE(t.page_then('n').find("step 0 (prefill) · embeddings"), std::string::npos);
  EXPECT_NE(t.page_then('n').find("step 0 (prefill) · layer 0 · q/k before and after RoPE"), std::string::npos);
  // `n` in layer 0: its attention and FFN pages are skipped
  std::string p = t.page_then('\n');
  EXPECT_NE(p.find("step 0 (prefill) · layer 1 · q/k before and after RoPE"), std::string::npos) << p;
  EXPECT_EQ(p.find("layer 0 · attention"), std::string::npos);
  EXPECT_NE(t.page_then('q').find("step 0 (prefill) · layer 1 · attention"), std::string::npos);
  EXPECT_EQ(t.wait_exit(), 0);
  EXPECT_NE(t.out.find("(quit)"), std::string::npos);
  // Quitting leaves no trace file behind (writes are atomic).
  EXPECT_FALSE(std::filesystem::exists(trace));
  EXPECT_TRUE(testing_util::trace_temporaries(trace).empty());
}

TEST(Step, InATerminalTheWalkRunsToTheEnd) {
  Pty t({kTrace, "--model", kTiny, "--prompt-ids", "5,6,7", "--max-new-tokens", "2", "--step"});
  ASSERT_TRUE(t.started());
  // `s` skips the rest of the prefill's layers but not its result: the logits and sampling
  // pages, then the decode step's inputs.
  EXPECT_NE(t.page_then('\n').find("=== tokenizer ==="), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 0 (prefill) · tokens"), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 0 (prefill) · next-token distribution"), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 0 (prefill) · sampling decision"), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 1 (decode) · tokens"), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 1 (decode) · next-token distribution"), std::string::npos);
  EXPECT_NE(t.page_then('s').find("step 1 (decode) · sampling decision"), std::string::npos);
  EXPECT_EQ(t.wait_exit(), 0);
  EXPECT_NE(t.out.find("=== end of the walk: 7 pages ==="), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("row 0: "), std::string::npos);   // the generated ids, as without --step
}

TEST(Step, LmscopeStepWaitsForKeysInATerminalToo) {
  // The HF golden trace (3 layers): `l` on the tokenizer page goes to step 0's logits.
  Pty t({LMSCOPE_BINARY_DIR "/lmscope-step", LMSCOPE_SOURCE_DIR "/golden/traces/tiny-qwen2-a.h5", "--model", kTiny});
  ASSERT_TRUE(t.started());
  EXPECT_NE(t.page_then('l').find("=== tokenizer ==="), std::string::npos);
  std::string p = t.page_then('q');
  EXPECT_NE(p.find("=== step 0 (prefill) · next-token distribution ==="), std::string::npos) << p;
  EXPECT_EQ(p.find("layer 0"), std::string::npos);
  EXPECT_EQ(t.wait_exit(), 0);
  EXPECT_NE(t.out.find("(quit)"), std::string::npos);
}

TEST(Step, ShadeGridDrawsMaskedAndWeights) {
  std::vector<double> v = {1.0, NAN, 0.5, 0.01};
  std::string g = shade_grid(v, 2, 2, {"q0", "q1"}, 0);
  EXPECT_NE(g.find("q0 |██··|"), std::string::npos) << g;
  EXPECT_NE(g.find("q1 |▓▓  |"), std::string::npos) << g;
}

TEST(Step, ShadeGridWritesColumnTokensDownwards) {
  // Two display columns per cell and line: " world" -> "␣w" "or" "ld"; "!" -> "! ";
  // 中国 (each character two columns wide) -> "中" "国"; at most 3 lines ("abcdefgh" -> ab cd ef).
  std::vector<double> v(4, 1.0);
  std::string g = shade_grid(v, 1, 4, {"q9"}, 8, {" world", "!", "中国", "abcdefgh"});
  EXPECT_EQ(g,
            "    ␣w! 中ab\n"
            "    or  国cd\n"
            "    ld    ef\n"
            "        1   \n"   // positions 8..11: the tens digit where a ten starts
            "    8 9 0 1 \n"
            "q9 |████████|\n");
}
