// The backward pass on the CUDA backend (f32) against torch autograd: every case of
// golden/grad/manifest.json (the tiny models every hook, a left-padded batch, SmolLM2's
// slices), the tiny ones with and without a KV cache, SmolLM2 without (about 10 s of CPU on the
// emulator; the cache's prefill path is the tiny models'), at the CPU's tolerance
// (tests/grad/grad_golden.h): the backward is float32 on both backends and differs only in
// summation order (cuBLAS, the row sums of kernels/backward.cu). Skipped, with the reason,
// where no CUDA device is usable.
#include "tests/grad/grad_golden.h"

#include "cuda_test_util.h"

using namespace lmscope;

namespace {
class GradGoldenCuda : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

std::vector<std::tuple<std::string, bool>> cases() {
  std::vector<std::tuple<std::string, bool>> out;
  for (const std::string& name : grad_golden::case_names()) {
    out.emplace_back(name, false);
    if (name.rfind("smollm2", 0) != 0) out.emplace_back(name, true);
  }
  return out;
}
}  // namespace

TEST_P(GradGoldenCuda, EveryGradientMatchesTorchAutograd) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "f32");
  const auto& [name, use_cache] = GetParam();
  grad_golden::check_case(name, use_cache, [&] { return std::move(gpu); });
}

// The bf16 forward rounds every matmul's input, a step with no backward: refused in one line
// before the forward runs.
TEST(GradCuda, Bf16IsRefusedInOneLine) {
  LMSCOPE_CUDA_OR_SKIP(gpu, "bf16");
  LoadedModel m = load_model(golden::root() + "/golden/models/tiny-qwen2");
  GradRequest req;
  req.prompts = {{1, 2, 3}};
  req.metric = parse_metric("logprob:pos=-1:5");
  req.hooks = "embed";
  try {
    run_with_grads(m.cfg, m.weights, *gpu, req);
    FAIL() << "no refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gradients: the cuda backend's --dtype bf16 has no backward ops (use --dtype f32)");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GradGoldenCuda, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return grad_golden::param_name(info.param); });
