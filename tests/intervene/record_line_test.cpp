// The one line that names a trace's interventions (lmscope-step, lmscope-diff): the record is
// read from a file, so a crafted one must neither overflow the stack nor reach the terminal raw.
#include <gtest/gtest.h>

#include <string>

#include "intervene/record.h"

using lmscope::interventions_line;

TEST(InterventionsLine, NamesEachSpec) {
  EXPECT_EQ(interventions_line(R"j([{"spec": "zero(layers.3.attn.z, head=1)"}, {"spec": "scale(ffn_out, 0.5)"}])j"),
            "intervened: zero(layers.3.attn.z, head=1); scale(ffn_out, 0.5)");
  EXPECT_EQ(interventions_line("[]"), "");
  EXPECT_EQ(interventions_line("not json"), "");
}

TEST(InterventionsLine, ACraftedRecordIsShownSafely) {
  // 100,000 nested arrays: printing them back recursively overflowed the stack.
  const std::string deep = "[" + std::string(100000, '[') + std::string(100000, ']') + "]";
  EXPECT_EQ(interventions_line(deep), "intervened: (an entry without a spec)");
  // An escape sequence in a spec (clear the screen, set the title) is shown, not sent.
  const std::string line = interventions_line("[{\"spec\": \"zero(embed)\\u001b[2J\\u001b]0;owned\\u0007\"}]");
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x07'), std::string::npos) << line;
  EXPECT_NE(line.find("zero(embed)\\x1B[2J"), std::string::npos) << line;
}
