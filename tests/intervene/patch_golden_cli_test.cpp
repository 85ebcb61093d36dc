// lmscope-patch's wider sites (heads of attn.q / attn.v / attn.probs, positions of attn.z, FFN
// neurons) and lib/grad's metrics (logprob, loss) against the same sweeps written in torch
// (golden/make_patching_refs.py: HF float64, a torch hook overwriting each cell, autograd for the
// attribution estimate; golden/patching/*.json).
//
// Tolerances (docs/gradients.md, "Attribution patching"):
// * a patched run's metric: a log-probability or a logit difference moves by at most twice the
//   logits' error, so 2 * (1e-5 + 2e-4 * max |logit|), the logits row of docs/tolerances.md
//   (max |logit| of the corrupted run, `logit_scale` in the golden);
// * an attribution cell: a dot of an activation difference with a gradient, each held to torch
//   at 2e-4 of its largest value, so 1e-3 of the largest |cell| of the site.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_util.h"

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;

std::string id_list(const nlohmann::json& a) {
  std::string s;
  for (const auto& v : a) {
    if (!s.empty()) s += ',';
    s += std::to_string(v.get<int>());
  }
  return s;
}

class PatchGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(PatchGolden, SweepAndAttributionEqualTorch) {
  std::ifstream gf(kRoot + "/golden/patching/" + GetParam() + ".json");
  ASSERT_TRUE(gf) << GetParam();
  const nlohmann::json ref = nlohmann::json::parse(gf);
  const std::string model = kRoot + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent (scripts/fetch-model.sh fetches it)";
  std::string sites;
  for (const auto& [site, cells] : ref["sites"].items()) {
    if (!sites.empty()) sites += ',';
    sites += site;
  }
  lmscope::testing_util::TempDir tmp;
  const auto r = tool("lmscope-patch", "--model " + model + " --clean-ids " + id_list(ref["clean"]) + " --corrupt-ids " +
                                           id_list(ref["corrupted"]) + " --metric '" + ref["metric"].get<std::string>() +
                                           "' --sites '" + sites + "' --method both --json " + tmp.file("p.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(tmp.file("p.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  const double metric_tol = 2 * (1e-5 + 2e-4 * ref["logit_scale"].get<double>());
  EXPECT_NEAR(j["clean_metric"].get<double>(), ref["clean_metric"].get<double>(), metric_tol);
  EXPECT_NEAR(j["corrupt_metric"].get<double>(), ref["corrupt_metric"].get<double>(), metric_tol);
  for (const auto& [site, want] : ref["sites"].items()) {
    const auto& got = j["sites"][site];
    ASSERT_EQ(got["metric"].size(), want["patched"].size()) << site;
    double largest = 0, worst = 0, worst_metric = 0;
    for (size_t l = 0; l < want["patched"].size(); ++l) {
      ASSERT_EQ(got["metric"][l].size(), want["patched"][l].size()) << site;
      for (size_t c = 0; c < want["patched"][l].size(); ++c) {
        worst_metric = std::max(worst_metric, std::abs(got["metric"][l][c].get<double>() - want["patched"][l][c].get<double>()));
        worst = std::max(worst, std::abs(got["attribution"][l][c].get<double>() - want["attribution"][l][c].get<double>()));
        largest = std::max(largest, std::abs(want["attribution"][l][c].get<double>()));
      }
    }
    EXPECT_LE(worst_metric, metric_tol) << site;
    EXPECT_LE(worst, 1e-3 * largest) << site << ": worst " << worst << " of max |cell| " << largest;
    // Cells that change the metric: a grid of zeros would pass the bounds above.
    EXPECT_GT(largest, 0.0) << site;
    std::printf("%s %s: patched metric worst %.3g (bound %.3g), attribution worst %.3g of max |cell|\n", GetParam().c_str(),
                site.c_str(), worst_metric, metric_tol, largest > 0 ? worst / largest : 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PatchGolden, ::testing::Values("tiny-qwen2-logprob", "tiny-qwen2-loss", "smollm2-logprob"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// --path-to against golden/patching/tiny-qwen2-path.json (the same two steps with torch hooks):
// each sender head's metric within the patched-metric bound above.
TEST(PathPatchGolden, EverySenderEqualsTorch) {
  std::ifstream gf(kRoot + "/golden/patching/tiny-qwen2-path.json");
  const nlohmann::json ref = nlohmann::json::parse(gf);
  const double tol = 2 * (1e-5 + 2e-4 * ref["logit_scale"].get<double>());
  for (const auto& [receiver, want] : ref["receivers"].items()) {
    lmscope::testing_util::TempDir tmp;
    const auto r = tool("lmscope-patch", "--model " + kRoot + "/" + ref["model"].get<std::string>() + " --clean-ids " +
                                             id_list(ref["clean"]) + " --corrupt-ids " + id_list(ref["corrupted"]) +
                                             " --metric '" + ref["metric"].get<std::string>() + "' --path-to '" + receiver +
                                             "' --rows-per-forward 3 --json " + tmp.file("p.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream f(tmp.file("p.json"));
    const nlohmann::json j = nlohmann::json::parse(f);
    const auto& got = j["sites"]["attn.z->" + receiver]["metric"];
    ASSERT_EQ(got.size(), want.size()) << receiver;
    double worst = 0, moved = 0;
    for (size_t l = 0; l < want.size(); ++l) {
      ASSERT_EQ(got[l].size(), want[l].size());
      for (size_t h = 0; h < want[l].size(); ++h) {
        worst = std::max(worst, std::abs(got[l][h].get<double>() - want[l][h].get<double>()));
        moved = std::max(moved, std::abs(want[l][h].get<double>() - ref["corrupt_metric"].get<double>()));
      }
    }
    EXPECT_LE(worst, tol) << receiver;
    EXPECT_GT(moved, 10 * tol) << receiver << ": no sender moves the metric; the comparison would prove nothing";
    std::printf("%s: worst %.3g (bound %.3g), largest move %.3g\n", receiver.c_str(), worst, tol, moved);
  }
}

TEST(PathPatchGolden, BadReceiversAreOneLine) {
  const std::string args = "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 --metric 'prob:#5' ";
  for (const auto& [opt, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--path-to 'layers.0.attn.q[head=0]'", "the receiver's layer must be 1..2"},
           {"--path-to 'layers.2.attn.v[head=2]'", "head 2 is outside 0..1"},
           {"--path-to 'layers.2.attn.z[head=0]'", "expected layers.L.attn.q[head=H]"},
           {"--path-to 'layers.2.attn.q[head=0]' --method both", "--path-to patches paths"}}) {
    const auto r = tool("lmscope-patch", args + opt);
    EXPECT_NE(r.code, 0) << opt;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

}  // namespace
