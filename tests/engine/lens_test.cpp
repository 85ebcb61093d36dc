// The logit lens (model/lens.h) on a random model: the last layer's lens is the real logits,
// the top K are the softmax's K largest, and the lens hooks are opt-in. Its agreement with HF
// is tests/golden/lens_golden_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <map>

#include "backend/backend.h"
#include "experiments/lens_view.h"
#include "generate/generator.h"
#include "model/lens.h"
#include "model/random_weights.h"

using namespace lmscope;

namespace {

struct TinyModel {
  ModelConfig cfg = tiny_qwen2_shapes(300);
  Weights w = random_weights(cfg, 42, 0.3f);
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Decoder decoder{cfg, w, *backend};
};

// Keeps a copy of every offered tensor of step 0, by hook name.
struct Keep : TraceSink {
  std::map<std::string, Tensor> got;
  int step = 0;
  void begin_step(const StepInfo& i) override { step = i.step; }
  void offer(Hook h, int layer, const Tensor& t) override {
    if (step != 0) return;
    if (t.dtype() != DType::I32) return void(got[hook_name(h, layer)] = t.to_f32());
    Tensor c = Tensor::zeros(t.shape(), DType::I32);
    std::copy(t.i32(), t.i32() + t.numel(), c.i32());
    got[hook_name(h, layer)] = c;
  }
};

Keep run_prefill(TinyModel& m, const std::string& globs, int k) {
  HookSet hooks(globs, "", m.cfg.num_layers);
  hooks.set_lens_top_k(k);
  Trace trace(hooks, nullptr);
  Keep keep;
  trace.set_sink(&keep);
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7, 8}};
  opt.max_new_tokens = 1;
  generate(m.decoder, opt, &trace);
  return keep;
}

}  // namespace

TEST(Lens, LastLayerIsTheRealLogits) {
  TinyModel m;
  Keep k = run_prefill(m, "logits,lens.layers.*.logits", 5);
  const std::string last = "lens.layers." + std::to_string(m.cfg.num_layers - 1) + ".logits";
  ASSERT_TRUE(k.got.count(last) && k.got.count("logits"));
  const Tensor &a = k.got[last], &b = k.got["logits"];
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.f32()[i], b.f32()[i]) << i;   // the same ops on the same input
  // An earlier layer's lens is not the logits (the layers above it do change the stream).
  const Tensor& first = k.got["lens.layers.0.logits"];
  double diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i) diff = std::max(diff, double(std::fabs(first.f32()[i] - b.f32()[i])));
  EXPECT_GT(diff, 0.1);
}

TEST(Lens, TopKIsTheSoftmaxLargest) {
  TinyModel m;
  Keep k = run_prefill(m, "lens.*", 7);
  for (int l = 0; l < m.cfg.num_layers; ++l) {
    const std::string p = "lens.layers." + std::to_string(l) + ".";
    const Tensor &z = k.got[p + "logits"], &ids = k.got[p + "topk_ids"], &probs = k.got[p + "topk_probs"];
    const int64_t V = z.dim(2), rows = z.dim(0) * z.dim(1);
    ASSERT_EQ(ids.dim(2), 7);
    for (int64_t r = 0; r < rows; ++r) {
      const float* zr = z.f32() + r * V;
      double m_ = zr[0], sum = 0;
      for (int64_t i = 0; i < V; ++i) m_ = std::max(m_, double(zr[i]));
      for (int64_t i = 0; i < V; ++i) sum += std::exp(zr[i] - m_);
      for (int j = 0; j < 7; ++j) {
        const int32_t id = ids.i32()[r * 7 + j];
        EXPECT_NEAR(probs.f32()[r * 7 + j], std::exp(zr[id] - m_) / sum, 1e-7);
        if (j > 0) {
          EXPECT_GE(zr[ids.i32()[r * 7 + j - 1]], zr[id]);
        }
        // Nothing outside the K is larger than the K-th.
        if (j == 6)
          for (int64_t i = 0; i < V; ++i) {
            bool kept = false;
            for (int q = 0; q < 7; ++q) kept = kept || ids.i32()[r * 7 + q] == i;
            if (!kept) {
              ASSERT_LE(zr[i], zr[id]);
            }
          }
      }
    }
  }
}

TEST(Lens, TopKTiesGoToTheLowerIdAndKIsClampedToV) {
  Tensor z = Tensor::zeros({1, 1, 4});
  const float v[] = {1.f, 3.f, 1.f, 3.f};
  std::copy(v, v + 4, z.f32());
  LensTopK t = lens_top_k(z, 9);
  ASSERT_EQ(t.ids.dim(2), 4);
  EXPECT_EQ(std::vector<int32_t>(t.ids.i32(), t.ids.i32() + 4), (std::vector<int32_t>{1, 3, 0, 2}));
  const double e = std::exp(-2.0), sum = 2 + 2 * e;
  EXPECT_NEAR(t.probs.f32()[0], 1 / sum, 1e-7);
  EXPECT_NEAR(t.probs.f32()[3], e / sum, 1e-7);
}

TEST(Lens, HooksAreOptIn) {
  HookSet all("*", "", 3);
  EXPECT_FALSE(all.enabled(Hook::LensTopkIds, 0));
  EXPECT_FALSE(HookSet("*logits", "", 3).enabled(Hook::LensLogits, 1));
  EXPECT_TRUE(HookSet("*logits", "", 3).enabled(Hook::Logits, -1));
  HookSet lens("lens.*", "1-2", 3);
  EXPECT_TRUE(lens.enabled(Hook::LensLogits, 1));
  EXPECT_TRUE(lens.enabled(Hook::LensTopkProbs, 2));
  EXPECT_FALSE(lens.enabled(Hook::LensTopkProbs, 0));
  EXPECT_FALSE(lens.enabled(Hook::ResidPost, 1));
  EXPECT_THROW(lens.set_lens_top_k(0), std::runtime_error);
  // Unasked, the lens costs nothing: the forward under "*" offers no lens tensor.
  TinyModel m;
  Keep k = run_prefill(m, "*", 5);
  for (const auto& [name, t] : k.got) EXPECT_NE(name.rfind("lens.", 0), 0u) << name;
}

TEST(LensView, SettlesAtTheLayerFromWhichTheChoiceStaysTop) {
  LensColumn c;
  c.chosen_id = 9;
  const int32_t tops[] = {9, 4, 9, 9};
  for (int l = 0; l < 4; ++l) c.layers.push_back({l, {tops[l]}, {0.5f}});
  EXPECT_EQ(c.first_top(), 0);
  EXPECT_EQ(c.settles_at(), 2);
  c.layers.back().ids = {4};
  EXPECT_EQ(c.settles_at(), -1);
  EXPECT_EQ(c.first_top(), 0);
}
