// lmscope-lens and lmscope-trace --lens from the command line, on golden/models/tiny-qwen2:
// the printed lens against HF's (golden/lens/tiny-qwen2-lens.h5, golden/make_lens_refs.py), and
// bad input as one line on stderr (usage errors exit 2), never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using testing_util::CliRun;
using testing_util::run_cli;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";
const std::string kPromptA = "330,749,537,264,935,314,267,681,289,295,16";   // golden/traces' prompt a

CliRun lens(const std::string& args) { return run_cli(kBin + "/lmscope-lens --model " + kTiny + " " + args); }

void expect_usage_error(const CliRun& r, const std::string& tool, const std::string& part) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(tool + ": error: " + part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

// Each printed column is the last row of HF's lens at that step: the same top 10 ids, their
// probabilities within the topk_probs tolerance (docs/tolerances.md: 1e-5 + 1e-4 x 1).
TEST(LensCli, JsonMatchesHFLensAtEveryPredictingPosition) {
  CliRun r = lens("--prompt-ids " + kPromptA + " --max-new-tokens 2 --top 10 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const TraceReader hf(kRoot + "/golden/lens/tiny-qwen2-lens.h5");
  ASSERT_EQ(j["positions"].size(), size_t(hf.n_steps()));
  for (int step = 0; step < hf.n_steps(); ++step) {
    const auto& col = j["positions"][size_t(step)];
    EXPECT_EQ(col["position"], 10 + step);
    ASSERT_EQ(col["layers"].size(), 3u);
    for (int l = 0; l < 3; ++l) {
      const std::string p = "lens.layers." + std::to_string(l) + ".";
      const HookData ids = hf.read(step, p + "topk_ids"), probs = hf.read(step, p + "topk_probs");
      const int64_t T = ids.shape[1], K = ids.shape[2];
      const auto& ours = col["layers"][size_t(l)];
      ASSERT_EQ(ours["ids"].size(), size_t(K));
      for (int64_t k = 0; k < K; ++k) {
        EXPECT_EQ(ours["ids"][size_t(k)].get<double>(), ids.values[size_t((T - 1) * K + k)]) << p << " step " << step;
        EXPECT_NEAR(ours["probs"][size_t(k)].get<double>(), probs.values[size_t((T - 1) * K + k)], 1.1e-4);
      }
    }
    // The last layer's lens is the prediction: its top token is what greedy generation chose.
    EXPECT_EQ(col["layers"][2]["ids"][0], col["chosen_id"]);
    EXPECT_NE(col["settles_at_layer"].get<int>(), -1);
  }
}

TEST(LensCli, GridHasARowPerLayerAndTheSummary) {
  CliRun r = lens("--prompt-ids " + kPromptA + " --max-new-tokens 2 --layers 1-2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("position    10"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n    0       "), std::string::npos) << r.out;   // layer 0 not asked for
  EXPECT_NE(r.out.find("\n    1       "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n    2       "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(* = the token generation chose there)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": top token first at layer "), std::string::npos) << r.out;
}

TEST(LensCli, BadInputIsOneLine) {
  expect_usage_error(lens("--prompt-ids 1,2 --top 0"), "lmscope-lens", "--top must be at least 1");
  expect_usage_error(lens("--prompt-ids 1,2 --max-new-tokens 0"), "lmscope-lens", "--max-new-tokens must be at least 1");
  expect_usage_error(lens("--prompt-ids 1,2 --prompt-ids 3,4"), "lmscope-lens", "one prompt at a time");
  CliRun bad_layer = lens("--prompt-ids 1,2 --layers 7");
  EXPECT_EQ(bad_layer.code, 1) << bad_layer.err;
  EXPECT_NE(bad_layer.err.find("lmscope-lens: error: --layers: layer 7 does not exist"), std::string::npos) << bad_layer.err;
  EXPECT_EQ(std::count(bad_layer.err.begin(), bad_layer.err.end(), '\n'), 1) << bad_layer.err;

  const std::string trace = kBin + "/lmscope-trace -q --model " + kTiny + " --prompt-ids 1,2 ";
  expect_usage_error(run_cli(trace + "--lens 0 --out x.h5"), "lmscope-trace", "--lens: K must be at least 1");
  expect_usage_error(run_cli(trace + "--lens 3"), "lmscope-trace", "--lens writes lens.* hooks into the trace: give --out");
}

// --lens K adds the tokens and the top K of every layer, K wide, to the hooks: to the default
// ones (the report's attention too), or to --hooks 'tokens.*' for a lens-only trace.
TEST(LensCli, TraceLensAddsTopKToTheHooks) {
  testing_util::TempDir tmp;
  auto traced = [&](const std::string& hooks_arg) {
    const std::string out = tmp.file("lens.h5");
    std::filesystem::remove(out);
    CliRun r = run_cli(kBin + "/lmscope-trace -q --model " + kTiny + " --prompt-ids " + kPromptA +
                       " --max-new-tokens 1 --lens 4 " + hooks_arg + " --out " + out);
    EXPECT_EQ(r.code, 0) << r.err;
    const TraceReader t(out);
    EXPECT_EQ(t.read(0, "lens.layers.1.topk_ids").shape, (Shape{1, 11, 4}));
    std::vector<std::string> hooks = t.hooks(0);
    std::sort(hooks.begin(), hooks.end());
    return hooks;
  };
  std::vector<std::string> want = {"tokens.attention_mask", "tokens.input_ids", "tokens.position_ids"};
  for (int l = 0; l < 3; ++l)
    for (const char* h : {".topk_ids", ".topk_probs"}) want.push_back("lens.layers." + std::to_string(l) + h);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(traced("--hooks 'tokens.*'"), want);
  const std::vector<std::string> with_defaults = traced("");
  for (const std::string& h : want) EXPECT_TRUE(std::count(with_defaults.begin(), with_defaults.end(), h)) << h;
  for (const char* h : {"layers.2.attn.probs", "logits", "mask.combined"})
    EXPECT_TRUE(std::count(with_defaults.begin(), with_defaults.end(), h)) << h << " (a default hook)";
}
