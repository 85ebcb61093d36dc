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
  one_line(tool("lmscope-patch", "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 --metric 'prob:#5' --sites attn.q"),
           "unknown site 'attn.q'");
  const std::string short_args = "--model " + kRoot + "/golden/models/tiny-qwen2 --clean-ids 1,2,3 --corrupt-ids 1,2,4 ";
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#5' --sites ''"), "--sites: no site given");
  one_line(tool("lmscope-patch", short_args + "--metric 'prob:#99999999999'"), "#99999999999 is not a token id");
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
