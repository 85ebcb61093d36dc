// The padding experiment on the tiny model, with the two chat prompts of the issue, greedy,
// 32 new tokens: left padding and right padding done right match each row's solo run, right
// padding the HF way departs for the shorter row at the first generated token, and column
// positions change only what carries absolute positions (RoPE's relativity forgives the rest).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "experiments/padding.h"
#include "tests/experiments/exp_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::exp_test;

namespace {

class PaddingExperiment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny = new Tiny();
    dir = new testing_util::TempDir();
    PaddingOptions o;
    o.prompts = {tiny->chat("Hello, how are you?"), tiny->chat("I'm doing well, thank you!")};
    o.prompt_texts = {"Hello, how are you?", "I'm doing well, thank you!"};
    o.max_new_tokens = 32;
    o.pad_id = tiny->special.pad_id;
    o.eos_ids = {};   // all 32 tokens, whatever comes
    o.out_dir = dir->file("padding");
    report = new PaddingReport(run_padding_experiment(tiny->ctx, o));
  }
  static void TearDownTestSuite() {
    delete report;
    delete dir;
    delete tiny;
  }
  static const ModeRow& mode(size_t row, PaddingMode m) {
    for (const ModeRow& mr : report->rows.at(row).modes)
      if (mr.mode == m) return mr;
    throw std::runtime_error("no such mode");
  }
  // The row with pads (the shorter prompt) and the one without.
  static size_t short_row() { return report->rows[0].pads > 0 ? 0 : 1; }
  static size_t long_row() { return 1 - short_row(); }

  static Tiny* tiny;
  static testing_util::TempDir* dir;
  static PaddingReport* report;
};
Tiny* PaddingExperiment::tiny = nullptr;
testing_util::TempDir* PaddingExperiment::dir = nullptr;
PaddingReport* PaddingExperiment::report = nullptr;

}  // namespace

TEST_F(PaddingExperiment, ThePromptsHaveDifferentLengths) {
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_GT(report->rows[short_row()].pads, 0);
  EXPECT_EQ(report->rows[long_row()].pads, 0);
  EXPECT_EQ(report->rows[0].solo_tokens.size(), 32u);
}

TEST_F(PaddingExperiment, LeftPaddingMatchesSoloForBothRows) {
  for (size_t r = 0; r < 2; ++r) {
    const ModeRow& m = mode(r, PaddingMode::Left);
    EXPECT_TRUE(m.matches_solo) << "row " << r << ": " << m.sentence;
    EXPECT_TRUE(m.tokens_equal);
    EXPECT_EQ(m.tokens, report->rows[r].solo_tokens);
    EXPECT_FALSE(m.first_divergence) << m.first_divergence->reason;
  }
}

TEST_F(PaddingExperiment, RightHfDepartsForTheShorterRowAtTheFirstGeneratedToken) {
  const ModeRow& m = mode(short_row(), PaddingMode::RightHf);
  EXPECT_FALSE(m.matches_solo);
  EXPECT_FALSE(m.tokens_equal);
  ASSERT_TRUE(m.first_divergence);
  // Step 0 is the prefill: every real position matches; the first new token is read from the
  // last column, a pad.
  EXPECT_EQ(m.first_divergence->step, 0);
  EXPECT_EQ(m.first_divergence->hook.rfind("sample.", 0), 0u) << m.first_divergence->hook;
  EXPECT_EQ(m.first_token_difference, 0);
  EXPECT_NE(m.sentence.find("first new token predicted from the PAD at column " +
                            std::to_string(report->width - 1)),
            std::string::npos)
      << m.sentence;
  EXPECT_NE(tiny->ctx.text(m.tokens), tiny->ctx.text(report->rows[short_row()].solo_tokens));
  // The longer row has no pads: its last column is its last token.
  EXPECT_TRUE(mode(long_row(), PaddingMode::RightHf).matches_solo);
}

TEST_F(PaddingExperiment, RightAwareMatchesSolo) {
  for (size_t r = 0; r < 2; ++r) {
    const ModeRow& m = mode(r, PaddingMode::RightAware);
    EXPECT_TRUE(m.matches_solo) << m.sentence;
    EXPECT_EQ(m.tokens, report->rows[r].solo_tokens);
    EXPECT_FALSE(m.first_divergence) << m.first_divergence->reason;
  }
  EXPECT_EQ(mode(short_row(), PaddingMode::RightAware).read_column,
            int64_t(report->rows[short_row()].prompt.size()) - 1);
}

TEST_F(PaddingExperiment, ColumnPositionsChangeOnlyWhatCarriesAbsolutePositions) {
  const ModeRow& m = mode(short_row(), PaddingMode::LeftColpos);
  EXPECT_TRUE(m.matches_solo) << m.sentence;
  EXPECT_TRUE(m.tokens_equal);
  ASSERT_TRUE(m.first_divergence);
  EXPECT_EQ(m.first_divergence->hook, "tokens.position_ids");
  EXPECT_EQ(m.first_divergence->step, 0);
  EXPECT_EQ(m.first_divergence->position, 0);
  EXPECT_FALSE(m.first_divergence_ignoring_positions);
  EXPECT_GT(m.max_q_rope_err, 0.1);     // q after RoPE: rotated by the pad count more
  EXPECT_LT(m.max_scores_err, 1e-3);    // q.k: only the distance matters
  for (const HookError& e : m.per_hook)
    if (!e.pass) {
      EXPECT_TRUE(carries_absolute_position(e.hook)) << e.hook;
    }
  EXPECT_TRUE(mode(long_row(), PaddingMode::LeftColpos).matches_solo);
  EXPECT_FALSE(mode(long_row(), PaddingMode::LeftColpos).first_divergence);
}

TEST_F(PaddingExperiment, EveryRunIsATraceAndThePictureIsSvg) {
  for (const PaddingRow& row : report->rows) {
    TraceReader solo(row.solo_trace);
    EXPECT_EQ(solo.n_steps(), 32);
    for (const ModeRow& m : row.modes) EXPECT_TRUE(std::filesystem::exists(m.trace)) << m.trace;
  }
  TraceReader r(mode(0, PaddingMode::RightHf).trace);
  EXPECT_EQ(r.root_attr_string("padding_side"), "right");
  const std::string svg = testing_util::read_text(dir->file("padding/divergence.svg"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("right_hf"), std::string::npos);
  EXPECT_NE(svg.find("L2"), std::string::npos);   // one column per layer
}

TEST_F(PaddingExperiment, JsonHasTheDocumentedShape) {
  nlohmann::json j = nlohmann::json::parse(padding_report_json(*report, tiny->ctx));
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_TRUE(row["prompt"].is_string());
    for (const char* m : {"left", "right_hf", "right_aware", "left_colpos"}) {
      ASSERT_TRUE(row["modes"].contains(m)) << m;
      EXPECT_TRUE(row["modes"][m]["matches_solo"].is_boolean());
      EXPECT_TRUE(row["modes"][m].contains("first_divergence"));
      EXPECT_TRUE(row["modes"][m]["text"].is_string());
    }
  }
  const auto& rhf = j["rows"][short_row()]["modes"]["right_hf"];
  EXPECT_FALSE(rhf["matches_solo"].get<bool>());
  EXPECT_EQ(rhf["first_divergence"]["step"], 0);
  EXPECT_TRUE(j["rows"][short_row()]["modes"]["left"]["first_divergence"].is_null());
}

// The HF right-padding golden (tiny-qwen2-r, made by transformers' generate) is what right_hf
// reproduces: the experiment's batch runs are the engine's HF semantics.
TEST(PaddingModes, RightHfIsWhatHfGenerateDoes) {
  Tiny tiny;
  TraceReader golden(kRoot + "/golden/traces/tiny-qwen2-r.h5");
  GenerateOptions o;
  o.prompts = {{42, 308, 333, 746, 3}, {43, 392, 346, 287, 382, 962, 676, 3},
               {559, 642, 70, 781, 14, 274, 377, 271, 373, 260, 387, 274}};
  o.max_new_tokens = 4;
  o.pad_id = 0;
  o.eos_ids = {0};
  GenerateResult r = generate(*tiny.decoder, with_padding_mode(o, PaddingMode::RightHf), nullptr);
  HookData g = golden.generated_ids();
  for (size_t b = 0; b < 3; ++b)
    for (size_t k = 0; k < 4; ++k) EXPECT_EQ(r.new_tokens[b][k], int32_t(g.values[b * 4 + k])) << b << "," << k;
  // right_aware and left give every row its solo tokens; right_hf does not for the padded rows.
  GenerateResult aware = generate(*tiny.decoder, with_padding_mode(o, PaddingMode::RightAware), nullptr);
  GenerateResult left = generate(*tiny.decoder, with_padding_mode(o, PaddingMode::Left), nullptr);
  EXPECT_EQ(aware.new_tokens, left.new_tokens);
  EXPECT_NE(r.new_tokens[0], left.new_tokens[0]);
  EXPECT_EQ(r.new_tokens[2], left.new_tokens[2]);   // the longest row has no pads
}

TEST(PaddingModes, NamesRoundTripAndBadNamesAreOneLine) {
  for (PaddingMode m : all_padding_modes()) EXPECT_EQ(parse_padding_mode(padding_mode_name(m)), m);
  try {
    parse_padding_mode("middle");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("left, right_hf, right_aware, left_colpos"), std::string::npos);
  }
  EXPECT_TRUE(carries_absolute_position("layers.3.attn.q_rope"));
  EXPECT_TRUE(carries_absolute_position("kv.0.k"));
  EXPECT_FALSE(carries_absolute_position("kv.0.v"));
  EXPECT_FALSE(carries_absolute_position("layers.0.attn.scores"));
}

// With --hooks restricted (what keeps the experiment fast on a real model), the report still
// judges every row, and says nothing it did not measure: without q_rope/scores traced, the
// left_colpos sentence cannot give their errors (a 0 there would read as "no difference").
TEST(PaddingExperimentHooks, RestrictedHooksStillJudgeAndNeverReportAnUnmeasuredZero) {
  Tiny tiny;
  testing_util::TempDir dir;
  PaddingOptions o;
  o.prompts = {{42, 308, 333, 746, 3}, {43, 392, 346, 287, 382, 962, 676, 3}};
  o.max_new_tokens = 4;
  o.pad_id = 0;
  o.eos_ids = {};
  o.modes = {PaddingMode::Left, PaddingMode::RightHf, PaddingMode::LeftColpos};
  o.hooks = "tokens.*,sample.*,layers.*.resid_post";
  o.out_dir = dir.file("padding");
  PaddingReport rep = run_padding_experiment(tiny.ctx, o);
  const PaddingRow& row = rep.rows.at(0);   // 5 tokens, 3 pads
  ASSERT_EQ(row.pads, 3);
  ASSERT_EQ(row.modes.size(), 3u);
  const ModeRow &left = row.modes[0], &hf = row.modes[1], &colpos = row.modes[2];
  EXPECT_TRUE(left.matches_solo) << left.sentence;
  EXPECT_FALSE(hf.matches_solo);
  ASSERT_TRUE(hf.first_divergence);
  EXPECT_EQ(hf.first_divergence->step, 0);   // sample.* is traced: the choice at step 0
  EXPECT_EQ(hf.first_divergence->hook.rfind("sample.", 0), 0u) << hf.first_divergence->hook;
  EXPECT_TRUE(colpos.matches_solo) << colpos.sentence;
  EXPECT_FALSE(colpos.q_rope_compared);
  EXPECT_FALSE(colpos.scores_compared);
  EXPECT_NE(colpos.sentence.find("q/k after RoPE not traced"), std::string::npos) << colpos.sentence;
  EXPECT_EQ(colpos.sentence.find("differ by up to"), std::string::npos) << colpos.sentence;
  EXPECT_EQ(colpos.sentence.find("scores agree"), std::string::npos) << colpos.sentence;
  // Only the asked hooks (and the mask the alignment needs) are in the traces.
  TraceReader tr(left.trace);
  for (const std::string& h : tr.hooks(0))
    EXPECT_TRUE(h.rfind("tokens.", 0) == 0 || h.rfind("sample.", 0) == 0 || h.find(".resid_post") != std::string::npos) << h;
}

// The text report's "why:" block names each line's mode: a row without pads gets the same
// sentence under every mode, and without the label the four lines could not be told apart.
TEST_F(PaddingExperiment, WhyLinesNameTheirMode) {
  const std::string text = padding_report_text(*report, tiny->ctx);
  const size_t why = text.find("  why:\n");
  ASSERT_NE(why, std::string::npos) << text;
  const size_t end = text.find("\n\n", why);
  std::vector<std::string> lines;
  for (size_t a = text.find('\n', why) + 1; a < end && a < text.size();) {
    const size_t b = text.find('\n', a);
    lines.push_back(text.substr(a, b - a));
    a = b + 1;
  }
  ASSERT_EQ(lines.size(), report->rows[0].modes.size()) << text;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string label = std::string("    ") + padding_mode_name(report->rows[0].modes[i].mode) + " ";
    EXPECT_EQ(lines[i].rfind(label, 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find(report->rows[0].modes[i].sentence), std::string::npos) << lines[i];
  }
}
