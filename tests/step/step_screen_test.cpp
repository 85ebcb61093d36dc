// lmscope-step as a screen: in a pseudo-terminal of 100 x 30 (forkpty with that size) every
// frame — what is drawn after the clear-screen sequence — fits: at most 30 lines of at most 100
// display columns; an attention heatmap over more keys than fit keeps key 0 (the sink) in view
// and says which keys it shows; h, <, p, t move through heads, keys, layers and steps.
// The drawing helpers (key_window, printable_label, wrap_lines) are tested on their own first.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utf8proc.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "stepper/stepper.h"
#include "tests/step/step_pty.h"
#include "tests/test_util.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kSmol = LMSCOPE_SOURCE_DIR "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kClear = "\x1b[H\x1b[2J";
constexpr int kRows = 30, kCols = 100;

int display_width(const std::string& line) {
  int w = 0;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(line.data());
  for (size_t i = 0; i < line.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, utf8proc_ssize_t(line.size() - i), &cp);
    w += n <= 0 ? 1 : std::max(0, utf8proc_charwidth(cp));
    i += n <= 0 ? 1 : size_t(n);
  }
  return w;
}

// A program on a pseudo-terminal of kRows x kCols; the test types keys and reads frames.
class Screen {
 public:
  explicit Screen(const std::vector<std::string>& args) {
    winsize ws{};
    ws.ws_row = kRows;
    ws.ws_col = kCols;
    pid_ = step_test::spawn_in_pty(args, &fd_, &ws);
  }
  ~Screen() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  void press(const std::string& keys) { EXPECT_EQ(::write(fd_, keys.data(), keys.size()), ssize_t(keys.size())); }
  // Types `keys`, then returns the last frame once the output has been quiet for 300 ms
  // (the frame is drawn) and holds `want`; "" after 30 s without it.
  std::string type(const std::string& keys, const std::string& want) {
    press(keys);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    const size_t from = out_.size();
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 300) > 0) {
        char buf[65536];
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n <= 0) break;
        out_.append(buf, size_t(n));
        continue;
      }
      const size_t at = out_.rfind(kClear);
      if (at != std::string::npos && at + 1 >= from && out_.find(want, at) != std::string::npos) return out_.substr(at + kClear.size());
    }
    ADD_FAILURE() << "no frame with '" << want << "' after typing '" << keys << "'; the output ends:\n"
                  << out_.substr(out_.size() > 3000 ? out_.size() - 3000 : 0);
    return "";
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string out_;
};

std::vector<std::string> lines_of(const std::string& frame) {
  std::vector<std::string> lines;
  size_t a = 0;
  for (size_t b; (b = frame.find('\n', a)) != std::string::npos; a = b + 1) lines.push_back(frame.substr(a, b - a));
  lines.push_back(frame.substr(a));   // the footer: no newline after it
  return lines;
}

// A frame fits the screen: kRows lines at most (terminal lines: \r\n from the pty), none wider than kCols.
void expect_fits(const std::string& frame) {
  const std::vector<std::string> lines = lines_of(frame);
  EXPECT_LE(lines.size(), size_t(kRows)) << frame;
  for (std::string l : lines) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    EXPECT_LE(display_width(l), kCols) << l;
  }
}

// The line of key positions' units digits under a heatmap: the first after the tens line.
std::string units_line(const std::string& frame, const std::string& after) {
  const size_t at = frame.find(after);
  if (at == std::string::npos) return "";
  const std::vector<std::string> lines = lines_of(frame.substr(at));
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i + 1].find(" |") != std::string::npos && lines[i + 1].find("q") != std::string::npos) return lines[i];
  return "";
}

}  // namespace

TEST(StepScreen, KeyWindowKeepsTheSinkAndSaysWhatIsShown) {
  const KeyWindow all = key_window(30, 46, -1);
  EXPECT_EQ(all.cols.size(), 30u);
  EXPECT_EQ(all.cols.front(), 0);
  EXPECT_EQ(all.note, "");
  // 413 keys in 46 cells: keys 0-3, the gap, then 41 keys ending at the last.
  const KeyWindow end = key_window(413, 46, -1);
  ASSERT_EQ(end.cols.size(), 46u);
  EXPECT_EQ(std::vector<int64_t>(end.cols.begin(), end.cols.begin() + 6), (std::vector<int64_t>{0, 1, 2, 3, -1, 372}));
  EXPECT_EQ(end.cols.back(), 412);
  EXPECT_EQ(end.note, "keys 0-3 and 372-412 of 0-412 shown");
  // A window moved to the start meets the sink: no gap.
  const KeyWindow start = key_window(413, 46, 4);
  EXPECT_EQ(start.cols.back(), 45);
  EXPECT_EQ(std::count(start.cols.begin(), start.cols.end(), -1), 0);
  EXPECT_EQ(start.note, "keys 0-45 of 0-412 shown");
  const KeyWindow mid = key_window(413, 46, 100);
  EXPECT_EQ(mid.cols[5], 100);
  EXPECT_EQ(mid.note, "keys 0-3 and 100-140 of 0-412 shown");
}

TEST(StepScreen, LabelsEscapeControlCharactersAndLinesWrapByWidth) {
  EXPECT_EQ(printable_label("\n"), "\\n");
  EXPECT_EQ(printable_label("a\tb\r\x01"), "a\\tb\\r\\x01");
  EXPECT_EQ(printable_label(" 中国"), " 中国");
  EXPECT_EQ(wrap_lines("abcdef\n中国中", 4), (std::vector<std::string>{"abcd", "ef", "中国", "中"}));
}

// The HF golden trace tiny-qwen2-a (3 layers, 4 heads, 11 prompt tokens, 8 steps): every
// frame fits, the attention page draws one head with key 0's column, h / H / p / t move.
TEST(StepScreen, GoldenPagesFitA100x30Terminal) {
  Screen s({kBin + "/lmscope-step", LMSCOPE_SOURCE_DIR "/golden/traces/tiny-qwen2-a.h5", "--model",
            LMSCOPE_SOURCE_DIR "/golden/models/tiny-qwen2"});
  expect_fits(s.type("", "=== tokenizer ==="));
  expect_fits(s.type("\n", "tokens, positions and masks"));
  std::string f = s.type("g1\n", "layer 1 · q/k before and after RoPE");
  expect_fits(f);
  f = s.type("\n", "layer 1 · attention");
  expect_fits(f);
  EXPECT_NE(f.find("head 0 of 0-3"), std::string::npos) << f;
  EXPECT_EQ(f.find("head 1 "), std::string::npos) << f;   // one head a screen
  const std::string units = units_line(f, "head 0 of 0-3");
  EXPECT_EQ(units.find("0 1 2 3"), units.find_first_not_of(' ')) << units;   // key 0's column leads the grid
  expect_fits(s.type("h", "head 1 of 0-3"));
  expect_fits(s.type("H", "head 0 of 0-3"));
  f = s.type("p", "layer 1 · attention");   // layer 0 was skipped by g1: a note in the footer
  EXPECT_NE(f.find("(layer 0 of this step was skipped, so it is not in memory)"), std::string::npos) << f;
  f = s.type("t3\n", "step 3 (decode) · tokens, positions and masks");
  expect_fits(f);
  expect_fits(s.type("?", "=== keys ==="));
  s.press("q");
}

// A chat prompt of more keys than fit in 100 columns (SmolLM2, traced here): the heatmap shows
// keys 0-3, a gap and the last keys, says so, and `<` moves the window towards the start.
TEST(StepScreen, LongChatPromptKeepsKeyZeroInView) {
  if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not fetched (scripts/fetch-model.sh)";
  TempDir dir;
  const std::string trace = dir.file("long.h5");
  const std::string prompt =
      "Name three rivers of Europe, say which countries each one flows through, and give the length of "
      "the longest of them in kilometres. Answer in one short sentence per river, please.";
  CliRun t = run_cli(kBin + "/lmscope-trace -q --model " + kSmol + " --chat --prompt '" + prompt +
                     "' --max-new-tokens 1 --hooks 'tokens.*,mask.*,layers.15.attn.*,logits,sample.*' --out " + trace);
  ASSERT_EQ(t.code, 0) << t.err;
  Screen s({kBin + "/lmscope-step", trace, "--model", kSmol});
  std::string f = s.type("", "=== tokenizer ===");
  expect_fits(f);
  EXPECT_NE(f.find("word \"\\n\""), std::string::npos) << f;   // the newline token, escaped
  f = s.type("\n", "tokens, positions and masks");
  expect_fits(f);
  expect_fits(s.type("g15\n", "layer 15 · q/k before and after RoPE"));
  f = s.type("\n", "layer 15 · attention");
  expect_fits(f);
  ASSERT_NE(f.find("head 0 of 0-8"), std::string::npos) << f;
  EXPECT_NE(f.find("(keys 0-3 and "), std::string::npos) << f;
  EXPECT_NE(f.find("query rows q"), std::string::npos) << f;   // 30 lines hold only some query rows
  const std::string units = units_line(f, "head 0 of 0-8");
  EXPECT_EQ(units.find("0 1 2 3 ┊"), units.find_first_not_of(' ')) << units;
  f = s.type("<", "layer 15 · attention");
  expect_fits(f);
  EXPECT_NE(f.find("(keys 0-3 and "), std::string::npos) << f;
  s.press("q");
}
