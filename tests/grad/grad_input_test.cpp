// Bad input to a gradient run: one line naming what is wrong (std::invalid_argument, which the
// tools print and Python raises as ValueError), never a crash or a gradient of garbage. And the
// metrics' gradients of the logits, against finite differences of the metric itself.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "backend/backend.h"
#include "backend/forwarding_backend.h"
#include "grad/grad_run.h"
#include "grad/metric.h"
#include "model/load_model.h"

using namespace lmscope;

namespace {

const std::string kTinyQwen2 = std::string(LMSCOPE_SOURCE_DIR) + "/golden/models/tiny-qwen2";

// The message of the std::invalid_argument that f throws ("" when it throws none).
template <class F>
std::string invalid_argument_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

GradRequest request(const std::string& metric, std::vector<std::vector<int32_t>> prompts = {{5, 6, 7, 8}}) {
  GradRequest r;
  r.prompts = std::move(prompts);
  r.metric = parse_metric(metric);
  resolve_metric_tokens(r.metric, 1024, nullptr);
  r.hooks = "layers.0.resid_pre";
  return r;
}

}  // namespace

TEST(GradMetric, ParsesTheThreeKinds) {
  MetricSpec a = parse_metric("logit_diff:pos=-1: Paris, Rome");
  EXPECT_EQ(a.kind, MetricSpec::Kind::LogitDiff);
  EXPECT_EQ(a.pos, -1);
  ASSERT_EQ(a.tokens.size(), 2u);
  EXPECT_EQ(a.tokens[0], " Paris");
  EXPECT_EQ(a.tokens[1], " Rome");
  MetricSpec b = parse_metric("logprob:pos=3:\" a, b\"");
  EXPECT_EQ(b.kind, MetricSpec::Kind::LogProb);
  EXPECT_EQ(b.pos, 3);
  ASSERT_EQ(b.tokens.size(), 1u);
  EXPECT_EQ(b.tokens[0], " a, b");
  MetricSpec c = parse_metric("loss:3:");
  EXPECT_EQ(c.kind, MetricSpec::Kind::Loss);
  EXPECT_TRUE(c.has_from);
  EXPECT_EQ(c.from, 3);
  EXPECT_FALSE(c.has_to);
}

TEST(GradMetric, RefusesMalformedSpecsInOneLine) {
  for (const char* bad : {"", "logit", "logit_diff:pos=-1:5", "logit_diff:p=-1:5,6", "logprob:pos=x:5",
                          "logprob:pos=1:5,6", "loss:a:", "loss:-1:", "loss:3", "logprob:pos=1:\"5"}) {
    const std::string msg = invalid_argument_of([&] { parse_metric(bad); });
    EXPECT_NE(msg.find("--grad '" + std::string(bad) + "'"), std::string::npos) << bad << " -> " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(GradMetric, RefusesTokensOutsideTheVocabulary) {
  MetricSpec s = parse_metric("logit_diff:pos=-1:5,1024");
  const std::string msg = invalid_argument_of([&] { resolve_metric_tokens(s, 1024, nullptr); });
  EXPECT_NE(msg.find("token id 1024 is outside the vocabulary (1024)"), std::string::npos) << msg;
  MetricSpec t = parse_metric("logprob:pos=-1: Paris");
  const std::string two = invalid_argument_of(
      [&] { resolve_metric_tokens(t, 1024, [](const std::string&) { return std::vector<int32_t>{3, 4}; }); });
  EXPECT_NE(two.find("' Paris' encodes to 2 tokens, not one"), std::string::npos) << two;
}

// Each metric's d/dlogits against a central difference of the metric (double precision).
TEST(GradMetric, GradientsOfTheLogitsMatchFiniteDifferences) {
  const int64_t B = 2, T = 4, V = 7;
  Tensor logits = Tensor::zeros({B, T, V});
  for (int64_t i = 0; i < logits.numel(); ++i) logits.f32()[i] = float(std::sin(0.7 * double(i)) * 3.0);
  Tensor ids = Tensor::zeros({B, T}, DType::I32);
  for (int64_t i = 0; i < B * T; ++i) ids.i32()[i] = int32_t((3 * i + 1) % V);
  const std::vector<int64_t> lengths = {3, 4};   // row 0 left-padded by one
  for (const char* spec : {"logit_diff:pos=-1:2,5", "logprob:pos=1:4", "loss::", "loss:1:2"}) {
    SCOPED_TRACE(spec);
    MetricSpec s = parse_metric(spec);
    resolve_metric_tokens(s, V, nullptr);
    const MetricGrad g = metric_and_grad(s, logits, ids, lengths, true);
    for (int64_t i = 0; i < logits.numel(); ++i) {
      const float x = logits.f32()[i], h = 1e-2f;
      logits.f32()[i] = x + h;
      const double up = metric_and_grad(s, logits, ids, lengths, true).value;
      logits.f32()[i] = x - h;
      const double down = metric_and_grad(s, logits, ids, lengths, true).value;
      logits.f32()[i] = x;
      EXPECT_NEAR(g.dlogits.f32()[i], (up - down) / (2.0 * h), 2e-4) << "logit " << i;
    }
    // The pad column of row 0 gets exactly nothing.
    for (int64_t v = 0; v < V; ++v) EXPECT_EQ(g.dlogits.f32()[v], 0.0f);
  }
}

TEST(GradMetric, RefusesANaNMetric) {
  Tensor logits = Tensor::zeros({1, 2, 4});
  logits.f32()[5] = std::numeric_limits<float>::quiet_NaN();
  Tensor ids = Tensor::zeros({1, 2}, DType::I32);
  MetricSpec s = parse_metric("logprob:pos=-1:1");
  resolve_metric_tokens(s, 4, nullptr);
  const std::string msg = invalid_argument_of([&] { metric_and_grad(s, logits, ids, {2}, true); });
  EXPECT_NE(msg.find("the metric is NaN"), std::string::npos) << msg;
}

TEST(GradRun, RefusesBadInputInOneLine) {
  LoadedModel m = load_model(kTinyQwen2);
  auto be = make_backend("cpu");
  auto msg_of = [&](const GradRequest& r) { return invalid_argument_of([&] { run_with_grads(m.cfg, m.weights, *be, r); }); };
  EXPECT_NE(msg_of(request("logprob:pos=4:5")).find("position 4 is outside the prompt (row 0 has 4 tokens)"),
            std::string::npos);
  EXPECT_NE(msg_of(request("logprob:pos=-5:5")).find("position -5 is outside the prompt"), std::string::npos);
  EXPECT_NE(msg_of(request("loss:1:4")).find("the range [1, 4) is outside the prompt's 3 predicted positions"),
            std::string::npos);
  EXPECT_NE(msg_of(request("loss::", {{5}})).find("outside the prompt's 0 predicted positions"), std::string::npos);
  EXPECT_NE(msg_of(request("logprob:pos=0:5", {{5, 1024}})).find("token id 1024 is outside the vocabulary (1024)"),
            std::string::npos);
  GradRequest bad_hooks = request("logprob:pos=0:5");
  bad_hooks.hooks = "layers.0.nope";
  EXPECT_NE(msg_of(bad_hooks).find("layers.0.nope"), std::string::npos);
}

// A backend without backward ops (any but the CPU's and CUDA's: here a wrapper, which does not
// forward them) refuses in one line, after a forward that runs as always.
TEST(GradRun, OtherBackendsRefuseInOneLine) {
  struct OtherBackend : ForwardingBackend {
    using ForwardingBackend::ForwardingBackend;
    std::string name() const override { return "other"; }
  };
  LoadedModel m = load_model(kTinyQwen2);
  auto cpu = make_backend("cpu");
  OtherBackend other(*cpu);
  try {
    run_with_grads(m.cfg, m.weights, other, request("logprob:pos=-1:5"));
    FAIL() << "no refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gradients: the other backend has no backward ops (the cpu and cuda backends have)");
  }
}
