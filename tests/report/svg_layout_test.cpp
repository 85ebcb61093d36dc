// Every SVG picture the tools write, laid out by headless Chromium: no text leaves the picture
// and no two texts overlap (tests/report/svg_layout.h). The checker itself is tested first on
// crafted pictures, so that a picture passing means something. Pictures are made by the tools
// on golden/models/tiny-qwen2 (3 layers), by the library on shapes of a real model (30 layers,
// a 41-token prompt, one decode row), and by the tools on SmolLM2 when it is fetched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "experiments/cache_svg.h"
#include "experiments/divergence_svg.h"
#include "report/grid_svg.h"
#include "tests/report/svg_layout.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kSrc + "/golden/models/tiny-qwen2";
const std::string kSmol = kSrc + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

class SvgLayout : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    chromium_ = find_chromium(&no_chromium_);
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (chromium_.empty()) FAIL() << no_chromium_;   // setup.sh installs it: missing = broken setup
  }

  // The picture's layout problems, each prefixed with its name; a picture that could not be
  // checked (or has no text at all) is a problem too.
  static std::vector<std::string> problems(const std::string& name, const std::string& svg) {
    LayoutResult r = check_svg_layout(chromium_, *dir_, name, svg);
    if (!r.ran) return {name + ": " + r.error};
    if (r.texts == 0) return {name + ": no text was laid out"};
    std::vector<std::string> out;
    for (const std::string& p : r.problems) out.push_back(name + ": " + p);
    return out;
  }
  static std::vector<std::string> file_problems(const std::string& path) {
    if (!std::filesystem::exists(path)) return {path + ": not written"};
    return problems(std::filesystem::path(path).filename().string(), read_text(path));
  }
  static std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += x + "\n";
    return s;
  }

  static TempDir* dir_;
  static std::string chromium_, no_chromium_;
};
TempDir* SvgLayout::dir_ = nullptr;
std::string SvgLayout::chromium_, SvgLayout::no_chromium_;

std::string crafted(const std::string& body) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"200\" viewBox=\"0 0 400 200\" "
         "font-family=\"DejaVu Sans\" font-size=\"14\">" + body + "</svg>";
}

std::string ids(int n, int first) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(first + (i * 37) % 900);
  return s;
}

}  // namespace

// The checker finds what it is for, and passes what is fine.
TEST_F(SvgLayout, CheckerFindsOverlappingTextAndTextOutsideThePicture) {
  // Two labels drawn at the same place: one overlap.
  std::vector<std::string> p = problems("overlap", crafted("<text x=\"20\" y=\"40\">first label</text>"
                                                           "<text x=\"60\" y=\"44\">second label</text>"));
  ASSERT_EQ(p.size(), 1u) << joined(p);
  EXPECT_NE(p[0].find("overlap of"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("\"first label\" and \"second label\""), std::string::npos) << p[0];
  // A legend title cut by the right edge, and a rotated axis title running off the top.
  p = problems("outside", crafted("<text x=\"300\" y=\"40\">probability (softmax, each row sums to 1)</text>"
                                  "<text x=\"22\" y=\"100\" text-anchor=\"middle\" transform=\"rotate(-90 22 100)\">"
                                  "a rotated title much longer than the picture is high</text>"));
  ASSERT_EQ(p.size(), 2u) << joined(p);
  EXPECT_NE(p[0].find("outside the 400x200 picture"), std::string::npos) << p[0];
  EXPECT_NE(p[1].find("a rotated title"), std::string::npos) << p[1];
  // Labels rotated by -60 degrees, 16 px apart: their axis-aligned boxes overlap, the labels do
  // not; and text a line apart. Nothing to report.
  std::string ok;
  for (int i = 0; i < 8; ++i) {
    const int x = 100 + 16 * i;
    ok += "<text x=\"" + std::to_string(x) + "\" y=\"150\" font-size=\"10\" transform=\"rotate(-60 " + std::to_string(x) +
          " 150)\">label " + std::to_string(i) + "</text>";
  }
  ok += "<text x=\"10\" y=\"170\">line one</text><text x=\"10\" y=\"187\">line two</text>";
  p = problems("fine", crafted(ok));
  EXPECT_TRUE(p.empty()) << joined(p);
}

// The tools' pictures on the committed tiny model.
TEST_F(SvgLayout, EveryToolsPictureOfTheTinyModel) {
  std::vector<std::string> all;
  auto add = [&](const std::vector<std::string>& p) { all.insert(all.end(), p.begin(), p.end()); };
  auto run = [&](const std::string& args) {
    CliRun r = run_cli(kBin + "/" + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  };
  const std::string trace = dir_->file("t.h5"), long_trace = dir_->file("t41.h5");
  run("lmscope-trace -q --model " + kTiny + " --prompt 'The golden fish spoke to the old man.' --max-new-tokens 6 "
      "--hooks '*' --out " + trace);
  // 41 tokens: the prompt of the "every other key unlabelled".
  run("lmscope-trace -q --model " + kTiny + " --prompt-ids " + ids(41, 5) + " --max-new-tokens 2 --hooks '*' --out " + long_trace);
  for (const auto& [t, args, name] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {trace, "--svg attention --layer 1 --head 2", "attn-prefill.svg"},
           {trace, "--svg attention --layer 2 --head 0 --step 5", "attn-decode.svg"},
           {trace, "--svg mask", "mask.svg"},
           {long_trace, "--svg attention --layer 0 --head 1", "attn41.svg"},
           {long_trace, "--svg mask", "mask41.svg"}}) {
    run("lmscope-report " + t + " " + args + " -o " + dir_->file(name));
    add(file_problems(dir_->file(name)));
  }
  // A decode step has no masked future; only the prefill's caption may speak of one.
  EXPECT_NE(read_text(dir_->file("attn-prefill.svg")).find("above the diagonal"), std::string::npos);
  EXPECT_EQ(read_text(dir_->file("attn-decode.svg")).find("above the diagonal"), std::string::npos);
  run("lmscope-cache --model " + kTiny + " --prompt-len 40 --max-new-tokens 24 --fault position --no-timing --svg " +
      dir_->file("cache.svg"));
  add(file_problems(dir_->file("cache.svg")));
  const std::string pad = dir_->file("padding");
  run("lmscope-padding --model " + kTiny + " --prompt-ids 42,308,333 --prompt-ids 43,392,346,287,382,962,676,3 "
      "--max-new-tokens 4 --out-dir " + pad);
  add(file_problems(pad + "/divergence.svg"));
  add(file_problems(pad + "/padding.svg"));
  run("lmscope-quant --model " + kTiny + " --prompt 'The golden fish spoke to the old man.' --scheme w8-channel --scheme w4-group --scheme w8a8 "
      "--svg " + dir_->file("quant.svg"));
  add(file_problems(dir_->file("quant.svg")));
  run("lmscope-patch --model " + kTiny + " --clean-ids 42,308,333,287 --corrupt-ids 43,392,346,287 --metric 'prob:#5' "
      "--svg " + dir_->file("patch"));
  for (const char* site : {"resid_pre", "attn_out", "ffn_out", "attn_z"})
    add(file_problems(dir_->file("patch") + "." + site + ".svg"));
  EXPECT_TRUE(all.empty()) << joined(all);
}

// The library's pictures at the shapes of a real model, without one.
TEST_F(SvgLayout, PicturesAtTheShapesOfARealModel) {
  std::vector<std::string> all;
  auto add = [&](const std::vector<std::string>& p) { all.insert(all.end(), p.begin(), p.end()); };
  // A decode step's attention: one query row over 41 keys with long pieces.
  for (int rows : {1, 41}) {
    GridPicture g;
    g.title = "Attention probabilities: layer 15, head 6, step 5 (decode)";
    g.x_label = "key token (column it reads from)";
    g.y_label = "query token (position reading)";
    for (int s = 0; s < 41; ++s) g.col_labels.push_back(s % 3 ? "\u0120capital" : "<|im_start|>");
    for (int q = 0; q < rows; ++q) g.row_labels.push_back(g.col_labels[size_t(41 - rows + q)]);
    for (int q = 0; q < rows; ++q) g.values.push_back(std::vector<double>(41, 1.0 / 41));
    g.legend = "probability (softmax, each row sums to 1)";
    g.legend_stops = {{0, "0"}, {0.5, "0.5"}, {1, "1"}};
    g.caption = "Row = a token looking back; column = a token it may read.";
    add(problems("grid" + std::to_string(rows) + ".svg", grid_svg(g)));
  }
  // A 431-token prefill's attention, drawn in blocks of 9 x 9 tokens (their labels: a piece and a
  // column range, "<|im_… 0–8"), and a 1 x 438 decode row in blocks of 1 x 4.
  for (int rows : {431, 1}) {
    GridPicture g;
    g.title = "Attention probabilities: layer 29, head 0, step 0 (prefill)";
    g.x_label = "key token (column it reads from)";
    g.y_label = "query token (position reading)";
    g.blocks = GridPicture::Blocks::RowsAverageColumnsAdd;
    const int cols = rows == 1 ? 438 : 431;
    for (int s = 0; s < cols; ++s) g.col_labels.push_back(s % 3 ? "\u0120capital" : "<|im_start|>");
    for (int q = 0; q < rows; ++q) g.row_labels.push_back(g.col_labels[size_t(cols - rows + q)]);
    for (int q = 0; q < rows; ++q) g.values.push_back(std::vector<double>(size_t(cols), 1.0 / cols));
    g.legend = "probability (softmax, each row sums to 1)";
    g.legend_stops = {{0, "0"}, {0.5, "0.5"}, {1, "1"}};
    g.caption = "Row = a token looking back; column = a token it may read.";
    const std::string svg = grid_svg(g), name = "blocks" + std::to_string(rows) + ".svg";
    LayoutResult r = check_svg_layout(chromium_, *dir_, name, svg);
    EXPECT_LE(r.width, 1280) << name;
    EXPECT_LE(r.height, 720) << name;
    add(problems(name, svg));
  }
  // The padding divergence picture of a 30-layer model, four prompts.
  std::vector<std::string> cols = {"embed"};
  for (int l = 0; l < 30; ++l) cols.push_back("L" + std::to_string(l));
  cols.push_back("logits");
  std::vector<HeatmapPanel> panels(4);
  for (size_t b = 0; b < panels.size(); ++b) {
    panels[b].title = "row " + std::to_string(b) + ": 'What is the capital of France?' (16 tokens, 3 pads)";
    for (const char* mode : {"left", "right_hf", "right_aware", "left_colpos"}) {
      panels[b].row_labels.push_back(mode);
      panels[b].values.push_back(std::vector<double>(cols.size(), 1e-3));
      panels[b].values_later.push_back(std::vector<double>(cols.size(), 1e-6));
      panels[b].fail.push_back(std::vector<char>(cols.size(), 1));
      panels[b].notes.push_back("departs: step 0, layers.12.attn.scores, position 13 (beyond tolerance)");
    }
  }
  const std::string div = heatmap_svg("lmscope-padding: each batch row against its solo run, per layer", cols, panels,
                                      {"cells: upper half the prefill (step 0), lower half the worst decode step",
                                       "black border = beyond tolerance at some step"});
  LayoutResult r = check_svg_layout(chromium_, *dir_, "divergence30", div);
  EXPECT_LE(r.width, 1280) << "the divergence picture must fit a slide";
  add(problems("divergence30.svg", div));
  // The cache picture with a thousand-token prompt (large counts on the axes).
  CacheReport c;
  c.batch = 1, c.prompt_len = 413, c.kv_bytes_per_position = 30 * 2 * 3 * 64 * 4;
  for (int i = 0; i < 24; ++i) {
    CacheStep s;
    s.step = i, s.T_cached = i ? 1 : 413, s.T_uncached = 413 + i, s.S = 413 + i;
    c.per_step.push_back(s);
  }
  add(problems("cache413.svg", cache_svg(c)));
  // Token counts are whole: the left axis's ticks (right-aligned at x = 92) of a 40-token prompt
  // and 10 steps (at most 49 tokens a step) must not read 12.5 or 37.5.
  c.prompt_len = 40;
  c.per_step.resize(10);
  for (CacheStep& s : c.per_step) s.T_cached = s.step ? 1 : 40, s.T_uncached = 40 + s.step, s.S = 40 + s.step;
  const std::string cache50 = cache_svg(c);
  int ticks = 0;
  for (size_t at = cache50.find("<text x=\"92\""); at != std::string::npos; at = cache50.find("<text x=\"92\"", at + 1)) {
    const size_t b = cache50.find('>', at) + 1;
    const std::string tick = cache50.substr(b, cache50.find('<', b) - b);
    EXPECT_EQ(tick.find_first_not_of("0123456789"), std::string::npos) << "tick " << tick;
    ++ticks;
  }
  EXPECT_EQ(ticks, 5);
  EXPECT_TRUE(all.empty()) << joined(all);
}

// SmolLM2's pictures (30 layers, a chat prompt), when the model is fetched.
TEST_F(SvgLayout, SmolLM2Pictures) {
  if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not fetched (scripts/fetch-model.sh)";
  std::vector<std::string> all;
  auto add = [&](const std::vector<std::string>& p) { all.insert(all.end(), p.begin(), p.end()); };
  const std::string trace = dir_->file("smol.h5");
  CliRun r = run_cli(kBin + "/lmscope-trace -q --model " + kSmol + " --chat --prompt 'What is the capital of France?' "
                     "--max-new-tokens 6 --hooks 'tokens.*,mask.*,layers.15.attn.probs' --out " + trace);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& [args, name] : std::vector<std::pair<std::string, std::string>>{
           {"--svg attention --layer 15 --head 6 --step 5", "smol-attn-decode.svg"},
           {"--svg attention --layer 15 --head 6", "smol-attn.svg"},
           {"--svg mask", "smol-mask.svg"}}) {
    CliRun s = run_cli(kBin + "/lmscope-report " + trace + " " + args + " -o " + dir_->file(name));
    EXPECT_EQ(s.code, 0) << s.err;
    add(file_problems(dir_->file(name)));
  }
  EXPECT_TRUE(all.empty()) << joined(all);
}
