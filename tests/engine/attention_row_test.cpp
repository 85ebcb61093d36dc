// CpuBackend::attention (the vector loops of backend/cpu/attention_row.h for a decode row, the
// tiles for prefill) against the row path with the scalar loops, the reference: the same z up
// to float32 summation order, for decode and prefill rows, grouped KV heads, head sizes with
// and without a tail past a multiple of 8, masked keys and a fully masked (left-pad) query
// row, and the same bits with the scores and probs asked for; and the two loops over the
// cache on their own.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/attention_row.h"
#include "backend/cpu/cpu_backend.h"
#include "random_blocks.h"

using namespace lmscope;
using lmscope::test::randn;

namespace {

// |a - b| <= 1e-5 * (1 + max|b|) everywhere: float32 sums in another order.
::testing::AssertionResult close(const float* a, const float* b, int64_t n) {
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, double(std::fabs(b[i])));
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::isfinite(a[i]) ? std::fabs(double(a[i]) - b[i]) : INFINITY;
    if (d > worst) worst = d, at = i;
  }
  if (worst <= 1e-5 * (1 + scale)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |diff| " << worst << " at " << at << " (scale " << scale << ")";
}

}  // namespace

TEST(AttentionRow, VectorPathMatchesTheScalarOne) {
  if (!cpu::attention_avx2_available()) GTEST_SKIP() << "this processor has no AVX2+FMA: scalar path only";
  CpuBackend cpu;
  std::mt19937_64 rng(7);
  const int64_t B = 2, H = 6, Hkv = 2, Smax = 40;
  for (int64_t hd : {8, 20, 64, 72})
    for (auto [T, S] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 33}, {3, 17}}) {
      Tensor q = randn({B, H, T, hd}, rng), k = randn({B, Hkv, Smax, hd}, rng), v = randn({B, Hkv, Smax, hd}, rng);
      // Row 1's first two keys are padding; row 1's first query sees nothing (left pad).
      Tensor mask = Tensor::zeros({B, T, S});
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < S; ++s) {
          const bool causal = s <= S - T + t, real = s >= 2 || S < 3;
          mask.f32()[(1 * T + t) * S + s] = (causal && real && !(t == 0 && T > 1)) ? 0.0f : -FLT_MAX;
          mask.f32()[(0 * T + t) * S + s] = causal ? 0.0f : -FLT_MAX;
        }
      Tensor z_vec = cpu.alloc({B, T, H, hd}), z_hooked = cpu.alloc({B, T, H, hd}), z_ref = cpu.alloc({B, T, H, hd});
      Tensor scores = cpu.alloc({B, H, T, S}), probs = cpu.alloc({B, H, T, S});
      const float scale = 1.0f / std::sqrt(float(hd));
      cpu.attention(z_vec, q, k, v, S, mask, scale, nullptr, nullptr);
      cpu.attention(z_hooked, q, k, v, S, mask, scale, &scores, &probs);
      cpu::attention_rows(cpu::kScalarRowLoops, z_ref.f32(), q.f32(), k.f32(), v.f32(), mask.f32(),
                          {B, H, Hkv, T, hd, S, Smax}, scale, nullptr, nullptr);
      EXPECT_TRUE(close(z_vec.f32(), z_ref.f32(), z_ref.numel())) << "hd=" << hd << " T=" << T << " S=" << S;
      EXPECT_EQ(0, std::memcmp(z_vec.f32(), z_hooked.f32(), z_vec.nbytes()))
          << "hd=" << hd << " T=" << T << " S=" << S << ": asking for the scores and probs changed z";
    }
}

// One implementation's two loops on their own, against the scalar ones on the same inputs.
// The weights include exact zeros (masked keys, every `mask_every`-th), which both skip; the
// output row has one more float after it, which the vector store must leave alone.
namespace {

using ScoresFn = float (*)(float*, const float*, const float*, const float*, int64_t, int64_t, float);
using MixFn = void (*)(float*, const float*, const float*, int64_t, int64_t);

void check_loops(ScoresFn scores, MixFn mix, const std::vector<int64_t>& head_dims, int64_t S, int64_t mask_every,
                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t hd : head_dims) {
    Tensor q = randn({hd}, rng), K = randn({S, hd}, rng), V = randn({S, hd}, rng), mask = Tensor::zeros({S});
    for (int64_t s = 0; s < S; s += mask_every) mask.f32()[s] = -FLT_MAX;
    std::vector<float> w_vec(S), w_ref(S);
    const float max_vec = scores(w_vec.data(), q.f32(), K.f32(), mask.f32(), S, hd, 0.125f);
    const float max_ref = cpu::attention_scores(w_ref.data(), q.f32(), K.f32(), mask.f32(), S, hd, 0.125f);
    std::vector<float> real_vec, real_ref;   // a masked score is -FLT_MAX: compared exactly
    for (int64_t s = 0; s < S; ++s) {
      if (mask.f32()[s] == 0.0f) {
        real_vec.push_back(w_vec[s]), real_ref.push_back(w_ref[s]);
      } else {
        EXPECT_EQ(w_ref[s], w_vec[s]) << "masked score " << s << " hd=" << hd;
      }
    }
    EXPECT_TRUE(close(real_vec.data(), real_ref.data(), int64_t(real_ref.size()))) << "scores hd=" << hd;
    EXPECT_TRUE(close(&max_vec, &max_ref, 1)) << "max hd=" << hd;
    cpu::attention_softmax(w_ref.data(), S, max_ref);
    EXPECT_EQ(0.0f, w_ref[mask_every]) << "a masked key's weight is exactly 0";
    std::vector<float> z_vec(hd + 1, NAN), z_ref(hd, NAN);
    z_vec[hd] = 7.0f;   // past the row
    mix(z_vec.data(), w_ref.data(), V.f32(), S, hd);
    cpu::attention_mix(z_ref.data(), w_ref.data(), V.f32(), S, hd);
    EXPECT_TRUE(close(z_vec.data(), z_ref.data(), hd)) << "mix hd=" << hd;
    EXPECT_EQ(7.0f, z_vec[hd]) << "hd=" << hd;
  }
}

}  // namespace

TEST(AttentionRow, ScoresAndMixMatchTheScalarLoops) {
  if (!cpu::attention_avx2_available()) GTEST_SKIP() << "this processor has no AVX2+FMA: scalar path only";
  check_loops(cpu::attention_scores_avx2, cpu::attention_mix_avx2, {4, 8, 12, 64, 100, 128}, 29, 5, 11);
}

// Head sizes on and off a multiple of 16 (the masked last vector) and of 64 (the 4-register
// chunk of the weighted sum).
TEST(AttentionRow, Avx512ScoresAndMixMatchTheScalarLoops) {
  if (!cpu::attention_avx512_available()) GTEST_SKIP() << "this processor has no AVX-512F";
  check_loops(cpu::attention_scores_avx512, cpu::attention_mix_avx512, {4, 16, 20, 48, 64, 72, 100, 128}, 37, 4, 17);
}
