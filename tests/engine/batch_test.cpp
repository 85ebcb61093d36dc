#include <gtest/gtest.h>

#include "generate/batch.h"
#include "model/masks.h"
#include "kernels/attention_math.cuh"

using namespace lmscope;

static std::vector<int32_t> row(const Tensor& t, int64_t b) {
  const int64_t S = t.dim(1);
  return std::vector<int32_t>(t.i32() + b * S, t.i32() + (b + 1) * S);
}

TEST(Batch, LeftPaddingPositionsFollowHF) {
  // HF generate (transformers 5.x): position_ids = cumsum(mask) - 1; masked_fill(mask == 0, 0)
  Batch b = Batch::from_prompts({{5, 6, 7}, {8}}, PaddingSide::Left, 0);
  EXPECT_EQ(b.ids[1], (std::vector<int32_t>{0, 0, 8}));
  EXPECT_EQ(row(b.mask_tensor(), 1), (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(row(b.position_ids(), 0), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(row(b.position_ids(), 1), (std::vector<int32_t>{0, 0, 0}));
  b.append({9, 10});
  EXPECT_EQ(row(b.position_ids(3), 1), (std::vector<int32_t>{1}));
  EXPECT_EQ(row(b.position_ids(3), 0), (std::vector<int32_t>{3}));
  b.append({1, 2});
  EXPECT_EQ(row(b.position_ids(), 1), (std::vector<int32_t>{0, 0, 0, 1, 2}));
}

TEST(Batch, RightPaddingAppendsAfterThePads) {
  Batch b = Batch::from_prompts({{5, 6, 7}, {8}}, PaddingSide::Right, 0);
  EXPECT_EQ(b.ids[1], (std::vector<int32_t>{8, 0, 0}));
  EXPECT_EQ(row(b.position_ids(), 1), (std::vector<int32_t>{0, 0, 0}));
  b.append({9, 10});
  EXPECT_EQ(b.ids[1], (std::vector<int32_t>{8, 0, 0, 10}));
  EXPECT_EQ(row(b.mask_tensor(), 1), (std::vector<int32_t>{1, 0, 0, 1}));
  EXPECT_EQ(row(b.position_ids(3), 1), (std::vector<int32_t>{1}));   // last pad's 0, + 1
  Batch r = Batch::from_prompts({{5, 6, 7}, {8, 9}}, PaddingSide::Right, 0);
  r.append({1, 2});
  EXPECT_EQ(row(r.position_ids(), 1), (std::vector<int32_t>{0, 1, 0, 1}));   // HF 5.x: not 2
}

TEST(Batch, EmptyPromptIsAnError) {
  EXPECT_THROW(Batch::from_prompts({{1}, {}}, PaddingSide::Left, 0), std::runtime_error);
  EXPECT_THROW(parse_padding_side("middle"), std::runtime_error);
}

TEST(Masks, CombinedIsCausalAndPadding) {
  Batch b = Batch::from_prompts({{5, 6, 7}, {8, 9}}, PaddingSide::Left, 0);
  Tensor m = combined_mask(b.mask_tensor(), 3);   // prefill: T = S = 3
  auto at = [&](int bb, int t, int s) { return m.f32()[(bb * 3 + t) * 3 + s]; };
  EXPECT_EQ(at(0, 0, 0), 0.0f);
  EXPECT_EQ(at(0, 0, 1), kMaskedScore);   // future
  EXPECT_EQ(at(0, 2, 1), 0.0f);
  EXPECT_EQ(at(1, 2, 0), kMaskedScore);   // pad key
  EXPECT_EQ(at(1, 2, 1), 0.0f);
  EXPECT_EQ(at(1, 0, 0), kMaskedScore);   // pad query row: fully masked, as in HF eager
  // decode step with 3 cached columns: T = 1, S = 4, the new query sees every real column
  b.append({1, 2});
  Tensor d = combined_mask(b.mask_tensor(), 1);
  EXPECT_EQ(d.f32()[4 + 0], kMaskedScore);
  EXPECT_EQ(d.f32()[4 + 3], 0.0f);
  Tensor c = causal_mask(2, 5);   // 3 past columns
  EXPECT_EQ(row(c, 0), (std::vector<int32_t>{1, 1, 1, 1, 0}));
  EXPECT_EQ(row(c, 1), (std::vector<int32_t>{1, 1, 1, 1, 1}));
}

// Every prompt is a row of one batch: past kMaxBatchRows the run is refused in one line
// (10,000 one-token prompts took 6.8 GB on the tiny model).
TEST(Batch, MorePromptsThanOneBatchTakesIsAnError) {
  std::vector<std::vector<int32_t>> prompts(kMaxBatchRows + 1, std::vector<int32_t>{5});
  try {
    Batch::from_prompts(prompts, PaddingSide::Left, 0);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "257 prompts: one run takes at most 256 (they form one batch); split them over several runs");
  }
  prompts.pop_back();
  EXPECT_EQ(Batch::from_prompts(prompts, PaddingSide::Left, 0).rows(), int64_t(kMaxBatchRows));
}
