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
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("libhdf5 spent more than 1 s in one read of '" + kLoops + "'"), std::string::npos) << r.err;
}

TEST(Hdf5ReadDeadline, ZeroTurnsTheLimitOff) {
  // Off, the loop goes on: the outer `timeout 3` ends it (status 124) with nothing printed.
  const auto r = lmscope::testing_util::run_cli("LMSCOPE_HDF5_READ_SECONDS=0 timeout 3 " + std::string(LMSCOPE_BINARY_DIR) +
                                                "/lmscope-diff " + kLoops + " " + kLoops);
  EXPECT_EQ(r.code, 124) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
