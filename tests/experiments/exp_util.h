// Shared by the experiment tests: the tiny model ready to run, chat prompts encoded by its
// tokenizer, and running a built tool.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "experiments/run.h"
#include "model/load_model.h"
#include "model/special_tokens.h"
#include "tests/test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace lmscope::exp_test {

inline const std::string kRoot = LMSCOPE_SOURCE_DIR;
inline const std::string kBin = LMSCOPE_BINARY_DIR;
inline const std::string kTiny = kRoot + "/golden/models/tiny-qwen2";

struct Tiny {
  LoadedModel loaded;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  SpecialTokens special;
  std::unique_ptr<tok::Tokenizer> tokenizer;
  ModelContext ctx;

  explicit Tiny(const std::string& path = kTiny) {
    loaded = load_model(path);
    backend = make_backend("cpu");
    decoder = std::make_unique<Decoder>(loaded.cfg, loaded.weights, *backend);
    special = resolve_special_tokens(loaded.cfg, path);
    tokenizer = std::make_unique<tok::Tokenizer>(tok::Tokenizer::load(path));
    ctx.decoder = decoder.get();
    ctx.model_path = path;
    ctx.command_line = "test";
    const tok::Tokenizer* t = tokenizer.get();
    ctx.detokenize = [t](const std::vector<int32_t>& ids) { return t->decode(ids); };
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
inline RunResult run_cmd(const testing_util::TempDir& dir, const std::string& cmd) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  int rc = std::system((cmd + " > '" + out + "' 2> '" + err + "' < /dev/null").c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, testing_util::read_text(out), testing_util::read_text(err)};
}

}  // namespace lmscope::exp_test
