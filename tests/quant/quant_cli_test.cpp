// lmscope-quant's command line: the identity scheme reports zero error through the whole
// machinery, coarser schemes report more error than finer ones, the report's numbers agree with
// what they summarize, and bad input is one line on stderr with exit status 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

using lmscope::testing_util::CliRun;
using lmscope::testing_util::run_cli;

namespace {

const std::string kTiny = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";
const std::string kSmol = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kTool = std::string(LMSCOPE_BINARY_DIR) + "/lmscope-quant";
const std::string kText = "--prompt 'The golden fish spoke to the old man.'";

CliRun quant(const std::string& model, const std::string& args) { return run_cli(kTool + " --model " + model + " " + args); }

nlohmann::json quant_json(const std::string& model, const std::string& args) {
  CliRun r = quant(model, args + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

void expect_one_line_error(const CliRun& r, const std::string& part) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("lmscope-quant: error: " + part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("lmscope_quant_" + name);
  std::ofstream(p) << text;
  return p.string();
}

void expect_identity(const nlohmann::json& s) {
  for (const auto& l : s["layers"])
    for (auto it = l.begin(); it != l.end(); ++it)
      if (it.key() != "layer") {
        EXPECT_EQ(it.value().get<double>(), 0.0) << it.key() << " at layer " << l["layer"];
      }
  EXPECT_EQ(s["logits_error"].get<double>(), 0.0);
  EXPECT_EQ(s["mean_kl"].get<double>(), 0.0);
  EXPECT_EQ(s["top1_agreement"].get<double>(), 1.0);
}

}  // namespace

TEST(QuantCli, IdentitySchemeHasZeroErrorEverywhere) {
  // tiny-qwen2 has no GGUF blocks: gguf-blocks copies the float32 weights, and the copy must
  // come out of the machinery (weights, backend, hooks, comparison) with zero error.
  nlohmann::json j = quant_json(kTiny, kText + " --scheme gguf-blocks");
  ASSERT_EQ(j["schemes"].size(), 1u);
  expect_identity(j["schemes"][0]);
  EXPECT_EQ(j["schemes"][0]["perplexity"], j["reference"]["perplexity"]);
}

TEST(QuantCli, SmolLM2StoredBlocksAreTheIdentity) {
  if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << kSmol << " is absent (scripts/fetch-model.sh fetches it)";
  nlohmann::json j = quant_json(kSmol, "--prompt 'What is the capital of France?' --scheme gguf-blocks --scheme w8a8");
  expect_identity(j["schemes"][0]);
  // Q4_1 as stored: 20 bytes per 32 weights in the linears, fewer bytes than w8a8's int8.
  EXPECT_LT(j["schemes"][0]["bytes"].get<int64_t>(), j["schemes"][1]["bytes"].get<int64_t>());
  EXPECT_GT(j["schemes"][1]["mean_kl"].get<double>(), 0.0);
}

TEST(QuantCli, CoarserSchemesErrMoreAndTheSummaryMatchesThePositions) {
  nlohmann::json j = quant_json(kTiny, kText + " --scheme w8-channel --scheme w4-group --scheme w8a8");
  const auto& s = j["schemes"];
  ASSERT_EQ(s.size(), 3u);
  ASSERT_EQ(s[0]["layers"].size(), 3u);
  const auto last = [&](int i) { return s[i]["layers"][2]["resid_post"].get<double>(); };
  EXPECT_GT(last(0), 0.0);
  EXPECT_GT(last(1), last(0));   // 4-bit groups vs 8-bit rows
  EXPECT_GT(last(2), last(0));   // quantizing activations as well adds error
  const int64_t fbytes = j["reference"]["bytes"].get<int64_t>();
  EXPECT_LT(s[1]["bytes"].get<int64_t>(), s[0]["bytes"].get<int64_t>());
  EXPECT_LT(s[0]["bytes"].get<int64_t>(), fbytes);
  for (const auto& sc : s) {
    double sum = 0, agree = 0;
    for (const auto& p : sc["positions"]) {
      EXPECT_GE(p["kl"].get<double>(), 0.0);
      sum += p["kl"].get<double>();
      agree += p["top1"] == p["ref_top1"];
    }
    const double n = double(sc["positions"].size());
    EXPECT_NEAR(sc["mean_kl"].get<double>(), sum / n, 1e-12);
    EXPECT_DOUBLE_EQ(sc["top1_agreement"].get<double>(), agree / n);
  }
}

TEST(QuantCli, StdScaleSaturatesAndStaticCalibrationRuns) {
  const std::string cal = temp_file("cal.txt", "Hello world!\n\nI love pizza.\n");
  nlohmann::json j = quant_json(kTiny, kText + " --scheme w8-std --scheme w8-channel --scheme a8-static --calibrate " + cal);
  EXPECT_GT(j["schemes"][0]["saturated_weights"].get<int64_t>(), 0);   // 3 std clips a normal's tails
  EXPECT_EQ(j["schemes"][1]["saturated_weights"].get<int64_t>(), 0);   // max|W| never clips
  EXPECT_EQ(j["schemes"][2]["calibration_prompts"].get<int>(), 2);     // the blank line is skipped
}

TEST(QuantCli, QuantizingNormsAddsError) {
  nlohmann::json keep = quant_json(kTiny, kText + " --scheme w4-group");
  nlohmann::json off = quant_json(kTiny, kText + " --scheme w4-group --quantize-norms");
  EXPECT_FALSE(off["keep_norms_float"].get<bool>());
  EXPECT_NE(keep["schemes"][0]["layers"][0]["attn_norm"], off["schemes"][0]["layers"][0]["attn_norm"]);
  EXPECT_EQ(off["schemes"][0]["matrices"].size(), 3u * 9u);   // 7 linears + 2 norms per layer
}

TEST(QuantCli, SvgHasALinePerScheme) {
  const std::string svg = (std::filesystem::temp_directory_path() / "lmscope_quant_err.svg").string();
  CliRun r = quant(kTiny, kText + " --scheme w8-channel --scheme w4-group --svg " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string s = lmscope::testing_util::read_text(svg);
  size_t lines = 0;
  for (size_t at = 0; (at = s.find("<polyline", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(s.find(">layer</text>"), std::string::npos);
  EXPECT_NE(s.find(">w4-group</text>"), std::string::npos);
}

TEST(QuantCli, BadInputIsOneLine) {
  expect_one_line_error(quant(kTiny, kText + " --scheme w3"), "--scheme: unknown scheme 'w3' (known: w8-channel");
  expect_one_line_error(quant(kTiny, kText + " --scheme a8-static --calibrate /nonexistent/cal.txt"),
                        "--calibrate '/nonexistent/cal.txt': No such file or directory");
  expect_one_line_error(quant(kTiny, kText + " --scheme a8-static --calibrate " + temp_file("empty.txt", "\n \n")),
                        "--calibrate: '");
  expect_one_line_error(quant(kTiny, kText + " --scheme a8-static"), "--scheme a8-static needs calibration prompts");
  expect_one_line_error(quant(kTiny, "--prompt-ids 5 --scheme w8-channel"), "the text has 1 token(s)");
  // 129 tokens on a model of 128 positions (max_position_embeddings): ran, rc 0, before.
  std::string ids = "1";
  for (int i = 1; i < 129; ++i) ids += ",1";
  expect_one_line_error(quant(kTiny, "--prompt-ids " + ids + " --scheme w8-channel"),
                        "the text has 129 tokens, more than max_position_embeddings 128 (config.json)");
  expect_one_line_error(quant(kTiny, "--text-file /nonexistent/t.txt --scheme w8-channel"), "--text-file '/nonexistent/t.txt': No such file or directory");
}

TEST(QuantCli, TracePrefixWritesTeacherAndStudentForDistillation) {
  // The float32 run and the scheme's, traced: lmscope-diff --kl-temperature 1 over them gives
  // the mean KL lmscope-quant reports (the same logits, from the same decoders).
  const std::string prefix = (std::filesystem::temp_directory_path() / "lmscope_quant_tp").string();
  nlohmann::json j = quant_json(kTiny, kText + " --scheme w4-group --trace-prefix " + prefix);
  ASSERT_TRUE(std::filesystem::exists(prefix + ".float32.h5"));
  ASSERT_TRUE(std::filesystem::exists(prefix + ".w4-group.h5"));
  CliRun d = run_cli(std::string(LMSCOPE_BINARY_DIR) + "/lmscope-diff " + prefix + ".w4-group.h5 " + prefix +
                     ".float32.h5 --json --kl-temperature 1");
  ASSERT_EQ(d.code, 0) << d.err;
  const double kl = nlohmann::json::parse(d.out)["temperatures"][0]["mean_kl"].get<double>();
  const double want = j["schemes"][0]["mean_kl"].get<double>();
  EXPECT_GT(want, 0.0);
  EXPECT_NEAR(kl, want, 1e-4 * want);   // the prefill's logits may differ from ours in the last bits
  std::filesystem::remove(prefix + ".float32.h5");
  std::filesystem::remove(prefix + ".w4-group.h5");
}
