// lmscope-report --attention files (and auto on a long prompt): the heatmaps' probabilities as
// one script per step and layer in report.html.d/, loaded by the page when chosen. Checked:
// each file's size is the stated formula and the page holds none of them; the last layer at
// the last step (and the prefill) shows the trace's value within the stated quantization, with
// no script errors; a missing file, or one of another report, is a sentence in the page; the
// page and its folder are written together or not at all, and a folder that is not ours is
// never replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "io/page_folder.h"
#include "report/attention_store.h"
#include "tests/report/browser.h"
#include "tests/report/page_checks.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kSrc + "/golden/models/tiny-qwen2";
const std::string kSmol = kSrc + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

class ReportFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string trace = kBin + "/lmscope-trace --model " + kTiny + " --max-new-tokens 4 -q --hooks '*' --out ";
    ok_ = run_cli(trace + dir_->file("a.h5") + " --prompt 'The golden fish spoke to the old man.'").code == 0 &&
          run_cli(trace + dir_->file("b.h5") + " --prompt 'Once upon a time there was a cat.'").code == 0;
    chromium_ = find_chromium(&no_chromium_);
  }
  static void TearDownTestSuite() { delete dir_; }
  static CliRun report(const std::string& args) { return run_cli(kBin + "/lmscope-report " + args); }
  void need_browser() {
    if (chromium_.empty()) FAIL() << no_chromium_;   // setup.sh installs it: missing = broken setup
  }
  // The page of trace a.h5 with its folder, in a directory of its own: `name`.html, `name`.html.d/.
  static std::string files_page(const std::string& name) {
    fs::create_directories(dir_->file(name));
    const std::string html = dir_->file(name + "/" + name + ".html");
    CliRun r = report(dir_->file("a.h5") + " --attention files -o " + html);
    EXPECT_EQ(r.code, 0) << r.err;
    return html;
  }
  void projector_screen(const std::string& html);
  void svgs_within_their_size(const std::string& trace);
  static std::string render(const std::string& html, const std::string& fragment) {
    return rendered_dom(chromium_, dir_->file("profile"), "file://" + html + fragment);
  }

  static TempDir* dir_;
  static bool ok_;
  static std::string chromium_, no_chromium_;
};
TempDir* ReportFiles::dir_ = nullptr;
bool ReportFiles::ok_ = false;
std::string ReportFiles::chromium_, ReportFiles::no_chromium_;

int layer_count(const TraceReader& tr) {
  int n = 0;
  while (tr.has_hook(0, "layers." + std::to_string(n) + ".attn.probs")) ++n;
  return n;
}

// The files of a folder, by name.
std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// The exact size the docs state for the file of one step and layer: the base64 of 16-bit
// levels of the causal triangle, in `lmscopeAttention("<16 hex>","<step>/<layer>","...");\n`.
uint64_t stated_file_bytes(const HookData& p, int step, int layer) {
  const std::string key = std::to_string(step) + "/" + std::to_string(layer);
  return uint64_t(stored_attention_bytes(p.shape[0], p.shape[1], p.shape[2], p.shape[3], true)) + 44 + key.size();
}

// A key column of a decode step's one query row (row 0, `head`) whose value differs from both
// neighbours by more than twice the quantization (a wrong index fails); -1 if none.
int distinct_key(const HookData& p, int head) {
  const int64_t S = p.shape[3];
  auto val = [&](int64_t k) { return p.values[size_t(head * S + k)]; };
  for (int64_t k = S - 2; k >= 1; --k)
    if (std::fabs(val(k) - val(k - 1)) > 2 * level_tolerance() && std::fabs(val(k) - val(k + 1)) > 2 * level_tolerance()) return int(k);
  return -1;
}

}  // namespace

TEST_F(ReportFiles, OneFilePerStepAndLayerOfTheStatedSizeAndThePageHoldsNone) {
  ASSERT_TRUE(ok_);
  const std::string html = files_page("sizes"), folder = html + ".d";
  TraceReader tr(dir_->file("a.h5"));
  const int layers = layer_count(tr), steps = tr.n_steps();
  ASSERT_EQ(layers, 3);
  ASSERT_EQ(steps, 4);
  std::set<std::string> want = {kFolderMarker};
  uint64_t in_files = 0;
  for (int st = 0; st < steps; ++st)
    for (int L = 0; L < layers; ++L) {
      const std::string name = "s" + std::to_string(st) + "-l" + std::to_string(L) + ".js";
      want.insert(name);
      const HookData p = tr.read(st, "layers." + std::to_string(L) + ".attn.probs");
      ASSERT_TRUE(fs::exists(folder + "/" + name)) << name;
      EXPECT_EQ(fs::file_size(folder + "/" + name), stated_file_bytes(p, st, L)) << name;
      in_files += fs::file_size(folder + "/" + name);
    }
  EXPECT_EQ(files_in(folder), want);
  // The page holds no probabilities: the same report with them inline is larger by the files'
  // bytes, give or take, per file, its <script> tags (18 bytes) and its name in the index.
  const std::string inline_html = dir_->file("sizes/inline.html");
  ASSERT_EQ(report(dir_->file("a.h5") + " --attention inline -o " + inline_html).code, 0);
  EXPECT_FALSE(fs::exists(inline_html + ".d"));
  const uint64_t page = fs::file_size(html), whole = fs::file_size(inline_html);
  EXPECT_LE(page + in_files, whole + 24 * uint64_t(steps * layers));
  EXPECT_GE(page + in_files + 24 * uint64_t(steps * layers), whole);
}

TEST_F(ReportFiles, TheLastLayerAtTheLastStepShowsTheTracesValue) {
  ASSERT_TRUE(ok_);
  need_browser();
  const std::string html = files_page("last");
  TraceReader tr(dir_->file("a.h5"));
  const int last_layer = layer_count(tr) - 1, last_step = tr.n_steps() - 1;
  const HookData p = tr.read(last_step, "layers." + std::to_string(last_layer) + ".attn.probs");
  const int head = int(p.shape[1]) - 1, k = distinct_key(p, head);
  ASSERT_GE(k, 0) << "no key of the last head differs from its neighbours";
  std::string dom = render(html, cell_fragment(0, last_step, last_layer, head, 0, k));
  EXPECT_NE(element_at(dom, "attn-svg"), std::string::npos);
  expect_heatmap_cell(dom, p, last_layer, head, 0, k, last_step);
  // The prefill of the same layer: another file, a causal triangle.
  const HookData p0 = tr.read(0, "layers." + std::to_string(last_layer) + ".attn.probs");
  const auto [q0, k0] = distinct_cell(p0, head);
  ASSERT_GE(q0, 0);
  dom = render(html, cell_fragment(0, 0, last_layer, head, q0, k0));
  expect_heatmap_cell(dom, p0, last_layer, head, q0, k0, 0);
}

TEST_F(ReportFiles, AMissingFileOrOneOfAnotherReportIsASentenceNotABlank) {
  ASSERT_TRUE(ok_);
  need_browser();
  const std::string html = files_page("missing"), folder = html + ".d";
  fs::remove(folder + "/s3-l2.js");
  std::string dom = render(html, "#step=3&layer=2");
  EXPECT_EQ(element_at(dom, "attn-svg"), std::string::npos);
  EXPECT_EQ(dom_text(dom, "attn-missing"),
            "Cannot load \u201cmissing.html.d/s3-l2.js\u201d: this page's heatmaps are files of the folder "
            "\u201cmissing.html.d\u201d beside it, one per step and layer (lmscope-report writes the two together; keep or "
            "copy them together).");
  EXPECT_NE(element_at(dom, "attn-overview-svg"), std::string::npos);   // the rest of the section is there
  // The file of the same step and layer from another trace's report.
  const std::string other = dir_->file("missing/other.html");
  ASSERT_EQ(report(dir_->file("b.h5") + " --attention files -o " + other).code, 0);
  fs::copy_file(other + ".d/s3-l2.js", folder + "/s3-l2.js");
  dom = render(html, "#step=3&layer=2");
  EXPECT_EQ(element_at(dom, "attn-svg"), std::string::npos);
  EXPECT_EQ(dom_text(dom, "attn-missing"),
            "\u201cmissing.html.d/s3-l2.js\u201d belongs to another report, not to this page: write the page and its folder "
            "again with lmscope-report.");
  // Another step and layer of the same page still draws.
  dom = render(html, "#step=0&layer=1");
  EXPECT_NE(element_at(dom, "attn-svg"), std::string::npos);
}

TEST_F(ReportFiles, ThePageAndItsFolderAreWrittenTogetherOrNotAtAll) {
  ASSERT_TRUE(ok_);
  const std::string html = files_page("atomic"), folder = html + ".d";
  const std::string page_before = read_text(html), file_before = read_text(folder + "/s0-l0.js");
  const std::string b = dir_->file("b.h5");
  // ulimit -f 4 (2 KiB): every file of the folder fits, the page does not; ulimit -f 1 (512
  // bytes): the first file fails. Either way the page and the folder stay as they were.
  for (const char* limit : {"4", "1"}) {
    SCOPED_TRACE(std::string("ulimit -f ") + limit);
    CliRun r = run_cli(std::string("ulimit -f ") + limit + "; " + kBin + "/lmscope-report " + b + " --attention files -o " + html);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(read_text(html), page_before);
    EXPECT_EQ(read_text(folder + "/s0-l0.js"), file_before);
    EXPECT_TRUE(temporaries_in(dir_->file("atomic")).empty());
  }
  // Written again from another trace: both replaced.
  ASSERT_EQ(report(b + " --attention files -o " + html).code, 0);
  EXPECT_NE(read_text(html), page_before);
  EXPECT_NE(read_text(folder + "/s0-l0.js"), file_before);
  // Inline: the page alone, and the folder of the earlier run is removed.
  ASSERT_EQ(report(b + " --attention inline -o " + html).code, 0);
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_TRUE(temporaries_in(dir_->file("atomic")).empty());
}

TEST_F(ReportFiles, AFolderThatIsNotOursIsNeverReplaced) {
  ASSERT_TRUE(ok_);
  const std::string dir = dir_->file("theirs");
  fs::create_directories(dir + "/page.html.d");
  { std::ofstream(dir + "/page.html.d/notes.txt") << "mine\n"; }
  fs::create_symlink(dir + "/page.html.d", dir + "/link.html.d");
  { std::ofstream(dir + "/file.html.d") << "a file\n"; }
  const std::pair<const char*, const char*> cases[] = {
      {"page.html", "it exists and was not written by lmscope (no .lmscope-folder in it); not replacing it"},
      {"link.html", "it is a symbolic link; not replacing it"},
      {"file.html", "it exists and is not a folder; not replacing it"}};
  for (const auto& [page, why] : cases)
    for (const char* mode : {"files", "inline"}) {
      SCOPED_TRACE(std::string(page) + " --attention " + mode);
      CliRun r = report(dir_->file("a.h5") + " --attention " + mode + " -o " + dir + "/" + page);
      EXPECT_EQ(r.code, 1);
      EXPECT_EQ(r.err, "lmscope-report: error: cannot write '" + dir + "/" + page + ".d': " + why + "\n");
      EXPECT_FALSE(fs::exists(dir + "/" + page));
    }
  EXPECT_EQ(read_text(dir + "/page.html.d/notes.txt"), "mine\n");
  EXPECT_EQ(files_in(dir + "/page.html.d"), std::set<std::string>{"notes.txt"});
  EXPECT_TRUE(temporaries_in(dir).empty());
}

// The issue's case: a 431-token SmolLM2 chat prompt (tests/report/long_chat_prompt.txt), 8 new
// tokens. Its page stays under 512 KiB (docs/report.md, "Size"), its heatmaps go to the folder
// (auto: more than 1 MiB), each file of the stated size, and the last layer is reachable at
// the last step and at the prefill, showing the trace's values.
TEST_F(ReportFiles, SmolLM2ChatPromptOf431TokensReachesEveryLayer) {
  if (!fs::exists(kSmol)) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not fetched (scripts/fetch-model.sh)";
  const std::string trace = dir_->file("long.h5"), html = dir_->file("long/report.html"), folder = html + ".d";
  fs::create_directories(dir_->file("long"));
  CliRun t = run_cli(kBin + "/lmscope-trace --model " + kSmol + " --chat --prompt \"$(cat " + kSrc +
                     "/tests/report/long_chat_prompt.txt)\" --max-new-tokens 8 -q --hooks 'tokens.*,mask.*,layers.*.attn.probs' --out " +
                     trace);
  ASSERT_EQ(t.code, 0) << t.err;
  TraceReader tr(trace);
  ASSERT_EQ(tr.read(0, "tokens.input_ids").shape[1], 431);
  ASSERT_EQ(tr.n_steps(), 8);
  CliRun r = report(trace + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(fs::file_size(html), 512u << 10);
  const int layers = layer_count(tr);
  ASSERT_EQ(layers, 30);
  EXPECT_EQ(files_in(folder).size(), size_t(8 * layers + 1));
  for (int st : {0, 7})
    for (int L : {0, 29}) {
      const std::string name = "s" + std::to_string(st) + "-l" + std::to_string(L) + ".js";
      EXPECT_EQ(fs::file_size(folder + "/" + name), stated_file_bytes(tr.read(st, "layers." + std::to_string(L) + ".attn.probs"), st, L))
          << name;
    }
  need_browser();
  const HookData p = tr.read(7, "layers.29.attn.probs");
  const int head = int(p.shape[1]) - 1, k = distinct_key(p, head);
  ASSERT_GE(k, 0);
  expect_heatmap_cell(render(html, cell_fragment(0, 7, 29, head, 0, k)), p, 29, head, 0, k, 7);
  const HookData p0 = tr.read(0, "layers.29.attn.probs");
  const auto [q0, k0] = distinct_cell(p0, head);
  ASSERT_GE(q0, 0);
  const std::string dom = render(html, cell_fragment(0, 0, 29, head, q0, k0));
  expect_heatmap_cell(dom, p0, 29, head, q0, k0, 0);
  // The window of every token (the default window of a narrow screen is fewer: ProjectorScreen).
  const std::string whole = render(html, cell_fragment(0, 0, 29, head, q0, k0) + "&qw=0-430&kw=0-430");
  EXPECT_NE(whole.find("data-cells=\"431x431\""), std::string::npos) << "the prefill's heatmap: one bitmap of 431 x 431 cells";
  // Every picture fits a 1280 px page: the heatmap, the masks and the 1 x 431 padding strip
  // (bitmaps of 1-2 px columns), not one 6 px SVG cell per column (2,716 px for the strip).
  size_t svgs = 0;
  for (size_t at = whole.find("<svg"); at != std::string::npos; at = whole.find("<svg", at + 1)) {
    const size_t end = whole.find('>', at), w = whole.find(" width=\"", at);
    if (w == std::string::npos || w > end) continue;
    ++svgs;
    EXPECT_LE(std::stoi(whole.substr(w + 8)), 1280) << whole.substr(at, std::min<size_t>(end - at, 160));
  }
  EXPECT_GE(svgs, size_t(3)) << "the heatmap, the overview and the masks";
  const std::string png = dir_->file("long/report.png");
  ASSERT_EQ(screenshot(chromium_, dir_->file("profile"), "file://" + html + "#step=0&layer=29", png, 1280, 4000).code, 0);
  PngStats st = png_stats(png);
  ASSERT_TRUE(st.ok) << st.error;
  EXPECT_GT(st.non_white, 0.05);
  projector_screen(html);
  svgs_within_their_size(trace);
}

// On a projector (1280 x 720 CSS px), the 431-token page's first screen holds the run summary
// and the heatmap, whose cells are at least 3 px (the view opens on the first tokens that fit
// the width: docs/report.md); hovering a row frames it and names its query's top key. Measured
// in the DOM by a script appended to a copy of the page (its layout, not what the page says).
void ReportFiles::projector_screen(const std::string& html) {
  const std::string copy = fs::path(html).parent_path().string() + "/projector.html";   // beside report.html.d
  std::string page = read_text(html);
  const size_t end = page.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  page.insert(end, R"(<pre id="measured"></pre><script>
(function poll() {
  var img = document.querySelector("#attn-svg image"), hot = document.querySelector("#attn-svg rect[fill=transparent]");
  if (!img || !hot) { setTimeout(poll, 100); return; }
  var head = document.getElementById("sec-header").getBoundingClientRect(), ib = img.getBoundingClientRect();
  var cells = document.getElementById("attn-svg").getAttribute("data-cells").split("x").map(Number);
  var hb = hot.getBoundingClientRect(), row = 20, y = hb.top + (row + 0.5) * hb.height / cells[0];
  hot.dispatchEvent(new MouseEvent("mousemove", { clientX: ib.left + 2, clientY: y, bubbles: true }));
  var mark = document.getElementById("attn-rowmark").getBoundingClientRect();
  document.getElementById("measured").textContent = [head.bottom, ib.top, ib.right, ib.width / cells[1], ib.height / cells[0],
    document.getElementById("attn-hover").getAttribute("data-query"), Math.abs((mark.top + mark.bottom) / 2 - y),
    document.getElementById("attn-rowmark").getAttribute("visibility")].join(" ");
})();
</script>)");
  std::ofstream(copy, std::ios::binary) << page;
  CliRun dom = dump_dom_at(chromium_, dir_->file("profile"), "file://" + copy + "#step=0&layer=29&head=0", 1280, 720);
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(dom_text(dom.out, "script-errors"), "");
  std::istringstream m(dom_text(dom.out, "measured"));
  double header_bottom = 0, top = 0, right = 0, cell_w = 0, cell_h = 0, mark_off = 99;
  std::string query, visibility;
  ASSERT_TRUE(m >> header_bottom >> top >> right >> cell_w >> cell_h >> query >> mark_off >> visibility) << dom_text(dom.out, "measured");
  EXPECT_LT(header_bottom, 720) << "the run summary on the first screen";
  EXPECT_LT(top, 720 - 150) << "at least 150 px of the heatmap on the first screen";
  EXPECT_LE(right, 1280) << "the heatmap within the screen's width";
  EXPECT_GT(right, 1280 * 0.85) << "the heatmap grows to the screen's width";
  EXPECT_GE(cell_w, 3);
  EXPECT_GE(cell_h, 3);
  EXPECT_EQ(query, "20") << "hovering row 20 names its query";
  EXPECT_LT(mark_off, 2) << "the frame sits on the hovered row";
  EXPECT_EQ(visibility, "visible");
}

// Every picture of the 431-token trace stays within what docs/report.md states for --svg:
// 1280 x 720 px and 512 KiB (blocks of cells, or a crop).
void ReportFiles::svgs_within_their_size(const std::string& trace) {
  struct Picture { std::string args, name; };
  for (const Picture& p : {Picture{"--svg attention --layer 29 --head 0", "attn.svg"},
                           Picture{"--svg attention --layer 29 --head 0 --step 7", "attn-decode.svg"},
                           Picture{"--svg attention --layer 29 --head 0 --queries 300-430 --keys 0-199", "attn-crop.svg"},
                           Picture{"--svg mask", "mask.svg"}}) {
    const std::string svg = dir_->file("long/" + p.name);
    CliRun r = report(trace + " " + p.args + " -o " + svg);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string text = read_text(svg);
    EXPECT_LE(text.size(), 512u << 10) << p.name;
    const size_t w = text.find(" width=\""), h = text.find(" height=\"");
    ASSERT_NE(w, std::string::npos);
    EXPECT_LE(std::stoi(text.substr(w + 8)), 1280) << p.name;
    EXPECT_LE(std::stoi(text.substr(h + 9)), 720) << p.name;
  }
  EXPECT_NE(read_text(dir_->file("long/attn.svg")).find("Each cell is a block of 9 \u00d7 9 tokens"), std::string::npos);
  EXPECT_NE(read_text(dir_->file("long/attn-crop.svg")).find("Cropped to query columns 300\u2013430 and key columns 0\u2013199"),
            std::string::npos);
}
