// A bad LMSCOPE_CPU_KERNEL (lib/backend/cpu/kernel_table.h) as a user meets it: lmscope-trace
// stops before the first matmul with one error line naming the variable, exit code 1, and no
// trace file (the CPU backend makes the choice when it is created).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "backend/cpu/kernel_table.h"
#include "cli_test_util.h"

namespace {

void expect_refused(const std::string& value, const std::string& message) {
  const std::string out = ::testing::TempDir() + "cpu_kernel_" + value + ".h5";
  std::filesystem::remove(out);
  const auto r = lmscope::testing_util::run_cli("LMSCOPE_CPU_KERNEL=" + value + " " + kBinDir +
                                                "/lmscope-trace --model " + kSourceDir +
                                                "/golden/models/tiny-qwen2 --prompt-ids 1,2,3 "
                                                "--max-new-tokens 1 --out " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  const std::string line = "lmscope-trace: error: LMSCOPE_CPU_KERNEL=" + value + ": " + message + "\n";
  ASSERT_GE(r.err.size(), line.size()) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - line.size()), line) << r.err;   // the last line, and the only error
  EXPECT_EQ(r.err.find("error"), r.err.size() - line.size() + std::string("lmscope-trace: ").size()) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CpuKernelCli, AnUnknownValueIsOneErrorLineAndNoTrace) {
  expect_refused("avx9", "expected avx512, avx2 or portable");
}

TEST(CpuKernelCli, ASetTheProcessorLacksIsOneErrorLineAndNoTrace) {
  if (lmscope::cpu::processor_runs(lmscope::cpu::Isa::avx512)) GTEST_SKIP() << "this processor runs every set";
  expect_refused("avx512", "this processor does not run it");
}

}  // namespace
