// The gradient commands on the CUDA backend: `lmscope-trace --backend cuda --grad` stores
// grad.<hook> equal to torch autograd's (golden/grad/) within docs/tolerances.md's
// "Gradients" bound and to the CPU's trace by lmscope-diff; `lmscope-patch --backend cuda
// --method attribution` gives the torch estimate of golden/grad/attribution-patching-tiny-qwen2.json
// (the bounds of tests/grad/grad_cli_test.cpp and tests/intervene/patch_cli_test.cpp).
// `--dtype bf16` with --grad is one line and exit 1. Skipped, with the reason, where no CUDA
// device is usable; in the emulated build it always runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "io/hdf5.h"
#include "tests/golden_manifest.h"
#include "tests/test_util.h"

using namespace lmscope;

namespace {

const std::string kBin = cuda_test::tools_dir();
// golden/grad/manifest.json's tiny-qwen2-logit-diff case
const std::string kIds = "330,749,537,264,935,314,267,681,289,295,16";
const std::string kMetric = "logit_diff:pos=-1:549,593";

std::string trace_grad(const std::string& backend, const std::string& dtype, const std::string& out) {
  return kBin + "/lmscope-trace -q --backend " + backend + " --dtype " + dtype + " --model " + golden::root() +
         "/golden/models/tiny-qwen2 --prompt-ids " + kIds + " --grad '" + kMetric +
         "' --hooks 'layers.1.*,embed' --out " + out;
}

}  // namespace

TEST(GradCudaCli, TraceGradEqualsTorchAndTheCpu) {
  LMSCOPE_CUDA_OR_SKIP(probe, "f32");
  probe.reset();
  testing_util::TempDir tmp;
  const std::string cuda = tmp.file("cuda.h5"), cpu = tmp.file("cpu.h5");
  for (const auto& [backend, out] : {std::pair{std::string("cuda"), cuda}, std::pair{std::string("cpu"), cpu}}) {
    testing_util::CliRun r = testing_util::run_cli(trace_grad(backend, "f32", out));
    ASSERT_EQ(r.code, 0) << backend << ": " << r.err;
  }
  const h5::File ours = h5::File::open_read(cuda);
  const h5::File ref = h5::File::open_read(golden::root() + "/golden/grad/tiny-qwen2-logit-diff.h5");
  EXPECT_NEAR(ours.root().attr_double("grad_metric_value"), ref.root().attr_double("metric"), 1e-4);
  int compared = 0;
  for (const std::string hook : {"embed", "layers.1.resid_pre", "layers.1.attn.q_rope", "layers.1.attn.probs",
                                 "layers.1.attn.scores", "layers.1.attn.z", "layers.1.ffn.act",
                                 "layers.1.resid_post"}) {
    SCOPED_TRACE(hook);
    std::string path = "step_0000/grad." + hook;
    std::replace(path.begin(), path.end(), '.', '/');
    const h5::DatasetData a = ours.root().read_dataset(path), b = ref.root().read_dataset("grad/" + hook);
    ASSERT_EQ(a.shape, b.shape);
    double max_ref = 0, max_diff = 0;
    for (size_t i = 0; i < a.values.size(); ++i) {
      max_ref = std::max(max_ref, std::fabs(b.values[i]));
      max_diff = std::max(max_diff, std::fabs(a.values[i] - b.values[i]));
    }
    EXPECT_LE(max_diff, 2e-4 * max_ref);   // docs/tolerances.md, "Gradients"
    ++compared;
  }
  EXPECT_EQ(compared, 8);
  testing_util::CliRun d = testing_util::run_cli(kBin + "/lmscope-diff " + cuda + " " + cpu);
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("grad.layers.1.attn.q_rope"), std::string::npos) << d.out;
}

TEST(GradCudaCli, Bf16IsOneLine) {
  LMSCOPE_CUDA_OR_SKIP(probe, "bf16");
  probe.reset();
  testing_util::TempDir tmp;
  testing_util::CliRun r = testing_util::run_cli(trace_grad("cuda", "bf16", tmp.file("b.h5")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("gradients: the cuda backend's --dtype bf16 has no backward ops (use --dtype f32)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("b.h5")));
}

// The attribution estimate on CUDA against the torch estimate (HF float64, autograd), every
// cell of its four sites, at 1e-3 of the largest |cell| (tests/intervene/patch_cli_test.cpp's
// bound for the CPU); attn.z's cell is a head at every position: torch's [L, T, H] summed over T.
TEST(GradCudaCli, PatchAttributionEqualsTheTorchSweep) {
  LMSCOPE_CUDA_OR_SKIP(probe, "f32");
  probe.reset();
  std::ifstream gf(golden::root() + "/golden/grad/attribution-patching-tiny-qwen2.json");
  const nlohmann::json ref = nlohmann::json::parse(gf);
  auto ids = [](const nlohmann::json& a) {
    std::string s;
    for (const auto& v : a) {
      if (!s.empty()) s += ',';
      s += std::to_string(v.get<int>());
    }
    return s;
  };
  testing_util::TempDir tmp;
  const std::string cmd = kBin + "/lmscope-patch --backend cuda --model " + golden::root() + "/" +
                          ref["model"].get<std::string>() + " --clean-ids " + ids(ref["clean"]) + " --corrupt-ids " +
                          ids(ref["corrupted"]) + " --metric '" + ref["metric"].get<std::string>() +
                          "' --method attribution --json " + tmp.file("p.json");
  testing_util::CliRun r = testing_util::run_cli(cmd);
  ASSERT_EQ(r.code, 0) << cmd << "\n" << r.err;
  std::ifstream f(tmp.file("p.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  for (const auto& [site, want] : ref["estimate"].items()) {
    const auto& got = j["sites"][site]["attribution"];
    ASSERT_EQ(got.size(), want.size()) << site;
    double worst = 0, largest = 0;
    for (size_t l = 0; l < want.size(); ++l) {
      std::vector<double> w;   // [column]
      if (site == "attn.z") {
        w.assign(want[l][0].size(), 0.0);
        for (const auto& per_pos : want[l])
          for (size_t h = 0; h < w.size(); ++h) w[h] += per_pos[h].get<double>();
      } else {
        for (const auto& v : want[l]) w.push_back(v.get<double>());
      }
      ASSERT_EQ(got[l].size(), w.size()) << site;
      for (size_t c = 0; c < w.size(); ++c) {
        worst = std::max(worst, std::abs(got[l][c].get<double>() - w[c]));
        largest = std::max(largest, std::abs(w[c]));
      }
    }
    EXPECT_GT(largest, 0) << site;
    EXPECT_LE(worst, 1e-3 * largest) << site << ": worst " << worst << " of max |cell| " << largest;
  }
}
