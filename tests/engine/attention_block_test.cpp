// CpuBackend::attention's tiled prefill path (backend/cpu/attention_block.h: T > 1) against
// the row path with the scalar loops (attention_row.h's attention_rows, the reference), on
// random q/k/v: grouped KV heads, a causal mask with and without a cached past, a left-padded
// batch of 2 whose first query is fully masked, S on and off a multiple of the key block,
// masks no shape predicts. z within the rounding bound below, and the same bits whether or not
// the scores and probs are asked for; those within the bound of their own.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention_block.h"
#include "backend/cpu/attention_row.h"
#include "backend/cpu/cpu_backend.h"
#include "random_blocks.h"
#include "kernels/attention_math.cuh"

using namespace lmscope;
using lmscope::test::randn;

namespace {

float max_abs(const Tensor& t) {
  float m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.f32()[i]));
  return m;
}

// Largest L2 norm over the rows of hd floats.
float max_row_norm(const Tensor& t, int64_t hd) {
  double m = 0;
  for (int64_t r = 0; r < t.numel() / hd; ++r) {
    double n = 0;
    for (int64_t i = 0; i < hd; ++i) n += double(t.f32()[r * hd + i]) * t.f32()[r * hd + i];
    m = std::max(m, n);
  }
  return float(std::sqrt(m));
}

// How far the two paths may differ with float32 (unit roundoff u = 2^-24) summed in another
// order, from the textbook bound |fl(sum of n terms) - sum| <= n u sum|terms| for each path:
//  - a score: 2 hd u scale sum|q_i k_i| <= 2 hd u scale |q| |k| (Cauchy-Schwarz): dw;
//  - the probabilities: logits moved by at most dw move p by at most 2 dw in L1; each path's
//    exp and its sum of S weights add (S + 4) u more: 2 dw + 2 (S + 4) u;
//  - z = sum p v: that L1 change times max|v|, plus each path's sum of S products, S u max|v|.
// So |dz| <= max|v| (2 dw + 4 (S + 4) u). A wrong block, a missed rescale or a masked key let
// in moves z by a sizable fraction of max|v|, orders of magnitude above this.
double score_bound(const Tensor& q, const Tensor& k, int64_t hd, float scale) {
  return 2.0 * hd * std::ldexp(1.0, -24) * scale * max_row_norm(q, hd) * max_row_norm(k, hd);
}
double bound(const Tensor& q, const Tensor& k, const Tensor& v, int64_t hd, int64_t S, float scale) {
  return max_abs(v) * (2 * score_bound(q, k, hd, scale) + 4.0 * (S + 4) * std::ldexp(1.0, -24));
}

::testing::AssertionResult within(const Tensor& a, const Tensor& b, double tol) {
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double d = std::isfinite(a.f32()[i]) ? std::fabs(double(a.f32()[i]) - b.f32()[i]) : INFINITY;
    if (d > worst) worst = d, at = i;
  }
  if (worst <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |diff| " << worst << " at " << at << " > bound " << tol;
}

struct Case {
  int64_t B, H, Hkv, T, S, hd;
};

// The scores and probs against the reference's: a masked entry masked in both, an unmasked
// score within dw, a probability within the L1 bound 2 dw + 2 (S + 4) u.
::testing::AssertionResult hooked_within(const Tensor& scores, const Tensor& probs, const Tensor& ref_scores,
                                         const Tensor& ref_probs, double dw, int64_t S) {
  const double dp = 2 * dw + 2.0 * (S + 4) * std::ldexp(1.0, -24);
  for (int64_t i = 0; i < ref_scores.numel(); ++i) {
    const float s = scores.f32()[i], r = ref_scores.f32()[i];
    if (is_masked(s) != is_masked(r) || (!is_masked(r) && !(std::fabs(double(s) - r) <= dw)))
      return ::testing::AssertionFailure() << "score " << i << ": " << s << " against " << r << " (bound " << dw << ")";
    if (!(std::fabs(double(probs.f32()[i]) - ref_probs.f32()[i]) <= dp))
      return ::testing::AssertionFailure() << "prob " << i << ": " << probs.f32()[i] << " against "
                                           << ref_probs.f32()[i] << " (bound " << dp << ")";
  }
  return ::testing::AssertionSuccess();
}

// Runs both paths on one random case with mask(b, t, s) -> visible?, and compares.
void check_case(CpuBackend& cpu, std::mt19937_64& rng, const Case& c,
                const std::function<bool(int64_t, int64_t, int64_t)>& visible, float masked = -FLT_MAX) {
  const int64_t Smax = c.S + 5;   // a cache row longer than S: the stride is Smax, not S
  Tensor q = randn({c.B, c.H, c.T, c.hd}, rng), k = randn({c.B, c.Hkv, Smax, c.hd}, rng);
  Tensor v = randn({c.B, c.Hkv, Smax, c.hd}, rng);
  Tensor mask = Tensor::zeros({c.B, c.T, c.S});
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t s = 0; s < c.S; ++s) mask.f32()[(b * c.T + t) * c.S + s] = visible(b, t, s) ? 0.0f : masked;
  Tensor z_blk = cpu.alloc({c.B, c.T, c.H, c.hd}), z_hooked = cpu.alloc({c.B, c.T, c.H, c.hd});
  Tensor z_ref = cpu.alloc({c.B, c.T, c.H, c.hd});
  Tensor scores = cpu.alloc({c.B, c.H, c.T, c.S}), probs = cpu.alloc({c.B, c.H, c.T, c.S});
  Tensor ref_scores = cpu.alloc({c.B, c.H, c.T, c.S}), ref_probs = cpu.alloc({c.B, c.H, c.T, c.S});
  const float scale = 1.0f / std::sqrt(float(c.hd));
  cpu.attention(z_blk, q, k, v, c.S, mask, scale, nullptr, nullptr);
  cpu.attention(z_hooked, q, k, v, c.S, mask, scale, &scores, &probs);
  cpu::attention_rows(cpu::kScalarRowLoops, z_ref.f32(), q.f32(), k.f32(), v.f32(), mask.f32(),
                      {c.B, c.H, c.Hkv, c.T, c.hd, c.S, Smax}, scale, ref_scores.f32(), ref_probs.f32());
  const std::string where = "B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) + " Hkv=" + std::to_string(c.Hkv) +
                            " T=" + std::to_string(c.T) + " S=" + std::to_string(c.S) + " hd=" + std::to_string(c.hd);
  EXPECT_TRUE(within(z_blk, z_ref, bound(q, k, v, c.hd, c.S, scale))) << where;
  EXPECT_EQ(0, std::memcmp(z_blk.f32(), z_hooked.f32(), z_blk.nbytes())) << where << ": the hooks changed z";
  EXPECT_TRUE(hooked_within(scores, probs, ref_scores, ref_probs, score_bound(q, k, c.hd, scale), c.S)) << where;
  // Either hook alone: the same numbers as both together.
  Tensor only = cpu.alloc({c.B, c.H, c.T, c.S});
  cpu.attention(z_hooked, q, k, v, c.S, mask, scale, nullptr, &only);
  EXPECT_EQ(0, std::memcmp(only.f32(), probs.f32(), probs.nbytes())) << where << ": probs alone";
  EXPECT_EQ(0, std::memcmp(z_blk.f32(), z_hooked.f32(), z_blk.nbytes())) << where << ": probs alone changed z";
  cpu.attention(z_hooked, q, k, v, c.S, mask, scale, &only, nullptr);
  EXPECT_EQ(0, std::memcmp(only.f32(), scores.f32(), scores.nbytes())) << where << ": scores alone";
}

}  // namespace

// SmolLM2's heads (9 query, 3 KV, hd 64) and a tail head size; T from 1 (the row path) across
// the query block (32) and the key block (128) to 300; no past (S = T) and a cached past.
TEST(AttentionBlock, CausalPrefillMatchesTheRowPath) {
  CpuBackend cpu;
  std::mt19937_64 rng(3);
  for (int64_t hd : {64, 20})
    for (int64_t T : {1, 2, 3, 31, 32, 33, 100, 128, 129, 255, 300})
      for (int64_t past : {0, 7}) {
        const int64_t S = T + past;
        check_case(cpu, rng, {1, 9, 3, T, S, hd}, [&](int64_t, int64_t t, int64_t s) { return s <= past + t; });
      }
}

// Batch of 2, the second row left-padded by 40: its first 40 queries see no key at all (HF's
// uniform row over every key) and no query sees the pad keys; the first row plain causal.
TEST(AttentionBlock, LeftPaddedBatchWithFullyMaskedRows) {
  CpuBackend cpu;
  std::mt19937_64 rng(5);
  const int64_t pad = 40;
  for (int64_t T : {2, 41, 150, 300}) {
    auto visible = [&](int64_t b, int64_t t, int64_t s) { return s <= t && (b == 0 || (s >= pad && t >= pad)); };
    check_case(cpu, rng, {2, 4, 2, T, T, 64}, visible);
  }
}

// Masks the shape does not predict, so skipping must follow the mask: queries that see only
// later keys (anti-causal), a window of 50 keys behind each query, and -inf for masked keys
// (as other producers write it) instead of the -FLT_MAX sentinel.
TEST(AttentionBlock, SkipsWhatTheMaskMasksAndNothingElse) {
  CpuBackend cpu;
  std::mt19937_64 rng(9);
  const int64_t T = 270;
  check_case(cpu, rng, {1, 6, 2, T, T, 64}, [](int64_t, int64_t t, int64_t s) { return s >= t; });
  check_case(cpu, rng, {1, 6, 2, T, T, 64}, [](int64_t, int64_t t, int64_t s) { return s <= t && s + 50 > t; });
  check_case(cpu, rng, {1, 6, 3, T, T, 32}, [](int64_t, int64_t t, int64_t s) { return s <= t; }, -INFINITY);
}

// softmax_exp (kernels/attention_math.cuh) against std::exp in double, the independent
// reference: within 1 ulp over the softmax's range (x <= 0), exactly 1 at 0, and 0 below the
// flush point and at -inf. Its 8-lane version gives the same float.
TEST(AttentionBlock, SoftmaxExpIsExpWithin1UlpAndTheLanesAgree) {
  std::vector<float> x;
  for (float v = 0.0f; v > -87.0f; v -= 0.000731f) x.push_back(v);
  x.push_back(-86.99f);
  double worst_ulp = 0;
  for (float v : x) {
    const double ref = std::exp(double(v));
    const double ulp = std::nextafter(float(ref), INFINITY) - float(ref);
    worst_ulp = std::max(worst_ulp, std::fabs(softmax_exp(v) - ref) / ulp);
  }
  EXPECT_LE(worst_ulp, 1.0);
  EXPECT_EQ(1.0f, softmax_exp(0.0f));
  EXPECT_EQ(0.0f, softmax_exp(-87.5f));
  EXPECT_EQ(0.0f, softmax_exp(-INFINITY));
  x.push_back(-INFINITY), x.push_back(-1e30f), x.push_back(-87.0001f);
  std::vector<float> y(x.size());
  cpu::softmax_exp_avx2(y.data(), x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(softmax_exp(x[i]), y[i]) << "x=" << x[i];
}

// The online softmax step, AVX2 against scalar, over two blocks (the second raising the max
// and rescaling): weights, max and sum equal up to the order of the block's sum.
TEST(AttentionBlock, OnlineSoftmaxStepVectorMatchesScalar) {
  if (!cpu::attention_avx2_available()) GTEST_SKIP() << "this processor has no AVX2+FMA: scalar path only";
  std::mt19937_64 rng(13);
  for (int64_t nb : {1, 8, 13, 128}) {
    const int64_t hd = 20;
    Tensor d1 = randn({nb}, rng), d2 = randn({nb}, rng), mask = Tensor::zeros({nb}), acc = randn({hd}, rng);
    for (int64_t j = 0; j < nb; j += 3) mask.f32()[j] = -FLT_MAX;
    for (int64_t j = 0; j < nb; ++j) d2.f32()[j] += 4.0f;   // the second block's max is larger
    std::vector<float> wv(d1.f32(), d1.f32() + nb), ws = wv, av(acc.f32(), acc.f32() + hd), as = av;
    float mv = -INFINITY, ms = -INFINITY;
    double lv = 0, ls = 0;
    cpu::online_softmax_row_avx2(wv.data(), mask.f32(), nb, 0.5f, mv, lv, av.data(), hd);
    cpu::online_softmax_row(ws.data(), mask.f32(), nb, 0.5f, ms, ls, as.data(), hd);
    for (int64_t j = 0; j < nb; ++j) ASSERT_EQ(ws[j], wv[j]) << "nb=" << nb << " j=" << j;
    EXPECT_EQ(ms, mv);
    EXPECT_NEAR(ls, lv, 1e-6 * ls);
    wv.assign(d2.f32(), d2.f32() + nb), ws = wv;
    cpu::online_softmax_row_avx2(wv.data(), mask.f32(), nb, 0.5f, mv, lv, av.data(), hd);
    cpu::online_softmax_row(ws.data(), mask.f32(), nb, 0.5f, ms, ls, as.data(), hd);
    EXPECT_EQ(ms, mv);
    EXPECT_NEAR(ls, lv, 1e-6 * ls);
    for (int64_t i = 0; i < hd; ++i) EXPECT_NEAR(as[i], av[i], 1e-6 * (1 + std::fabs(as[i])));
    EXPECT_EQ(0.0f, ws[0]) << "a masked key's weight is exactly 0";
  }
}
