// The scoring arithmetic of lib/generate/score.h on hand-made logits: labels shifted by one,
// the batch mean over tokens (not rows), pads never read, log-softmax in double, and the
// input checks. HF parity on real models is in score_hf_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "generate/score.h"

using namespace lmscope;

namespace {

// [B,T,V] logits filled with `fill`.
Tensor logits_of(int64_t B, int64_t T, int64_t V, float fill = 0.f) {
  Tensor t = Tensor::zeros({B, T, V});
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = fill;
  return t;
}
float& at(Tensor& t, int64_t b, int64_t s, int64_t v) { return t.f32()[(b * t.dim(1) + s) * t.dim(2) + v]; }

void expect_throw_with(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << part << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ScoreMath, UniformLogitsGiveLogVEverywhere) {
  const int64_t V = 50;
  Tensor z = logits_of(1, 4, V, 3.f);
  ScoreResult r = score_logits(z, {{7, 8, 9, 10}});
  ASSERT_EQ(r.rows[0].tokens.size(), 3u);   // position 0 is never predicted
  for (const TokenScore& s : r.rows[0].tokens) EXPECT_NEAR(s.nll, std::log(double(V)), 1e-12);
  EXPECT_EQ(r.n_predicted, 3);
  EXPECT_NEAR(r.loss, std::log(double(V)), 1e-12);
  EXPECT_NEAR(r.perplexity, double(V), 1e-9);
}

TEST(ScoreMath, TokenTIsScoredByTheLogitsAtTMinusOne) {
  // Position t-1 favours the token at t; position t favours some other id. Reading the wrong
  // row (no shift) would give a large NLL.
  const std::vector<int32_t> ids = {1, 2, 3};
  Tensor z = logits_of(1, 3, 8);
  at(z, 0, 0, 2) = 10.f;   // predicts ids[1] = 2
  at(z, 0, 1, 3) = 10.f;   // predicts ids[2] = 3
  at(z, 0, 2, 5) = 10.f;   // after the last token: not a label, never read
  ScoreResult r = score_logits(z, {ids});
  ASSERT_EQ(r.rows[0].tokens.size(), 2u);
  const double expected = std::log(1.0 + 7.0 * std::exp(-10.0));   // -log softmax of the 10
  for (size_t i = 0; i < 2; ++i) {
    const TokenScore& s = r.rows[0].tokens[i];
    EXPECT_EQ(s.position, int64_t(i + 1));
    EXPECT_EQ(s.id, ids[i + 1]);
    EXPECT_NEAR(s.nll, expected, 1e-12);
    EXPECT_EQ(s.top_id, ids[i + 1]);
    EXPECT_NEAR(s.top_logprob, s.logprob, 0);
  }
}

TEST(ScoreMath, TopChoiceIsTheArgmaxWithItsProbability) {
  Tensor z = logits_of(1, 2, 4);
  at(z, 0, 0, 0) = 1.f, at(z, 0, 0, 1) = 2.f, at(z, 0, 0, 2) = 4.f, at(z, 0, 0, 3) = 3.f;
  ScoreResult r = score_logits(z, {{0, 1}});
  const TokenScore& s = r.rows[0].tokens[0];
  const double sum = std::exp(1.0) + std::exp(2.0) + std::exp(4.0) + std::exp(3.0);
  EXPECT_EQ(s.top_id, 2);
  EXPECT_NEAR(std::exp(s.top_logprob), std::exp(4.0) / sum, 1e-12);
  EXPECT_NEAR(std::exp(s.logprob), std::exp(2.0) / sum, 1e-12);
}

TEST(ScoreMath, BatchLossIsTheMeanOverTokensNotOverRows) {
  // Row 0: 2 tokens (1 predicted), NLL log 4; row 1: 4 tokens (3 predicted), NLL 0-ish.
  // HF's -100 mean: (log4 + 3 * small) / 4, not (log4 + small) / 2.
  const int64_t V = 4;
  Tensor z = logits_of(2, 4, V);
  for (int64_t t = 0; t < 3; ++t) at(z, 1, t, 1) = 40.f;   // row 1 always predicts id 1, surely
  ScoreResult r = score_logits(z, {{0, 3}, {1, 1, 1, 1}});
  EXPECT_EQ(r.n_predicted, 4);
  const double small = std::log(1.0 + 3.0 * std::exp(-40.0));
  EXPECT_NEAR(r.rows[0].mean_nll(), std::log(4.0), 1e-12);
  EXPECT_NEAR(r.rows[1].mean_nll(), small, 1e-15);
  EXPECT_NEAR(r.loss, (std::log(4.0) + 3 * small) / 4, 1e-12);
  EXPECT_GT(std::abs(r.loss - (std::log(4.0) + small) / 2), 0.3);   // the mean of means is wrong
}

TEST(ScoreMath, PadColumnsAreNeverRead) {
  // Right padding: row 0 is 2 tokens in a width-4 batch. Its pad columns hold NaN: reading
  // any of them (as a label or as logits) would make the loss NaN.
  Tensor z = logits_of(2, 4, 6);
  for (int64_t t = 1; t < 4; ++t)
    for (int64_t v = 0; v < 6; ++v) at(z, 0, t, v) = std::numeric_limits<float>::quiet_NaN();
  ScoreResult r = score_logits(z, {{4, 5}, {1, 2, 3, 4}});
  EXPECT_EQ(r.n_predicted, 4);
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_NEAR(r.loss, std::log(6.0), 1e-12);
}

TEST(ScoreMath, LogSoftmaxIsComputedInDouble) {
  // SmolLM2's vocabulary, one logit 30 above the rest: p = 1 / (1 + 49151 e^-30), so the NLL is
  // 49151 e^-30 = 4.6e-9. In float32, logsumexp(z) = 30.0000000046 rounds to 30 (spacing 1.9e-6
  // there) and the NLL comes out 0; in double, as log1p of the sum of the other 49151 terms, it
  // is exact to ~1e-15 relative.
  const int64_t V = 49152;
  Tensor z = logits_of(1, 2, V);
  at(z, 0, 0, 7) = 30.f;
  ScoreResult r = score_logits(z, {{0, 7}});
  const double exact = std::log1p(double(V - 1) * std::exp(-30.0));
  EXPECT_GT(r.rows[0].tokens[0].nll, 0.0);
  EXPECT_NEAR(r.rows[0].tokens[0].nll, exact, 1e-12 * exact);
}

TEST(ScoreMath, RefusesWhatCannotBeScored) {
  Tensor z = logits_of(1, 3, 8);
  expect_throw_with([&] { score_logits(z, {{5}}); }, "nothing to predict");
  expect_throw_with([&] { score_logits(z, {{5, 8}}); }, "token id 8 is outside the vocabulary (8)");
  expect_throw_with([&] { score_logits(z, {{5, -1}}); }, "token id -1 is outside the vocabulary");
  Tensor empty = logits_of(0, 3, 8);
  expect_throw_with([&] { score_logits(empty, {}); }, "nothing to score");
}

TEST(ScoreMath, ReportsShowEveryPredictedTokenAndTheSummary) {
  Tensor z = logits_of(1, 3, 8);
  ScoreResult r = score_logits(z, {{1, 2, 3}});
  PieceFn piece = [](int32_t id) { return std::string("t").append(std::to_string(id)); };
  const std::string text = score_report_text(r, {"abc"}, piece);
  EXPECT_NE(text.find("text 0: \"abc\" (3 tokens)"), std::string::npos) << text;
  EXPECT_NE(text.find("\"t3\""), std::string::npos) << text;
  EXPECT_NE(text.find("loss (mean NLL) 2.079442 over 2 predicted tokens, perplexity 8.0000"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(score_report_json(r, {"abc"}, piece));
  EXPECT_EQ(j["n_predicted"], 2);
  EXPECT_NEAR(j["loss"].get<double>(), std::log(8.0), 1e-12);
  ASSERT_EQ(j["rows"][0]["tokens"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["tokens"][1]["piece"], "t3");
  EXPECT_EQ(j["rows"][0]["tokens"][1]["position"], 2);
}
