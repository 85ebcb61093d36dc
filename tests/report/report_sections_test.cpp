// lmscope-report's page in headless Chromium, section by section: the logit lens cells against
// the trace's stored top-k, the row selectors of a 2-prompt trace (each section shows the
// chosen row's numbers, read from the trace), and the HF goldens of golden/traces (made by
// lmscope-hf-trace): each renders without errors, with the sections its hooks allow.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/report/browser.h"
#include "tests/report/page_checks.h"
#include "tests/test_util.h"
#include "tokenizer/tokenizer.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kSrc + "/golden/models/tiny-qwen2";

class ReportSections : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // Two prompts of 11 and 5 tokens (left padding: row 1 starts with 6 PAD columns), every
    // hook and a lens of 3 tokens per layer.
    two_rows_ = run_cli(kBin + "/lmscope-trace --model " + kTiny +
                        " --prompt 'The golden fish spoke to the old man.' --prompt 'Hello world!' --max-new-tokens 3"
                        " --hooks '*' --lens 3 -q --out " + dir_->file("two.h5"))
                    .code == 0;
    chromium_ = find_chromium(&no_chromium_);
  }
  static void TearDownTestSuite() { delete dir_; }
  void need_browser() {
    if (chromium_.empty()) FAIL() << no_chromium_;   // setup.sh installs it: missing = broken setup
  }
  // The page of `trace` rendered at `fragment`: no script errors, rendering finished.
  static std::string render(const std::string& trace, const std::string& html, const std::string& fragment,
                            const std::string& extra = "") {
    CliRun r = run_cli(kBin + "/lmscope-report " + trace + " -o " + html + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return rendered_dom(chromium_, dir_->file("profile"), "file://" + html + fragment);
  }

  static TempDir* dir_;
  static bool two_rows_;
  static std::string chromium_, no_chromium_;
};
TempDir* ReportSections::dir_ = nullptr;
bool ReportSections::two_rows_ = false;
std::string ReportSections::chromium_, ReportSections::no_chromium_;

// [B,T,K] -> the value at (b, t, k).
double at3(const HookData& d, int64_t b, int64_t t, int64_t k) {
  return d.values[size_t((b * d.shape[1] + t) * d.shape[2] + k)];
}

std::string html_escaped(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : std::string(1, ch);
  return out;
}

// The lens cell of `layer` at `column` (of the row the page shows) holds the trace's top token
// and its probability: stored in the cell's data, shown as the piece and the number (3 decimals).
void expect_lens_cell(const std::string& dom, int layer, int column, int32_t want_id, double want_p,
                      const tok::Tokenizer& tk) {
  const std::string id = "lens-c-" + std::to_string(layer) + "-" + std::to_string(column);
  ASSERT_NE(element_at(dom, id), std::string::npos) << id;
  EXPECT_EQ(dom_attr(dom, id, "data-id"), std::to_string(want_id)) << id;
  const std::string p = dom_attr(dom, id, "data-p");
  ASSERT_FALSE(p.empty()) << id;
  EXPECT_NEAR(std::stod(p), want_p, digit_tolerance(want_p)) << id;
  const std::string shown_p = text_after(dom, element_at(dom, id), "class=\"prob\">");
  ASSERT_FALSE(shown_p.empty()) << id;
  EXPECT_NEAR(std::stod(shown_p), want_p, 0.0005 + 1e-12) << id;
  const std::string piece = tk.token_display(want_id);
  const std::string shown_piece = text_after(dom, element_at(dom, id), "class=\"piece\">");
  if (piece.size() <= 7) {
    EXPECT_EQ(shown_piece, html_escaped(piece)) << id;
  } else {   // longer ones are cut with "…"
    EXPECT_EQ(shown_piece.substr(0, 4), html_escaped(piece.substr(0, 4))) << id;
  }
}

}  // namespace

TEST_F(ReportSections, LensCellShowsTheTracesTopTokenAndProbability) {
  ASSERT_TRUE(two_rows_);
  need_browser();
  const std::string trace = dir_->file("two.h5");
  const std::string dom = render(trace, dir_->file("lens.html"), "");
  ASSERT_NE(element_at(dom, "lens-table"), std::string::npos);
  EXPECT_EQ(dom.find("Trace with --lens"), std::string::npos);
  const tok::Tokenizer tk = tok::Tokenizer::load(kTiny);
  TraceReader tr(trace);
  // A prefill cell (step 0, position 3 of row 0) and a decode cell (step 2's one position,
  // column T0 + 1): the page puts query t of a step at column past_length + t.
  HookData ids0 = tr.read(0, "lens.layers.1.topk_ids"), probs0 = tr.read(0, "lens.layers.1.topk_probs");
  expect_lens_cell(dom, 1, 3, int32_t(at3(ids0, 0, 3, 0)), at3(probs0, 0, 3, 0), tk);
  const int64_t T0 = ids0.shape[1];
  // The grid opens on the answer: its first column after the layer labels is the last prompt
  // column (T0 - 1, whose lens predicts the first generated token).
  EXPECT_EQ(dom_attr(dom, "lens-body", "data-first-column"), std::to_string(T0 - 1));
  HookData ids2 = tr.read(2, "lens.layers.2.topk_ids"), probs2 = tr.read(2, "lens.layers.2.topk_probs");
  ASSERT_EQ(tr.step_info(2).past_length, T0 + 1);
  expect_lens_cell(dom, 2, int(T0 + 1), int32_t(at3(ids2, 0, 0, 0)), at3(probs2, 0, 0, 0), tk);
  // The green frame marks a cell whose top token is the one that came next (the prompt's
  // next id, from tokens.input_ids).
  HookData in = tr.read(0, "tokens.input_ids");
  for (int t = 0; t + 1 < T0; ++t) {
    const bool hit = at3(ids0, 0, t, 0) == in.values[size_t(t + 1)];
    EXPECT_EQ(dom_attr(dom, "lens-c-1-" + std::to_string(t), "class"), hit ? "hit" : "") << "column " << t;
  }
}

TEST_F(ReportSections, RowSelectorsShowTheChosenRowInEverySection) {
  ASSERT_TRUE(two_rows_);
  need_browser();
  const std::string trace = dir_->file("two.h5");
  // #row=1 starts every section on row 1: the same draw(row) the selectors call on change.
  const std::string dom = render(trace, dir_->file("rows.html"), "#row=1");
  for (const char* sel : {"attn-row", "mask-row", "resid-row", "lens-row", "gen-row"})
    EXPECT_NE(element_at(dom, sel), std::string::npos) << sel;
  for (const char* body : {"mask-body", "resid-body", "lens-body", "gen-body"})
    EXPECT_EQ(dom_attr(dom, body, "data-row"), "1") << body;
  TraceReader tr(trace);

  // Masks: the combined mask's "may see" cells are row 1's (mask.combined: 0 = may see).
  HookData mask = tr.read(0, "mask.combined");
  const int64_t T = mask.shape[1], S = mask.shape[2];
  int see[2] = {0, 0};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < T * S; ++i) see[b] += mask.values[size_t(b * T * S + i)] == 0;
  ASSERT_NE(see[0], see[1]);   // the rows differ, so showing row 0 fails
  EXPECT_NE(element_at(dom, "mask-causal"), std::string::npos);   // row 1 is padded: causal and combined differ
  const size_t m0 = element_at(dom, "mask-combined"), m1 = dom.find("</svg>", m0);
  ASSERT_NE(m0, std::string::npos);
  int shown = 0;
  for (size_t at = dom.find("<title>may see</title>", m0); at < m1; at = dom.find("<title>may see</title>", at + 1)) ++shown;
  EXPECT_EQ(shown, see[1]);

  // Residual stream: the norm after layer 1 (grid row 2: embed, L0, L1) at the last prompt column.
  HookData resid = tr.read(0, "layers.1.resid_post");   // [B,T,D]
  const int64_t D = resid.shape[2], col = T - 1;
  double norm[2] = {0, 0};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < D; ++i) norm[b] += std::pow(resid.values[size_t((b * T + col) * D + i)], 2);
  norm[0] = std::sqrt(norm[0]), norm[1] = std::sqrt(norm[1]);
  ASSERT_GT(std::fabs(norm[0] - norm[1]), 2 * digit_tolerance(norm[1], 4));
  const size_t cell = dom.find("data-r=\"2\" data-c=\"" + std::to_string(col) + "\"", element_at(dom, "resid-svg"));
  const std::string value = text_after(dom, cell, "|x| = ");
  ASSERT_FALSE(value.empty());
  EXPECT_NEAR(std::stod(value), norm[1], digit_tolerance(norm[1], 4));

  // Generation steps: each step's chosen id is row 1's generated id.
  HookData gen = tr.generated_ids();
  const int64_t N = gen.shape[1];
  bool rows_differ = false;
  for (int64_t n = 0; n < N; ++n) {
    rows_differ = rows_differ || gen.values[size_t(n)] != gen.values[size_t(N + n)];
    const std::string id = text_after(dom, element_at(dom, "gen-step-" + std::to_string(n)), "(id ");
    EXPECT_EQ(id.substr(0, id.find(')')), std::to_string(int64_t(gen.values[size_t(N + n)]))) << "step " << n;
  }
  ASSERT_TRUE(rows_differ);

  // Logit lens: a prefill cell where the two rows' top tokens differ shows row 1's.
  bool found = false;
  for (int L = 0; L < 3 && !found; ++L) {
    HookData ids = tr.read(0, "lens.layers." + std::to_string(L) + ".topk_ids");
    for (int64_t t = T - 1; t >= T - 5 && !found; --t)   // row 1's real tokens are the last 5
      if (at3(ids, 0, t, 0) != at3(ids, 1, t, 0)) {
        found = true;
        EXPECT_EQ(dom_attr(dom, "lens-c-" + std::to_string(L) + "-" + std::to_string(t), "data-id"),
                  std::to_string(int64_t(at3(ids, 1, t, 0))));
      }
  }
  EXPECT_TRUE(found) << "no lens cell where the rows differ";
}

// The HF goldens (tools/lmscope-hf-trace): a trace of another producer renders with the
// sections its hooks allow, and the heatmap shows the file's number.
TEST_F(ReportSections, HfTracesRenderTheSectionsTheirHooksAllow) {
  need_browser();
  std::ifstream mf(kSrc + "/golden/traces/manifest.json");
  ASSERT_TRUE(mf) << "golden/traces/manifest.json";
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  ASSERT_FALSE(manifest["traces"].empty());
  for (const auto& entry : manifest["traces"]) {
    const std::string name = entry["name"], trace = kSrc + "/" + entry["file"].get<std::string>();
    SCOPED_TRACE(name);
    TraceReader tr(trace);
    ASSERT_NE(tr.root_attr_string("producer").find("hf-transformers"), std::string::npos);
    HookData probs = tr.read(0, "layers.1.attn.probs");
    const auto [q, k] = distinct_cell(probs, 1);
    ASSERT_GE(q, 0) << "no heatmap cell differs from its neighbours";
    const std::string dom = render(trace, dir_->file(name + ".html"), cell_fragment(0, 0, 1, 1, q, k),
                                   " --model " + kSrc + "/" + entry["model"].get<std::string>());
    expect_heatmap_cell(dom, probs, 1, 1, q, k);
    auto has = [&](const std::string& h) { return tr.has_hook(0, h); };
    const bool attention = has("layers.1.attn.probs"), residual = has("embed") && has("layers.0.resid_post"),
               share = has("layers.0.attn_out") && has("layers.0.ffn_out"), generation = has("logits") || has("sample.chosen"),
               lens = has("lens.layers.0.topk_ids") && has("lens.layers.0.topk_probs"),
               masks = has("mask.causal") || has("mask.padding") || has("mask.combined");
    ASSERT_TRUE(attention && residual && generation) << "the goldens trace '*'";
    const std::pair<const char*, bool> sections[] = {
        {"token-strip-0", has("tokens.input_ids")}, {"token-words-0", tr.has_dataset("tokenizer/row_0/ids")},
        {"mask-causal", has("mask.causal")},        {"mask-padding", has("mask.padding")},
        {"mask-combined", has("mask.combined")},    {"attn-svg", attention},
        {"attn-overview-svg", attention},           {"resid-svg", residual},
        {"share-svg", share},                       {"lens-table", lens},
        {"gen-step-0", generation},                 {"gen-body", generation}};
    for (const auto& [id, want] : sections) EXPECT_EQ(element_at(dom, id) != std::string::npos, want) << id;
    EXPECT_EQ(element_at(dom, "gen-step-" + std::to_string(tr.n_steps() - 1)) != std::string::npos, generation);
    // Each section without its hooks says what to trace, and only those.
    int absent = 0;
    for (size_t at = dom.find("class=\"absent\""); at != std::string::npos; at = dom.find("class=\"absent\"", at + 1)) ++absent;
    const bool saliency = (has("embed") && has("grad.embed")) ||   // lmscope-trace --grad only
                          (has("layers.0.resid_pre") && has("grad.layers.0.resid_pre"));
    EXPECT_EQ(absent, int(!has("tokens.input_ids")) + int(!masks) + int(!attention) + int(!residual) + int(residual && !share) + int(!lens) + int(!generation) + int(!saliency));
    EXPECT_EQ(dom.find("Trace with --lens K") != std::string::npos, !lens);
  }
}

// The HF lens references (golden/lens, lmscope-hf-trace --lens): the lens section of a trace
// made by another producer shows the file's top tokens, in the prefill and in a decode step.
TEST_F(ReportSections, HfLensTracesShowTheFilesTopTokens) {
  need_browser();
  for (const char* name : {"tiny-qwen2", "tiny-llama"}) {
    SCOPED_TRACE(name);
    const std::string trace = kSrc + "/golden/lens/" + name + "-lens.h5", model = kSrc + "/golden/models/" + name;
    const std::string dom = render(trace, dir_->file(std::string(name) + "-lens.html"), "", " --model " + model);
    ASSERT_NE(element_at(dom, "lens-table"), std::string::npos);
    const tok::Tokenizer tk = tok::Tokenizer::load(model);
    TraceReader tr(trace);
    ASSERT_NE(tr.root_attr_string("producer").find("hf-transformers"), std::string::npos);
    HookData ids0 = tr.read(0, "lens.layers.0.topk_ids"), probs0 = tr.read(0, "lens.layers.0.topk_probs");
    expect_lens_cell(dom, 0, 5, int32_t(at3(ids0, 0, 5, 0)), at3(probs0, 0, 5, 0), tk);
    const int last = tr.n_steps() - 1;
    ASSERT_GE(last, 1);
    HookData ids = tr.read(last, "lens.layers.1.topk_ids"), probs = tr.read(last, "lens.layers.1.topk_probs");
    const int column = int(tr.step_info(last).past_length + ids.shape[1] - 1);
    expect_lens_cell(dom, 1, column, int32_t(at3(ids, 0, ids.shape[1] - 1, 0)), at3(probs, 0, ids.shape[1] - 1, 0), tk);
  }
}
