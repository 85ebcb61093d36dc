// --cpu-activations q8 on SmolLM2-135M-Instruct Q4_1 (skipped when the file is absent):
//  * greedy decoding of a short prompt picks the f32 mode's first tokens (int8 activations move
//    the logits by far less than the top two logits' gap there);
//  * the quant.<hook>.q8 / .q8_scale hooks: each scale is f16(amax / 127) of its block of the
//    hooked tensor (amax read from the trace's own copy of that tensor), and codes * scales
//    give the hooked tensor back within the rounding: d/2, plus 127 times fp16's rounding of d.
#include <gtest/gtest.h>

#include "tests/engine/f16_reference.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "generate/generator.h"
#include "model/decoder.h"
#include "model/load_model.h"
#include "tokenizer/tokenizer.h"
#include "trace/hook_set.h"
#include "trace/trace.h"

using namespace lmscope;

namespace {

const std::string kModel = std::string(LMSCOPE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

struct Keep : TraceSink {
  std::map<std::string, Tensor> seen;   // the last step's tensor per hook name
  void offer(Hook h, int layer, const Tensor& t) override { seen[hook_name(h, layer)] = t; }
};

GenerateOptions greedy(const std::vector<int32_t>& prompt, int tokens) {
  GenerateOptions opt;
  opt.prompts = {prompt};
  opt.max_new_tokens = tokens;
  return opt;
}

}  // namespace

TEST(Q8SmolLM2, GreedyTokensMatchF32AndHooksShowTheRounding) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << kModel << " is absent (scripts/fetch-model.sh fetches it)";
  LoadedModel m = load_model(kModel);
  const std::vector<int32_t> prompt = tok::Tokenizer::load(kModel).encode("The capital of France is");

  CpuBackend f32(CpuActivations::F32), q8(CpuActivations::Q8);
  Decoder exact(m.cfg, m.weights, f32), fast(m.cfg, m.weights, q8);
  const GenerateResult a = generate(exact, greedy(prompt, 3), nullptr);
  const GenerateResult b = generate(fast, greedy(prompt, 3), nullptr);
  ASSERT_EQ(a.new_tokens.at(0).size(), 3u);
  EXPECT_EQ(b.new_tokens.at(0), a.new_tokens.at(0));

  // One prefill step with layers 0 and 29 hooked, in both modes.
  const std::string globs =
      "layers.*.attn_norm,layers.*.attn.z,layers.*.ffn_norm,layers.*.ffn.act,final_norm,quant.*";
  Keep keep_q8, keep_f32;
  Trace t_q8(HookSet(globs, "0,29", m.cfg.num_layers), nullptr), t_f32(HookSet(globs, "0,29", m.cfg.num_layers), nullptr);
  t_q8.set_sink(&keep_q8);
  t_f32.set_sink(&keep_f32);
  generate(fast, greedy(prompt, 1), &t_q8);
  generate(exact, greedy(prompt, 1), &t_f32);
  for (const auto& [name, t] : keep_f32.seen) EXPECT_NE(name.rfind("quant.", 0), 0u) << name << " fired in f32 mode";

  std::vector<std::string> hooked;
  for (int L : {0, 29})
    for (const char* h : {"attn_norm", "attn.z", "ffn_norm", "ffn.act"})
      hooked.push_back("layers." + std::to_string(L) + "." + h);
  hooked.push_back("final_norm");
  for (const std::string& h : hooked) {
    SCOPED_TRACE(h);
    ASSERT_TRUE(keep_q8.seen.count(h) && keep_q8.seen.count("quant." + h + ".q8") &&
                keep_q8.seen.count("quant." + h + ".q8_scale"));
    const Tensor& x = keep_q8.seen.at(h);
    const Tensor& codes = keep_q8.seen.at("quant." + h + ".q8");
    const Tensor& scales = keep_q8.seen.at("quant." + h + ".q8_scale");
    ASSERT_EQ(codes.shape(), x.shape());
    ASSERT_EQ(scales.numel() * 32, x.numel());
    for (int64_t blk = 0; blk < scales.numel(); ++blk) {
      const float* xb = x.f32() + blk * 32;
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
      const float d = amax / 127.0f, dh = scales.f32()[blk];
      ASSERT_EQ(dh, test_f16::round_trip(d)) << "block " << blk;
      const double bound = double(d) * (0.5 + 1e-5) + 127.0 * std::fabs(double(d) - dh);
      for (int j = 0; j < 32; ++j) {
        const float c = codes.f32()[blk * 32 + j];
        ASSERT_EQ(c, std::nearbyint(c));
        ASSERT_LE(std::fabs(c), 127.0f);
        ASSERT_LE(std::fabs(double(xb[j]) - double(c) * dh), bound) << "block " << blk << " element " << j;
      }
    }
  }
}
