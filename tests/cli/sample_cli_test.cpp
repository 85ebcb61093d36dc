// lmscope-sample on the tiny model: the stages, the sweep and the draws agree with the sampler
// they come from; and the sampling options HF refuses are usage errors in both tools that
// take them (lmscope-sample, lmscope-trace).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "generate/sampler.h"
#include "tests/cli/cli_test_util.h"

namespace {

const std::string kTiny = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";
const std::string kModel = "--model " + kTiny + " --prompt 'The golden fish spoke to the old man.' ";

TEST(SampleCli, JsonStagesSweepAndDraws) {
  auto r = tool("lmscope-sample", kModel + "--temperature 0.7 --top-k 20 --top-p 0.9 --min-p 0.05 "
                                            "--repetition-penalty 1.3 --sweep 0.2,1,1.5 --draws 2000 --seed 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& st = j["stages"];
  ASSERT_EQ(st.size(), 6u);
  const char* names[] = {"raw", "repetition_penalty", "temperature", "top_k", "top_p", "min_p"};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(st[i]["stage"], names[i]);
    EXPECT_TRUE(st[i]["active"].get<bool>());
  }
  EXPECT_EQ(st[0]["survivors"], 1024);
  EXPECT_EQ(st[3]["survivors"], 20);
  // top-p keeps at least top_p of the mass top-k left (it renormalizes the top-k survivors first)
  EXPECT_GE(st[4]["kept_mass"].get<double>(), 0.9 * st[3]["kept_mass"].get<double>());
  EXPECT_LT(st[4]["kept_mass"].get<double>(), st[3]["kept_mass"].get<double>());
  EXPECT_LT(st[2]["entropy_bits"].get<double>(), st[1]["entropy_bits"].get<double>());   // T < 1 sharpens
  // The final stage is what the Sampler would sample: the same processors run here.
  const auto& d = j["draws"];
  int64_t total = 0;
  double pmass = 0;
  for (const auto& c : d["counts"]) {
    total += c["count"].get<int64_t>();
    pmass += c["p"].get<double>();
    if (c["p"].get<double>() == 0) {
      EXPECT_EQ(c["count"], 0) << "a cut token was drawn";
    }
  }
  EXPECT_EQ(total, 2000);
  EXPECT_NEAR(pmass, 1.0, 1e-9);
  EXPECT_EQ(d["counts"].size(), st[5]["survivors"].get<size_t>());
  EXPECT_GT(d["p_value"].get<double>(), 1e-4);
  ASSERT_EQ(j["sweep"].size(), 3u);
  EXPECT_LT(j["sweep"][0]["entropy_bits"].get<double>(), j["sweep"][2]["entropy_bits"].get<double>());
  // The same seed, the same draws.
  auto again = tool("lmscope-sample", kModel + "--temperature 0.7 --top-k 20 --top-p 0.9 --min-p 0.05 "
                                                "--repetition-penalty 1.3 --sweep 0.2,1,1.5 --draws 2000 --seed 3 --json");
  EXPECT_EQ(nlohmann::json::parse(again.out)["draws"], d);
}

TEST(SampleCli, TextReport) {
  auto r = tool("lmscope-sample", kModel + "--top-k 5 --draws 100 --seed 1 --top 3");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"1. raw softmax: entropy", "4. top-k 5: entropy", "5 survivors", "5. top-p (off): entropy",
                        "   (off: as above)", "100 draws, seed 1", "chi-square", "dof 4"})
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing '" << s << "' in:\n" << r.out;
}

// Bad sampling settings: HF's rules (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
// MinPLogitsWarper raise ValueError), one usage line naming the option, exit 2.
TEST(SampleCli, BadSamplingOptionsAreUsageErrors) {
  const std::string trace = "--model " + kTiny + " --prompt-ids 1,2 --do-sample ";
  struct Case {
    const char* opts;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"--temperature 0", {"--temperature", "> 0", "greedy"}},
      {"--temperature -0.5", {"--temperature", "> 0"}},
      {"--temperature nan", {"--temperature", "finite"}},
      {"--top-p 1.5", {"--top-p", "[0, 1]"}},
      {"--top-p -0.1", {"--top-p", "[0, 1]"}},
      {"--top-k -1", {"--top-k", ">= 0"}},
      {"--min-p 2", {"--min-p", "[0, 1]"}},
      {"--min-p -1", {"--min-p", "[0, 1]"}},
      {"--repetition-penalty 0", {"--repetition-penalty", "> 0"}},
      {"--seed 18446744073709551616", {"--seed", "over 2^64-1"}},   // was clamped to 2^64-1 silently
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.opts);
    expect_usage_error(tool("lmscope-trace", trace + c.opts), "lmscope-trace", c.needles);
    expect_usage_error(tool("lmscope-sample", kModel + c.opts), "lmscope-sample", c.needles);
  }
  expect_usage_error(tool("lmscope-trace", trace + "--stop ''"), "lmscope-trace", {"--stop", "empty"});
  expect_usage_error(tool("lmscope-trace", trace + "--stop 'a\\q'"), "lmscope-trace", {"--stop", "unknown escape"});
  // As --prompt refuses it: bytes that are not UTF-8 could never be matched in decoded text.
  expect_usage_error(tool("lmscope-trace", trace + "--stop \"$(printf 'a\\377')\""), "lmscope-trace", {"--stop", "not valid UTF-8"});
  expect_usage_error(tool("lmscope-trace", trace + "--pad-id -1"), "lmscope-trace", {"--pad-id"});   // was ignored
  expect_usage_error(tool("lmscope-trace", trace + "--max-new-tokens 0"), "lmscope-trace", {"--max-new-tokens"});
  expect_usage_error(tool("lmscope-sample", kModel + "--sweep 0.5,0"), "lmscope-sample", {"--sweep", "'0'"});
  expect_usage_error(tool("lmscope-sample", kModel + "--sweep 0.5,,1"), "lmscope-sample", {"--sweep"});
  expect_usage_error(tool("lmscope-sample", kModel + "--draws 0"), "lmscope-sample", {"--draws"});
  expect_usage_error(tool("lmscope-sample", kModel + "--draws 1000001"), "lmscope-sample", {"--draws", "1000000"});
  expect_usage_error(tool("lmscope-sample", "--model " + kTiny), "lmscope-sample", {"one prompt"});
  // Greedy ignores the temperature, as HF does (it only warns): temperature 0 without --do-sample runs.
  auto greedy = tool("lmscope-trace", "-q --model " + kTiny + " --prompt-ids 1,2 --temperature 0 --max-new-tokens 2");
  EXPECT_EQ(greedy.code, 0) << greedy.err;
}

TEST(SampleCli, TopPZeroIsGreedyAsInHF) {
  // HF accepts top_p = 0: every cumulative probability is <= 1 - 0, so only min_tokens_to_keep
  // (the best token) stays, and sampling then always draws it.
  const std::string m = "-q --model " + kTiny + " --prompt-ids 330,749,537,264,935 --max-new-tokens 6 ";
  auto greedy = tool("lmscope-trace", m);
  auto top0 = tool("lmscope-trace", m + "--do-sample --top-p 0 --seed 5");
  ASSERT_EQ(greedy.code, 0) << greedy.err;
  ASSERT_EQ(top0.code, 0) << top0.err;
  EXPECT_EQ(greedy.out, top0.out);
}

}  // namespace
