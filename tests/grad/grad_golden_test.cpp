// The backward pass on the CPU backend against torch autograd: every case of
// golden/grad/manifest.json, with and without a KV cache (the check: grad_golden.h; the
// same on the CUDA backend: tests/cuda/grad_golden_cuda_test.cpp).
#include "tests/grad/grad_golden.h"

using namespace lmscope;

namespace {
class GradGolden : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};
}  // namespace

TEST_P(GradGolden, EveryGradientMatchesTorchAutograd) {
  const auto& [name, use_cache] = GetParam();
  grad_golden::check_case(name, use_cache, [] { return make_backend("cpu"); });
}

INSTANTIATE_TEST_SUITE_P(Cases, GradGolden,
                         ::testing::Combine(::testing::ValuesIn(grad_golden::case_names()), ::testing::Bool()),
                         [](const auto& info) { return grad_golden::param_name(info.param); });
