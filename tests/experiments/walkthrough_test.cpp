// The lessons in walkthroughs/*.md run as written: every ```sh block, in order, in one scratch
// directory (a later block may read what an earlier one wrote), with the conventions of
// tests/experiments/md_blocks.h (expect lines, not-run marks, ```text for command shapes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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
  // Every number the prose states is checked (md_blocks.h), with or without the model.
  for (const std::string& n : prose_numbers_unchecked(path))
    ADD_FAILURE() << GetParam() << " " << n << ": a number in the prose that no expect line checks (add one, or list it in <!-- given: -->)";
  std::vector<MdBlock> blocks = sh_blocks(path);
  ASSERT_FALSE(blocks.empty()) << path << " has no ```sh block";
  // The blocks build on each other: a lesson that needs an absent model skips as a whole.
  for (const MdBlock& b : blocks)
    if (b.not_run.empty() && !absent_model(b).empty())
      GTEST_SKIP() << GetParam() << ":" << b.line << " needs " << absent_model(b) << " (scripts/fetch-model.sh fetches it)";
  // LMSCOPE_LESSON_OUT=DIR keeps each lesson's files in DIR/<lesson> (scripts/prepare-workshop.sh).
  const char* keep = std::getenv("LMSCOPE_LESSON_OUT");
  MdScratch scratch(keep && *keep ? std::string(keep) + "/" + GetParam().substr(0, GetParam().size() - 3) : "");
  for (const MdBlock& b : blocks) {
    if (!b.not_run.empty()) continue;
    SCOPED_TRACE(GetParam() + ":" + std::to_string(b.line));
    run_md_block(scratch, b);
    if (HasFatalFailure()) return;
  }
}

// The rule itself, on a lesson written here: a number in the prose fails until an expect line
// holds it or a given line lists it; numbers in code, inline code and comments do not count.
TEST(WalkthroughRule, AProseNumberWithoutAnExpectLineFails) {
  testing_util::TempDir dir;
  const std::string lesson = dir.file("lesson.md");
  const std::string head = "# L\n\nThe mean KL is 0.77, clips 2,734 values; `0.5` in code, 3 layers.\n\n```sh\necho 'kl 0.77'\n```\n";
  std::ofstream(lesson) << head;
  EXPECT_EQ(prose_numbers_unchecked(lesson), (std::vector<std::string>{"line 3: 0.77", "line 3: 2,734"}));
  std::ofstream(lesson) << head << "<!-- expect: kl 0.77 -->\n";
  EXPECT_EQ(prose_numbers_unchecked(lesson), (std::vector<std::string>{"line 3: 2,734"}));
  std::ofstream(lesson) << head << "<!-- expect: kl 0.77 -->\n\n<!-- given: 2,734 -->\n";
  EXPECT_TRUE(prose_numbers_unchecked(lesson).empty());
}

// The number placeholders of an expect line (md_blocks.h): {~X} within 1e-4 relative or one
// unit of X's last digit, {<X} below X, {A..B} from A to B; the text around them as written, up
// to runs of spaces. The cases are a table shared with the notebooks' runner.
TEST(WalkthroughRule, NumberPlaceholdersHoldTheirTolerance) {
  std::ifstream in(kRoot + "/tests/experiments/expect_cases.json");
  ASSERT_TRUE(in) << "tests/experiments/expect_cases.json is missing";
  const nlohmann::json table = nlohmann::json::parse(in);
  const std::string out = table.at("output");
  ASSERT_GE(table.at("cases").size(), 10u);
  for (const auto& c : table.at("cases"))
    EXPECT_EQ(expect_found(out, c.at("expect")), c.at("found").get<bool>()) << c.at("expect") << ": " << c.at("why");
}

INSTANTIATE_TEST_SUITE_P(Lessons, Walkthrough, ::testing::ValuesIn(lessons()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
