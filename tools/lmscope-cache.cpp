// lmscope-cache: cached vs uncached decoding (docs/experiments.md). Per step: the largest logit
// difference, argmax agreement, the cache contents against the keys/values recomputed; the work
// (tokens pushed through the model), the time of each path and the KV cache bytes. --fault plants
// a classic cache bug and shows where it bites.
//
//   lmscope-cache --model golden/models/tiny-qwen2 --prompt-len 40 --max-new-tokens 24 [--fault position] [--svg cache.svg]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "experiments/cache.h"
#include "experiments/cache_svg.h"
#include "io/text_file.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-cache: generate with the KV cache and without it, compare every step"};
  cli::ModelArgs margs;
  margs.add_to(app);
  CacheOptions opt;
  std::string fault = "none";
  int prompt_len = 0;
  uint64_t prompt_seed = 1;
  bool json = false, no_timing = false;
  std::string svg;
  app.add_option("--prompt-len", prompt_len, "a synthetic prompt of this many token ids (seeded) instead of --prompt");
  app.add_option("--prompt-seed", prompt_seed, "seed of the synthetic prompt")->capture_default_str();
  app.add_option("--max-new-tokens", opt.max_new_tokens, "tokens to generate (greedy)")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  app.add_option("--fault", fault, "plant a bug in the cached path: none, position, append, mask")->capture_default_str();
  app.add_option("--hooks", opt.hooks, "hooks compared (globs, docs/hooks.md)")->capture_default_str();
  app.add_option("--layers", opt.layers, "layer ranges for layers.* and kv.* hooks, e.g. 0-3,7");
  app.add_option("--trace-dir", opt.trace_dir, "also write cached.h5 and uncached.h5 there");
  app.add_flag("--no-timing", no_timing, "skip the untraced runs that time each path");
  app.add_option("--repeat", opt.timing_repeats, "timing: the fastest of this many untraced runs of each path")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON object instead of the report");
  app.add_option("--svg", svg, "also draw the work per step and the KV bytes (and a fault's first divergence) into this SVG file");
  if (auto code = cli::parse(app, argc, argv, "lmscope-cache")) return *code;

  return cli::run_tool("lmscope-cache", [&] {
    opt.fault = parse_cache_fault(fault);
    opt.timing = !no_timing;
    auto tm = cli::load_tool_model(margs, argc, argv, /*need_prompts=*/prompt_len == 0);
    opt.prompts = tm->prompts;
    if (prompt_len > 0) {
      if (!opt.prompts.empty()) throw std::runtime_error("--prompt-len replaces --prompt/--prompt-ids: give one of them");
      opt.prompts.push_back(synthetic_prompt(prompt_len, tm->loaded.cfg.vocab_size, prompt_seed));
    }
    opt.pad_id = tm->special.pad_id;
    opt.eos_ids = tm->special.eos_ids;
    CacheReport rep = run_cache_experiment(tm->ctx, opt);
    if (!svg.empty()) write_file_atomic(svg, cache_svg(rep));
    if (json) std::cout << cache_report_json(rep, tm->ctx) << "\n";
    else std::cout << cache_report_text(rep, tm->ctx);
    return 0;
  });
}
