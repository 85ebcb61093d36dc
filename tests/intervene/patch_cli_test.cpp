// lmscope-patch on the committed tiny model, checked by what activation patching must give
// whatever the model: the two prompts differ at position 8 only, so patching resid_pre of layer
// 0 there makes the corrupted run the clean one (normalized 1), and patching any other position
// of layer 0 changes nothing (normalized 0). Different lengths and a metric token that is not one
// token are refused in one line.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_util.h"

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kArgs = "--model " + kRoot + "/golden/models/tiny-qwen2" +
                          " --clean-ids 330,749,537,264,935,314,267,681,289,295,16"
                          " --corrupt-ids 330,749,537,264,935,314,267,681,42,295,16 --metric 'logit-diff:#549,#434'";

}  // namespace

TEST(PatchCli, SinglePositionDifferenceIsRestoredExactlyThere) {
  lmscope::testing_util::TempDir tmp;
  const auto r = tool("lmscope-patch", kArgs + " --rows-per-forward 7 --json " + tmp.file("p.json") + " --svg " + tmp.file("p"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(tmp.file("p.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_NE(j["clean_metric"], j["corrupt_metric"]);
  const auto& resid = j["sites"]["resid_pre"]["normalized"];
  ASSERT_EQ(resid.size(), 3u);
  ASSERT_EQ(resid[0].size(), 11u);
  for (int p = 0; p < 11; ++p) {
    if (p == 8) EXPECT_NEAR(resid[0][p].get<double>(), 1.0, 1e-4);
    else EXPECT_NEAR(resid[0][p].get<double>(), 0.0, 1e-4) << "position " << p;
  }
  EXPECT_EQ(j["sites"]["attn.z"]["normalized"][0].size(), 4u);   // heads
  EXPECT_EQ(j["cells"], 3 * 11 * 3 + 3 * 4);
  for (const char* site : {"resid_pre", "attn_out", "ffn_out", "attn_z"})
    EXPECT_TRUE(std::filesystem::exists(tmp.file(std::string("p.") + site + ".svg"))) << site;
}

TEST(PatchCli, BadInputIsOneLine) {
  auto one_line = [](const lmscope::testing_util::CliRun& r, const std::string& needle) {
    EXPECT_NE(r.code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  one_line(tool("lmscope-patch", "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2 --metric 'prob:#5'"),
           "clean prompt has 3 tokens, corrupted 2");
  one_line(tool("lmscope-patch", "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 --metric 'prob:golden fish'"),
           "the metric needs one");
  one_line(tool("lmscope-patch", "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 --metric 'prob:#5' --sites attn.foo"),
           "unknown site 'attn.foo'");
  const std::string short_args = "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 ";
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#5' --sites ''"), "--sites: no site given");
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#99999999999'"), "#99999999999 is not a token id");
  // the wider sites and lib/grad's metric grammar
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#5' --sites kv.k"), "unknown site 'kv.k'");
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#5' --sites resid_pre:head"), "resid_pre has no axis 'head'");
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#5' --sites ffn.act:neuron=170:180"), "neurons outside 0..175");
  one_line(tool("lmscope-patch", short_args + "--metric 'logprob:pos=3:5'"), "position 3 is outside the prompt");
  one_line(tool("lmscope-patch", short_args + "--metric 'loss:1:5'"), "is outside the prompt's 2 predicted positions");
  one_line(tool("lmscope-patch", short_args + "--metric 'logit_diff:pos=-1:5,1024'"), "token id 1024 is outside the vocabulary (1024)");
  one_line(tool("lmscope-patch", short_args + "--metric 'entropy:pos=-1'"), "unknown metric 'entropy'");
}

TEST(PatchCli, OutputsThatAreNotRegularFilesAreRefusedBeforeTheSweep) {
  // A FIFO would block the writer forever; a symlink would have its target overwritten.
  lmscope::testing_util::TempDir tmp;
  const std::string fifo = tmp.file("fifo.json"), target = tmp.file("target.txt"), link = tmp.file("link.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(target) << "keep me\n";
  std::filesystem::create_symlink(target, link);
  const std::string args = "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 --metric 'prob:#5' ";
  for (const std::string& opt : {"--json " + fifo, "--json " + link, "--svg " + tmp.file("link") + " --sites resid_pre"}) {
    if (opt.rfind("--svg", 0) == 0) std::filesystem::create_symlink(target, tmp.file("link.resid_pre.svg"));
    const auto r = tool("lmscope-patch", args + opt);
    EXPECT_EQ(r.code, 1) << opt << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("cannot write '"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("cells in"), std::string::npos) << opt << ": the sweep ran";
  }
  std::ifstream in(target);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "keep me");
}

// --method both on the pair of golden/grad/attribution-patching-tiny-qwen2.json: the attribution
// column equals the same estimate written in torch (golden/make_grad_refs.py: HF float64 and
// autograd) within 1e-3 of the largest |cell| (docs/gradients.md: each cell is a dot of an
// activation difference with a gradient, each held to torch at 2e-4 of its largest value;
// measured 1.1e-5). attn.z's cell is a head at every position: torch's [L, T, H] summed over T.
TEST(PatchCli, AttributionEstimateEqualsTheTorchSweep) {
  std::ifstream gf(kRoot + "/golden/grad/attribution-patching-tiny-qwen2.json");
  const nlohmann::json ref = nlohmann::json::parse(gf);
  auto ids = [](const nlohmann::json& a) {
    std::string s;
    for (const auto& v : a) {
      if (!s.empty()) s += ',';
      s += std::to_string(v.get<int>());
    }
    return s;
  };
  lmscope::testing_util::TempDir tmp;
  const auto r = tool("lmscope-patch", "--model " + kRoot + "/" + ref["model"].get<std::string>() + " --clean-ids " +
                                           ids(ref["clean"]) + " --corrupt-ids " + ids(ref["corrupted"]) + " --metric '" +
                                           ref["metric"].get<std::string>() + "' --method both --json " + tmp.file("p.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("attn_out: Pearson r "), std::string::npos) << r.out;
  std::ifstream f(tmp.file("p.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  const double span = j["clean_metric"].get<double>() - j["corrupt_metric"].get<double>();
  for (const auto& [site, want] : ref["estimate"].items()) {
    const auto& got = j["sites"][site];
    ASSERT_EQ(got["attribution"].size(), want.size()) << site;
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
      ASSERT_EQ(got["attribution"][l].size(), w.size()) << site;
      for (size_t c = 0; c < w.size(); ++c) {
        const double est = got["attribution"][l][c].get<double>();
        worst = std::max(worst, std::abs(est - w[c]));
        largest = std::max(largest, std::abs(w[c]));
        EXPECT_NEAR(got["attribution_normalized"][l][c].get<double>(), est / span, 1e-9 * std::abs(est / span) + 1e-12);
      }
    }
    EXPECT_LE(worst, 1e-3 * largest) << site << ": worst " << worst << " of max |cell| " << largest;
    EXPECT_TRUE(got["pearson"].is_number()) << site;
  }
  // Positions before the first differing token (8) have no activation difference: exactly 0.
  for (const auto& row : j["sites"]["resid_pre"]["attribution"])
    for (int p = 0; p < 8; ++p) EXPECT_EQ(row[p].get<double>(), 0.0);
}

TEST(PatchCli, AttributionAloneRunsNoPatchedForward) {
  lmscope::testing_util::TempDir tmp;
  const auto r = tool("lmscope-patch", kArgs + " --method attribution --sites resid_pre --json " + tmp.file("p.json") +
                                           " --svg " + tmp.file("p"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("forwards ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attribution estimate, normalized"), std::string::npos) << r.out;
  std::ifstream f(tmp.file("p.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_FALSE(j["sites"]["resid_pre"].contains("normalized"));
  EXPECT_EQ(j["sites"]["resid_pre"]["attribution"].size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(tmp.file("p.resid_pre.attribution.svg")));
  EXPECT_FALSE(std::filesystem::exists(tmp.file("p.resid_pre.svg")));
}
