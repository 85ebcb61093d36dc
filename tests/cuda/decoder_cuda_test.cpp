// The whole forward on CUDA against the CPU backend on a random tiny Qwen2 (no files): every
// hook of every step compared under the float32 tolerances, with left and right padding, with
// and without the KV cache (prefill + decode steps, or the whole sequence each step). And the
// hooks themselves: enabled ones are copied asynchronously without changing any result.
#include <gtest/gtest.h>

#include <filesystem>

#include "compare/compare.h"
#include "compare/report.h"
#include "cuda_test_util.h"
#include "runs/run.h"
#include "generate/generator.h"
#include "kernels/dtype_convert.cuh"
#include "model/random_weights.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
using namespace lmscope::cuda_test;
namespace fs = std::filesystem;

namespace {

struct Model {
  ModelConfig cfg = tiny_qwen2_shapes(300);
  Weights w = random_weights(cfg, 42, 0.3f);
};

// The model with its matrices (the embedding, the head, the projections) held as `type`, F16 or
// BF16 as stored: the tensors the safetensors and GGUF loaders give for a bf16/f16 checkpoint.
// The values are rounded once, so both backends read the same ones; vectors stay float32.
Model with_matrices_as(DType type) {
  Model m;
  auto hold = [&](Tensor& t) {
    Tensor h = Tensor::zeros(t.shape(), type);
    auto* bits = static_cast<uint16_t*>(h.raw());
    for (int64_t i = 0; i < t.numel(); ++i)
      bits[i] = type == DType::BF16 ? f32_to_bf16(t.f32()[i]) : f32_to_f16(t.f32()[i]);
    t = h;
  };
  const bool tied = m.w.lm_head.same_storage(m.w.embed);
  hold(m.w.embed);
  if (tied) m.w.lm_head = m.w.embed;
  else hold(m.w.lm_head);
  for (LayerWeights& l : m.w.layers)
    for (Tensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) hold(*t);
  return m;
}

GenerateOptions options(PaddingSide side, bool cache) {
  GenerateOptions o;
  o.prompts = {{3, 17, 250, 9}, {4, 77, 120, 5, 6, 7, 8, 9, 10}, {11}};
  o.padding_side = side;
  o.use_cache = cache;
  o.max_new_tokens = 4;
  o.pad_id = 0;
  return o;
}

std::string temp(const std::string& stem) {
  fs::path dir = fs::temp_directory_path() / ("lmscope-cuda-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / (stem + ".h5")).string();
}

// Every hook but attn.scores and attn.probs: asking for those switches CUDA to the
// materialized attention, so this set keeps the fused one (what a plain run uses).
const char* kFusedAttentionHooks =
    "tokens.*,mask.*,rope.*,embed,layers.*.resid_*,layers.*.attn_norm,layers.*.attn.q*,layers.*.attn.k*,"
    "layers.*.attn.v,layers.*.attn.z,layers.*.attn_out,layers.*.ffn*,kv.*,final_norm,logits,sample.*";

// Generates with the hooks `hooks` (every one by default) written to `path`; returns the tokens.
std::vector<std::vector<int32_t>> traced(Backend& be, const Model& m, const GenerateOptions& o,
                                         const std::string& path, const std::string& hooks = "*") {
  Decoder d(m.cfg, m.w, be);
  ModelContext ctx;
  ctx.decoder = &d;
  ctx.model_path = "random tiny qwen2";
  return run_traced(ctx, o, HookSet(hooks, "", m.cfg.num_layers), path).new_tokens;
}

class CudaDecoder : public ::testing::TestWithParam<std::tuple<PaddingSide, bool>> {};

}  // namespace

// CUDA against the CPU, the same hooks on both sides; tokens equal, every hook within the
// float32 tolerances.
void expect_cuda_matches_cpu(PaddingSide side, bool cache, const std::string& hooks, const std::string& tag,
                             const Model& m = Model()) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  auto cpu = make_backend("cpu");
  GenerateOptions o = options(side, cache);
  const std::string a = temp("cuda-" + tag), ref = temp("cpu-" + tag);
  auto tokens_gpu = traced(*gpu, m, o, a, hooks);
  auto tokens_cpu = traced(*cpu, m, o, ref, hooks);
  EXPECT_EQ(tokens_gpu, tokens_cpu);
  CompareReport rep = compare_traces(TraceReader(a), TraceReader(ref), CompareOptions{});
  EXPECT_TRUE(rep.missing_in_a.empty());
  EXPECT_GT(rep.results.size(), 0u);
  EXPECT_TRUE(rep.pass) << report_text(rep, false);
  fs::remove(a);
  fs::remove(ref);
}

std::string tag_of(PaddingSide side, bool cache) {
  return std::string(padding_side_name(side)) + (cache ? "-cache" : "-nocache");
}

// Every hook: the materialized attention (scores and probs are asked for).
TEST_P(CudaDecoder, EveryHookOfEveryStepMatchesTheCpu) {
  const auto [side, cache] = GetParam();
  expect_cuda_matches_cpu(side, cache, "*", tag_of(side, cache));
}

// The fused attention (with split-K over the cache in decode), every other hook.
TEST_P(CudaDecoder, FusedAttentionMatchesTheCpu) {
  const auto [side, cache] = GetParam();
  expect_cuda_matches_cpu(side, cache, kFusedAttentionHooks, "fused-" + tag_of(side, cache));
}

INSTANTIATE_TEST_SUITE_P(PaddingAndCache, CudaDecoder,
                         ::testing::Combine(::testing::Values(PaddingSide::Left, PaddingSide::Right),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(padding_side_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_cache" : "_nocache");
                         });

// bf16/f16 matrices held as stored (an HF checkpoint's safetensors, a GGUF's F16/BF16 tensors):
// the CPU multiplies the 2-byte values (half_matmul.h), the CUDA backend uploads them widened;
// the same tokens, every hook within the float32 tolerances.
TEST(CudaHalfMatrices, F16AndBf16MatchTheCpu) {
  for (DType type : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(type));
    expect_cuda_matches_cpu(PaddingSide::Left, true, kFusedAttentionHooks, std::string("half-") + dtype_name(type),
                            with_matrices_as(type));
  }
}

// A hook that does not change which attention path runs (here every residual and the
// embedding) leaves the logits bit for bit as without a trace; hooking attn.probs switches to
// the materialized path, which agrees to float32 rounding and gives the same tokens.
TEST(CudaHooks, EnabledHooksDoNotChangeResults) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  Model m;
  Decoder d(m.cfg, m.w, *gpu);
  Batch b = Batch::from_prompts({{3, 17, 250, 9, 4}, {77, 120}}, PaddingSide::Left, 0);
  StepInput in{b.ids_tensor(), b.position_ids(), b.mask_tensor()};
  Tensor plain = d.forward(in, nullptr, nullptr, LogitsFor::AllPositions);
  Tensor plain_copy = Tensor::zeros(plain.shape());
  std::copy_n(plain.f32(), plain.numel(), plain_copy.f32());

  Trace resid(HookSet("embed,layers.*.resid_*", "", m.cfg.num_layers), nullptr);
  resid.begin_step(StepInfo{0, "prefill", false, 0, in.input_ids.dim(1), in.input_ids.dim(1)});
  Tensor with_resid = d.forward(in, nullptr, &resid, LogitsFor::AllPositions);
  EXPECT_EQ(resid.tensors_written(), 1 + 3 * m.cfg.num_layers);
  EXPECT_TRUE(close(with_resid, plain_copy, 0, 0)) << "residual hooks changed the logits";

  Trace probs(HookSet("layers.*.attn.probs", "", m.cfg.num_layers), nullptr);
  probs.begin_step(StepInfo{0, "prefill", false, 0, in.input_ids.dim(1), in.input_ids.dim(1)});
  Tensor with_probs = d.forward(in, nullptr, &probs, LogitsFor::AllPositions);
  EXPECT_TRUE(close(with_probs, plain_copy, 1e-6, 1e-5)) << "materialized attention";
}

// LMSCOPE_CUDA_GRAPHS=1 captures each decode step (but the first) into a CUDA graph: the
// same kernels in the same order, so every hook of every step must be bit-identical to the
// eager run, in f32 and bf16, with the materialized and the fused attention, and untraced.
// Five rows (more than the gemv takes: cuBLAS is captured too) with prompts of 3 to 70
// tokens, 12 steps: S crosses 64 and the fused attention's split-K plan changes between
// steps, so graphs are both updated in place and instantiated anew.
TEST(CudaGraphs, DecodeStepsAsGraphsAreBitIdentical) {
  for (const char* dtype : {"f32", "bf16"}) {
    LMSCOPE_CUDA_OR_SKIP(eager, dtype);
    std::unique_ptr<Backend> graphs = cuda_backend_with("LMSCOPE_CUDA_GRAPHS", "1", dtype);
    Model m;
    GenerateOptions o = options(PaddingSide::Left, true);
    o.prompts.clear();
    for (int len : {3, 70, 17, 55, 64}) {
      std::vector<int32_t> p;
      for (int i = 0; i < len; ++i) p.push_back(1 + (i * 37 + len) % 290);
      o.prompts.push_back(p);
    }
    o.max_new_tokens = 12;
    ToleranceTable exact = ToleranceTable::defaults();
    exact.add_override("*", {0, 0}, "bit-identical");
    for (const std::string& hooks : {std::string("*"), std::string(kFusedAttentionHooks)}) {
      const std::string tag = std::string(dtype) + (hooks == "*" ? "-all" : "-fused");
      const std::string a = temp("graphs-" + tag), ref = temp("eager-" + tag);
      EXPECT_EQ(traced(*graphs, m, o, a, hooks), traced(*eager, m, o, ref, hooks)) << tag;
      CompareOptions co;
      co.tolerances = exact;
      CompareReport rep = compare_traces(TraceReader(a), TraceReader(ref), co);
      EXPECT_TRUE(rep.missing_in_a.empty()) << tag;
      EXPECT_TRUE(rep.pass) << tag << "\n" << report_text(rep, false);
      fs::remove(a);
      fs::remove(ref);
    }
    Decoder dg(m.cfg, m.w, *graphs), de(m.cfg, m.w, *eager);
    EXPECT_EQ(generate(dg, o, nullptr).new_tokens, generate(de, o, nullptr).new_tokens) << dtype << " untraced";
  }
}

// A forward that throws in the middle of a captured step (a token id outside the vocabulary,
// found by embed) leaves the backend able to run the next one, eagerly or captured.
TEST(CudaGraphs, AThrowMidCaptureLeavesTheBackendUsable) {
  LMSCOPE_CUDA_OR_SKIP(eager, "f32");
  std::unique_ptr<Backend> graphs = cuda_backend_with("LMSCOPE_CUDA_GRAPHS", "1", "f32");
  Model m;
  GenerateOptions o = options(PaddingSide::Left, true);
  Decoder dg(m.cfg, m.w, *graphs), de(m.cfg, m.w, *eager);
  const auto want = generate(de, o, nullptr).new_tokens;
  EXPECT_EQ(generate(dg, o, nullptr).new_tokens, want);   // decode steps now capture
  Batch b = Batch::from_prompts({{5}}, PaddingSide::Left, 0);
  StepInput bad{b.ids_tensor(), b.position_ids(), b.mask_tensor()};
  bad.input_ids.i32()[0] = int32_t(m.cfg.vocab_size) + 7;
  EXPECT_THROW(dg.forward(bad, nullptr, nullptr, LogitsFor::LastPosition), std::runtime_error);
  EXPECT_EQ(generate(dg, o, nullptr).new_tokens, want) << "after the throw";
}
