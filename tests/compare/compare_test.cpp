// compare_traces on synthetic traces, and the report renderings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "compare/align.h"
#include "compare/compare.h"
#include "compare/report.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {
struct Pair {
  TempDir dir;
  std::string a = dir.file("a.h5"), ref = dir.file("ref.h5");
};
CompareReport run(const Pair& p, const CompareOptions& opts = {}) {
  TraceReader a(p.a), ref(p.ref);
  return compare_traces(a, ref, opts);
}
// A trace of `steps` steps, each holding tokens.attention_mask [1,S] and embed [1,1,4] (ones);
// with ids, generated_ids [1,steps] = 10, 11, ...
void trace_of_steps(const std::string& path, int steps, bool with_ids = false) {
  TraceWriter w(path);
  for (int s = 0; s < steps; ++s) {
    w.begin_step({s, s == 0 ? "prefill" : "decode", true, s, 1, s + 1});
    std::vector<int32_t> mask(size_t(s + 1), 1);
    w.write("tokens.attention_mask", "B,S", {1, s + 1}, mask.data());
    std::vector<float> x(4, 1.f);
    w.write("embed", "B,T,D", {1, 1, 4}, x.data());
  }
  std::vector<int32_t> ids;
  for (int s = 0; s < steps; ++s) ids.push_back(10 + s);
  if (with_ids) w.write_root_dataset("generated_ids", {1, steps}, ids.data());
  w.commit();
}
}  // namespace

TEST(CompareTraces, IdenticalTracesPass) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a);
  CompareReport r = run(p);
  EXPECT_TRUE(r.pass);
  EXPECT_FALSE(r.first_failure);
  EXPECT_TRUE(r.generated_equal);
  EXPECT_TRUE(r.missing_in_a.empty());
  EXPECT_EQ(r.hook_names(), 10u);
  EXPECT_EQ(r.results.size(), 20u);
  EXPECT_NE(report_text(r, false).find("all 10 hooks pass"), std::string::npos) << report_text(r, false);
}

TEST(CompareTraces, FirstFailingHookIsTheOnePerturbed) {
  Pair p;
  write_synthetic_trace(p.ref);
  // step 1, layers.0.resid_post element [0,0,3] off by 0.01; logits later in step 1 differ too.
  write_synthetic_trace(p.a, [](int step, const std::string& hook, std::vector<float>& v) {
    if (step == 1 && hook == "layers.0.resid_post") v[3] += 0.01f;
    if (step == 1 && hook == "logits") v[0] += 1.f;
  });
  CompareReport r = run(p);
  EXPECT_FALSE(r.pass);
  ASSERT_TRUE(r.first_failure);
  const HookResult& f = r.results[*r.first_failure];
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.hook, "layers.0.resid_post");
  EXPECT_EQ(f.argmax_index, (std::vector<int64_t>{0, 0, 3}));
  EXPECT_NEAR(f.m.max_abs, 0.01, 1e-6);
  std::string text = report_text(r, false);
  EXPECT_NE(text.find("first failing hook: step 1 layers.0.resid_post (max abs 0.01 at [0,0,3]"), std::string::npos)
      << text;
  // every other (step, hook) passes, step 0 included
  for (const HookResult& h : r.results) {
    bool perturbed = h.step == 1 && (h.hook == "layers.0.resid_post" || h.hook == "logits");
    EXPECT_EQ(h.pass, !perturbed) << h.step << " " << h.hook;
  }
}

TEST(CompareTraces, DifferencesWithinTolerancePass) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, [](int, const std::string& hook, std::vector<float>& v) {
    if (hook == "layers.0.resid_post") v[5] *= 1.00001f;   // ~2e-5 of scale 2: inside rtol 1e-4
  });
  EXPECT_TRUE(run(p).pass);
}

TEST(CompareTraces, PadRowsAreIgnored) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, [](int step, const std::string& hook, std::vector<float>& v) {
    // row b=1, t=0 of the prefill is a left pad: garbage there is not a difference
    if (step == 0 && (hook == "embed" || hook == "layers.0.resid_post"))
      for (int d = 0; d < 8; ++d) v[size_t((1 * 4 + 0) * 8 + d)] = 1234.f;
    if (step == 0 && hook == "kv.0.k")   // key column s=0 of row 1 is a pad
      for (int d = 0; d < 4; ++d) v[size_t((1 * 4 + 0) * 4 + d)] = -99.f;
  });
  CompareReport r = run(p);
  EXPECT_TRUE(r.pass) << report_text(r, true);
}

TEST(CompareTraces, MinusInfAndLowestAreBothMasked) {
  Pair p;
  write_synthetic_trace(p.ref, nullptr, -std::numeric_limits<float>::infinity());
  write_synthetic_trace(p.a);   // float32 lowest
  CompareReport r = run(p);
  EXPECT_TRUE(r.pass) << report_text(r, true);
}

TEST(CompareTraces, OneSidedMaskFails) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, [](int step, const std::string& hook, std::vector<float>& v) {
    // unmask a causally masked score: b=0, h=0, t=0, s=3 of the prefill
    if (step == 0 && hook == "layers.0.attn.scores#masked") v[3] = 0.5f;
  });
  CompareReport r = run(p);
  ASSERT_TRUE(r.first_failure);
  const HookResult& f = r.results[*r.first_failure];
  EXPECT_EQ(f.hook, "layers.0.attn.scores");
  EXPECT_TRUE(std::isinf(f.m.max_abs));
  EXPECT_NE(f.reason().find("masked/non-finite in one trace only at [0,0,0,3]"), std::string::npos) << f.reason();
}

TEST(CompareTraces, MissingHookFailsOnlyInANoted) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, nullptr, kLowest, {5, 6, 7, 8}, /*with_logits_in_step1=*/false);
  CompareReport r = run(p);
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.missing_in_a.size(), 1u);
  EXPECT_EQ(r.missing_in_a[0].step, 1);
  EXPECT_EQ(r.missing_in_a[0].hook, "logits");
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.results[*r.first_failure].reason(), "missing in A");

  CompareReport back = compare_traces(TraceReader(p.ref), TraceReader(p.a), {});   // roles swapped
  EXPECT_TRUE(back.pass);
  ASSERT_EQ(back.only_in_a.size(), 1u);
  EXPECT_EQ(back.only_in_a[0].hook, "logits");
}

TEST(CompareTraces, GeneratedIdsDiffer) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, nullptr, kLowest, {5, 6, 7, 9});
  CompareReport r = run(p);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.generated_equal);
  EXPECT_NE(r.generated_note.find("[1,1]: A 9 vs reference 8"), std::string::npos) << r.generated_note;
  // sample.chosen (an int hook) is exact, so it fails at step 1 too
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.results[*r.first_failure].hook, "sample.chosen");
  EXPECT_EQ(r.results[*r.first_failure].step, 1);
}

TEST(CompareTraces, ShapeMismatchFails) {
  Pair p;
  auto one = [](const std::string& path, int64_t D) {
    TraceWriter w(path);
    w.begin_step({0, "prefill", false, 0, 1, 1});
    std::vector<float> x(size_t(D), 1.f);
    w.write("embed", "B,T,D", {1, 1, D}, x.data());
    w.commit();
  };
  one(p.ref, 4);
  one(p.a, 5);
  CompareReport r = run(p);
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.results[0].kind, HookResult::Kind::ShapeMismatch);
  EXPECT_EQ(r.results[0].reason(), "shape [1,1,5] vs reference [1,1,4]");
}

TEST(CompareTraces, StepAndHookFilters) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, [](int step, const std::string& hook, std::vector<float>& v) {
    if (step == 1 && hook == "logits") v[0] += 1.f;
  });
  CompareOptions o;
  o.steps = {0};
  EXPECT_FALSE(run(p, o).first_failure);
  o.steps = {};
  o.hook_globs = {"layers.*", "kv.*"};
  CompareReport r = run(p, o);
  EXPECT_FALSE(r.first_failure);
  EXPECT_EQ(r.hook_names(), 4u);
  o.hook_globs = {"nothing.matches"};
  EXPECT_THROW(run(p, o), std::runtime_error);
  // A loose override lets the logits through.
  o.hook_globs = {};
  o.tolerances.add_override("logits", {2.0, 0});
  EXPECT_TRUE(run(p, o).pass);
}

TEST(CompareReportJson, Fields) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, [](int step, const std::string& hook, std::vector<float>& v) {
    if (step == 0 && hook == "embed") v[1] += 0.5f;
  });
  nlohmann::json j = nlohmann::json::parse(report_json(run(p)));
  EXPECT_EQ(j["pass"], false);
  EXPECT_EQ(j["first_failure"]["hook"], "embed");
  EXPECT_EQ(j["first_failure"]["step"], 0);
  EXPECT_EQ(j["first_failure"]["index"], nlohmann::json::array({0, 0, 1}));
  EXPECT_EQ(j["generated_equal"], true);
  EXPECT_TRUE(j["missing_in_a"].empty());
  EXPECT_TRUE(j["only_in_a"].empty());
  ASSERT_EQ(j["hooks"].size(), 20u);
  const auto& h = j["hooks"][3];
  for (const char* k : {"step", "hook", "max_abs", "rel", "cosine", "atol", "rtol", "pass", "compared"})
    EXPECT_TRUE(h.contains(k)) << k;
}

TEST(CompareReportText, OneLinePerHookOrEveryStep) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a);
  CompareReport r = run(p);
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  std::string agg = report_text(r, false), all = report_text(r, true);
  EXPECT_EQ(count(agg, " PASS"), 10u) << agg;
  EXPECT_EQ(count(all, " PASS"), 20u) << all;
  EXPECT_NE(agg.find("layers.0.attn.probs"), std::string::npos);
  EXPECT_NE(agg.find(" 0-1 "), std::string::npos) << agg;   // steps column
  // forward order: tokens before embed before layers before logits before sample
  EXPECT_LT(agg.find("tokens.input_ids"), agg.find("embed"));
  EXPECT_LT(agg.find("layers.0.resid_post"), agg.find("kv.0.k"));
  EXPECT_LT(agg.find("kv.0.k"), agg.find("logits"));
  EXPECT_LT(agg.find("logits"), agg.find("sample.chosen"));
}

// The step rule (compare/compare_step.h), the same for the plain and the aligned comparison:
// a step only the reference holds is missing in A (a failure); one only A holds is noted. So A
// stopping early fails, whether the comparison is plain or aligned.
TEST(CompareTraces, AStepOnlyTheReferenceHoldsFailsOneOnlyAHoldsIsNoted) {
  Pair p;
  trace_of_steps(p.a, 2);
  trace_of_steps(p.ref, 3);
  for (const AlignOptions& al : {AlignOptions{}, AlignOptions{-1, -1, /*last_position=*/true}}) {
    CompareReport r = compare_aligned(TraceReader(p.a), TraceReader(p.ref), {}, al);
    EXPECT_FALSE(r.pass);
    ASSERT_EQ(r.missing_in_a.size(), 2u);
    EXPECT_EQ(r.missing_in_a[0].step, 2);
    EXPECT_EQ(r.missing_in_a[0].hook, "tokens.attention_mask");
    EXPECT_EQ(r.missing_in_a[1].hook, "embed");
    ASSERT_TRUE(r.first_failure);
    EXPECT_EQ(r.results[*r.first_failure].step, 2);
    EXPECT_EQ(r.results[*r.first_failure].reason(), "missing in A");

    CompareReport back = compare_aligned(TraceReader(p.ref), TraceReader(p.a), {}, al);   // roles swapped
    EXPECT_TRUE(back.pass) << report_text(back, true);
    ASSERT_EQ(back.only_in_a.size(), 2u);
    EXPECT_EQ(back.only_in_a[1].step, 2);
    EXPECT_NE(report_text(back, false).find("only in A (not compared): embed (steps 2)"), std::string::npos)
        << report_text(back, false);
  }
}

// generated_ids by the same rule for one row (a padded batch's against a solo run): A's row may
// run on after the reference's stops, not stop before it. The whole trace: equal, shape too.
TEST(CompareTraces, GeneratedIdsOfARowFollowTheStepRule) {
  Pair p;
  trace_of_steps(p.a, 3, /*with_ids=*/true);
  trace_of_steps(p.ref, 2, /*with_ids=*/true);
  const AlignOptions row{0, 0, false};
  CompareReport longer = compare_aligned(TraceReader(p.a), TraceReader(p.ref), {}, row);
  EXPECT_TRUE(longer.pass) << report_text(longer, true);
  CompareReport shorter = compare_aligned(TraceReader(p.ref), TraceReader(p.a), {}, row);
  EXPECT_FALSE(shorter.pass);
  EXPECT_EQ(shorter.generated_note, "A's row has 2 tokens, the reference's 3");
  CompareReport whole = compare_traces(TraceReader(p.a), TraceReader(p.ref), {});
  EXPECT_FALSE(whole.pass);
  EXPECT_EQ(whole.generated_note, "shape [1,3] vs reference [1,2]");
}

// --hooks / --layers as lmscope-trace reads them: a selected hook missing from A is reported,
// what is not selected is not looked at, and bad text is one clear error.
TEST(CompareTraces, HooksAndLayersSelectAsLmscopeTraceDoes) {
  Pair p;
  write_synthetic_trace(p.ref);
  write_synthetic_trace(p.a, nullptr, kLowest, {5, 6, 7, 8}, /*with_logits_in_step1=*/false);
  CompareOptions o;
  o.hook_globs = {"layers.*"};
  o.layers = "0";
  CompareReport r = run(p, o);
  EXPECT_TRUE(r.pass) << report_text(r, true);
  EXPECT_EQ(r.hook_names(), 3u);   // layers.0.resid_post, attn.scores, attn.probs; not kv.0.*
  for (const HookResult& h : r.results) EXPECT_EQ(h.hook.rfind("layers.0.", 0), 0u) << h.hook;
  o.hook_globs = {"logits", "embed"};
  o.layers = "";
  r = run(p, o);
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.missing_in_a.size(), 1u);
  EXPECT_EQ(r.missing_in_a[0].hook, "logits");
  EXPECT_EQ(r.hook_names(), 2u);
  o.layers = "3";   // the traces hold one layer
  try {
    run(p, o);
    ADD_FAILURE() << "no error for --layers 3";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--layers: layer 3 does not exist", 0), 0u) << e.what();
  }
  o.layers = "0-";
  EXPECT_THROW(run(p, o), std::runtime_error);
  o.layers = "";
  o.hook_globs = {"layers.*.atn.q"};
  try {
    run(p, o);
    ADD_FAILURE() << "no error for a glob that names no hook";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--hooks: 'layers.*.atn.q' names no known hook", 0), 0u) << e.what();
  }
}
