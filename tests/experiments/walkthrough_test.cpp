// The lessons in walkthroughs/*.md run as written: every ```sh block, in order, in one scratch
// directory (a later block may read what an earlier one wrote), with the conventions of
// tests/experiments/md_blocks.h (expect lines, not-run marks, ```text for command shapes).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/experiments/md_blocks.h"

using namespace lmscope;
using namespace lmscope::exp_test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lessons() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(kRoot) / "walkthroughs";
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".md") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back("(none)");
  return out;
}

class Walkthrough : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Walkthrough, CommandsRunAndShowWhatTheLessonSays) {
  // The lessons are committed: none found means a broken checkout, not a reason to skip.
  ASSERT_NE(GetParam(), "(none)") << "no walkthroughs/*.md found under " << kRoot;
  const std::string path = kRoot + "/walkthroughs/" + GetParam();
  std::vector<MdBlock> blocks = sh_blocks(path);
  ASSERT_FALSE(blocks.empty()) << path << " has no ```sh block";
  // The blocks build on each other: a lesson that needs an absent model skips as a whole.
  for (const MdBlock& b : blocks)
    if (b.not_run.empty() && !absent_model(b).empty())
      GTEST_SKIP() << GetParam() << ":" << b.line << " needs " << absent_model(b) << " (scripts/fetch-model.sh fetches it)";
  MdScratch scratch;
  for (const MdBlock& b : blocks) {
    if (!b.not_run.empty()) continue;
    SCOPED_TRACE(GetParam() + ":" + std::to_string(b.line));
    run_md_block(scratch, b);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Lessons, Walkthrough, ::testing::ValuesIn(lessons()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
