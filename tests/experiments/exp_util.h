// Shared by the experiment tests: the tiny model ready to run, chat prompts encoded by its
// tokenizer, and running a built tool.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "tools/model_args.h"

namespace lmscope::exp_test {

inline const std::string kRoot = LMSCOPE_SOURCE_DIR;
inline const std::string kBin = LMSCOPE_BINARY_DIR;
inline const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";

// The tiny model loaded as the experiment tools load theirs (cli::load_tool_model), CPU, no prompts.
struct Tiny : cli::ToolModel {
  explicit Tiny(const std::string& path = kTiny) {
    cli::ModelArgs args;
    args.model = path;
    cli::load_tool_model_into(*this, args, "test", /*need_prompts=*/false);
  }
  // A user message in ChatML (the tiny tokenizer has the <|im_start|>/<|im_end|> tokens but no
  // template of its own), encoded as apply_chat_template(tokenize=True) does.
  std::vector<int32_t> chat(const std::string& text) const {
    std::string p = tok::format_chat(*tokenizer, {tok::ChatMessage{"user", text}}, true, tok::ChatFormat::ChatML);
    return tokenizer->encode(p, false);
  }
};

struct RunResult {
  int code;
  std::string out, err;
};

// Runs `cmd` through the shell, stdout and stderr captured.
inline RunResult run_cmd(const std::filesystem::path& dir, const std::string& cmd) {
  const std::string out = (dir / "stdout.txt").string(), err = (dir / "stderr.txt").string();
  int rc = std::system((cmd + " > '" + out + "' 2> '" + err + "' < /dev/null").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, testing_util::read_text(out), testing_util::read_text(err)};
}
inline RunResult run_cmd(const testing_util::TempDir& dir, const std::string& cmd) { return run_cmd(dir.path(), cmd); }

}  // namespace lmscope::exp_test
