// Observing must not change what is observed: the same prompts through the same Decoder with
// no trace, a trace that wants nothing, the logits alone, the attention scores or probs alone
// (the hooks that once sent prefill attention down another path), and every hook. Each run is
// a left-padded batch of two prompts (a prefill of 40 columns: two query blocks of the tiled
// attention, and pad queries that see no key) and three greedy decode steps through the KV
// cache, as lmscope-trace runs them (the logits hook asks for every position). Required, bit
// for bit: the logits every step returns (what generation samples from), and every tensor two
// runs both hooked. On the random tiny model (float32) and, when it has been fetched, on
// SmolLM2 (GGUF blocks) in both CPU modes. The kernel is the process's (LMSCOPE_CPU_KERNEL);
// tests/cli/determinism_cli_test.cpp runs every kernel the processor has.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "generate/batch.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "model/load_model.h"
#include "model/random_weights.h"
#include "trace/hooks.h"
#include "trace/trace.h"

using namespace lmscope;

namespace {

const std::string kSmolLM2 = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

// A 64-bit FNV-1a of a tensor's shape and bytes: two runs' tensors are compared by these, so
// that every hook of every step need not be kept in memory (SmolLM2's lens logits alone are
// hundreds of MB).
uint64_t fingerprint(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (int64_t d : t.shape()) mix(reinterpret_cast<const unsigned char*>(&d), sizeof d);
  mix(static_cast<const unsigned char*>(t.raw()), t.nbytes());
  return h;
}

class Fingerprints final : public TraceSink {
 public:
  void begin_step(const StepInfo& info) override { step_ = info.step; }
  void offer(Hook h, int layer, const Tensor& t) override {
    seen["step " + std::to_string(step_) + " " + hook_name(h, layer)] = fingerprint(t);
  }
  std::map<std::string, uint64_t> seen;

 private:
  int step_ = 0;
};

struct Observed {
  std::vector<std::vector<float>> logits;   // per step: the last column, [B,V]
  std::map<std::string, uint64_t> hooks;    // "step N hook" -> fingerprint
};

// hooks: nullopt = no trace at all; otherwise HookSet globs ("" = a trace that wants nothing).
Observed observe(Decoder& dec, const std::optional<std::string>& hooks) {
  const ModelConfig& cfg = dec.config();
  std::vector<int32_t> long_prompt, short_prompt;
  for (int i = 0; i < 40; ++i) long_prompt.push_back(int32_t((i * 37 + 11) % cfg.vocab_size));
  for (int i = 0; i < 29; ++i) short_prompt.push_back(int32_t((i * 53 + 5) % cfg.vocab_size));
  Batch batch = Batch::from_prompts({long_prompt, short_prompt}, PaddingSide::Left, 0);
  const int64_t B = batch.rows(), V = cfg.vocab_size;
  KVCache cache(dec.backend(), cfg, B, batch.cols() + 3);

  std::unique_ptr<Trace> trace;
  Fingerprints sink;
  if (hooks) {
    trace = std::make_unique<Trace>(hooks->empty() ? HookSet() : HookSet(*hooks, "", cfg.num_layers), nullptr);
    trace->set_sink(&sink);
  }
  Observed o;
  int64_t from = 0;
  for (int step = 0; step < 4; ++step) {
    const int64_t T = batch.cols() - from;
    if (trace) trace->begin_step({step, step == 0 ? "prefill" : "decode", true, from, T, batch.cols()});
    // As the generator asks: every position when the logits hook is wanted.
    const LogitsFor which = trace && trace->wants(Hook::Logits) ? LogitsFor::AllPositions : LogitsFor::LastPosition;
    const Tensor l = dec.forward({batch.ids_tensor(from), batch.position_ids(from), batch.mask_tensor()}, &cache,
                                 trace.get(), which);
    const int64_t Tl = l.dim(1);
    std::vector<float> last(size_t(B * V));
    std::vector<int32_t> next(B);
    for (int64_t b = 0; b < B; ++b) {
      const float* row = l.f32() + (b * Tl + Tl - 1) * V;
      std::memcpy(last.data() + b * V, row, size_t(V) * sizeof(float));
      next[b] = int32_t(std::max_element(row, row + V) - row);
    }
    o.logits.push_back(std::move(last));
    from = batch.cols();
    batch.append(next);
  }
  o.hooks = std::move(sink.seen);
  return o;
}

// Every run against the first: the same logits bits at every step, the same fingerprint for
// every tensor both hooked.
void expect_unchanged_by_observation(Decoder& dec, const std::string& what) {
  const std::vector<std::optional<std::string>> selections = {
      std::nullopt, "", "logits", "layers.*.attn.probs", "layers.*.attn.scores,layers.*.attn.z", "*"};
  std::vector<Observed> runs;
  for (const auto& s : selections) runs.push_back(observe(dec, s));
  const Observed& ref = runs[0];
  ASSERT_EQ(ref.logits.size(), 4u);
  for (size_t r = 1; r < runs.size(); ++r) {
    const std::string name = what + ", hooks '" + *selections[r] + "'";
    for (size_t step = 0; step < ref.logits.size(); ++step)
      EXPECT_EQ(0, std::memcmp(runs[r].logits[step].data(), ref.logits[step].data(), ref.logits[step].size() * 4))
          << name << ": step " << step << "'s logits differ from the run without a trace";
    for (size_t q = 1; q < r; ++q) {
      int shared = 0;
      for (const auto& [key, fp] : runs[r].hooks) {
        auto it = runs[q].hooks.find(key);
        if (it == runs[q].hooks.end()) continue;
        ++shared;
        EXPECT_EQ(fp, it->second) << name << " against hooks '" << *selections[q] << "': " << key << " differs";
      }
      if (selections[r] == "*") {
        EXPECT_EQ(shared, int(runs[q].hooks.size())) << "'*' holds every hook of '" << *selections[q] << "'";
      }
    }
  }
  // The selections asked for what they name: the comparisons above compared something.
  EXPECT_TRUE(runs[1].hooks.empty());
  EXPECT_TRUE(runs[2].hooks.count("step 0 logits"));
  EXPECT_TRUE(runs[3].hooks.count("step 0 layers.0.attn.probs"));
  EXPECT_TRUE(runs[4].hooks.count("step 3 layers.0.attn.scores"));
}

}  // namespace

TEST(Observation, HooksChangeNoNumberOnTheTinyModel) {
  const ModelConfig cfg = tiny_qwen2_shapes(300);
  const Weights w = random_weights(cfg, 7, 0.3f);
  auto backend = make_backend("cpu");
  Decoder dec(cfg, w, *backend);
  expect_unchanged_by_observation(dec, "tiny");
}

TEST(Observation, HooksChangeNoNumberOnSmolLM2) {
  if (!std::filesystem::exists(kSmolLM2)) GTEST_SKIP() << kSmolLM2 << " is absent (scripts/fetch-model.sh fetches it)";
  const LoadedModel m = load_model(kSmolLM2);
  for (const char* acts : {"f32", "q8"}) {
    auto backend = make_backend("cpu", "f32", acts);
    Decoder dec(m.cfg, m.weights, *backend);
    expect_unchanged_by_observation(dec, std::string("SmolLM2 ") + acts);
  }
}
