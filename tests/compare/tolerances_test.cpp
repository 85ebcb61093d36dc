#include <gtest/gtest.h>

#include "compare/tolerances.h"
#include "tests/test_util.h"
#include "trace/select.h"

using namespace lmscope;
using namespace lmscope::testing_util;

TEST(Glob, Matching) {
  EXPECT_TRUE(glob_match("layers.*.attn.q", "layers.12.attn.q"));
  EXPECT_TRUE(glob_match("*", "anything.at.all"));
  EXPECT_TRUE(glob_match("layers.*", "layers.0.ffn.act"));   // * crosses dots
  EXPECT_TRUE(glob_match("kv.?.k", "kv.3.k"));
  EXPECT_FALSE(glob_match("kv.?.k", "kv.13.k"));
  EXPECT_FALSE(glob_match("logits", "logits2"));
  EXPECT_TRUE(glob_match("*probs", "layers.0.attn.probs"));
  EXPECT_FALSE(glob_match("layers.*.attn.q", "layers.1.attn.q_rope"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbZc"));
}

TEST(Select, ListsAndRanges) {
  EXPECT_EQ(split_list(" a, b,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(parse_ranges("0-3,7,2"), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_THROW(parse_ranges("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_ranges("x"), std::invalid_argument);
  EXPECT_THROW(parse_ranges(""), std::invalid_argument);
  EXPECT_TRUE(match_any({}, "x"));
  EXPECT_TRUE(match_any({"y", "x*"}, "xz"));
  EXPECT_FALSE(match_any({"y"}, "xz"));
}

TEST(Tolerances, DefaultTable) {
  ToleranceTable t = ToleranceTable::defaults();
  EXPECT_EQ(t.lookup("tokens.input_ids").atol, 0);
  EXPECT_EQ(t.lookup("mask.combined").atol, 0);
  EXPECT_EQ(t.lookup("embed").rtol, 1e-6);
  EXPECT_EQ(t.lookup("rope.sin").atol, 1e-4);
  EXPECT_EQ(t.lookup("layers.3.attn.probs").atol, 1e-5);
  EXPECT_EQ(t.lookup("logits").rtol, 2e-4);
  EXPECT_EQ(t.lookup("sample.candidates").rtol, 0);
  EXPECT_EQ(t.lookup("sample.chosen").atol, 0);
  EXPECT_EQ(t.lookup("sample.raw").rtol, 2e-4);
  EXPECT_EQ(t.rule_for("layers.3.attn.q").pattern, "*");
  EXPECT_EQ(t.lookup("layers.3.attn.q").rtol, 1e-4);
  EXPECT_DOUBLE_EQ(t.lookup("kv.0.k").bound(2.0), 1e-5 + 2e-4);
}

TEST(Tolerances, OverrideFile) {
  TempDir dir;
  std::string f = dir.file("tol.json");
  std::ofstream(f) << R"({"layers.1.*": {"atol": 0.5}, "layers.*": {"atol": 1e-3, "rtol": 1e-2}})";
  ToleranceTable t = ToleranceTable::defaults();
  t.load_overrides(f);
  EXPECT_EQ(t.lookup("layers.1.attn.q").atol, 0.5);   // file order: the first match wins
  EXPECT_EQ(t.lookup("layers.1.attn.q").rtol, 0);
  EXPECT_EQ(t.lookup("layers.2.attn.q").rtol, 1e-2);
  EXPECT_EQ(t.lookup("logits").rtol, 2e-4);           // defaults still apply elsewhere
}

TEST(Tolerances, BadOverrideFilesFailInOneLine) {
  TempDir dir;
  auto err = [&](const std::string& text) {
    std::string f = dir.file("bad.json");
    std::ofstream(f) << text;
    ToleranceTable t = ToleranceTable::defaults();
    try {
      t.load_overrides(f);
    } catch (const std::runtime_error& e) {
      std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_NE(m.find("bad.json"), std::string::npos) << m;
      return m;
    }
    return std::string();
  };
  EXPECT_NE(err("{not json").find("bad tolerance file"), std::string::npos);
  EXPECT_NE(err("[1,2]").find("expected an object"), std::string::npos);
  EXPECT_NE(err(R"({"x": 1})").find("must map to"), std::string::npos);
  EXPECT_NE(err(R"({"x": {"atol": "big"}})").find("must be a number"), std::string::npos);
  EXPECT_NE(err(R"({"x": {"btol": 1}})").find("unknown field"), std::string::npos);
  ToleranceTable t;
  EXPECT_THROW(t.load_overrides(dir.file("absent.json")), std::runtime_error);
}
