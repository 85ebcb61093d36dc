// The stepper's keys, typed into StepperOptions::in_fd (a pipe) while it replays the HF golden
// trace tiny-qwen2-a (3 layers, 8 steps, one row; golden/traces/manifest.json). The expected
// page order follows from what each key means (lib/stepper/stepper.h), nothing else:
// Enter the next page, n the next layer, l this step's logits, s the next step after this
// step's logits and sampling, g N / N Enter layer N, b the page before, q quit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "stepper/step_replay.h"
#include "stepper/stepper.h"
#include "tests/step/step_pages.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::step_test;
using namespace lmscope::testing_util;

namespace {

const std::string kGolden = LMSCOPE_SOURCE_DIR "/golden/traces/tiny-qwen2-a.h5";

struct Walk {
  std::string out;
  bool quit = false;
};

// Replays the golden trace with `keys` waiting on the stepper's key fd.
Walk walk_with_keys(const std::string& keys) {
  TempDir dir;
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(::write(fds[1], keys.data(), keys.size()), ssize_t(keys.size()));
  close(fds[1]);   // after the keys: end of input, the rest is printed
  TraceReader tr(kGolden);
  StepperOptions so;
  so.interactive = true;
  so.in_fd = fds[0];
  std::FILE* out = std::fopen(dir.file("out.txt").c_str(), "w");
  so.out = out;
  so.intro_pages = trace_intro_pages(tr, nullptr);
  Walk w;
  {
    Stepper stepper(trace_model_config(tr), so);
    try {
      replay_trace(tr, stepper);
    } catch (const StepperQuit&) {
      w.quit = true;
    }
  }
  std::fclose(out);
  close(fds[0]);
  w.out = read_text(dir.file("out.txt"));
  return w;
}

const std::string s0 = "step 0 (prefill) · ", s1 = "step 1 (decode) · ";

}  // namespace

TEST(StepKeys, JumpsBackAndQuitShowThePagesTheKeysName) {
  const std::string keys = std::string("\n")   // tokenizer -> step 0 inputs
                           + "n"                // inputs: the embeddings (no layer) skipped -> layer 0 RoPE
                           + "g2\n"             // layer 2 of this step -> its RoPE page
                           + "1\n"              // layer 1 was skipped: a note, the page stays
                           + "g0\n"             // layer 0, passed: its RoPE page again
                           + "b"                // the page before it: the inputs again
                           + "\n\n\n"           // forward through memory: layer 0 RoPE, layer 2 RoPE, then live
                           + "l"                // layer 2 attention -> this step's logits
                           + "s"                // on the logits: the sampling page still comes
                           + "s"                // -> step 1's inputs
                           + "s"                // step 1's layers skipped -> its logits
                           + "?q";
  Walk w = walk_with_keys(keys);
  EXPECT_TRUE(w.quit);
  const std::vector<std::string> want = {
      "tokenizer",
      s0 + "tokens, positions and masks",
      s0 + "layer 0 · q/k before and after RoPE",
      s0 + "layer 2 · q/k before and after RoPE",
      s0 + "layer 0 · q/k before and after RoPE (again)",
      s0 + "tokens, positions and masks (again)",
      s0 + "layer 0 · q/k before and after RoPE (again)",
      s0 + "layer 2 · q/k before and after RoPE (again)",
      s0 + "layer 2 · attention",
      s0 + "next-token distribution",
      s0 + "sampling decision",
      s1 + "tokens, positions and masks",
      s1 + "next-token distribution",
  };
  EXPECT_EQ(page_titles(w.out), want) << w.out;
  EXPECT_NE(w.out.find("(layer 1 of this step was skipped, so it is not in memory)"), std::string::npos);
  EXPECT_NE(w.out.find(stepper_keys_help()), std::string::npos);   // `?`
  // A page shown again is the same text as the first time (kept, not recomputed).
  const std::string first = page_text(w.out, s0 + "layer 2 · q/k before and after RoPE");
  const std::string again = page_text(w.out, s0 + "layer 2 · q/k before and after RoPE (again)");
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(again.empty());
  auto body = [](const std::string& page) {   // from the title line's end to the key line
    const size_t a = page.find(" ===\n");
    return page.substr(a, page.find(stepper_key_line()) - a);
  };
  EXPECT_EQ(body(first), body(again));
}

TEST(StepKeys, BackOnTheFirstPageAndUnknownKeysStayPut) {
  Walk w = walk_with_keys("bxg9\nq");   // 9 is past the 3 layers
  EXPECT_TRUE(w.quit);
  EXPECT_EQ(page_titles(w.out), std::vector<std::string>{"tokenizer"}) << w.out;
  EXPECT_NE(w.out.find("(this is the first page)"), std::string::npos);
  EXPECT_NE(w.out.find("(key 'x' does nothing; ? lists the keys)"), std::string::npos);
  EXPECT_NE(w.out.find("(layers are 0..2)"), std::string::npos);
}

TEST(StepKeys, WhenTheKeysRunOutTheRestIsPrinted) {
  // `l` on the tokenizer page applies to step 0: its inputs, embeddings and layers are skipped.
  Walk w = walk_with_keys("l");
  EXPECT_FALSE(w.quit);
  const std::vector<std::string> t = page_titles(w.out);
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[1], s0 + "next-token distribution");
  EXPECT_EQ(t[2], s0 + "sampling decision");
  // then every page of steps 1..7: 7 x (inputs, embeddings, 3 x 3 layer pages, logits, sampling)
  EXPECT_EQ(t.size(), 3u + 7u * 13u + 1u);
  EXPECT_EQ(t.back(), "end of the walk: " + std::to_string(2 + 7 * 13 + 1) + " pages");
}
