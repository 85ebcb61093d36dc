// lmscope-lens: the logit lens, printed. Generates greedily from one prompt and shows, for
// every position that predicted a token, what each layer would have said: the final norm and
// the LM head applied to that layer's residual stream (docs/lens.md). The same hooks
// lmscope-trace --lens writes to a file.
//
//   lmscope-lens --model models/SmolLM2-135M-Instruct.Q4_1.gguf --chat --prompt "What is the capital of France?" --max-new-tokens 6
//   lmscope-lens --model golden/models/tiny-qwen2 --prompt-ids 330,749,537 --top 3 --json
#include <CLI/CLI.hpp>
#include <iostream>

#include "experiments/lens_view.h"
#include "runs/run.h"
#include "intervene/record.h"
#include "tools/cli_common.h"
#include "tools/intervention_args.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-lens: what each layer would predict (logit lens), position by position"};
  cli::ModelArgs margs;
  margs.add_to(app);
  int max_new = 1, top = 1;
  std::string layers;
  bool json = false;
  app.add_option("--max-new-tokens", max_new, "tokens to generate (greedy); one column each")->capture_default_str();
  app.add_option("--top", top, "tokens shown per layer (1: one grid of every position)")->capture_default_str();
  app.add_option("--layers", layers, "layer ranges to show, e.g. 0-3,29 (default: all)");
  app.add_flag("--json", json, "print one JSON object: per position and layer the top ids, pieces, probabilities");
  cli::InterventionArgs iargs;   // the lens of an intervened run (docs/interventions.md)
  iargs.add_to(app);
  if (auto code = cli::parse(app, argc, argv, "lmscope-lens")) return *code;
  if (top < 1) return cli::usage_error("lmscope-lens", "--top must be at least 1, got " + std::to_string(top));
  if (max_new < 1) return cli::usage_error("lmscope-lens", "--max-new-tokens must be at least 1, got " + std::to_string(max_new));
  if (margs.prompts.size() + margs.prompt_ids.size() > 1)
    return cli::usage_error("lmscope-lens", "one prompt at a time (give one --prompt or --prompt-ids)");
  try {
    iargs.parse();
  } catch (const std::exception& e) {
    return cli::usage_error("lmscope-lens", e.what());
  }

  return cli::run_tool("lmscope-lens", [&] {
    auto tm = cli::load_tool_model(margs, argc, argv);
    GenerateOptions opt;
    opt.prompts = tm->prompts;
    opt.max_new_tokens = max_new;
    opt.pad_id = tm->special.pad_id;
    opt.eos_ids = tm->special.eos_ids;
    HookSet hooks("lens.layers.*.topk_ids,lens.layers.*.topk_probs", layers, tm->loaded.cfg.num_layers);
    hooks.set_lens_top_k(top);
    const std::unique_ptr<Interventions> interventions = iargs.build(tm->loaded.cfg);
    opt.editor = interventions.get();
    if (interventions && !json) std::cout << interventions_line(interventions->record_json()) << "\n";
    LensCollector lens;
    const TracedRun run = run_traced(tm->ctx, opt, hooks, /*out=*/"", &lens);
    const auto cols = lens.columns(opt.prompts[0], run.new_tokens[0]);
    const PieceFn piece = cli::piece_fn(tm->tokenizer ? &*tm->tokenizer : nullptr);
    std::cout << (json ? lens_json(cols, piece) + "\n" : lens_table_text(cols, piece, top));
    return 0;
  });
}
