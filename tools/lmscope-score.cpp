// lmscope-score: how surprised is the model by a text? One forward over the text (teacher
// forcing), then per token its probability given the prefix, its NLL, the model's own top
// choice there, and the mean loss and perplexity exactly as HF's model(ids, labels=ids).loss
// (docs/score.md).
//
//   lmscope-score --model models/SmolLM2-135M-Instruct.Q4_1.gguf --text "The capital of France is Paris."
//   lmscope-score --model golden/models/tiny-qwen2 --ids 330,749,537 --ids 42,308 --json
//   lmscope-score --model ... --text "..." --intervene 'layers.17.attn.z[head=3]=zero'   (the same
//   forward with an edit: docs/interventions.md)
#include <CLI/CLI.hpp>
#include <climits>
#include <iostream>

#include "generate/score.h"
#include "intervene/record.h"
#include "tools/cli_common.h"
#include "tools/intervention_args.h"
#include "tools/model_args.h"

using namespace lmscope;

namespace {

// "A:B" -> {A, B}; "A:" -> {A, max}; ":B" -> {1, B}. Positions are decimal digits.
std::pair<int64_t, int64_t> parse_range(const std::string& spec) {
  const size_t colon = spec.find(':');
  auto num = [&](const std::string& part, int64_t dflt) -> int64_t {
    if (part.empty()) return dflt;
    if (part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("--range '" + spec + "': '" + part + "' is not a position (expected e.g. 24:26)");
    return std::stoll(part);
  };
  if (colon == std::string::npos || spec == ":")
    throw std::runtime_error("--range '" + spec + "': expected A:B, A: or :B (positions, e.g. 24:26)");
  const int64_t from = num(spec.substr(0, colon), 1), to = num(spec.substr(colon + 1), INT64_MAX);
  if (from > to) throw std::runtime_error("--range '" + spec + "': the start is after the end");
  return {from, to};
}

}  // namespace

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
  std::vector<std::string> range_specs;
  app.add_option("--range", range_specs,
                 "also summarize positions A..B of each text (A:B, inclusive; A: or :B open-ended): count, "
                 "mean NLL, perplexity, mean p, top choice right (repeat for more ranges)");
  bool json = false;
  app.add_flag("--json", json, "print one JSON object: per-token rows and the summary");
  cli::InterventionArgs iargs;   // the score of an intervened forward (docs/interventions.md)
  iargs.add_to(app);
  if (auto code = cli::parse(app, argc, argv, "lmscope-score")) return *code;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  try {
    for (const std::string& s : range_specs) ranges.push_back(parse_range(s));
    iargs.parse();
  } catch (const std::exception& e) {
    return cli::usage_error("lmscope-score", e.what());
  }

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
    const std::unique_ptr<Interventions> interventions = iargs.build(tm->loaded.cfg);
    if (interventions && !json) std::cout << interventions_line(interventions->record_json()) << "\n";
    ScoreResult r = score_rows(*tm->decoder, tm->prompts, tm->special.pad_id, interventions.get());
    if (interventions) r.interventions_json = interventions->record_json();

    const PieceFn piece = cli::piece_fn(tm->tokenizer ? &*tm->tokenizer : nullptr);
    std::vector<RangeSummary> sums;
    for (const auto& [from, to] : ranges)
      for (size_t b = 0; b < r.rows.size(); ++b) sums.push_back(summarize_range(r, int64_t(b), from, to));
    std::cout << (json ? score_report_json(r, texts, piece, sums) + "\n" : score_report_text(r, texts, piece, sums));
    return 0;
  });
}
