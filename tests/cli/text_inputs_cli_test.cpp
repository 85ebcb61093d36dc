// Every text file a tool takes as an option is read by one reader (io/regular_file.h,
// read_regular_file): a FIFO is refused instead of blocking forever, a device instead of
// filling memory (/dev/zero), a directory instead of reading as empty, a file over 64 MiB
// with its size. One line, exit 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "tests/cli/cli_test_util.h"

using lmscope::testing_util::CliRun;
using lmscope::testing_util::run_cli;
using lmscope::testing_util::TempDir;

namespace {

const std::string& kBin = kBinDir;
const std::string& kRoot = kSourceDir;
const std::string kQwen = kRoot + "/golden/tokenizers/qwen-bpe";
const std::string kGolden = kRoot + "/golden/traces/tiny-qwen2-a.h5";

// Each tool and option that reads a text file, as a command line around `path`.
std::vector<std::pair<std::string, std::string>> readers(const std::string& path) {
  const std::string bpe = kBin + "/lmscope-bpe --tokenizer " + kQwen;
  return {
      {"lmscope-bpe", kBin + "/lmscope-bpe --train " + path},
      {"lmscope-bpe", bpe + " --file " + path},
      {"lmscope-bpe", bpe + " --chat --chat-json " + path},
      {"lmscope-bpe", bpe + " --chat --chat-template " + path + " hello"},
      {"lmscope-quant", kBin + "/lmscope-quant --scheme w8-channel --model synthetic:tiny --text-file " + path},
      {"lmscope-quant", kBin + "/lmscope-quant --scheme a8-static --model synthetic:tiny --prompt-ids 1,2 --calibrate " + path},
  };
}

void expect_refused(const CliRun& r, const std::string& tool, const std::string& needle, const std::string& cmd) {
  SCOPED_TRACE(cmd);
  expect_error_line(r, tool, {needle});
}

}  // namespace

TEST(TextInputs, AFifoIsRefusedNotWaitedOn) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [tool, cmd] : readers(fifo))   // `timeout 60`: a regression fails, it does not hang
    expect_refused(run_cli("timeout 60 " + cmd), tool, "'" + fifo + "': is a FIFO, not a regular file", cmd);
}

TEST(TextInputs, ADeviceOrADirectoryIsRefused) {
  TempDir dir;
  for (const auto& [tool, cmd] : readers("/dev/zero"))
    expect_refused(run_cli("timeout 60 " + cmd), tool, "'/dev/zero': is a character device, not a regular file", cmd);
  for (const auto& [tool, cmd] : readers(dir.path().string()))
    expect_refused(run_cli(cmd), tool, "is a directory, not a regular file", cmd);
}

TEST(TextInputs, AFileOverTheBoundIsRefusedWithItsSize) {
  TempDir dir;
  const std::string big = dir.file("big.txt");
  {
    std::ofstream f(big);
  }
  std::filesystem::resize_file(big, (size_t(64) << 20) + 1);   // sparse: no 64 MiB written
  for (const auto& [tool, cmd] : readers(big))
    expect_refused(run_cli(cmd), tool, "67108865 bytes, more than the 67108864 this reads", cmd);
}

TEST(TextInputs, AMissingFileIsNamed) {
  for (const auto& [tool, cmd] : readers("/nonexistent/x.txt"))
    expect_refused(run_cli(cmd), tool, "'/nonexistent/x.txt': No such file or directory", cmd);
}

TEST(TextInputs, ToleranceFileOfLmscopeDiff) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = run_cli("timeout 60 " + kBin + "/lmscope-diff " + kGolden + " " + kGolden + " --tolerances " + fifo);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("lmscope-diff: error: bad tolerance file '" + fifo + "': is a FIFO, not a regular file", 0), 0u)
      << r.err;
}
