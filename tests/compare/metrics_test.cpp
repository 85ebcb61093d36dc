// Element metrics: masked sentinels, pad rows/columns, cosine, scale.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compare/metrics.h"

using namespace lmscope;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kLowest = -3.4028234663852886e38;   // float32 lowest, as a double
const double kBf16Lowest = -3.3895313892515355e38;   // bfloat16 lowest (torch.finfo(bfloat16).min)
}  // namespace

TEST(Metrics, BasicErrorScaleRelCosine) {
  std::vector<double> ref = {1, -4, 2, 0.5};
  std::vector<double> a = {1, -4.002, 2.001, 0.5};
  Metrics m = compute_metrics(a, ref);
  EXPECT_NEAR(m.max_abs, 0.002, 1e-12);
  EXPECT_EQ(m.argmax, 1);
  EXPECT_DOUBLE_EQ(m.value, -4.002);
  EXPECT_DOUBLE_EQ(m.ref, -4);
  EXPECT_DOUBLE_EQ(m.scale, 4);
  EXPECT_NEAR(m.rel, 0.0005, 1e-12);
  EXPECT_GT(m.cosine, 0.99999);
  EXPECT_LT(m.cosine, 1.0);
  EXPECT_EQ(m.compared, 4);
}

TEST(Metrics, IdenticalHasNoArgmax) {
  std::vector<double> v = {0, 1, 2};
  Metrics m = compute_metrics(v, v);
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.argmax, -1);
  EXPECT_DOUBLE_EQ(m.cosine, 1);
}

TEST(Metrics, CosineEdgeCases) {
  EXPECT_DOUBLE_EQ(compute_metrics({0, 0}, {0, 0}).cosine, 1);
  EXPECT_DOUBLE_EQ(compute_metrics({1, 0}, {0, 0}).cosine, 0);
  EXPECT_NEAR(compute_metrics({1, 0}, {0, 1}).cosine, 0, 1e-15);
  EXPECT_NEAR(compute_metrics({-1, -2}, {1, 2}).cosine, -1, 1e-15);
}

TEST(Metrics, MaskedSentinelsOfDifferentProducersAreEqual) {
  // lmscope writes float32 lowest, other producers -inf (or bf16's lowest).
  std::vector<double> a = {0.5, kLowest, kLowest, kBf16Lowest};
  std::vector<double> ref = {0.5, -kInf, kLowest, -kInf};
  Metrics m = compute_metrics(a, ref);
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.masked_both, 3);
  EXPECT_EQ(m.compared, 1);
  EXPECT_DOUBLE_EQ(m.scale, 0.5);   // sentinels never enter the scale
  EXPECT_DOUBLE_EQ(m.cosine, 1);
}

// One threshold (kernels/attention_math.cuh) for the attention kernels and for the diff: half
// the float32 sentinel. A large real value is a number, not a mask: -1e31 against -inf is a
// mismatch (a cutoff at -1e30 would hide that real value behind the -inf).
TEST(Metrics, MaskedMeansAtOrBelowHalfTheSentinel) {
  for (double v : {-kInf, kLowest, kBf16Lowest, double(kMaskedAtOrBelow)}) {
    EXPECT_TRUE(is_masked(v)) << v;
    EXPECT_TRUE(is_masked(float(v))) << v;   // the kernels' float view agrees
  }
  for (double v : {-1e31, -1e37, 0.5 * double(kMaskedAtOrBelow), 0.0, std::nan("")}) {
    EXPECT_FALSE(is_masked(v)) << v;
    EXPECT_FALSE(is_masked(float(v))) << v;
  }
  Metrics m = compute_metrics({-1e31}, {-kInf});
  EXPECT_TRUE(std::isinf(m.max_abs));
  EXPECT_EQ(m.mismatched_special, 1);
  EXPECT_EQ(m.masked_both, 0);
}

TEST(Metrics, OneSidedMaskIsAnInfiniteError) {
  std::vector<double> a = {0.5, 0.25, kLowest};
  std::vector<double> ref = {0.5, -kInf, kLowest};
  Metrics m = compute_metrics(a, ref);
  EXPECT_TRUE(std::isinf(m.max_abs));
  EXPECT_EQ(m.argmax, 1);
  EXPECT_EQ(m.mismatched_special, 1);
  Metrics n = compute_metrics({kLowest}, {-5.0});   // the other direction
  EXPECT_TRUE(std::isinf(n.max_abs));
}

TEST(Metrics, NaNAndInfinities) {
  const double nan = std::nan("");
  EXPECT_TRUE(std::isinf(compute_metrics({nan}, {1.0}).max_abs));
  EXPECT_TRUE(std::isinf(compute_metrics({1.0}, {nan}).max_abs));
  EXPECT_EQ(compute_metrics({nan}, {nan}).max_abs, 0);
  EXPECT_EQ(compute_metrics({kInf}, {kInf}).max_abs, 0);
  EXPECT_TRUE(std::isinf(compute_metrics({kInf}, {1e30}).max_abs));
}

TEST(Metrics, IncludeMaskSkipsElements) {
  std::vector<double> a = {1, 100, 3}, ref = {1, 2, 3};
  Metrics m = compute_metrics(a, ref, {1, 0, 1});
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.skipped_pad, 1);
  EXPECT_EQ(m.compared, 2);
  EXPECT_DOUBLE_EQ(m.scale, 3);
}

namespace {
HookData mask_bs(std::vector<double> v, int64_t B, int64_t S) {
  HookData h;
  h.hook = "tokens.attention_mask";
  h.axes = {"B", "S"};
  h.shape = {B, S};
  h.values = std::move(v);
  h.is_int = true;
  return h;
}
}  // namespace

TEST(PadMask, QueryRowsAtPadPositionsAreSkipped) {
  // Left padding: row 1's first two positions are pads. Prefill T == S == 4.
  HookData am = mask_bs({1, 1, 1, 1, 0, 0, 1, 1}, 2, 4);
  Shape shape = {2, 4, 3};   // B,T,D
  std::vector<uint8_t> inc = pad_include_mask("layers.0.resid_post", {"B", "T", "D"}, shape, &am);
  ASSERT_EQ(inc.size(), 24u);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 4; ++t)
      for (int d = 0; d < 3; ++d)
        EXPECT_EQ(inc[size_t((b * 4 + t) * 3 + d)], (b == 1 && t < 2) ? 0 : 1) << b << t << d;

  // Pad rows in a B,H,T,S tensor: row rule only; columns are left to the sentinels.
  std::vector<uint8_t> sc = pad_include_mask("layers.0.attn.scores", {"B", "H", "T", "S"}, {2, 1, 4, 4}, &am);
  ASSERT_EQ(sc.size(), 32u);
  EXPECT_EQ(sc[size_t(((1 * 1 + 0) * 4 + 0) * 4 + 3)], 0);   // b=1, t=0: pad row
  EXPECT_EQ(sc[size_t(((1 * 1 + 0) * 4 + 3) * 4 + 0)], 1);   // b=1, t=3, s=0 (pad column) kept
  // Decode step: T=1 is the last key position, never a pad here.
  HookData am5 = mask_bs({1, 1, 1, 1, 1, 0, 0, 1, 1, 1}, 2, 5);
  EXPECT_TRUE(pad_include_mask("logits", {"B", "T", "V"}, {2, 1, 7}, &am5).empty());
}

TEST(PadMask, KvColumnsAtPadPositionsAreSkipped) {
  HookData am = mask_bs({1, 1, 1, 0, 1, 1}, 2, 3);
  std::vector<uint8_t> inc = pad_include_mask("kv.0.k", {"B", "Hkv", "S", "hd"}, {2, 1, 3, 2}, &am);
  ASSERT_EQ(inc.size(), 12u);
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 3; ++s)
      for (int d = 0; d < 2; ++d) EXPECT_EQ(inc[size_t((b * 3 + s) * 2 + d)], (b == 1 && s == 0) ? 0 : 1);
  // mask.padding (B,S) is compared fully: only kv.* skip key columns.
  EXPECT_TRUE(pad_include_mask("mask.padding", {"B", "S"}, {2, 3}, &am).empty());
}

TEST(PadMask, NoMaskOrMismatchedShapeComparesEverything) {
  EXPECT_TRUE(pad_include_mask("embed", {"B", "T", "D"}, {2, 4, 3}, nullptr).empty());
  HookData am = mask_bs({1, 0, 1, 1}, 2, 2);
  EXPECT_TRUE(pad_include_mask("embed", {"B", "T", "D"}, {3, 2, 3}, &am).empty());   // B differs
  EXPECT_TRUE(pad_include_mask("embed", {"B", "T", "D"}, {2, 5, 3}, &am).empty());   // T > S
  EXPECT_TRUE(pad_include_mask("sample.chosen", {"B"}, {2}, &am).empty());
}

TEST(Unravel, IndexStrings) {
  EXPECT_EQ(index_str(unravel(13, {2, 3, 4})), "[1,0,1]");
  EXPECT_EQ(index_str(unravel(0, {5})), "[0]");
  EXPECT_EQ(index_str(unravel(0, {})), "[]");
}
