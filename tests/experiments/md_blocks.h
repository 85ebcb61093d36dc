// Command blocks of a markdown file (README.md, walkthroughs/*.md), run as written. The
// convention the docs follow:
//
//   ```sh            a runnable bash script: run with set -e and pipefail, from a scratch
//   ...              directory where build/, golden/ and models/ point at the build and the
//   ```              repository (so `build/lmscope-trace ...` works as in a checkout).
//                    Under pipefail, `tool | head -N` fails at random: head exits after N
//                    lines and a tool still writing dies of SIGPIPE (exit 141). Blocks take
//                    the first lines with `sed -n 1,Np`, which reads to the end.
//   <!-- expect: TEXT -->   (any number, right after the closing fence) text that the
//                           block's stdout must contain. Three placeholders stand for a number
//                           whose digits depend on the order float32 sums were added in (the
//                           CPU kernel, OpenBLAS's sgemm kernel; expect_found):
//                             {~X}    a number within 1e-4 of X, relative, or one unit of X's
//                                     last printed digit
//                             {<X}    a number below X in magnitude: rounding noise, whose size
//                                     is the point and whose digits are not
//                             {A..B}  a number from A to B: a result that rounding moves by
//                                     more than a unit (a count of values past an int8
//                                     rounding step, a KL made of them); the prose says the
//                                     measured spread (docs/tolerances.md, "Lessons")
//                           Exact as written: ids, tokens, texts, shapes, counts that no float
//                           sum decides.
//
//   <!-- not run: REASON -->  on the line right before a ```sh fence: the block is shown
//                           with shell highlighting but never run (e.g. scripts/test.sh,
//                           which runs this very test). The reason is listed by the test.
//
//   ```text          the shape of a command (placeholders such as FILE, DIR, [--json], ...)
//                    or sample output: not a command, never run. Any fence other than
//                    ```sh is treated the same way.
//
// Numbers in the prose (walkthroughs/*.md; see prose_numbers_unchecked): a measured-looking
// number the text states — a decimal (0.82), one with thousands separators (2,734; an output
// printing 2734 checks it), one in scientific notation (4e-8), a percentage (99%) — outside code fences, inline code and HTML
// comments must be checked: written in one of the lesson's expect lines (so the runner finds
// it in a block's output), or listed on a line
//   <!-- given: 1e-5, 0.5 -->   numbers the lesson sets, not measures (a tolerance, a flag's
//                              value, arithmetic on the page such as ln(50000) = 10.8).
//   <!-- timing: 2.41, 16.3 (2 cores, load 19) -->   times, which no rerun reproduces: stated
//                              as measured, and this line says on which machine.
// A number with neither fails the lesson's test: prose goes stale when the code changes.
//
// A block that names a file under models/ (the fetched SmolLM2 GGUF) that is absent is
// skipped, saying which file and how to fetch it.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "tests/experiments/exp_util.h"

namespace lmscope::exp_test {

struct MdBlock {
  int line = 0;                      // the line of the opening fence
  std::string script;
  std::vector<std::string> expect;
  std::string not_run;               // the reason of a <!-- not run: ... --> mark, or empty
};

// For gtest's parameter names in messages.
inline void PrintTo(const MdBlock& b, std::ostream* os) { *os << "the block at line " << b.line; }

// The ```sh blocks of `path`, in file order, with their expect lines and not-run marks.
inline std::vector<MdBlock> sh_blocks(const std::string& path) {
  std::ifstream in(path);
  std::vector<MdBlock> out;
  std::string line, mark;
  int n = 0;
  bool in_sh = false, in_other = false, after = false;
  const std::regex expect(R"(^<!-- expect: (.*) -->\s*$)");
  const std::regex not_run(R"(^<!-- not run: (.*) -->\s*$)");
  while (std::getline(in, line)) {
    ++n;
    if (in_sh || in_other) {
      if (line.rfind("```", 0) == 0) {
        after = in_sh;
        in_sh = in_other = false;
      } else if (in_sh) {
        out.back().script += line + "\n";
      }
      continue;
    }
    if (line == "```sh" || line.rfind("```sh ", 0) == 0) {
      out.push_back(MdBlock{n, "", {}, mark});
      in_sh = true;
      mark.clear();
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      in_other = true;
      after = false;
      mark.clear();
      continue;
    }
    std::smatch m;
    if (after && std::regex_match(line, m, expect)) {
      out.back().expect.push_back(m[1]);
      continue;
    }
    after = false;
    if (std::regex_match(line, m, not_run)) mark = m[1];
    else if (!line.empty()) mark.clear();
  }
  return out;
}

// The first file under models/ the block names that is not there ("" when none).
inline std::string absent_model(const MdBlock& b) {
  static const std::regex model(R"(models/[A-Za-z0-9._-]+)");
  for (std::sregex_iterator it(b.script.begin(), b.script.end(), model), end; it != end; ++it) {
    const std::string rel = it->str();
    const bool top_level = it->position() == 0 || b.script[size_t(it->position() - 1)] != '/';   // not golden/models/
    if (top_level && !std::filesystem::exists(kRoot + "/" + rel))
      return rel;
  }
  return "";
}

// The prose numbers of the lesson at `path` that no expect line holds and no given line
// lists, as "line N: X" (empty: every number is checked).
inline std::vector<std::string> prose_numbers_unchecked(const std::string& path) {
  static const std::regex number(R"((?:^|[^\w.])((?:\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|\d+\.\d+(?:e[-+]?\d+)?%?|\d+e[-+]?\d+|\d+%))(?![\w]))");
  static const std::regex expect(R"(^<!-- expect: (.*) -->\s*$)");
  static const std::regex given(R"(^<!-- (?:given|timing): (.*) -->\s*$)");
  static const std::regex hidden(R"(<!--.*?-->|`[^`]*`|\]\([^)]*\))");   // comments, inline code, link targets
  std::ifstream in(path);
  std::vector<std::string> checked;   // the expect lines' texts and the given numbers
  std::vector<std::pair<int, std::string>> prose;
  std::string line;
  bool fence = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("```", 0) == 0) {
      fence = !fence;
      continue;
    }
    std::smatch m;
    if (fence) continue;
    if (std::regex_match(line, m, expect)) checked.push_back(m[1]);
    else if (std::regex_match(line, m, given))
      for (std::sregex_iterator it(line.begin() + m.position(1), line.begin() + m.position(1) + m.length(1), number), end;
           it != end; ++it)
        checked.push_back((*it)[1]);
    else prose.emplace_back(n, std::regex_replace(line, hidden, " "));
  }
  std::vector<std::string> out;
  for (const auto& [n, text] : prose)
    for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) {
      const std::string x = (*it)[1];
      std::string plain = x;   // 2,734 is checked by an output that prints 2734
      plain.erase(std::remove(plain.begin(), plain.end(), ','), plain.end());
      if (std::none_of(checked.begin(), checked.end(), [&](const std::string& c) {
            return c.find(x) != std::string::npos || c.find(plain) != std::string::npos;
          }))
        out.push_back("line " + std::to_string(n) + ": " + x);
    }
  return out;
}

// A scratch directory laid out like a checkout: build/, golden/, walkthroughs/ and models/ link to the build
// and the repository. A temporary one, or `keep` (emptied first, left in place: what
// scripts/prepare-workshop.sh hands to a class).
class MdScratch {
 public:
  explicit MdScratch(const std::string& keep = "") {
    namespace fs = std::filesystem;
    if (keep.empty()) {
      tmp_.emplace();
      path_ = tmp_->path();
    } else {
      path_ = keep;
      fs::remove_all(path_);
      fs::create_directories(path_);
    }
    fs::create_directory_symlink(kBin, path_ / "build");
    fs::create_directory_symlink(kRoot + "/golden", path_ / "golden");
    fs::create_directory_symlink(kRoot + "/walkthroughs", path_ / "walkthroughs");   // lesson data (walkthroughs/data)
    if (fs::exists(kRoot + "/models")) fs::create_directory_symlink(kRoot + "/models", path_ / "models");
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::optional<testing_util::TempDir> tmp_;
  std::filesystem::path path_;
};

// Whether the block's stdout `out` holds the expect line `e`. Plain text is found as written.
// With placeholders, the text around them is matched as written except that a run of spaces
// matches any run of spaces (a table's columns move when a number's width changes), and
// each placeholder takes the number printed in its place:
//   {~X}: |y - X| <= max(1e-4 |X|, one unit of X's last digit). The kernels (avx512, avx2,
//         portable) and OpenBLAS's sgemm sum in other orders; after 30 float32 layers a
//         lesson's NLLs and probabilities differ between them by up to about 1e-5 relative
//         (measured: 8.436141 and 8.436128, 0.637023 and 0.637020), so 1e-4 still pins four
//         significant digits with a tenfold margin.
//   {<X}: |y| < X. A difference between two float32 computations (2.86e-05 with one kernel,
//         3.72e-05 with another) is rounding; the lesson's claim is its bound.
//   {A..B}: A <= y <= B. Int8 quantization turns a last-bit difference into a whole rounding
//         step for the few values that sit on a step's edge: the count of clipped activations
//         and the KL they cause move by percents between sgemm kernels (docs/tolerances.md).
// tests/experiments/expect_cases.json holds the cases that pin these rules; the notebooks'
// runner (tests/python_module/expect_text.py) is held to the same cases.
inline bool expect_found(const std::string& out, const std::string& e) {
  static const std::regex placeholder(
      R"(\{(?:([~<])([-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)|([-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\.\.([-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?))\})");
  struct Check {
    char kind;       // '~', '<' or '.' (a range)
    std::string x;   // X, or the range's low end
    std::string hi;  // the range's high end
  };
  std::vector<Check> checks;
  std::string pattern;
  auto literal = [&](const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == ' ') {
        while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
        pattern += " +";
      } else {
        if (std::string("\\^$.|?*+()[]{}").find(text[i]) != std::string::npos) pattern += '\\';
        pattern += text[i];
      }
    }
  };
  auto last = e.cbegin();
  for (std::sregex_iterator it(e.begin(), e.end(), placeholder), end; it != end; ++it) {
    literal(std::string(last, e.cbegin() + it->position()));
    pattern += R"(([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?))";
    if ((*it)[1].matched) checks.push_back({(*it)[1].str()[0], (*it)[2], ""});
    else checks.push_back({'.', (*it)[3], (*it)[4]});
    last = e.cbegin() + it->position() + it->length();
  }
  if (checks.empty()) return out.find(e) != std::string::npos;
  literal(std::string(last, e.cend()));
  auto holds = [](const Check& c, double y) {
    const double x = std::stod(c.x);
    if (c.kind == '<') return std::abs(y) < x;
    if (c.kind == '.') return x <= y && y <= std::stod(c.hi);
    const size_t dot = c.x.find('.'), exp = c.x.find('e');   // one unit of the last printed digit
    const int decimals = dot == std::string::npos ? 0 : int((exp == std::string::npos ? c.x.size() : exp) - dot - 1);
    const double unit = std::pow(10.0, (exp == std::string::npos ? 0 : std::stoi(c.x.substr(exp + 1))) - decimals);
    return std::abs(y - x) <= std::max(1e-4 * std::abs(x), unit) * (1 + 1e-9);   // 0.09 - 0.08 is not 0.01 in binary
  };
  const std::regex re(pattern);
  std::smatch m;
  // Every place the text fits, not only the first: an earlier line may fit with other numbers.
  for (auto from = out.cbegin(); std::regex_search(from, out.cend(), m, re); from = m[0].first + 1) {
    bool all = true;
    for (size_t i = 0; i < checks.size() && all; ++i) all = holds(checks[i], std::stod(m[i + 1].str()));
    if (all) return true;
  }
  return false;
}

// Runs one block in `s` and checks its exit status and expect lines (gtest assertions).
inline void run_md_block(const MdScratch& s, const MdBlock& b) {
  const std::string script = (s.path() / "block.sh").string();
  // One thread, whatever the caller's environment: a float32 sum split over threads adds in
  // another order, and the lessons' numbers (their expect lines) are measured with one.
  std::ofstream(script) << "set -eo pipefail\nexport OMP_NUM_THREADS=1\ncd '" << s.path().string() << "'\n" << b.script;
  RunResult r = run_cmd(s.path(), "bash '" + script + "'");
  ASSERT_EQ(r.code, 0) << b.script << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  for (const std::string& e : b.expect)
    EXPECT_TRUE(expect_found(r.out, e)) << "expected: " << e << "\nin:\n" << r.out;
}

}  // namespace lmscope::exp_test
