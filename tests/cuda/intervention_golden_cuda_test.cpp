// The intervention goldens (HF transformers with torch hooks editing the same sites:
// tests/intervene/intervention_golden.h) on the CUDA backend, float32: every op and site of the
// tiny models with the cache and without it, left-padded batches and their rows alone. On
// SmolLM2, two cached cases (heads of attn.z zeroed, attn.probs edited): the CPU emulator takes
// about 35 s of CPU a case there (measured: 67 s for the two), so the other ten run in the CPU
// backend's test and on a GPU (LMSCOPE_CUDA_ALL_SMOLLM2_CASES=1 runs them all here). The same logits tolerance as the CPU backend: both compute in float32 and
// differ only in summation order (docs/tolerances.md). An edit runs through Backend::to_host /
// upload, so these tests hold the CUDA path's copies around every edited site too.
#include "tests/intervene/intervention_golden.h"

#include <cstdlib>
#include <filesystem>

#include "cuda_test_util.h"

using namespace lmscope;
using namespace lmscope::intervention_golden;

TEST(CudaInterventionsVsHF, TinyQwen2) {
  LMSCOPE_CUDA_OR_SKIP(be, "f32");
  check_model("tiny-qwen2", kRoot + "/golden/models/tiny-qwen2", std::move(be));
}

TEST(CudaInterventionsVsHF, TinyLlama) {
  LMSCOPE_CUDA_OR_SKIP(be, "f32");
  check_model("tiny-llama", kRoot + "/golden/models/tiny-llama", std::move(be));
}

TEST(CudaInterventionsVsHF, SmolLM2) {
  LMSCOPE_CUDA_OR_SKIP(be, "f32");
  const json ref = refs("smollm2");
  ASSERT_FALSE(ref.is_null()) << "golden/interventions/smollm2.json is missing: it is committed, so the checkout is broken";
  const std::string model = kRoot + "/" + ref["model"].get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/fetch-model.sh";
  CaseFilter filter;
  if (!std::getenv("LMSCOPE_CUDA_ALL_SMOLLM2_CASES")) filter = {{"z-heads-zero", "probs-bos"}, /*cached_only=*/true, /*alone=*/false};
  check_model("smollm2", model, std::move(be), filter);
}
