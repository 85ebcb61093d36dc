// The tools' OpenMP waits (backend/cpu/omp_waits.h), as libgomp itself reports them:
// OMP_DISPLAY_ENV=verbose makes libgomp print its settings when it starts, so a tool that executes
// itself again with GOMP_SPINCOUNT set prints them twice, the second time with lmscope's count.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cpu/omp_waits.h"
#include "tests/cli/cli_test_util.h"

namespace {

// clang's -fopenmp (the sanitizer build) links LLVM's libomp, which has no GOMP_SPINCOUNT.
#if defined(__clang__)
#define SKIP_UNLESS_LIBGOMP() GTEST_SKIP() << "built with clang, whose OpenMP runtime (libomp) is not libgomp"
#else
#define SKIP_UNLESS_LIBGOMP() (void)0
#endif

// The GOMP_SPINCOUNT values libgomp printed, in order (one per start of the program).
std::vector<std::string> spin_counts(const std::string& env) {
  const auto r = lmscope::testing_util::run_cli("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose " +
                                                env + " " + LMSCOPE_BINARY_DIR + "/lmscope-bpe --help");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> counts;
  const std::string key = "GOMP_SPINCOUNT = '";
  for (size_t at = r.err.find(key); at != std::string::npos; at = r.err.find(key, at + 1)) {
    const size_t from = at + key.size();
    counts.push_back(r.err.substr(from, r.err.find('\'', from) - from));
  }
  return counts;
}

TEST(OmpWaits, TwoThreadsRunWithLmscopesBoundedSpinning) {
  SKIP_UNLESS_LIBGOMP();
  // libgomp's own default first (300000 spins when OMP_WAIT_POLICY is unset), then the re-run.
  EXPECT_EQ(spin_counts("OMP_NUM_THREADS=2"), (std::vector<std::string>{"300000", lmscope::cpu::kDefaultSpinCount}));
}

TEST(OmpWaits, TheUsersSettingIsKept) {
  SKIP_UNLESS_LIBGOMP();
  EXPECT_EQ(spin_counts("OMP_NUM_THREADS=2 GOMP_SPINCOUNT=7"), std::vector<std::string>{"7"});
  // OMP_WAIT_POLICY=active: libgomp's 30 billion spins, untouched.
  EXPECT_EQ(spin_counts("OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active"), std::vector<std::string>{"30000000000"});
}

TEST(OmpWaits, OneThreadWaitsForNobody) {
  SKIP_UNLESS_LIBGOMP();
  EXPECT_EQ(spin_counts("OMP_NUM_THREADS=1"), std::vector<std::string>{"300000"});
}

}  // namespace
