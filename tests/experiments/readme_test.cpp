// README.md runs as written: each ```sh block is its own test case, run in a fresh scratch
// directory (so a README block must stand alone), with the conventions of
// tests/experiments/md_blocks.h: `<!-- expect: TEXT -->` after a block, `<!-- not run: REASON -->`
// before a block that is only shown (the set-up block: scripts/test.sh runs this test),
// ```text for the shape of a command. A block naming an absent models/ file skips.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/experiments/md_blocks.h"

using namespace lmscope;
using namespace lmscope::exp_test;

namespace {

const std::string kReadme = kRoot + "/README.md";

std::vector<MdBlock> runnable() {
  std::vector<MdBlock> out;
  for (MdBlock& b : sh_blocks(kReadme))
    if (b.not_run.empty()) out.push_back(std::move(b));
  if (out.empty()) out.push_back(MdBlock{});   // line 0: fails below, naming the file
  return out;
}

class Readme : public ::testing::TestWithParam<MdBlock> {};

}  // namespace

TEST_P(Readme, BlockRunsAndShowsWhatTheReadmeSays) {
  const MdBlock& b = GetParam();
  ASSERT_NE(b.line, 0) << kReadme << " has no runnable ```sh block";
  if (const std::string m = absent_model(b); !m.empty())
    GTEST_SKIP() << "README.md:" << b.line << " needs " << m << " (scripts/fetch-model.sh fetches it)";
  SCOPED_TRACE("README.md:" + std::to_string(b.line));
  MdScratch scratch;
  run_md_block(scratch, b);
}

INSTANTIATE_TEST_SUITE_P(Blocks, Readme, ::testing::ValuesIn(runnable()),
                         [](const auto& info) { return "line_" + std::to_string(info.param.line); });

// The blocks that call the top-level scripts are shown, never run: scripts/test.sh runs this
// test (it would recurse) and scripts/run.sh fetches and builds.
TEST(ReadmeMarks, ScriptBlocksAreNotRun) {
  int marked = 0;
  for (const MdBlock& b : sh_blocks(kReadme)) {
    const bool calls_scripts = b.script.find("scripts/test.sh") != std::string::npos ||
                               b.script.find("scripts/run.sh") != std::string::npos;
    if (!b.not_run.empty()) {
      std::printf("[ not run ] README.md:%d: %s\n", b.line, b.not_run.c_str());
      ++marked;
    }
    EXPECT_FALSE(calls_scripts && b.not_run.empty())
        << "README.md:" << b.line << " runs scripts/test.sh or scripts/run.sh: mark it <!-- not run: REASON -->";
  }
  EXPECT_GE(marked, 1);
}
