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
//                           block's stdout must contain.
//
//   <!-- not run: REASON -->  on the line right before a ```sh fence: the block is shown
//                           with shell highlighting but never run (e.g. scripts/test.sh,
//                           which runs this very test). The reason is listed by the test.
//
//   ```text          the shape of a command (placeholders such as FILE, DIR, [--json], ...)
//                    or sample output: not a command, never run. Any fence other than
//                    ```sh is treated the same way.
//
// A block that names a file under models/ (the fetched SmolLM2 GGUF) that is absent is
// skipped, saying which file and how to fetch it.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

// A scratch directory laid out like a checkout: build/, golden/, walkthroughs/ and models/ link to the build
// and the repository.
struct MdScratch {
  testing_util::TempDir dir;
  MdScratch() {
    namespace fs = std::filesystem;
    fs::create_directory_symlink(kBin, dir.path() / "build");
    fs::create_directory_symlink(kRoot + "/golden", dir.path() / "golden");
    fs::create_directory_symlink(kRoot + "/walkthroughs", dir.path() / "walkthroughs");   // lesson data (walkthroughs/data)
    if (fs::exists(kRoot + "/models")) fs::create_directory_symlink(kRoot + "/models", dir.path() / "models");
  }
};

// Runs one block in `s` and checks its exit status and expect lines (gtest assertions).
inline void run_md_block(const MdScratch& s, const MdBlock& b) {
  const std::string script = s.dir.file("block.sh");
  std::ofstream(script) << "set -eo pipefail\ncd '" << s.dir.path().string() << "'\n" << b.script;
  RunResult r = run_cmd(s.dir, "bash '" + script + "'");
  ASSERT_EQ(r.code, 0) << b.script << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  for (const std::string& e : b.expect)
    EXPECT_NE(r.out.find(e), std::string::npos) << "expected: " << e << "\nin:\n" << r.out;
}

}  // namespace lmscope::exp_test
