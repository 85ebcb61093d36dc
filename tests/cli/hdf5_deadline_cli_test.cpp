// A trace on which Debian's libhdf5 1.10.8 loops forever (inside H5C_protect, opening the
// file): tests/trace/data/libhdf5-loops.h5, a 27 KB input found by scripts/fuzz.sh's
// fuzz_trace. lmscope cannot stop libhdf5's loop; the read deadline (io/hdf5_deadline.h) must
// end the tool with one line naming the file instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/cli/cli_test_util.h"

namespace {

const std::string kLoops = std::string(LMSCOPE_SOURCE_DIR) + "/tests/trace/data/libhdf5-loops.h5";

TEST(Hdf5ReadDeadline, ALibhdf5LoopEndsInOneLineNamingTheFile) {
  // `timeout 120` only keeps a regression from hanging the suite: the deadline is 1 s.
  const auto r = lmscope::testing_util::run_cli("LMSCOPE_HDF5_READ_SECONDS=1 timeout 120 " + std::string(LMSCOPE_BINARY_DIR) +
                                                "/lmscope-diff " + kLoops + " " + kLoops);
  EXPECT_NE(r.code, 124) << "lmscope-diff still waited for libhdf5 after 120 s";
  EXPECT_EQ(r.code, 2) << "lmscope-diff's status for an unreadable trace (1 means the traces differ)";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("lmscope-diff: error: libhdf5 spent more than 1 s in one read of '" + kLoops + "'", 0), 0u) << r.err;
}

TEST(Hdf5ReadDeadline, EachToolNamesItselfAndExitsWithItsBadInputStatus) {
  for (const std::string tool : {"lmscope-report", "lmscope-step"}) {
    const auto r = lmscope::testing_util::run_cli("LMSCOPE_HDF5_READ_SECONDS=1 timeout 120 " +
                                                  std::string(LMSCOPE_BINARY_DIR) + "/" + tool + " " + kLoops +
                                                  (tool == "lmscope-report" ? " --summary" : ""));
    EXPECT_EQ(r.code, 1) << tool << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind(tool + ": error: libhdf5 spent more than 1 s", 0), 0u) << r.err;
  }
}

TEST(Hdf5ReadDeadline, ZeroTurnsTheLimitOff) {
  // Off, the loop goes on: the outer `timeout 3` ends it (status 124) with nothing printed.
  const auto r = lmscope::testing_util::run_cli("LMSCOPE_HDF5_READ_SECONDS=0 timeout 3 " + std::string(LMSCOPE_BINARY_DIR) +
                                                "/lmscope-diff " + kLoops + " " + kLoops);
  EXPECT_EQ(r.code, 124) << r.err;
  EXPECT_EQ(r.err, "");
}

// A crash inside libhdf5 (fuzz_trace found a SIGSEGV in H5C_protect) is contained by reading
// in a child process (tools/contained.h): here the child, stuck in libhdf5's loop on this file
// with the deadline off, is sent the SIGSEGV such a bug raises. The parent says so in one line.
// Under AddressSanitizer (scripts/sanitize.sh) handle_segv=0 lets the signal end the child as it
// does in a release build, instead of ASan's own report.
TEST(Hdf5ReadDeadline, ACrashWhileReadingIsOneLineFromTheParent) {
  for (const std::string tool : {"lmscope-report", "lmscope-step", "lmscope-diff"}) {
    const std::string args = tool == "lmscope-report" ? " --summary" : tool == "lmscope-diff" ? " " + kLoops : "";
    const auto r = lmscope::testing_util::run_cli("(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0 "
                                                  "LMSCOPE_HDF5_READ_SECONDS=0 timeout 120 " + std::string(LMSCOPE_BINARY_DIR) +
                                                  "/" + tool + " " + kLoops + args +
                                                  " & p=$!; sleep 2; pkill -SEGV -P $(pgrep -P $p); wait $p)");
    EXPECT_EQ(r.code, tool == "lmscope-diff" ? 2 : 1) << tool << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind(tool + ": error: reading '" + kLoops, 0), 0u) << r.err;
    EXPECT_NE(r.err.find("ended in signal 11 (Segmentation fault): a damaged file crashed the reader"), std::string::npos)
        << r.err;
  }
}

}  // namespace
