// lmscope-report: the page rendered in headless Chromium (no script errors, the heatmap's
// number equals the trace's, every section the trace allows is present, a non-blank
// screenshot), the --svg pictures, and bad input as one line with no file left behind.
// Traces are made by lmscope-trace on golden/models/tiny-qwen2 (and on SmolLM2 when fetched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "tests/report/browser.h"
#include "tests/report/page_checks.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kSrc + "/golden/models/tiny-qwen2";
const std::string kSmol = kSrc + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string trace = kBin + "/lmscope-trace --model " + kTiny +
                              " --prompt 'The golden fish spoke to the old man.' --max-new-tokens 4 -q --out ";
    // Every hook and the logit lens: every section of the page has its data.
    full_ = run_cli(trace + dir_->file("full.h5") + " --hooks '*' --lens 3").code == 0;
    partial_ = run_cli(trace + dir_->file("partial.h5") + " --hooks 'tokens.*,logits,sample.*'").code == 0;
    chromium_ = find_chromium(&no_chromium_);
  }
  static void TearDownTestSuite() { delete dir_; }

  static CliRun report(const std::string& args) { return run_cli(kBin + "/lmscope-report " + args); }
  void need_browser() {
    if (chromium_.empty()) FAIL() << no_chromium_;   // setup.sh installs it: missing = broken setup
  }

  static TempDir* dir_;
  static bool full_, partial_;
  static std::string chromium_, no_chromium_;
};
TempDir* Report::dir_ = nullptr;
bool Report::full_ = false, Report::partial_ = false;
std::string Report::chromium_, Report::no_chromium_;

// Exit 1, one line on stderr naming `part`, and no output file nor temporary left.
void expect_one_line_error(const CliRun& r, const std::string& part, const std::string& out) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("lmscope-report: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << out;
}

}  // namespace

TEST_F(Report, PageRendersWithoutErrorsAndTheHeatmapShowsTheTracesValue) {
  ASSERT_TRUE(full_);
  need_browser();
  const std::string html = dir_->file("report.html");
  CliRun r = report(dir_->file("full.h5") + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_text(html).find("http://www.w3.org/1999"), std::string::npos) << "the page links nothing";
  // Cell: row 0, step 0, layer 1, head 1, query 6, key 2 (selected through the URL, as a hover does).
  const int layer = 1, head = 1, q = 6, k = 2;
  TraceReader tr(dir_->file("full.h5"));
  HookData p = tr.read(0, "layers.1.attn.probs");
  const int64_t T = p.shape[2], S = p.shape[3];
  auto val = [&](int64_t qq, int64_t kk) { return p.values[size_t((head * T + qq) * S + kk)]; };
  const double want = val(q, k);
  ASSERT_GT(want, 0);
  // The neighbours differ by more than the quantization, so a wrong index cannot pass.
  for (auto [dq, dk] : {std::pair{0, 1}, {0, -1}, {1, 0}, {-1, 0}})
    ASSERT_GT(std::fabs(val(q + dq, k + dk) - want), 2 * level_tolerance());
  CliRun dom = dump_dom(chromium_, dir_->file("profile"), "file://" + html + cell_fragment(0, 0, layer, head, q, k));
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(dom_text(dom.out, "script-errors"), "");
  EXPECT_EQ(dom_text(dom.out, "render-status"), "rendered");
  expect_heatmap_cell(dom.out, p, layer, head, q, k);
  // Every section this trace allows: nothing says "absent".
  for (const char* id : {"sec-header", "token-strip-0", "token-words-0", "mask-padding", "mask-combined",
                         "attn-svg", "attn-overview-svg", "resid-svg", "share-svg", "lens-table", "gen-step-0", "gen-step-3"})
    EXPECT_NE(dom.out.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  // ... but the token saliency row, which needs lmscope-trace --grad (report_saliency_test.cpp).
  const size_t absent = dom.out.find("class=\"absent\"");
  EXPECT_NE(absent, std::string::npos);
  EXPECT_EQ(dom.out.find("class=\"absent\"", absent + 1), std::string::npos);
  EXPECT_NE(dom.out.find("no gradients of the embedding", absent), std::string::npos);
  // One prompt, no padding: the combined mask is the causal one, drawn once and titled so.
  EXPECT_EQ(dom.out.find("id=\"mask-causal\""), std::string::npos);
  EXPECT_NE(dom.out.find("combined = causal (row 0 has no padding)"), std::string::npos);
  // A screenshot of the top of the page: drawn, not blank.
  const std::string png = dir_->file("report.png");
  CliRun shot = screenshot(chromium_, dir_->file("profile"), "file://" + html, png, 1280, 2400);
  ASSERT_EQ(shot.code, 0) << shot.err;
  PngStats st = png_stats(png);
  ASSERT_TRUE(st.ok) << st.error;
  EXPECT_EQ(st.width, 1280);
  EXPECT_GT(st.non_white, 0.05);
  EXPECT_GT(st.colours, 50u);
}

// The attention view's window and colour scale from the URL (docs/report.md, "The attention
// view"): the heatmap draws those query and key columns only, says so, and has that scale chosen.
TEST_F(Report, TheUrlOpensTheHeatmapOnAWindowAndAScale) {
  ASSERT_TRUE(full_);
  need_browser();
  const std::string html = dir_->file("window.html");
  ASSERT_EQ(report(dir_->file("full.h5") + " -o " + html).code, 0);
  for (const char* scale : {"rank", "log"}) {
    const std::string dom = rendered_dom(chromium_, dir_->file("profile"),
                                         "file://" + html + "#step=0&layer=1&head=1&qw=2-5&kw=0-3&scale=" + scale);
    EXPECT_EQ(dom_attr(dom, "attn-svg", "data-cells"), "4x4") << scale;
    EXPECT_EQ(dom_text(dom, "attn-window-note").rfind("window: query columns 2\u20135 of 0\u2013", 0), 0u) << dom_text(dom, "attn-window-note");
    EXPECT_NE(dom.find("<option value=\"" + std::string(scale) + "\" selected=\"selected\">"), std::string::npos) << scale;
  }
  // No window in the URL: every token of this short prompt.
  const std::string dom = rendered_dom(chromium_, dir_->file("profile"), "file://" + html + "#step=0&layer=1&head=1");
  EXPECT_EQ(dom_text(dom, "attn-window-note").rfind("every token: ", 0), 0u) << dom_text(dom, "attn-window-note");
  // Dragging from cell (query 1, key 0) to (query 4, key 3) crops to those columns and writes
  // them into the URL: mouse events dispatched by a script appended to a copy of the page.
  std::string page = read_text(html);
  page.insert(page.rfind("</body>"), R"(<pre id="dragged"></pre><script>
(function () {
  var svg = document.getElementById("attn-svg"), hot = svg.querySelector("rect[fill=transparent]");
  var img = svg.querySelector("image").getBoundingClientRect(), n = svg.getAttribute("data-cells").split("x").map(Number);
  function ev(type, q, k) {
    hot.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: img.left + (k + 0.5) * img.width / n[1],
                                             clientY: img.top + (q + 0.5) * img.height / n[0] }));
  }
  ev("mousedown", 1, 0); ev("mousemove", 4, 3); ev("mouseup", 4, 3);
  document.getElementById("dragged").textContent = document.getElementById("attn-svg").getAttribute("data-cells") + " " + location.hash;
})();
</script>)");
  const std::string copy = dir_->file("drag.html");
  std::ofstream(copy, std::ios::binary) << page;
  const std::string dragged = dom_text(rendered_dom(chromium_, dir_->file("profile"), "file://" + copy + "#step=0&layer=1&head=1"), "dragged");
  EXPECT_EQ(dragged.rfind("4x4 #", 0), 0u) << dragged;
  EXPECT_NE(dragged.find("qw=1-4&amp;kw=0-3"), std::string::npos) << dragged;   // the DOM escapes &
}

TEST_F(Report, SectionsWithoutTheirHooksSayWhatToTrace) {
  ASSERT_TRUE(partial_);
  need_browser();
  const std::string html = dir_->file("partial.html");
  ASSERT_EQ(report(dir_->file("partial.h5") + " -o " + html).code, 0);
  CliRun dom = dump_dom(chromium_, dir_->file("profile"), "file://" + html);
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(dom_text(dom.out, "script-errors"), "");
  EXPECT_EQ(dom_text(dom.out, "render-status"), "rendered");
  EXPECT_NE(dom.out.find("Trace with --hooks 'layers.*.attn.probs' to see it."), std::string::npos);
  EXPECT_NE(dom.out.find("Trace with --hooks 'mask.*' to see it."), std::string::npos);
  EXPECT_NE(dom.out.find("Trace with --hooks 'embed,layers.*.resid_post' to see it."), std::string::npos);
  EXPECT_NE(dom.out.find("Trace with --lens K (lmscope-trace --lens 10) to see it."), std::string::npos);
  EXPECT_EQ(dom.out.find("id=\"lens-table\""), std::string::npos);
  EXPECT_NE(dom.out.find("id=\"gen-step-0\""), std::string::npos);   // logits and sample.* are there
  EXPECT_NE(dom.out.find("id=\"token-strip-0\""), std::string::npos);
}

TEST_F(Report, AttentionSvgIsAPictureWithTitleAxesAndLegend) {
  ASSERT_TRUE(full_);
  const std::string svg = dir_->file("attn.svg");
  CliRun r = report(dir_->file("full.h5") + " --svg attention --layer 1 --head 0 -o " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = read_text(svg);
  for (const char* want : {"Attention probabilities: layer 1, head 0, step 0 (prefill)", "key token (column it reads from)",
                           "query token (position reading)", "probability (softmax, each row sums to 1)", " golden"})
    EXPECT_NE(text.find(want), std::string::npos) << want;
  need_browser();
  CliRun dom = dump_dom(chromium_, dir_->file("profile"), "file://" + svg);
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_NE(dom.out.find("Attention probabilities: layer 1, head 0"), std::string::npos);
  const std::string png = dir_->file("attn.png");
  ASSERT_EQ(screenshot(chromium_, dir_->file("profile"), "file://" + svg, png, 1280, 720).code, 0);
  PngStats st = png_stats(png);
  ASSERT_TRUE(st.ok) << st.error;
  EXPECT_GT(st.non_white, 0.03);
  EXPECT_GT(st.colours, 20u);
}

TEST_F(Report, MaskSvgLabelsTheTokens) {
  ASSERT_TRUE(full_);
  const std::string svg = dir_->file("mask.svg");
  ASSERT_EQ(report(dir_->file("full.h5") + " --svg mask -o " + svg).code, 0);
  const std::string text = read_text(svg);
  EXPECT_NE(text.find("Attention mask (combined causal + padding), row 0, prefill"), std::string::npos);
  EXPECT_NE(text.find("may attend"), std::string::npos);
}

TEST_F(Report, NotATraceIsOneLine) {
  const std::string bogus = dir_->file("bogus.h5"), out = dir_->file("bogus.html");
  { std::ofstream(bogus) << "not hdf5\n"; }
  expect_one_line_error(report(bogus + " -o " + out), "is not an HDF5 file", out);
  expect_one_line_error(report(dir_->file("missing.h5") + " -o " + out), "cannot open trace", out);
}

TEST_F(Report, UnwritableOutputIsOneLineAndLeavesNothing) {
  ASSERT_TRUE(full_);
  const std::string file = dir_->file("plain-file");
  { std::ofstream(file) << "x"; }
  expect_one_line_error(report(dir_->file("full.h5") + " -o " + file + "/report.html"), "cannot write '", file + "/report.html");
  expect_one_line_error(report(dir_->file("full.h5") + " -o " + dir_->file("no-dir/report.html")), "no-dir' does not exist",
                        dir_->file("no-dir/report.html"));
  EXPECT_TRUE(temporaries_in(dir_->path()).empty());
}

TEST_F(Report, SelectionsOutsideTheTraceAreOneLine) {
  ASSERT_TRUE(full_);
  const std::string out = dir_->file("sel.html");
  expect_one_line_error(report(dir_->file("full.h5") + " --layers 99 -o " + out), "--layers: layer 99 is not in the trace", out);
  expect_one_line_error(report(dir_->file("full.h5") + " --steps 9 -o " + out), "--steps: step 9 is not in the trace", out);
  expect_one_line_error(report(dir_->file("full.h5") + " --svg attention --layer 1 --head 7 -o " + out), "--head 7", out);
  ASSERT_TRUE(partial_);
  expect_one_line_error(report(dir_->file("partial.h5") + " --svg attention -o " + out), "--hooks 'layers.*.attn.probs'", out);
}

TEST_F(Report, SmolLM2PageStaysSmallAndRenders) {
  if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not fetched (scripts/fetch-model.sh)";
  // scripts/run.sh's trace, with 4 new tokens instead of 24 to keep the test short.
  const std::string trace = dir_->file("smol.h5"), html = dir_->file("smol.html");
  CliRun t = run_cli(kBin + "/lmscope-trace --model " + kSmol +
                     " --chat --prompt 'What is the capital of France?' --max-new-tokens 4 -q --out " + trace);
  ASSERT_EQ(t.code, 0) << t.err;
  ASSERT_EQ(report(trace + " -o " + html).code, 0);
  EXPECT_LT(std::filesystem::file_size(html), 2u << 20);
  need_browser();
  CliRun dom = dump_dom(chromium_, dir_->file("profile"), "file://" + html);
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(dom_text(dom.out, "script-errors"), "");
  EXPECT_EQ(dom_text(dom.out, "render-status"), "rendered");
  EXPECT_NE(dom.out.find("&lt;|im_start|&gt;"), std::string::npos);   // a special token in the strip
  // run.sh traces without --lens and --grad: the token saliency and lens sections are the ones
  // that say what to trace (in the page's order).
  const size_t absent = dom.out.find("class=\"absent\"");
  ASSERT_NE(absent, std::string::npos);
  EXPECT_NE(dom.out.find("no gradients of the embedding", absent), std::string::npos);
  const size_t second = dom.out.find("class=\"absent\"", absent + 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_NE(dom.out.find("Trace with --lens K", second), std::string::npos);
  EXPECT_EQ(dom.out.find("class=\"absent\"", second + 1), std::string::npos);
}

// Renders an SVG file headless at 1280x720: its DOM must hold `texts`, its screenshot be drawn.
void expect_picture(const std::string& chromium, const TempDir& dir, const std::string& svg, const std::vector<std::string>& texts) {
  const std::string text = read_text(svg);
  for (const std::string& t : texts) EXPECT_NE(text.find(t), std::string::npos) << t;
  if (chromium.empty()) return;   // the caller skips after the text checks
  CliRun dom = dump_dom(chromium, dir.file("profile"), "file://" + svg);
  ASSERT_EQ(dom.code, 0) << dom.err;
  for (const std::string& t : texts) EXPECT_NE(dom.out.find(t), std::string::npos) << "rendered DOM lacks " << t;
  const std::string png = svg + ".png";
  ASSERT_EQ(screenshot(chromium, dir.file("profile"), "file://" + svg, png, 1280, 720).code, 0);
  PngStats st = png_stats(png);
  ASSERT_TRUE(st.ok) << st.error;
  EXPECT_GT(st.non_white, 0.03) << svg;
  EXPECT_GT(st.colours, 20u) << svg;
}

TEST_F(Report, PaddingPictureDrawsTheBatchTheMaskAndTheReadColumn) {
  const std::string out = dir_->file("padding");
  // Row 0 has 3 tokens, row 1 has 8: row 0 gets 5 PAD cells in each of the 4 modes.
  CliRun r = run_cli(kBin + "/lmscope-padding --model " + kTiny +
                     " --prompt-ids 42,308,333 --prompt-ids 43,392,346,287,382,962,676,3 --max-new-tokens 4 --out-dir " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = out + "/padding.svg", text = read_text(svg);
  size_t pads = 0, frames = 0;
  for (size_t at = text.find(">PAD<"); at != std::string::npos; at = text.find(">PAD<", at + 1)) ++pads;
  for (size_t at = text.find("stroke=\"#d62728\""); at != std::string::npos; at = text.find("stroke=\"#d62728\"", at + 1)) ++frames;
  EXPECT_EQ(pads, 20u);
  EXPECT_EQ(frames, 2u * 4u + 1u);   // one read column per row and mode, one in the legend
  expect_picture(chromium_, *dir_, svg,
                 {"Padding side: 2 prompts in one batch of 8 columns", "left_colpos", "right_hf", "right_aware",
                  "column (token position in the padded batch, 0..7)", "column the next token is read from",
                  "PAD (mask 0: nobody attends to it)", "matches solo", "departs"});
  need_browser();
}

// A batch of 120 columns (the tiny model's limit is 128 positions): the picture stays 1280 px
// wide (docs/experiments.md), its cells bars without text, column numbers every 10th.
TEST_F(Report, PaddingPictureOfALongBatchStaysWithinItsWidth) {
  const std::string out = dir_->file("padding-long");
  std::string a = "42", b = "43";
  for (int i = 1; i < 120; ++i) a += ',' + std::to_string(300 + i);
  for (int i = 1; i < 100; ++i) b += ',' + std::to_string(500 + i);
  CliRun r = run_cli(kBin + "/lmscope-padding --model " + kTiny + " --prompt-ids " + a + " --prompt-ids " + b +
                     " --max-new-tokens 1 --out-dir " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = out + "/padding.svg", text = read_text(svg);
  const size_t w = text.find(" width=\"");
  ASSERT_NE(w, std::string::npos);
  EXPECT_LE(std::stoi(text.substr(w + 8)), 1280);
  EXPECT_EQ(text.find(">PAD<"), std::string::npos) << "no text in cells too narrow for it";
  expect_picture(chromium_, *dir_, svg,
                 {"Padding side: 2 prompts in one batch of 120 columns", ">110<",
                  "120 columns: too narrow for their tokens, each drawn as a bar (blue: a real token, grey: PAD)"});
  need_browser();
}

TEST_F(Report, CachePictureDrawsWorkBytesAndTheFault) {
  const std::string svg = dir_->file("cache.svg");
  CliRun r = run_cli(kBin + "/lmscope-cache --model " + kTiny +
                     " --prompt-len 12 --max-new-tokens 6 --fault position --no-timing --svg " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_text(svg).find("width=\"1280\" height=\"720\""), std::string::npos);
  expect_picture(chromium_, *dir_, svg,
                 {"KV cache: the work per step, and the memory it costs", "Tokens pushed through the model, per step",
                  "tokens processed (count)", "KV cache (KiB)", "sequence length (positions in the cache)",
                  "with the KV cache (one new token per step)", "without (the whole sequence again)",
                  "first divergence: step 1", "fault planted: position"});
  need_browser();
}

TEST_F(Report, SummaryCountsEachHeadsMostAttendedKey) {
  ASSERT_TRUE(full_);
  CliRun r = report(dir_->file("full.h5") + " --summary --query 5");
  ASSERT_EQ(r.code, 0) << r.err;
  // The same count from the trace itself: heads whose query 5 puts the most weight on column 0.
  TraceReader tr(dir_->file("full.h5"));
  int heads = 0, on_first = 0;
  for (int L = 0; tr.has_hook(0, "layers." + std::to_string(L) + ".attn.probs"); ++L) {
    HookData p = tr.read(0, "layers." + std::to_string(L) + ".attn.probs");
    const int64_t H = p.shape[1], T = p.shape[2], S = p.shape[3];
    for (int64_t h = 0; h < H; ++h, ++heads) {
      const double* row = p.values.data() + (h * T + 5) * S;
      if (std::max_element(row, row + S) == row) ++on_first;
    }
  }
  EXPECT_NE(r.out.find("attention at step 0, row 0, query 5 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("heads by most-attended key (of " + std::to_string(heads) + "):"), std::string::npos) << r.out;
  if (on_first > 0) {
    EXPECT_NE(r.out.find("column 0 \u201cThe\u201d: " + std::to_string(on_first) + ";"), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.out.find("column 0 "), std::string::npos) << r.out;
  }
  CliRun none = report(dir_->file("partial.h5") + " --summary");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("trace with --hooks 'layers.*.attn.probs'"), std::string::npos) << none.err;
}
