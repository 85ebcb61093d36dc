// The lessons in walkthroughs/*.md run as written. Each ```sh block is one bash script (set -e,
// pipefail), run from a scratch directory where `build/`, `golden/` and `models/` point at the
// build and the repository; each `<!-- expect: TEXT -->` line after a block names text its
// output must contain.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/experiments/exp_util.h"

using namespace lmscope;
using namespace lmscope::exp_test;
namespace fs = std::filesystem;

namespace {

struct Block {
  int line = 0;
  std::string script;
  std::vector<std::string> expect;
};

std::vector<Block> blocks_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<Block> out;
  std::string line;
  int n = 0;
  bool in_sh = false, after = false;
  const std::regex expect(R"(^<!-- expect: (.*) -->\s*$)");
  while (std::getline(in, line)) {
    ++n;
    if (in_sh) {
      if (line.rfind("```", 0) == 0) {
        in_sh = false;
        after = true;
      } else {
        out.back().script += line + "\n";
      }
      continue;
    }
    if (line.rfind("```sh", 0) == 0) {
      out.push_back(Block{n, "", {}});
      in_sh = true;
      continue;
    }
    std::smatch m;
    if (after && std::regex_match(line, m, expect)) {
      out.back().expect.push_back(m[1]);
      continue;
    }
    after = false;
  }
  return out;
}

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
  std::vector<Block> blocks = blocks_of(path);
  ASSERT_FALSE(blocks.empty()) << path << " has no ```sh block";
  testing_util::TempDir dir;
  fs::create_directory_symlink(kBin, dir.path() / "build");
  fs::create_directory_symlink(kRoot + "/golden", dir.path() / "golden");
  if (fs::exists(kRoot + "/models")) fs::create_directory_symlink(kRoot + "/models", dir.path() / "models");
  for (const Block& b : blocks) {
    SCOPED_TRACE(GetParam() + ":" + std::to_string(b.line));
    const std::string script = dir.file("block.sh");
    std::ofstream(script) << "set -eo pipefail\ncd '" << dir.path().string() << "'\n" << b.script;
    RunResult r = run_cmd(dir, "bash '" + script + "'");
    ASSERT_EQ(r.code, 0) << b.script << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
    for (const std::string& e : b.expect) EXPECT_NE(r.out.find(e), std::string::npos) << "expected: " << e << "\nin:\n" << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Lessons, Walkthrough, ::testing::ValuesIn(lessons()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});
