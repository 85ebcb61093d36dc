// A reference that keeps only the last query rows of a hook (HF generate's logits_to_keep=1,
// goldens of real vocabularies) is compared with A's trailing rows.
#include <gtest/gtest.h>

#include "compare/compare.h"

using namespace lmscope;

namespace {
HookData logits(int64_t T, std::vector<double> v) {
  HookData d;
  d.hook = "logits";
  d.axes = {"B", "T", "V"};
  d.shape = {1, T, 2};
  d.values = std::move(v);
  return d;
}
}  // namespace

TEST(TrailingRows, ReferenceWithTheLastRowOnly) {
  HookData a = logits(3, {1, 2, 3, 4, 5, 6});
  HookResult ok = compare_hook_data(0, "logits", a, logits(1, {5, 6}), nullptr, ToleranceTable::defaults());
  EXPECT_TRUE(ok.pass) << ok.reason();
  EXPECT_EQ(ok.m.compared, 2);
  EXPECT_NE(ok.note.find("last 1 T rows"), std::string::npos) << ok.note;

  HookResult bad = compare_hook_data(0, "logits", a, logits(1, {3, 4}), nullptr, ToleranceTable::defaults());
  EXPECT_FALSE(bad.pass);   // the middle row is not the last one
}

TEST(TrailingRows, MoreRowsInTheReferenceIsAShapeMismatch) {
  HookResult r = compare_hook_data(0, "logits", logits(1, {5, 6}), logits(3, {1, 2, 3, 4, 5, 6}), nullptr,
                                   ToleranceTable::defaults());
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.kind, HookResult::Kind::ShapeMismatch);
}
