// lmscope-score: how surprised is the model by a text? One forward over the text (teacher
// forcing), then per token its probability given the prefix, its NLL, the model's own top
// choice there, and the mean loss and perplexity exactly as HF's model(ids, labels=ids).loss
// (docs/score.md).
//
//   lmscope-score --model models/SmolLM2-135M-Instruct.Q4_1.gguf --text "The capital of France is Paris."
//   lmscope-score --model golden/models/tiny-qwen2 --ids 330,749,537 --ids 42,308 --json
#include <CLI/CLI.hpp>
#include <iostream>

#include "generate/score.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-score: per-token probability, NLL, loss and perplexity of a text under the model"};
  cli::ModelArgs margs;
  margs.add_to(app);
  // The shared model options (--model, --chat, --chat-format, --pad-id, --backend, --dtype)
  // stay; here the input is named for what it is: text to score, not a prompt to continue.
  app.remove_option(app.get_option("--prompt"));
  app.remove_option(app.get_option("--prompt-ids"));
  app.add_option("--text", margs.prompts,
                 "a text to score, encoded by the model's tokenizer with its default special tokens "
                 "(repeat for a batch)");
  app.add_option("--ids", margs.prompt_ids, "a text as token ids, e.g. 1,2,3 (repeat for a batch)");
  app.get_option("--chat")->description("wrap each --text as a user message in the chat template");
  bool json = false;
  app.add_flag("--json", json, "print one JSON object: per-token rows and the summary");
  if (auto code = cli::parse(app, argc, argv, "lmscope-score")) return *code;

  return cli::run_tool("lmscope-score", [&] {
    // Input errors that need no model, named by this tool's options.
    if (margs.prompts.empty() && margs.prompt_ids.empty()) throw std::runtime_error("nothing to score: give --text or --ids");
    for (const std::string& t : margs.prompts)
      if (t.empty()) throw std::runtime_error("--text is empty: nothing to score");
    for (const std::string& s : margs.prompt_ids) cli::parse_ids(s, "--ids");
    if (margs.chat && margs.prompts.empty()) throw std::runtime_error("--chat wraps --text; no --text given");

    auto tm = cli::load_tool_model(margs, argc, argv);
    // Rows come in load_tool_model's order: every --ids, then every --text.
    std::vector<std::string> texts(margs.prompt_ids.size());
    texts.insert(texts.end(), margs.prompts.begin(), margs.prompts.end());
    const ScoreResult r = score_rows(*tm->decoder, tm->prompts, tm->special.pad_id);

    const PieceFn piece = cli::piece_fn(tm->tokenizer ? &*tm->tokenizer : nullptr);
    std::cout << (json ? score_report_json(r, texts, piece) + "\n" : score_report_text(r, texts, piece));
    return 0;
  });
}
