#include <gtest/gtest.h>

#include "trace/hook_set.h"

using namespace lmscope;

TEST(Glob, MatchesDotsAndSingleChars) {
  EXPECT_TRUE(glob_match("layers.*.attn.q_rope", "layers.12.attn.q_rope"));
  EXPECT_TRUE(glob_match("*", "layers.0.attn.q"));
  EXPECT_TRUE(glob_match("layers.?.ffn.*", "layers.3.ffn.gate"));
  EXPECT_FALSE(glob_match("layers.?.ffn.*", "layers.13.ffn.gate"));
  EXPECT_FALSE(glob_match("logits", "logit"));
  EXPECT_TRUE(glob_match("*.k", "kv.2.k"));
  EXPECT_FALSE(glob_match("*.k", "kv.2.v"));
}

TEST(HookNames, RoundTripEveryHook) {
  for (const HookInfo& info : all_hooks()) {
    const int layer = info.per_layer ? 7 : -1;
    std::string name = hook_name(info.id, layer);
    auto parsed = parse_hook_name(name);
    ASSERT_TRUE(parsed) << name;
    EXPECT_EQ(int(parsed->id), int(info.id)) << name;
    EXPECT_EQ(parsed->layer, layer) << name;
  }
  EXPECT_FALSE(parse_hook_name("layers.x.attn.q"));
  EXPECT_FALSE(parse_hook_name("layers.1.attn.qq"));
}

TEST(HookNames, SortKeyIsForwardOrder) {
  std::vector<std::string> ordered = {"tokens.input_ids", "embed", "rope.cos", "layers.0.resid_pre",
                                      "layers.0.attn.q", "layers.0.attn.probs", "layers.0.resid_post",
                                      "kv.0.k", "layers.1.resid_pre", "layers.10.attn_norm", "final_norm",
                                      "logits", "sample.chosen"};
  for (size_t i = 1; i < ordered.size(); ++i)
    EXPECT_LT(hook_sort_key(ordered[i - 1]), hook_sort_key(ordered[i])) << ordered[i - 1] << " vs " << ordered[i];
}

// lmscope-trace --grad's datasets: after every activation, in their hooks' forward order (layer
// 2 before layer 10, not as the text sorts).
TEST(HookNames, GradientsSortAfterTheActivationsInForwardOrder) {
  std::vector<std::string> ordered = {"logits", "sample.chosen", "grad.embed", "grad.layers.2.resid_pre",
                                      "grad.layers.2.ffn_out", "grad.layers.10.resid_pre", "grad.final_norm",
                                      "grad.logits"};
  for (size_t i = 1; i < ordered.size(); ++i)
    EXPECT_LT(hook_sort_key(ordered[i - 1]), hook_sort_key(ordered[i])) << ordered[i - 1] << " vs " << ordered[i];
}

TEST(HookSet, GlobsAndLayerRanges) {
  HookSet s("layers.*.attn.q_rope,logits", "0-1,3", 5);
  EXPECT_TRUE(s.enabled(Hook::AttnQRope, 0));
  EXPECT_TRUE(s.enabled(Hook::AttnQRope, 1));
  EXPECT_FALSE(s.enabled(Hook::AttnQRope, 2));
  EXPECT_TRUE(s.enabled(Hook::AttnQRope, 3));
  EXPECT_FALSE(s.enabled(Hook::AttnKRope, 0));
  EXPECT_TRUE(s.enabled(Hook::Logits, -1));
  EXPECT_FALSE(s.enabled(Hook::Embed, -1));
  EXPECT_EQ(s.enabled_names(), (std::vector<std::string>{"logits", "layers.0.attn.q_rope", "layers.1.attn.q_rope",
                                                         "layers.3.attn.q_rope"}));
}

TEST(HookSet, EmptySetEnablesNothing) {
  HookSet none;
  for (const HookInfo& info : all_hooks()) EXPECT_FALSE(none.enabled(info.id, info.per_layer ? 0 : -1));
  EXPECT_FALSE(none.any());
  HookSet all = HookSet::all(2);
  EXPECT_TRUE(all.enabled(Hook::KvV, 1));
  EXPECT_TRUE(all.enabled(Hook::SampleU, -1));
}

TEST(HookSet, UnknownHookIsAClearError) {
  try {
    HookSet("layers.*.atn.q", "", 3);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--hooks: 'layers.*.atn.q' names no known hook"), std::string::npos)
        << e.what();
  }
}

TEST(HookSet, BadLayerRanges) {
  EXPECT_THROW(HookSet("*", "0-9", 3), std::runtime_error);
  EXPECT_THROW(HookSet("*", "a-b", 3), std::runtime_error);
  EXPECT_THROW(HookSet("*", "2-1", 3), std::runtime_error);
  EXPECT_THROW(HookSet("*", "-1", 3), std::runtime_error);
  try {
    parse_layer_ranges("5", 3);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 5 does not exist"), std::string::npos) << e.what();
  }
}
