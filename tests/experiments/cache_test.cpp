// The cached-vs-uncached experiment on the tiny model: the two paths agree (float32: rounding
// only), the work counts are exact, and each planted fault is detected at the step and layer
// where it first acts. The verdict tells drift (near-tie flips) from bugs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "experiments/cache.h"
#include "tests/experiments/exp_util.h"

using namespace lmscope;
using namespace lmscope::exp_test;

namespace {

// A 48-token prompt and 32 new tokens: the tiny model's 128 positions hold P + N.
constexpr int kP = 48, kN = 32;

CacheOptions options(const Tiny& t, CacheFault f = CacheFault::None) {
  CacheOptions o;
  o.prompts = {synthetic_prompt(kP, t.loaded.cfg.vocab_size, 7)};
  o.max_new_tokens = kN;
  o.pad_id = t.special.pad_id;
  o.eos_ids = {};   // exactly kN steps
  o.fault = f;
  o.timing = false;
  return o;
}

class CacheExperiment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tiny = new Tiny(); }
  static void TearDownTestSuite() { delete tiny; }
  static Tiny* tiny;
};
Tiny* CacheExperiment::tiny = nullptr;

}  // namespace

TEST_F(CacheExperiment, CachedAndUncachedAgreeInFloat32) {
  CacheOptions o = options(*tiny);
  o.timing = true;
  CacheReport r = run_cache_experiment(tiny->ctx, o);
  EXPECT_EQ(r.steps, kN);
  ASSERT_EQ(r.per_step.size(), size_t(kN));
  EXPECT_EQ(r.argmax_agree, kN);
  EXPECT_EQ(r.verdict, "agree") << r.verdict_why;
  EXPECT_FALSE(r.detected);
  EXPECT_EQ(r.tol.dtype, "f32");
  for (const CacheStep& s : r.per_step) {
    EXPECT_TRUE(s.pass) << "step " << s.step << ": " << (s.first_failure ? s.first_failure->reason() : "");
    EXPECT_LE(s.max_logit_diff, s.logit_bound) << "step " << s.step;
    EXPECT_EQ(s.argmax_cached, s.argmax_uncached);
    EXPECT_TRUE(s.kv_compared);
    EXPECT_GT(s.hooks_compared, 50);
    EXPECT_EQ(s.T_cached, s.step == 0 ? kP : 1);
    EXPECT_EQ(s.T_uncached, kP + s.step);
  }
  // float32: the two paths differ by summation order only, far inside the tolerance.
  EXPECT_LT(r.max_logit_diff, 1e-3);
  EXPECT_EQ(r.per_step[0].max_logit_diff, 0.0);   // the prefill is the same computation
  // The uncached run left to choose its own tokens makes the same ones.
  EXPECT_EQ(r.tokens_uncached_free, r.tokens_cached);
  EXPECT_GT(r.seconds_cached, 0.0);
  EXPECT_GT(r.seconds_uncached, 0.0);
}

TEST_F(CacheExperiment, WorkCountsAndKvBytesAreExact) {
  CacheReport r = run_cache_experiment(tiny->ctx, options(*tiny));
  // cached: the prompt once, then one token per step; uncached: the whole sequence every step.
  EXPECT_EQ(r.tokens_cached_processed, kP + kN - 1);
  int64_t uncached = 0;
  for (int n = 0; n < kN; ++n) uncached += kP + n;
  EXPECT_EQ(r.tokens_uncached_processed, uncached);
  EXPECT_EQ(r.expected_cached, r.tokens_cached_processed);
  EXPECT_EQ(r.expected_uncached, r.tokens_uncached_processed);
  const ModelConfig& c = tiny->loaded.cfg;
  const int64_t per_pos = 2LL * c.num_layers * c.num_kv_heads * c.head_dim * 4;
  EXPECT_EQ(r.kv_bytes_per_position, per_pos);
  EXPECT_EQ(r.kv_bytes, per_pos * (kP + kN));   // capacity P + max_new_tokens
  EXPECT_EQ(r.kv_positions_filled, kP + kN - 1);
}

TEST_F(CacheExperiment, EachFaultIsDetectedWhereItFirstActs) {
  struct Case {
    CacheFault fault;
    int step;
    std::string first_hook, layer_hook;
  };
  const std::vector<Case> cases = {
      {CacheFault::NoPositionOffset, 1, "tokens.position_ids", "layers.0.attn.q_rope"},
      {CacheFault::CacheNotAppended, 2, "tokens.attention_mask", "layers.0.attn.scores"},
      {CacheFault::MaskNotExtended, 1, "tokens.attention_mask", "layers.0.attn.scores"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(cache_fault_name(c.fault));
    CacheReport r = run_cache_experiment(tiny->ctx, options(*tiny, c.fault));
    const FaultSite site = fault_first_acts(c.fault);
    EXPECT_EQ(site.step, c.step);
    EXPECT_EQ(site.layer, 0);
    ASSERT_TRUE(r.detected);
    EXPECT_EQ(r.detected->step, site.step);
    EXPECT_EQ(r.detected->layer, site.layer);
    EXPECT_EQ(r.detected->hook, c.first_hook);
    EXPECT_EQ(r.detected->layer_hook, c.layer_hook);
    EXPECT_EQ(r.verdict, "bug");
    // Before the fault acts, the paths agree.
    for (int s = 0; s < site.step; ++s) EXPECT_TRUE(r.per_step[size_t(s)].pass) << "step " << s;
    EXPECT_LT(r.argmax_agree, kN);
  }
}

TEST_F(CacheExperiment, ALeftPaddedBatchAgreesToo) {
  CacheOptions o = options(*tiny);
  o.prompts = {synthetic_prompt(20, tiny->loaded.cfg.vocab_size, 3), synthetic_prompt(31, tiny->loaded.cfg.vocab_size, 4)};
  o.max_new_tokens = 12;
  CacheReport r = run_cache_experiment(tiny->ctx, o);
  EXPECT_EQ(r.verdict, "agree") << r.verdict_why << (r.detected ? r.detected->reason : "");
  EXPECT_EQ(r.argmax_agree, 12);
  EXPECT_EQ(r.tokens_cached_processed, 2 * (31 + 12 - 1));
}

// The verdict from per-step results: drift is a flip at a near-tie with everything within
// tolerance; a flip with a clear margin, or a tensor beyond tolerance, is a bug.
TEST(CacheVerdict, TellsDriftFromBugs) {
  CacheReport r;
  r.tol = cache_tolerance("bf16");
  for (int s = 0; s < 4; ++s) {
    CacheStep st;
    st.step = s;
    st.argmax_cached = st.argmax_uncached = 10 + s;
    st.logit_bound = 0.3;
    st.margin = 2.0;
    r.per_step.push_back(st);
  }
  judge_cache(r);
  EXPECT_EQ(r.verdict, "agree");
  EXPECT_EQ(r.argmax_agree, 4);

  r.per_step[2].argmax_uncached = 99;
  r.per_step[2].margin = 0.05;   // a near-tie: within the logit tolerance
  judge_cache(r);
  EXPECT_EQ(r.verdict, "drift") << r.verdict_why;
  EXPECT_EQ(r.argmax_agree, 3);

  r.per_step[2].margin = 1.5;    // a clear winner flipped
  judge_cache(r);
  EXPECT_EQ(r.verdict, "bug");

  r.per_step[2].margin = 0.05;
  HookResult bad;
  bad.step = 1;
  bad.hook = "layers.0.attn.q_rope";
  r.per_step[1].pass = false;
  r.per_step[1].first_failure = bad;
  r.per_step[1].first_layer_failure = bad;
  judge_cache(r);
  EXPECT_EQ(r.verdict, "bug");
  ASSERT_TRUE(r.detected);
  EXPECT_EQ(r.detected->step, 1);
  EXPECT_EQ(r.detected->layer, 0);
}

TEST(CacheVerdict, ToleranceDependsOnTheDtype) {
  CacheTolerance f = cache_tolerance("f32"), b = cache_tolerance("bf16");
  EXPECT_EQ(f.dtype, "f32");
  EXPECT_LT(f.table.lookup("logits").rtol, 1e-3);
  EXPECT_GE(b.table.lookup("logits").rtol, 1e-2);
  EXPECT_GE(b.table.lookup("layers.3.resid_post").rtol, 1e-2);
  EXPECT_EQ(b.table.lookup("tokens.position_ids").rtol, 0.0);   // integers stay exact
  EXPECT_NE(f.why.find("summation order"), std::string::npos);
  EXPECT_NE(b.why.find("near-tie"), std::string::npos);
}

TEST(CacheFaults, NamesRoundTrip) {
  for (CacheFault f : {CacheFault::None, CacheFault::NoPositionOffset, CacheFault::CacheNotAppended,
                       CacheFault::MaskNotExtended})
    EXPECT_EQ(parse_cache_fault(cache_fault_name(f)), f);
  EXPECT_THROW(parse_cache_fault("rope"), std::runtime_error);
  EXPECT_EQ(synthetic_prompt(5, 100, 1), synthetic_prompt(5, 100, 1));
  for (int32_t id : synthetic_prompt(200, 50, 2)) {
    EXPECT_GE(id, 1);
    EXPECT_LT(id, 50);
  }
}

// The faults only touch cached decode steps: without a cache the planted faults leave the
// generated tokens unchanged.
TEST_F(CacheExperiment, FaultsDoNotTouchTheUncachedPath) {
  GenerateOptions o;
  o.prompts = {synthetic_prompt(10, tiny->loaded.cfg.vocab_size, 5)};
  o.max_new_tokens = 6;
  o.use_cache = false;
  GenerateResult plain = generate(*tiny->decoder, o, nullptr);
  for (CacheFault fault : {CacheFault::NoPositionOffset, CacheFault::CacheNotAppended, CacheFault::MaskNotExtended}) {
    o.policies.adjust_input = cache_fault_policy(fault);
    EXPECT_EQ(plain.new_tokens, generate(*tiny->decoder, o, nullptr).new_tokens) << cache_fault_name(fault);
  }
  // Teacher forcing replays given tokens.
  GenerateOptions f;
  f.prompts = o.prompts;
  f.max_new_tokens = 3;
  f.policies.accept_token = force_tokens({{7, 8, 9}});
  EXPECT_EQ(generate(*tiny->decoder, f, nullptr).new_tokens[0], (std::vector<int32_t>{7, 8, 9}));
}
