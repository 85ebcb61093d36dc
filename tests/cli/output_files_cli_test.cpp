// Every file a tool writes goes through one writer (io/text_file.h, io/output_target.h):
// lmscope-report -o / --svg, lmscope-bpe --save, lmscope-quant --svg, lmscope-bench --json.
// A FIFO, a device, a directory or a symlink at the target is refused in one line and left as
// it was; a file-size limit is one line ("File too large"), not SIGXFSZ, and leaves no
// temporary; an empty path is a usage error instead of being ignored.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/cli/cli_test_util.h"

namespace fs = std::filesystem;
using lmscope::testing_util::CliRun;
using lmscope::testing_util::run_cli;
using lmscope::testing_util::TempDir;

namespace {

const std::string& kBin = kBinDir;
const std::string& kRoot = kSourceDir;
const std::string kGolden = kRoot + "/golden/traces/tiny-qwen2-a.h5";
const std::string kCorpus = kRoot + "/walkthroughs/data/zh-en-corpus.txt";

// The command lines that write `out`, one per tool and option.
std::vector<std::pair<std::string, std::string>> writers(const std::string& out) {
  return {
      {"lmscope-report", kBin + "/lmscope-report " + kGolden + " -o " + out},
      {"lmscope-report", kBin + "/lmscope-report " + kGolden + " --svg mask -o " + out},
      {"lmscope-bpe", kBin + "/lmscope-bpe --train " + kCorpus + " --merges 5 --save " + out},
  };
}

}  // namespace

TEST(OutputFiles, AFifoOrADeviceIsNotReplaced) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& target : {fifo, std::string("/dev/full")})
    for (const auto& [tool, cmd] : writers(target)) {
      CliRun r = run_cli("timeout 60 " + cmd);
      expect_error_line(r, tool, {"cannot write '" + target + "': it exists and is not a regular file; not replacing it"});
      struct stat st {};
      ASSERT_EQ(::stat(target.c_str(), &st), 0);
      EXPECT_FALSE(S_ISREG(st.st_mode)) << target << " was replaced by " << cmd;
    }
  EXPECT_EQ(lmscope::testing_util::temporaries_in(dir.path()).size(), 0u);
}

TEST(OutputFiles, ASymlinkAndItsTargetAreLeftAlone) {
  TempDir dir;
  const std::string target = dir.file("precious.json"), link = dir.file("link.json");
  {
    std::ofstream(target) << "keep me\n";
  }
  fs::create_symlink(target, link);
  for (const auto& [tool, cmd] : writers(link)) {
    CliRun r = run_cli(cmd);
    expect_error_line(r, tool, {"cannot write '" + link + "': it is a symbolic link; not replacing it"});
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(lmscope::testing_util::read_text(target), "keep me\n") << cmd;
  }
}

TEST(OutputFiles, ADirectoryIsRefused) {
  TempDir dir;
  for (const auto& [tool, cmd] : writers(dir.path().string()))
    expect_error_line(run_cli(cmd), tool, {"it is a directory"});
}

TEST(OutputFiles, AFileSizeLimitIsOneLineAndLeavesNothing) {
  // ulimit -f 4: 2 KiB (dash counts 512-byte blocks), above what the tools print, far below a
  // report, an SVG of 11 tokens or a tokenizer.json. SIGXFSZ at its default
  // would kill the tool (status 153 from the shell); ignored, write() fails with EFBIG.
  TempDir dir;
  const std::string out = dir.file("out");
  for (const auto& [tool, cmd] : writers(out)) {
    CliRun r = run_cli("ulimit -f 4; " + cmd);
    expect_error_line(r, tool, {"cannot write '" + out + "': File too large"});
    EXPECT_TRUE(fs::is_empty(dir.path())) << cmd << " left a file";
  }
}

TEST(OutputFiles, AnEmptyPathIsAUsageError) {
  expect_usage_error(run_cli(kBin + "/lmscope-report " + kGolden + " -o ''"), "lmscope-report", {"an empty path names no file"});
  expect_usage_error(run_cli(kBin + "/lmscope-bpe --train " + kCorpus + " --save ''"), "lmscope-bpe", {"an empty path"});
  expect_usage_error(run_cli(kBin + "/lmscope-quant --scheme w8-channel --model synthetic:tiny --prompt-ids 1,2 --svg ''"), "lmscope-quant",
                     {"an empty path"});
  expect_usage_error(run_cli(kBin + "/lmscope-bench --json ''"), "lmscope-bench", {"an empty path"});
}

TEST(OutputFiles, ABadSvgTargetFailsBeforeTheRun) {
  // lmscope-quant checks --svg before it loads the model: no minutes of work thrown away.
  CliRun r = run_cli(kBin + "/lmscope-quant --scheme w8-channel --model /nonexistent/model --prompt-ids 1,2 --svg /dev/full");
  expect_error_line(r, "lmscope-quant", {"cannot write '/dev/full': it exists and is not a regular file"});
}
