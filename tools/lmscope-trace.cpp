// lmscope-trace: run prompt(s) through the model (prefill + decode steps) and dump the
// chosen hooks to an HDF5 trace (docs/trace-format.md).
//
//   lmscope-trace --model golden/models/tiny-qwen2 --prompt-ids 5,6,7 --max-new-tokens 8 --out a.h5
//   lmscope-trace --model models/SmolLM2-135M-Instruct.Q4_1.gguf --chat --prompt "What is the capital of France?"
//   lmscope-trace --model models/SmolLM2-135M-Instruct.Q4_1.gguf --prompt "The Eiffel Tower is in the city of"
//                 --grad "logit_diff:pos=-1: Paris, Rome" --hooks 'layers.*.resid_pre' --out g.h5   (one line)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <tuple>
#include <unistd.h>

#include "grad/grad_run.h"
#include "io/format_number.h"
#include "runs/run.h"
#include "stepper/stepper.h"
#include "tokenizer/decoder.h"
#include "tools/cli_common.h"
#include "tools/intervention_args.h"
#include "tools/model_args.h"
#include "tools/sampling_args.h"
#include "trace/default_hooks.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-trace: run prompts through the model and dump hooks to HDF5"};
  cli::ModelArgs margs;   // --model, --prompt-ids, --prompt, --chat, --chat-format, --pad-id, --backend, --dtype
  std::string padding = "left", hooks = kDefaultTraceHooks, layers, out;
  int max_new = 16, audit_top = 10, compress = 0;
  bool no_cache = false, quiet = false;
  SamplingConfig sc;
  margs.add_to(app);
  app.add_option("--padding-side", padding, "left or right")->capture_default_str();
  app.add_option("--max-new-tokens", max_new, "tokens to generate")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  app.add_flag("--no-cache", no_cache, "recompute the whole sequence every step (HF use_cache=False)");
  cli::add_sampling_options(app, sc, /*with_do_sample=*/true);
  std::vector<std::string> stop_args, stop_strings;
  std::string eos_ids;
  app.add_option("--eos-ids", eos_ids,
                 "the ids that finish a row, e.g. 2,0 (HF eos_token_id list; default: generation_config.json, "
                 "else config.json or the GGUF metadata)");
  app.add_option("--stop", stop_args,
                 "stop a row when this text is generated (HF stop_strings; \\n, \\t, \\r, \\\\ escapes; repeat for more)");
  app.add_option("--audit-top", audit_top, "candidates kept in the sampling audit")->capture_default_str();
  app.add_option("--hooks", hooks,
                 "comma-separated globs of hook names (docs/hooks.md); default: what lmscope-report and lmscope-step "
                 "draw (no resid_pre, attn_norm, attn.v, attn.scores, ffn_norm, final_norm, kv.*); '*' = every hook");
  app.add_option("--layers", layers, "layer ranges for layers.*, kv.* and lens.* hooks, e.g. 0-3,7");
  int lens_k = 0;
  app.add_option("--lens", lens_k,
                 "also trace the logit lens: each layer's top K tokens (lens.layers.*.topk_ids/topk_probs; "
                 "default K 10; docs/lens.md)")
      ->expected(0, 1)
      ->default_str("10");
  app.add_option("--out", out, "HDF5 trace to write");
  cli::InterventionArgs iargs;
  iargs.add_to(app);
  app.add_option("--compress", compress, "gzip level 1-9 for datasets over 64 KiB (0 = raw, fastest)")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "no progress lines");
  bool step_mode = false;
  int step_row = 0;
  app.add_flag("--step", step_mode,
               "walk the run stage by stage in the terminal (Enter: next, n: next layer, l: logits, s: next step, "
               "g N: layer N, b: back, ?: keys, q: quit); without a terminal every page is printed. lmscope-step "
               "walks a trace file the same way without running the model");
  app.add_option("--step-row", step_row, "--step: the batch row whose layers are drawn")->capture_default_str();
  std::string grad;
  app.add_option("--grad", grad,
                 "also store grad.<hook>, the gradient of METRIC at each traced hook, for the prefill (docs/gradients.md): "
                 "logit_diff:pos=P:A,B, logprob:pos=P:A or loss:FROM:TO (A, B: ids or text of one token)");
  if (auto code = cli::parse(app, argc, argv, "lmscope-trace")) return *code;
  MetricSpec grad_metric;
  if (app.count("--grad")) {
    const char* why = out.empty()                     ? "--grad stores grad.<hook> datasets in the trace: give --out"
                      : step_mode                     ? "--grad and --step: --step shows no gradients"
                      : app.count("--lens")           ? "--grad and --lens: the lens has no gradients"
                      : max_new > 1 && app.count("--max-new-tokens")
                          ? "--grad: gradients are of the prefill only; a decode step has none (give --max-new-tokens 1)"
                          : nullptr;
    if (why) return cli::usage_error("lmscope-trace", why);
    max_new = 1;   // the prefill and its one sampled token
    try {
      grad_metric = parse_metric(grad);
    } catch (const std::exception& e) {
      return cli::usage_error("lmscope-trace", e.what());
    }
  }
  if (app.count("--out") && out.empty()) return cli::usage_error("lmscope-trace", "--out: the file name is empty");
  if (app.count("--lens")) {
    if (lens_k < 1) return cli::usage_error("lmscope-trace", "--lens: K must be at least 1, got " + std::to_string(lens_k));
    if (out.empty())
      return cli::usage_error("lmscope-trace", "--lens writes lens.* hooks into the trace: give --out (lmscope-lens prints them)");
    hooks += ",tokens.*,lens.layers.*.topk_ids,lens.layers.*.topk_probs";   // also: the default or --hooks stay
  }
  sc.audit_top = audit_top;
  if (auto code = cli::check_sampling("lmscope-trace", sc)) return *code;
  try {
    for (const std::string& a : stop_args) stop_strings.push_back(cli::parse_stop_string(a));
    iargs.parse();   // the grammar, before the model loads
  } catch (const std::exception& e) {
    return cli::usage_error("lmscope-trace", e.what());
  }

  return cli::run_tool("lmscope-trace", [&] {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    if (!quiet) std::fprintf(stderr, "loading %s ...", margs.model.c_str());
    std::unique_ptr<cli::ToolModel> tm;
    try {
      tm = cli::load_tool_model(margs, argc, argv);
    } catch (...) {
      if (!quiet) std::fputc('\n', stderr);   // the error goes on a line of its own
      throw;
    }
    const ModelConfig& cfg = tm->loaded.cfg;
    Backend* backend = tm->backend.get();
    if (!quiet)
      std::fprintf(stderr, " %s, %d layers, D=%d, H=%d/%d, V=%d; backend %s %s (%.2f s)\n",
                   tm->loaded.source_kind.c_str(), cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads,
                   cfg.vocab_size, backend->name().c_str(), backend->compute_dtype().c_str(),
                   std::chrono::duration<double>(clock::now() - t0).count());

    GenerateOptions opt;
    opt.prompts = tm->prompts;
    opt.padding_side = parse_padding_side(padding);
    opt.max_new_tokens = max_new;
    opt.use_cache = !no_cache;
    sc.audit_top = audit_top;
    opt.sampling = sc;
    opt.pad_id = tm->special.pad_id;
    opt.eos_ids = app.count("--eos-ids") ? cli::parse_ids(eos_ids, "--eos-ids") : tm->special.eos_ids;
    opt.stop_strings = stop_strings;
    if (!stop_strings.empty()) {
      if (!tm->tokenizer) throw std::runtime_error("--stop needs the model's tokenizer (none beside '" + margs.model + "')");
      const tok::Tokenizer* tk = &*tm->tokenizer;
      opt.token_bytes = [tk](int32_t id) {
        return id >= 0 && id < tk->vocab_size() ? tk->token_bytes(id) : std::string();   // a padded-vocab id: no text
      };
    }
    // One prompt with a tokenizer: stream the answer as it is generated (never half a UTF-8
    // character). Otherwise a progress line.
    const tok::Tokenizer* tokenizer = tm->tokenizer ? &*tm->tokenizer : nullptr;
    std::unique_ptr<tok::IncrementalDecoder> stream;
    if (tokenizer && opt.prompts.size() == 1) {
      stream = std::make_unique<tok::IncrementalDecoder>([tokenizer](int32_t id, std::string& bytes) {
        if (!tokenizer->is_special(id)) bytes += tokenizer->token_bytes(id);
      });
      if (!quiet && !tm->prompt_texts[0].empty()) std::fprintf(stderr, "prompt: %s\n", tm->prompt_texts[0].c_str());
      opt.on_step = [&](int, const std::vector<int32_t>& toks) {
        std::string piece = stream->push(toks[0]);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      };
    } else if (!quiet) {
      opt.on_step = [&](int step, const std::vector<int32_t>& toks) {
        std::fprintf(stderr, "\rstep %d/%d: %s   ", step + 1, max_new, cli::join_ids(toks).c_str());
      };
    }

    const std::unique_ptr<Interventions> interventions = iargs.build(cfg);
    opt.editor = interventions.get();

    // --step sees every hook (lib/stepper/stepper.h); otherwise only a file is traced.
    HookSet hook_set = (out.empty() && !step_mode) ? HookSet() : HookSet(hooks, layers, cfg.num_layers);
    if (lens_k > 0) hook_set.set_lens_top_k(lens_k);
    std::unique_ptr<Stepper> stepper;
    if (step_mode) {
      const int64_t batch = int64_t(opt.prompts.size());
      if (step_row < 0 || step_row >= batch)
        throw std::runtime_error("--step-row " + std::to_string(step_row) + " is outside the batch of " +
                                 std::to_string(batch) + " prompt(s) (rows 0.." + std::to_string(batch - 1) + ")");
      StepperOptions so;
      so.interactive = ::isatty(0) && ::isatty(1);
      std::tie(so.screen_rows, so.screen_cols) = terminal_size(1);   // a screen when interactive and known
      so.row = step_row;
      so.sampling = opt.sampling;
      if (tokenizer) {
        so.token_text = [tokenizer](int32_t id) {
          return id >= 0 && id < tokenizer->vocab_size() ? tokenizer->token_display(id) : std::string();
        };
        for (const auto& p : opt.prompts) {   // the merges that made these ids from their text
          const EncodeTrace* et = tm->ctx.encoding_of(p);
          so.intro_pages.push_back(et ? render_merges_page(*et, so.token_text)
                                      : "ids " + cli::join_ids(p) + " (not what the tokenizer makes of their text: no merges to show)\n");
        }
      }
      stepper = std::make_unique<Stepper>(cfg, so);
      opt.on_step = nullptr;   // no progress line between the pages
    }

    // --grad: the gradients first (a forward and a backward, lib/grad/grad_run.h), then the run
    // traced as always, with the gradients written next to the hooks before the record.
    std::optional<GradResult> grads;
    if (app.count("--grad")) {
      resolve_metric_tokens(grad_metric, cfg.vocab_size, tokenizer ? EncodeFn([tokenizer](const std::string& t) {
        return tokenizer->encode(t, false);
      }) : EncodeFn());
      GradRequest req;
      req.prompts = opt.prompts;
      req.padding_side = opt.padding_side;
      req.pad_id = opt.pad_id;
      req.use_cache = opt.use_cache;
      req.metric = grad_metric;
      req.hooks = hooks;
      req.layers = layers;
      req.editor = interventions.get();   // the gradient of the edited model
      grads = run_with_grads(cfg, tm->loaded.weights, *backend, req);
      std::printf("grad metric: %s = %s\n", grad_metric.text.c_str(), fmt("%.4f", grads->metric).c_str());
      if (!quiet)
        std::fprintf(stderr, "gradients: forward %.3f s, backward %.3f s\n", grads->forward_seconds,
                     grads->backward_seconds);
    }
    auto write_more = [&](TraceWriter& w) {
      if (grads) write_grads(w, *grads, grad_metric);
    };

    TracedRun res;
    try {
      res = run_traced(tm->ctx, opt, hook_set, out, stepper.get(), compress, write_more);
    } catch (const StepperQuit&) {
      std::printf("\n(quit)\n");
      return 0;
    }
    if (stepper) stepper->finish();
    if (stream) {
      std::string rest = stream->finish();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      std::printf("\n");
      std::fflush(stdout);   // the answer's line ends before stderr's summary starts
    } else if (!quiet) {
      std::fprintf(stderr, "\n");
    }
    if (!out.empty())
      for (const std::string& m : res.missing_hooks)
        std::fprintf(stderr, "lmscope-trace: warning: requested hook '%s' never fired\n", m.c_str());
    for (size_t b = 0; b < res.new_tokens.size(); ++b) {
      std::printf("row %zu: %s\n", b, cli::join_ids(res.new_tokens[b]).c_str());
      std::printf("row %zu stop: %s\n", b, stop_reason_name(res.stop_reasons[b]));
      if (tokenizer && !stream) std::printf("row %zu text: %s\n", b, tokenizer->decode(res.new_tokens[b], true).c_str());
    }
    std::fflush(stdout);
    if (!quiet) {
      std::fprintf(stderr, "prefill %lld tokens in %.3f s, decode %lld tokens in %.3f s", (long long)res.prefill_tokens,
                   res.prefill_seconds, (long long)res.decode_tokens, res.decode_seconds);
      if (!out.empty()) {
        std::error_code ec;
        const auto bytes = std::filesystem::file_size(out, ec);
        std::fprintf(stderr, "; %lld tensors -> %s", (long long)res.tensors_traced, out.c_str());
        if (!ec) std::fprintf(stderr, " (%.1f MB)", double(bytes) / 1e6);
      }
      std::fprintf(stderr, "\n");
    }
    return 0;
  });
}
