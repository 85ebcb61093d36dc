// Trace alignment (compare/align.h) and the tools that use it, as a person runs them:
// lmscope-diff --row (a padded row against a solo run), lmscope-diff on cached against uncached
// traces (last position, automatic), lmscope-padding --json and lmscope-cache --json.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "compare/align.h"
#include "tests/experiments/exp_util.h"

using namespace lmscope;
using namespace lmscope::exp_test;

namespace {

HookData make(const std::string& hook, std::vector<std::string> axes, Shape shape) {
  HookData d;
  d.hook = hook;
  d.axes = std::move(axes);
  d.shape = std::move(shape);
  d.values.resize(size_t(shape_numel(d.shape)));
  for (size_t i = 0; i < d.values.size(); ++i) d.values[i] = double(i);
  return d;
}

const std::string kTrace = kBin + "/lmscope-trace", kDiff = kBin + "/lmscope-diff",
                  kPadding = kBin + "/lmscope-padding", kCache = kBin + "/lmscope-cache";

}  // namespace

TEST(Align, TakeAlongKeepsTheGivenIndices) {
  HookData d = make("x", {"B", "T", "D"}, {2, 3, 2});   // values 0..11
  HookData t = take_along(d, 1, {2, 0});
  EXPECT_EQ(t.shape, (Shape{2, 2, 2}));
  EXPECT_EQ(t.values, (std::vector<double>{4, 5, 0, 1, 10, 11, 6, 7}));
  EXPECT_THROW(take_along(d, 3, {0}), std::logic_error);
}

TEST(Align, StripPadsDropsPadQueryRowsAndPadKeyColumns) {
  // Row 1 of a left-padded batch: columns 0-1 are pads, 2-4 real. Scores [B,H,T,S] of a prefill.
  HookData sc = make("layers.0.attn.scores", {"B", "H", "T", "S"}, {2, 1, 5, 5});
  HookData s = strip_pads(sc, 1, {0, 0, 1, 1, 1});
  EXPECT_EQ(s.shape, (Shape{1, 1, 3, 3}));
  // row 1 starts at 25; query 2 key 2 = 25 + 2*5 + 2 = 37
  EXPECT_EQ(s.values[0], 37);
  EXPECT_EQ(s.values[8], 25 + 4 * 5 + 4);
  // A decode step (T = 1, S = 6): the new column is real.
  HookData q = make("layers.0.attn.q", {"B", "H", "T", "hd"}, {2, 2, 1, 3});
  EXPECT_EQ(strip_pads(q, 0, {0, 0, 1, 1, 1, 1}).shape, (Shape{1, 2, 1, 3}));
  // Right padding with new tokens after the pads: the pads sit in the middle.
  HookData kv = make("kv.0.k", {"B", "Hkv", "S", "hd"}, {1, 1, 6, 1});
  EXPECT_EQ(strip_pads(kv, 0, {1, 1, 0, 0, 1, 1}).values, (std::vector<double>{0, 1, 4, 5}));
  // Tensors without B or T pass through (only the row is selected).
  HookData u = make("sample.u", {"B"}, {2});
  EXPECT_EQ(strip_pads(u, 1, {1, 1}).values, (std::vector<double>{1}));
}

TEST(Align, LastPositionsAndTheCacheCounterparts) {
  HookData l = make("logits", {"B", "T", "V"}, {1, 4, 2});
  EXPECT_EQ(last_positions(l, 1).values, (std::vector<double>{6, 7}));
  EXPECT_EQ(last_positions(l, 9).shape, l.shape);
  EXPECT_EQ(*uncached_counterpart("kv.3.k"), "layers.3.attn.k_rope");
  EXPECT_EQ(*uncached_counterpart("kv.0.v"), "layers.0.attn.v");
  EXPECT_FALSE(uncached_counterpart("layers.0.attn.k"));
}

class AlignCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& t : {kTrace, kDiff, kPadding, kCache})
      ASSERT_TRUE(std::filesystem::exists(t)) << t << " is not built";
  }
  RunResult run(const std::string& cmd) { return run_cmd(dir, cmd); }
  std::string trace(const std::string& name, const std::string& args) {
    const std::string out = dir.file(name);
    // Every hook unless the case picks some: the alignment cases compare kv.* and attn.v.
    const std::string hooks = args.find("--hooks") == std::string::npos ? " --hooks '*'" : "";
    RunResult r = run(kTrace + " --model " + kTiny + " -q " + args + hooks + " --out " + out);
    EXPECT_EQ(r.code, 0) << r.err;
    return out;
  }
  testing_util::TempDir dir;
};

TEST_F(AlignCli, APaddedRowAgainstItsSoloRun) {
  const std::string a = "--prompt-ids 42,308,333,746,3", b = "--prompt-ids 43,392,346,287,382,962,676,3";
  const std::string solo = trace("solo.h5", a + " --max-new-tokens 3");
  const std::string left = trace("left.h5", a + " " + b + " --max-new-tokens 3");
  const std::string right = trace("right.h5", a + " " + b + " --max-new-tokens 3 --padding-side right");
  // Without alignment the shapes differ.
  EXPECT_EQ(run(kDiff + " " + left + " " + solo).code, 1);
  RunResult l = run(kDiff + " " + left + " " + solo + " --row 0");
  EXPECT_EQ(l.code, 0) << l.out;
  EXPECT_NE(l.out.find("aligned: row 0 of A (pads stripped) vs row 0 of the reference"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("hooks pass"), std::string::npos);
  RunResult r = run(kDiff + " " + right + " " + solo + " --row 0 --json");
  EXPECT_EQ(r.code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["alignment"], "row 0 of A (pads stripped) vs row 0 of the reference");
  EXPECT_FALSE(j["pass"].get<bool>());
  EXPECT_EQ(j["first_failure"]["step"], 0);
  EXPECT_EQ(j["first_failure"]["hook"].get<std::string>().rfind("sample.", 0), 0u);
  RunResult bad = run(kDiff + " " + left + " " + solo + " --row 5");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--row 5: A has 2 rows"), std::string::npos) << bad.err;
  // Without the attention mask there is nothing to strip the pads with: said, not guessed.
  const std::string nomask = trace("nomask.h5", a + " " + b + " --max-new-tokens 3 --padding-side right --hooks logits");
  RunResult nm = run(kDiff + " " + nomask + " " + solo + " --row 0 --hooks logits");
  EXPECT_EQ(nm.code, 2) << nm.out;
  EXPECT_NE(nm.err.find("row alignment strips pads through tokens.attention_mask"), std::string::npos) << nm.err;
}

TEST_F(AlignCli, CachedAgainstUncachedAtTheLastPosition) {
  const std::string p = "--prompt-ids 5,6,7,8,9,10 --max-new-tokens 4";
  const std::string c = trace("c.h5", p), u = trace("u.h5", p + " --no-cache");
  for (const auto& [x, y] : {std::pair{c, u}, std::pair{u, c}}) {
    RunResult r = run(kDiff + " " + x + " " + y);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("(automatic: use_cache differs)"), std::string::npos);
    EXPECT_NE(r.out.find("kv.2.v"), std::string::npos) << r.out;   // the cache vs the recomputed v
  }
  EXPECT_EQ(run(kDiff + " " + c + " " + u + " --no-align").code, 1);
  // Ours against the HF golden of the uncached run, with a tolerance file.
  std::ofstream(dir.file("tol.json")) << R"({"logits": {"atol": 1e-4, "rtol": 1e-3}})";
  const std::string g = kRoot + "/golden/traces/tiny-qwen2-c.h5";
  const std::string mine = trace("mine.h5", "--prompt-ids 330,749,537,264,935,314,267,681,289,295,16 --max-new-tokens 8");
  RunResult gr = run(kDiff + " " + mine + " " + g + " --tolerances " + dir.file("tol.json"));
  EXPECT_EQ(gr.code, 0) << gr.out;
}

TEST_F(AlignCli, PaddingToolJsonAndErrors) {
  RunResult r = run(kPadding + " --model " + kTiny +
                    " --prompt 'Hello, how are you?' --prompt \"I'm doing well, thank you!\" --chat --chat-format chatml"
                    " --max-new-tokens 6 --out-dir " + dir.file("pad") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["prompt"], "Hello, how are you?");
  EXPECT_TRUE(j["rows"][0]["modes"]["left"]["matches_solo"].get<bool>());
  EXPECT_TRUE(std::filesystem::exists(dir.file("pad/divergence.svg")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("pad/right_hf.h5")));
  RunResult text = run(kPadding + " --model " + kTiny + " --prompt-ids 1,2,3 --prompt-ids 4,5 --max-new-tokens 2 --out-dir " +
                       dir.file("pad2"));
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("first new token predicted from the PAD at column 2"), std::string::npos) << text.out;
  // A subset of hooks: the mask is traced anyway, so the rows still line up.
  RunResult sub = run(kPadding + " --model " + kTiny + " --prompt-ids 1,2,3 --prompt-ids 4,5,6,7,8 --max-new-tokens 4" +
                      " --hooks 'layers.*.resid_post,logits,sample.*' --layers 0-1 --modes left,right_hf --json --out-dir " +
                      dir.file("pad5"));
  ASSERT_EQ(sub.code, 0) << sub.err;
  nlohmann::json js = nlohmann::json::parse(sub.out);
  EXPECT_TRUE(js["rows"][0]["modes"]["left"]["matches_solo"].get<bool>());
  EXPECT_EQ(js["rows"][0]["modes"]["right_hf"]["first_divergence"]["step"], 0);
  EXPECT_EQ(js["rows"][0]["modes"]["right_hf"]["first_divergence"]["hook"].get<std::string>().rfind("sample.", 0), 0u)
      << js["rows"][0]["modes"]["right_hf"]["first_divergence"];
  RunResult one = run(kPadding + " --model " + kTiny + " --prompt-ids 1,2,3 --out-dir " + dir.file("pad3"));
  EXPECT_EQ(one.code, 1);
  EXPECT_EQ(one.err, "lmscope-padding: error: the padding experiment needs at least two prompts\n");
  RunResult mode = run(kPadding + " --model " + kTiny + " --prompt-ids 1 --prompt-ids 2,3 --modes up --out-dir " +
                       dir.file("pad4"));
  EXPECT_EQ(mode.code, 1);
  EXPECT_NE(mode.err.find("--modes: 'up' is not one of"), std::string::npos) << mode.err;
}

TEST_F(AlignCli, CacheToolJsonAndFaults) {
  RunResult r = run(kCache + " --model " + kTiny + " --prompt-len 30 --max-new-tokens 8 --json --repeat 1");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* k : {"steps", "max_logit_diff", "argmax_agree", "tokens_processed", "kv_bytes", "seconds"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["tokens_processed"]["cached"], j["tokens_processed_expected"]["cached"]);
  EXPECT_EQ(j["tokens_processed"]["uncached"], j["tokens_processed_expected"]["uncached"]);
  EXPECT_EQ(j["argmax_agree"], j["steps"]);
  EXPECT_EQ(j["verdict"], "agree");
  EXPECT_TRUE(j["seconds"]["cached"].is_number());
  RunResult f = run(kCache + " --model " + kTiny + " --prompt-len 30 --max-new-tokens 8 --fault position --no-timing");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("detected: step 1, tokens.position_ids; layer 0, layers.0.attn.q_rope  (where it first acts)"),
            std::string::npos)
      << f.out;
  EXPECT_NE(f.out.find("verdict: bug"), std::string::npos);
  RunResult bad = run(kCache + " --model " + kTiny + " --prompt-len 30 --fault rope");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "lmscope-cache: error: --fault: 'rope' is not one of none, position, append, mask\n");
  RunResult none = run(kCache + " --model " + kTiny);
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.err, "lmscope-cache: error: no prompt: give --prompt-ids or --prompt\n");
}
