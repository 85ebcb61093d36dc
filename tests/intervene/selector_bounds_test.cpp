// Selectors and numbers that used to be accepted and then edit nothing (or everything with
// inf): each is refused in one line, as the probe found them.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "intervene/spec.h"
#include "tests/cli/cli_test_util.h"

using namespace lmscope;

namespace {

std::string refusal(const std::string& text) {
  try {
    parse_intervention(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SelectorBounds, TheGrammarRefusesWhatNoRunCanSelect) {
  // 1e39 is a finite double and an infinite float32: the forward was all NaN.
  EXPECT_NE(refusal("layers.1.resid_pre=scale(1e39)").find("past float32's range"), std::string::npos);
  EXPECT_NE(refusal("embed=add(-4e38, v.json)").find("past float32's range"), std::string::npos);
  EXPECT_EQ(refusal("layers.1.resid_pre=scale(3e38)"), "");
  // Both ends from the end, the second before the first: empty on every prompt.
  EXPECT_NE(refusal("layers.1.resid_pre[pos=-1:-3]=zero").find("is an empty range"), std::string::npos);
  EXPECT_EQ(refusal("layers.1.resid_pre[pos=-3:-1]=zero"), "");
  EXPECT_EQ(refusal("layers.1.resid_pre[pos=-3:5]=zero"), "");   // depends on the prompt: checked at the run
  // -2^63: the bounds check computed -a and overflowed.
  EXPECT_NE(refusal("layers.1.resid_pre[pos=-9223372036854775808]=zero").find("beyond any axis"), std::string::npos);
  EXPECT_NE(refusal("layers.1.attn.probs[key=4294967296]=zero").find("beyond any axis"), std::string::npos);
}

TEST(SelectorBounds, ARunRefusesKeysAndStepsItDoesNotHave) {
  testing_util::TempDir tmp;
  const std::string run = std::string(LMSCOPE_BINARY_DIR) + "/lmscope-trace -q --model " + LMSCOPE_SOURCE_DIR +
                          "/golden/models/tiny-qwen2 --prompt-ids 330,749,537,264 --max-new-tokens 3 --hooks logits --out " +
                          tmp.file("x.h5") + " ";
  auto one_line = [&](const std::string& spec, const std::string& needle) {
    const auto r = testing_util::run_cli(run + "--intervene '" + spec + "'");
    EXPECT_EQ(r.code, 1) << spec << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << spec << " -> " << r.err;
  };
  // 4 prompt tokens + 3 new: positions 0..6, keys 0..6 (the last new token is never fed).
  one_line("layers.1.attn.probs[key=-99999]=zero", "key -99999 is before the first key of a run of 7 positions");
  one_line("layers.1.attn.probs[key=7]=zero", "key 7 is past the run's last position 6");
  one_line("layers.1.resid_pre[step=99999999]=zero", "step 99999999 is past the run's last step 2 (3 new tokens)");
  one_line("layers.1.resid_pre[step=3]=zero", "step 3 is past the run's last step 2");
}
