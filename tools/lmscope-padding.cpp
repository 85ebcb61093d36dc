// lmscope-padding: the padding-side experiment (docs/experiments.md). Each prompt alone is the
// reference; the same prompts batched with left padding, right padding as HF generate does it,
// right padding done correctly, and left padding with column positions are compared with it,
// row by row, hook by hook. All traces and the divergence picture go to --out-dir.
//
//   lmscope-padding --model golden/models/tiny-qwen2 --prompt-ids 42,308,333
//       --prompt-ids 43,392,346,287,382,962,676,3 --max-new-tokens 8 --out-dir padding/
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "experiments/padding.h"
#include "trace/select.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-padding: each prompt alone vs batched with left / right / right-aware / column-position padding"};
  cli::ModelArgs margs;
  margs.add_to(app);
  PaddingOptions opt;
  std::string modes = "left,right_hf,right_aware,left_colpos", tol_file, svg_out;
  bool json = false;
  app.add_option("--max-new-tokens", opt.max_new_tokens, "tokens to generate (greedy)")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  app.add_option("--modes", modes, "comma-separated: left, right_hf, right_aware, left_colpos")->capture_default_str();
  app.add_option("--out-dir", opt.out_dir, "directory for the traces (solo_<row>.h5, <mode>.h5), divergence.svg and padding.svg")
      ->required();
  app.add_option("--hooks", opt.hooks,
                 "hooks to trace and compare (globs, docs/hooks.md); writing every hook of every run is most of the "
                 "time on a real model: the report reads sample.*, embed, layers.*.resid_post, logits, "
                 "layers.*.attn.q_rope/k_rope/scores")
      ->capture_default_str();
  app.add_option("--layers", opt.layers, "layer ranges for layers.* and kv.* hooks, e.g. 0-3,7");
  app.add_option("--tolerances", tol_file, "JSON {\"glob\": {\"atol\": x, \"rtol\": y}} checked before the defaults");
  app.add_flag("--json", json, "print one JSON object instead of the report");
  if (auto code = cli::parse(app, argc, argv, "lmscope-padding")) return *code;

  return cli::run_tool("lmscope-padding", [&] {
    opt.modes.clear();
    for (const std::string& m : split_list(modes)) opt.modes.push_back(parse_padding_mode(m));
    if (opt.modes.empty()) throw std::runtime_error("--modes: no mode given");
    if (!tol_file.empty()) opt.tolerances.load_overrides(tol_file);
    auto tm = cli::load_tool_model(margs, argc, argv);
    opt.prompts = tm->prompts;
    opt.prompt_texts = tm->prompt_texts;
    for (size_t i = 0; i < opt.prompt_texts.size(); ++i)
      if (opt.prompt_texts[i].empty()) opt.prompt_texts[i] = cli::join_ids(opt.prompts[i]);
    opt.pad_id = tm->special.pad_id;
    opt.eos_ids = tm->special.eos_ids;
    PaddingReport rep = run_padding_experiment(tm->ctx, opt);
    if (json) std::cout << padding_report_json(rep, tm->ctx) << "\n";
    else std::cout << padding_report_text(rep, tm->ctx) << "\ntraces, divergence.svg and padding.svg in " << opt.out_dir << "\n";
    return 0;
  });
}
