// Engine self-consistency on a random model (no files): the cached and uncached paths, and
// a left-padded batch against each prompt alone. The HF goldens (tests/golden) check the
// arithmetic against a reference; these check that the engine agrees with itself.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"
#include "generate/generator.h"
#include "model/random_weights.h"

using namespace lmscope;

namespace {

struct TinyModel {
  ModelConfig cfg = tiny_qwen2_shapes(300);
  Weights w = random_weights(cfg, 42, 0.3f);
  std::unique_ptr<Backend> backend = make_backend("cpu");
  Decoder decoder{cfg, w, *backend};
};

// Logits of the last position after feeding `ids` in one prefill.
std::vector<float> last_logits(Decoder& d, const std::vector<int32_t>& ids) {
  Batch b = Batch::from_prompts({ids}, PaddingSide::Left, 0);
  StepInput in{b.ids_tensor(), b.position_ids(), b.mask_tensor()};
  Tensor l = d.forward(in, nullptr, nullptr, LogitsFor::LastPosition);
  return std::vector<float>(l.f32(), l.f32() + l.numel());
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST(Decoder, CachedDecodeEqualsFullRecompute) {
  TinyModel m;
  std::vector<int32_t> ids = {3, 17, 250, 9, 4, 77, 120};
  KVCache cache(*m.backend, m.cfg, 1, 16);
  // prefill the first 4 tokens, then feed the other 3 one at a time through the cache
  Batch b = Batch::from_prompts({{ids.begin(), ids.begin() + 4}}, PaddingSide::Left, 0);
  m.decoder.forward({b.ids_tensor(), b.position_ids(), b.mask_tensor()}, &cache, nullptr, LogitsFor::LastPosition);
  Tensor last;
  for (size_t i = 4; i < ids.size(); ++i) {
    b.append({ids[i]});
    const int64_t from = b.cols() - 1;
    last = m.decoder.forward({b.ids_tensor(from), b.position_ids(from), b.mask_tensor()}, &cache, nullptr,
                             LogitsFor::LastPosition);
  }
  std::vector<float> cached(last.f32(), last.f32() + last.numel());
  std::vector<float> full = last_logits(m.decoder, ids);
  EXPECT_EQ(cache.length, int64_t(ids.size()));
  EXPECT_LT(max_abs_diff(cached, full), 1e-4f);
}

TEST(Decoder, LeftPaddedRowsMatchTheirSoloRuns) {
  TinyModel m;
  std::vector<std::vector<int32_t>> prompts = {{5, 6, 7, 8, 9, 10}, {11, 12}, {13, 14, 15, 16}};
  Batch b = Batch::from_prompts(prompts, PaddingSide::Left, 0);
  Tensor l = m.decoder.forward({b.ids_tensor(), b.position_ids(), b.mask_tensor()}, nullptr, nullptr,
                               LogitsFor::LastPosition);
  const int64_t V = m.cfg.vocab_size;
  for (size_t r = 0; r < prompts.size(); ++r) {
    std::vector<float> batched(l.f32() + r * V, l.f32() + (r + 1) * V);
    EXPECT_LT(max_abs_diff(batched, last_logits(m.decoder, prompts[r])), 1e-4f) << "row " << r;
  }
}

TEST(Generate, CacheOnAndOffGiveTheSameTokens) {
  TinyModel m;
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7, 8, 9, 10}, {11, 12}};
  opt.max_new_tokens = 6;
  GenerateResult cached = generate(m.decoder, opt, nullptr);
  opt.use_cache = false;
  GenerateResult uncached = generate(m.decoder, opt, nullptr);
  EXPECT_EQ(cached.new_tokens, uncached.new_tokens);
  // work done: cached pushes B*P + B*(N-1) tokens, uncached B*(P + (P+1) + ... )
  EXPECT_EQ(cached.prefill_tokens + cached.decode_tokens, 2 * 6 + 2 * 5);
  EXPECT_EQ(uncached.prefill_tokens + uncached.decode_tokens, 2 * (6 + 7 + 8 + 9 + 10 + 11));
}

TEST(Generate, StopsWhenEveryRowHitEos) {
  TinyModel m;
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7}};
  opt.max_new_tokens = 5;
  GenerateResult first = generate(m.decoder, opt, nullptr);
  opt.eos_ids = {first.new_tokens[0][1]};   // the second token becomes "EOS"
  GenerateResult stopped = generate(m.decoder, opt, nullptr);
  const int stop_at = first.new_tokens[0][0] == opt.eos_ids[0] ? 1 : 2;
  EXPECT_EQ(stopped.steps, stop_at);
}

TEST(Trace, UnaskedHooksAreNotWrittenAndAllHooksFire) {
  TinyModel m;
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7}};
  opt.max_new_tokens = 2;
  Trace none(HookSet(), nullptr);
  generate(m.decoder, opt, &none);
  EXPECT_EQ(none.tensors_written(), 0);
  Trace all(HookSet::all(m.cfg.num_layers), nullptr);
  generate(m.decoder, opt, &all);
  EXPECT_TRUE(all.never_fired().empty()) << all.never_fired().front();
  // per step: 9 global + 20 per layer * 3 layers + final_norm + logits + 10 sample.*
  EXPECT_EQ(all.tensors_written(), 2 * (9 + 20 * 3 + 2 + 10));
}

// Qwen3 (q/k norms, no biases): its two hooks more per layer fire, and the cache still gives
// the tokens of a full recompute. (tests/golden holds the numbers to HF's Qwen3.)
TEST(Trace, Qwen3QKNormHooksFire) {
  ModelConfig cfg = tiny_qwen2_shapes(300);
  cfg.arch = Arch::Qwen3;
  cfg.architecture = "Qwen3ForCausalLM";
  cfg.attention_bias = false;
  cfg.qk_norm = true;
  const Weights w = random_weights(cfg, 42, 0.3f);
  auto backend = make_backend("cpu");
  Decoder decoder{cfg, w, *backend};
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7}};
  opt.max_new_tokens = 2;
  Trace all(HookSet::all(cfg.num_layers), nullptr);
  const GenerateResult cached = generate(decoder, opt, &all);
  EXPECT_TRUE(all.never_fired().empty()) << all.never_fired().front();
  EXPECT_EQ(all.tensors_written(), 2 * (9 + 22 * 3 + 2 + 10));
  opt.use_cache = false;
  EXPECT_EQ(generate(decoder, opt, nullptr).new_tokens, cached.new_tokens);
  // A model without them lacks nothing, but their names are still asked for: never_fired()
  // leaves them out only because the decoder says the model has none.
  TinyModel qwen2;
  Trace t(HookSet("layers.*.attn.q_norm,logits", "", qwen2.cfg.num_layers), nullptr);
  generate(qwen2.decoder, opt, &t);
  EXPECT_TRUE(t.never_fired().empty());
}

TEST(Trace, NoCacheMeansKvHooksNeverFire) {
  TinyModel m;
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7}};
  opt.max_new_tokens = 2;
  opt.use_cache = false;
  Trace t(HookSet("kv.*,logits", "", m.cfg.num_layers), nullptr);
  generate(m.decoder, opt, &t);
  EXPECT_EQ(t.never_fired().size(), size_t(2 * m.cfg.num_layers));
}

// Under --cpu-activations q8 a requested quant.*.q8 hook that never fired is reported: its
// matmul took float32 activations (here every weight is float32, which the q8 path leaves
// alone), although the trace says `activations = q8`. Under the f32 backend no quant.*.q8 hook
// is computed, so a request for them lacks nothing; quant.*.scale is lmscope-quant's, never
// missing under either.
TEST(Trace, Q8HooksThatNeverFireAreReportedUnderQ8) {
  const ModelConfig cfg = tiny_qwen2_shapes(300);
  const Weights w = random_weights(cfg, 42, 0.3f);
  GenerateOptions opt;
  opt.prompts = {{5, 6, 7}};
  opt.max_new_tokens = 2;
  const std::string asked = "quant.layers.1.attn_norm.q8,quant.final_norm.q8_scale,quant.layers.0.q_proj.scale,logits";
  for (const char* mode : {"f32", "q8"}) {
    auto backend = make_backend("cpu", "f32", mode);
    Decoder decoder{cfg, w, *backend};
    Trace t(HookSet(asked, "", cfg.num_layers), nullptr);
    generate(decoder, opt, &t);
    const std::vector<std::string> want =
        std::string(mode) == "q8" ? std::vector<std::string>{"quant.final_norm.q8_scale", "quant.layers.1.attn_norm.q8"}
                                  : std::vector<std::string>{};
    EXPECT_EQ(t.never_fired(), want) << mode;
  }
}
