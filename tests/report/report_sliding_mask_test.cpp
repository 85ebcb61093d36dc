// lmscope-report on a Gemma 3 trace: the page draws the sliding-window mask (mask.sliding) beside
// the causal and combined ones, and `--svg mask --mask sliding` writes it alone. tiny-gemma3's
// window is 4 (layers 0 and 1 slide, layer 2 is global), so a 9-token prompt shows the band.
#include <gtest/gtest.h>

#include <string>

#include "tests/report/browser.h"
#include "tests/report/page_checks.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;

// The number of "may see" cells of the grid whose <svg> follows the element `id`.
int cells_seen(const std::string& dom, const std::string& id) {
  const size_t from = element_at(dom, id), to = dom.find("</svg>", from);
  int n = 0;
  for (size_t at = dom.find("<title>may see</title>", from); at < to; at = dom.find("<title>may see</title>", at + 1)) ++n;
  return n;
}

// Row b of an additive mask [B,T,S]: how many (query, key) cells may see (0), and the most one
// query row sees.
std::pair<int, int> seen_in_hook(const HookData& m, int64_t b) {
  const int64_t T = m.shape[1], S = m.shape[2];
  int total = 0, widest = 0;
  for (int64_t t = 0; t < T; ++t) {
    int row = 0;
    for (int64_t s = 0; s < S; ++s) row += m.values[size_t((b * T + t) * S + s)] == 0;
    total += row;
    widest = std::max(widest, row);
  }
  return {total, widest};
}

}  // namespace

TEST(ReportSlidingMask, PageDrawsTheWindowBesideTheCausalMask) {
  std::string no_chromium;
  const std::string chromium = find_chromium(&no_chromium);
  if (chromium.empty()) FAIL() << no_chromium;   // setup.sh installs it: missing = broken setup
  TempDir dir;
  const std::string trace = dir.file("g.h5"), html = dir.file("g.html");
  // Two rows, 9 and 5 tokens: row 1 starts with 4 PAD columns.
  CliRun r = run_cli(kBin + "/lmscope-trace -q --model " + kSrc + "/golden/models/tiny-gemma3" +
                     " --prompt-ids 330,749,537,264,935,314,267,681,289 --prompt-ids 295,16,330,749,537"
                     " --max-new-tokens 1 --hooks 'tokens.*,mask.*' --out " + trace);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_cli(kBin + "/lmscope-report " + trace + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  TraceReader tr(trace);
  const HookData sliding = tr.read(0, "mask.sliding"), combined = tr.read(0, "mask.combined");   // [B,T,S]
  for (int row : {0, 1}) {
    const std::string dom = rendered_dom(chromium, dir.file("profile"), "file://" + html + "#row=" + std::to_string(row));
    ASSERT_NE(element_at(dom, "mask-sliding"), std::string::npos) << "row " << row;
    ASSERT_NE(element_at(dom, "mask-combined"), std::string::npos) << "row " << row;
    const auto [want, widest] = seen_in_hook(sliding, row);
    // The window cuts the combined mask (so the picture is not the combined one again), and
    // no query sees more than 4 keys.
    ASSERT_LT(want, seen_in_hook(combined, row).first) << "row " << row;
    EXPECT_EQ(widest, 4) << "row " << row;
    EXPECT_EQ(cells_seen(dom, "mask-sliding"), want) << "row " << row;
    EXPECT_EQ(cells_seen(dom, "mask-combined"), seen_in_hook(combined, row).first) << "row " << row;
    EXPECT_NE(dom.find(">sliding window of 4</h3>"), std::string::npos);
    EXPECT_EQ(dom_text(dom, "mask-sliding-layers"), "layers 0, 1 slide; layer 2 uses the combined mask");
  }
}

TEST(ReportSlidingMask, SvgOfTheSlidingMaskAndOneLineWithoutIt) {
  TempDir dir;
  const std::string gemma = dir.file("g.h5"), qwen = dir.file("q.h5"), svg = dir.file("sliding.svg");
  for (const auto& [model, out] : {std::pair{std::string("tiny-gemma3"), gemma}, std::pair{std::string("tiny-qwen2"), qwen}}) {
    const CliRun r = run_cli(kBin + "/lmscope-trace -q --model " + kSrc + "/golden/models/" + model +
                             " --prompt-ids 330,749,537,264,935,314,267 --max-new-tokens 1 --hooks 'tokens.*,mask.*' --out " + out);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  CliRun r = run_cli(kBin + "/lmscope-report " + gemma + " --svg mask --mask sliding -o " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = read_text(svg);
  EXPECT_NE(text.find("Sliding-window mask (window 4), row 0, prefill"), std::string::npos);
  // 7 queries, each seeing itself and at most 3 keys before it: 1 + 2 + 3 + 4 * 4 = 22 cells.
  const HookData m = TraceReader(gemma).read(0, "mask.sliding");
  EXPECT_EQ(seen_in_hook(m, 0).first, 22);
  r = run_cli(kBin + "/lmscope-report " + qwen + " --svg mask --mask sliding -o " + svg);
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err, "lmscope-report: error: --mask sliding: the trace has no mask.sliding (only Gemma 3's sliding layers have one; "
                   "trace with --hooks 'mask.*')\n");
}
