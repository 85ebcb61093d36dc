// What an intervention or a reader is handed as a file may be a FIFO (a read blocks forever)
// or a device (/dev/zero never ends). Each is refused in one line naming the file, at once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "tests/cli/cli_test_util.h"

using namespace lmscope;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kRun = "-q --model " + kRoot + "/golden/models/tiny-qwen2 --prompt-ids 330,749,537 --max-new-tokens 1 ";

// `timeout 60`: a hang shows as exit 124, not as a stuck test.
void expect_one_line(const std::string& tool_name, const std::string& args, const std::string& needle) {
  const auto r = testing_util::run_cli("timeout 60 " + kBinDir + "/" + tool_name + " " + args);
  EXPECT_NE(r.code, 0) << args;
  EXPECT_NE(r.code, 124) << args << ": still waiting after 60 s";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << " -> " << r.err;
}

}  // namespace

TEST(InputFilesCli, AFifoOrADeviceIsRefusedNotWaitedOn) {
  testing_util::TempDir tmp;
  const std::string fifo = tmp.file("fifo"), fifo_h5 = tmp.file("fifo.h5");   // a source trace is named *.h5
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(fifo_h5.c_str(), 0600), 0);
  const std::string out = " --out " + tmp.file("x.h5");
  expect_one_line("lmscope-trace", kRun + "--interventions " + fifo + out, "'" + fifo + "': is a FIFO, not a regular file");
  expect_one_line("lmscope-trace", kRun + "--intervene 'embed=add(1, " + fifo + ")'" + out, "is a FIFO, not a regular file");
  expect_one_line("lmscope-trace", kRun + "--intervene 'embed=add(1, /dev/zero)'" + out, "not a regular file");
  expect_one_line("lmscope-trace", kRun + "--intervene 'layers.1.resid_pre=patch(" + fifo_h5 + ")'" + out,
                  fifo_h5 + ": is not a regular file (a FIFO)");
  expect_one_line("lmscope-step", fifo, fifo + ": is not a regular file (a FIFO)");
  expect_one_line("lmscope-diff", fifo + " " + kRoot + "/golden/traces/tiny-qwen2-a.h5", "is not a regular file (a FIFO)");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("x.h5")));
}
