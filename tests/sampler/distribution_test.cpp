// lmscope-sample's measurements (generate/distribution.h): entropy, the stage summaries, the
// chi-square tail against textbook values, and the draws against the probabilities.
#include "generate/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmscope {
namespace {

TEST(Distribution, EntropyInBits) {
  EXPECT_DOUBLE_EQ(entropy_bits(std::vector<double>{0.25, 0.25, 0.25, 0.25}), 2.0);
  EXPECT_DOUBLE_EQ(entropy_bits(std::vector<double>{1.0, 0.0}), 0.0);
  EXPECT_DOUBLE_EQ(entropy_bits(std::vector<double>{0.5, 0.5, 0.0}), 1.0);
}

TEST(Distribution, ChiSquareTailMatchesTables) {
  // Critical values from any chi-square table: P(X >= x) = 0.05 and 0.01.
  EXPECT_NEAR(chi2_upper_tail(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi2_upper_tail(6.634897, 1), 0.01, 1e-6);
  EXPECT_NEAR(chi2_upper_tail(16.918978, 9), 0.05, 1e-6);
  EXPECT_NEAR(chi2_upper_tail(18.307038, 10), 0.05, 1e-6);
  EXPECT_NEAR(chi2_upper_tail(124.342113, 100), 0.05, 1e-6);
  // two degrees of freedom: the tail is exp(-x/2) exactly
  for (double x : {0.1, 1.0, 5.0, 40.0}) EXPECT_NEAR(chi2_upper_tail(x, 2), std::exp(-x / 2), 1e-12);
  EXPECT_EQ(chi2_upper_tail(0.0, 3), 1.0);
  EXPECT_TRUE(std::isnan(chi2_upper_tail(1.0, 0)));
}

TEST(Distribution, StagesFollowTheChain) {
  // p = softmax(base): top-k 4 then top-p 0.8 then min-p 0.3
  const std::vector<float> raw = {1.5f, -0.25f, 3.0f, 0.0f, 2.75f, -4.0f, 0.5f, 1.0f};
  SamplingConfig c;
  c.do_sample = true;
  c.temperature = 0.5f;
  c.top_k = 4;
  c.top_p = 0.8f;
  c.min_p = 0.3f;
  const ScoreStages st = process_scores(raw, {}, c);
  const auto s = summarize_stages(st, c, 3);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].survivors, 8);
  EXPECT_FALSE(s[1].active);  // penalty 1: off
  EXPECT_EQ(s[1].setting, "off");
  EXPECT_EQ(s[3].survivors, 4);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LE(s[i].survivors, s[i - 1].survivors);
  EXPECT_DOUBLE_EQ(s[2].kept_mass, 1.0);
  // kept mass: the survivors' probability under the temperature stage
  const auto p = softmax(st.scaled);
  double mass = 0;
  for (size_t i = 0; i < raw.size(); ++i)
    if (st.top_p[i] > -std::numeric_limits<float>::infinity()) mass += p[i];
  EXPECT_DOUBLE_EQ(s[4].kept_mass, mass);
  EXPECT_GE(s[4].kept_mass, 0.8);  // top-p keeps at least top_p of the mass
  EXPECT_EQ(s[0].top[0].id, 2);
  EXPECT_EQ(s[0].top.size(), 3u);
}

TEST(Distribution, DrawsMatchTheProbabilities) {
  const std::vector<float> scores = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, -std::numeric_limits<float>::infinity()};
  SamplingConfig c;
  c.do_sample = true;
  c.seed = 11;
  const DrawCheck d = check_draws(scores, c, 20000);
  EXPECT_EQ(std::accumulate(d.counts.begin(), d.counts.end(), int64_t(0)), 20000);
  EXPECT_EQ(d.counts[5], 0);  // a cut token is never drawn
  EXPECT_EQ(d.dof, 4);        // five survivors, every expected count >= 5
  EXPECT_GT(d.p_value, 1e-3);
  EXPECT_LT(d.max_deviation, 0.02);
  // the same seed draws the same tokens
  EXPECT_EQ(check_draws(scores, c, 20000).counts, d.counts);

  // The statistic can fail: the counts of these draws against a different distribution.
  const std::vector<double> wrong = softmax(std::vector<float>{0.0f, 1.0f, 2.2f, -1.0f, 0.5f});
  double chi2 = 0;
  for (size_t i = 0; i < wrong.size(); ++i) {
    const double e = 20000 * wrong[i];
    chi2 += (double(d.counts[i]) - e) * (double(d.counts[i]) - e) / e;
  }
  EXPECT_LT(chi2_upper_tail(chi2, 4), 1e-6);
}

TEST(Distribution, RareTokensArePooledAndOneSurvivorHasNoTest) {
  SamplingConfig c;
  c.do_sample = true;
  const DrawCheck d = check_draws(std::vector<float>{10.0f, 0.0f, 0.0f, 9.0f}, c, 100);
  EXPECT_EQ(d.pooled_ids, 2);  // ids 1 and 2: expected 100 * 3.3e-5 each
  EXPECT_EQ(d.dof, 2);
  c.top_k = 1;
  const DrawCheck one = check_draws(process_scores(std::vector<float>{1.0f, 2.0f}, {}, c).final_scores(), c, 50);
  EXPECT_EQ(one.counts[1], 50);
  EXPECT_EQ(one.dof, 0);
  EXPECT_TRUE(std::isnan(one.p_value));
  EXPECT_THROW(check_draws(std::vector<float>{1.0f}, c, 0), std::invalid_argument);
}

TEST(Distribution, SweepLowersEntropyWithTemperature) {
  const std::vector<float> raw = {1.5f, -0.25f, 3.0f, 0.0f, 2.75f, -4.0f};
  SamplingConfig c;
  c.do_sample = true;
  const auto sw = temperature_sweep(raw, {}, c, {0.2f, 0.7f, 1.0f, 1.5f});
  ASSERT_EQ(sw.size(), 4u);
  for (size_t i = 1; i < sw.size(); ++i) EXPECT_GT(sw[i].entropy_bits, sw[i - 1].entropy_bits);
  EXPECT_DOUBLE_EQ(sw[2].entropy_bits, entropy_bits(softmax(raw)));  // T = 1: the raw distribution
  EXPECT_EQ(sw[0].best.id, 2);
  EXPECT_THROW(temperature_sweep(raw, {}, c, {0.0f}), std::invalid_argument);
}

TEST(Distribution, ATemperatureThatOverflowsTheLogitsIsRefused) {
  // 12.5 / 1e-45 is inf in float32: every kept token would share the top place and the draw
  // would pick one at random (HF's sampler raises on such probabilities).
  const std::vector<float> raw = {12.5f, -3.0f, 0.0f};
  SamplingConfig c;
  c.do_sample = true;
  c.temperature = 1e-45f;
  try {
    process_scores(raw, {}, c);
    FAIL() << "temperature 1e-45 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("logit 12.5 divided by it overflows float32"), std::string::npos) << e.what();
  }
  c.temperature = 1e-30f;   // small, but every scaled logit is a float (1.25e31): sharp, not broken
  const ScoreStages st = process_scores(raw, {}, c);
  EXPECT_TRUE(std::isfinite(st.scaled[0]));
  EXPECT_EQ(argmax(st.final_scores()), 0);
}

}  // namespace
}  // namespace lmscope
