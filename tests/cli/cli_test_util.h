// What the CLI tests of several tools share: running a built tool, and the usage-error check.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/test_util.h"

// A usage error: one line "<tool>: error: ... (see --help)", exit code 2.
inline void expect_usage_error(const lmscope::testing_util::CliRun& r, const std::string& tool,
                               const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind(tool + ": error: ", 0), 0u) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

// A bad input (not a usage error): one line "<tool>: error: ...", exit `code` (1; lmscope-diff: 2).
inline void expect_error_line(const lmscope::testing_util::CliRun& r, const std::string& tool,
                              const std::vector<std::string>& needles, int code = 1) {
  EXPECT_EQ(r.code, code) << r.err;   // -1: killed by a signal
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind(tool + ": error: ", 0), 0u) << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

const std::string kBinDir = LMSCOPE_BINARY_DIR;
const std::string kSourceDir = LMSCOPE_SOURCE_DIR;

// build/<name> <args>, stdout and stderr captured.
inline lmscope::testing_util::CliRun tool(const std::string& name, const std::string& args) {
  return lmscope::testing_util::run_cli(std::string(LMSCOPE_BINARY_DIR) + "/" + name + " " + args);
}
