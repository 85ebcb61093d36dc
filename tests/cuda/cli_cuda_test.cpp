// The tools without a usable device: `--backend cuda` is one line on stderr that suggests
// `--backend cpu`, and a non-zero exit; `--backend auto` falls back to the CPU. Runs where no
// device is usable (CI, this machine), and in the emulated build with its device hidden
// (LMSCOPE_CUDA_EMULATOR_DEVICES=0); skipped, with the reason, where a real one is, and there
// AutoPicksAUsableDevice runs instead. In the emulated build auto never picks the emulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "backend/backend.h"
#include "cuda_test_util.h"

namespace {

const std::string kBin = lmscope::cuda_test::tools_dir(), kRoot = LMSCOPE_SOURCE_DIR;

// In the emulated build, hides the emulator's device from this process and the tools it runs
// while in scope; elsewhere nothing.
struct HiddenEmulatedDevice {
#if LMSCOPE_CUDA_EMULATED
  HiddenEmulatedDevice() { ::setenv("LMSCOPE_CUDA_EMULATOR_DEVICES", "0", 1); }
  ~HiddenEmulatedDevice() { ::unsetenv("LMSCOPE_CUDA_EMULATOR_DEVICES"); }
#endif
};

bool device_usable() {
  try {
    lmscope::make_backend("cuda");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Runs `cmd`, returns its exit status and what it printed on stderr.
int run(const std::string& cmd, std::string* err) {
  FILE* p = ::popen((cmd + " 2>&1 >/dev/null").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  err->clear();
  while (std::fgets(buf.data(), int(buf.size()), p)) *err += buf.data();
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST(CudaCli, NoDeviceIsOneLineSuggestingTheCpu) {
  [[maybe_unused]] HiddenEmulatedDevice hidden;   // an empty guard outside the emulated build
  if (device_usable()) GTEST_SKIP() << "a CUDA device is usable here: nothing to refuse";
  const std::string model = kRoot + "/golden/models/tiny-qwen2";
  for (const std::string& cmd :
       {kBin + "/lmscope-trace -q --backend cuda --model " + model + " --prompt-ids 1,2,3 --max-new-tokens 1",
        kBin + "/lmscope-bench --backend cuda --dtype bf16 --model synthetic:tiny --decode 1 --repeats 1"}) {
    std::string err;
    const int rc = run(cmd, &err);
    EXPECT_NE(rc, 0) << cmd;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("--backend cpu"), std::string::npos) << err;
  }
}

TEST(CudaCli, AutoFallsBackToTheCpuAndBf16NeedsCuda) {
  [[maybe_unused]] HiddenEmulatedDevice hidden;   // an empty guard outside the emulated build
  if (device_usable()) GTEST_SKIP() << "a CUDA device is usable here: auto picks it";
  EXPECT_EQ(lmscope::make_backend("auto")->name(), "cpu");
  EXPECT_THROW(lmscope::make_backend("cpu", "bf16"), std::runtime_error);
  EXPECT_THROW(lmscope::make_backend("cpu", "f16"), std::runtime_error);
  std::string err;
  EXPECT_NE(run(kBin + "/lmscope-bench --backend auto --dtype bf16 --model synthetic:tiny", &err), 0);
  EXPECT_NE(err.find("--dtype"), std::string::npos) << err;
}

// The counterpart where a device is usable (the GPU machine): auto picks CUDA, in both dtypes.
// The emulator's device is taken only when asked for: auto stays on the CPU.
TEST(CudaCli, AutoPicksAUsableDevice) {
#if LMSCOPE_CUDA_EMULATED
  EXPECT_EQ(lmscope::make_backend("cuda")->name(), "cuda");
  EXPECT_EQ(lmscope::make_backend("auto")->name(), "cpu");
  return;
#endif
  if (!device_usable()) GTEST_SKIP() << "this machine has no usable CUDA device: the fallback tests above cover auto";
  EXPECT_EQ(lmscope::make_backend("auto")->name(), "cuda");
  EXPECT_EQ(lmscope::make_backend("auto", "bf16")->compute_dtype(), "bf16");
}
