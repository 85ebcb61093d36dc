// Selectors that used to be accepted and then edit nothing: keys and steps the run does not
// have are refused in one line (the grammar's own refusals: spec_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/cli/cli_test_util.h"

using namespace lmscope;

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
