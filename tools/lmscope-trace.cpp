// lmscope-trace: run prompt(s) through the model (prefill + decode steps) and dump the
// chosen hooks to an HDF5 trace (docs/trace-format.md).
//
//   lmscope-trace --model golden/models/tiny-qwen2 --prompt-ids 5,6,7 --max-new-tokens 8 --out a.h5
#include <CLI/CLI.hpp>
#include <chrono>
#include <unistd.h>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "generate/generator.h"
#include "model/config.h"
#include "model/special_tokens.h"
#include "model/weights.h"
#include "experiments/stepper.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"   // load_tool_tokenizer (token text on the --step pages)
#include "trace/trace_writer.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-trace: run prompts through the model and dump hooks to HDF5"};
  std::string model_dir, padding = "left", hooks = "*", layers, out, backend_name = "cpu";
  std::vector<std::string> prompt_ids;
  int max_new = 16, audit_top = 10, pad_override = -1, compress = 0;
  bool no_cache = false, quiet = false;
  SamplingConfig sc;
  app.add_option("--model", model_dir, "Hugging Face model directory (config.json + safetensors)")->required();
  app.add_option("--prompt-ids", prompt_ids, "prompt as token ids, e.g. 1,2,3 (repeat for a batch)")->required();
  app.add_option("--padding-side", padding, "left or right")->capture_default_str();
  app.add_option("--max-new-tokens", max_new, "tokens to generate")->capture_default_str();
  app.add_flag("--no-cache", no_cache, "recompute the whole sequence every step (HF use_cache=False)");
  app.add_flag("--do-sample", sc.do_sample, "sample instead of greedy");
  app.add_option("--temperature", sc.temperature)->capture_default_str();
  app.add_option("--top-k", sc.top_k, "0 = off")->capture_default_str();
  app.add_option("--top-p", sc.top_p, "1 = off")->capture_default_str();
  app.add_option("--repetition-penalty", sc.repetition_penalty, "1 = off")->capture_default_str();
  app.add_option("--seed", sc.seed)->capture_default_str();
  app.add_option("--audit-top", audit_top, "candidates kept in the sampling audit")->capture_default_str();
  app.add_option("--pad-id", pad_override, "pad token id (default: generation_config/config, else eos)");
  app.add_option("--hooks", hooks, "comma-separated globs of hook names (docs/hooks.md)")->capture_default_str();
  app.add_option("--layers", layers, "layer ranges for layers.* and kv.* hooks, e.g. 0-3,7");
  app.add_option("--out", out, "HDF5 trace to write");
  app.add_option("--compress", compress, "gzip level 1-9 for datasets over 64 KiB (0 = raw, fastest)")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  app.add_option("--backend", backend_name, "cpu, cuda or auto (cuda when a device is usable)")->capture_default_str();
  std::string dtype = "f32";
  app.add_option("--dtype", dtype, "compute dtype: f32, or bf16 (cuda: bf16 matmuls, float32 accumulation)")
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "no progress lines");
  bool step_mode = false;
  int step_row = 0;
  app.add_flag("--step", step_mode,
               "walk the run stage by stage in the terminal (Enter: next, n: next layer, s: next step, q: quit); "
               "without a terminal every page is printed");
  app.add_option("--step-row", step_row, "--step: the batch row whose layers are drawn")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  return cli::run_tool("lmscope-trace", [&] {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    if (!quiet) std::fprintf(stderr, "loading %s ...", model_dir.c_str());
    ModelConfig cfg = load_model_config(model_dir);
    Weights weights = load_weights(cfg, model_dir);
    auto backend = make_backend(backend_name, dtype);
    Decoder decoder(cfg, weights, *backend);
    if (!quiet)
      std::fprintf(stderr, " %d layers, D=%d, H=%d/%d, V=%d (%.2f s)\n", cfg.num_layers, cfg.hidden_size,
                   cfg.num_heads, cfg.num_kv_heads, cfg.vocab_size,
                   std::chrono::duration<double>(clock::now() - t0).count());

    GenerateOptions opt;
    for (const std::string& p : prompt_ids) opt.prompts.push_back(cli::parse_ids(p, "--prompt-ids"));
    opt.padding_side = parse_padding_side(padding);
    opt.max_new_tokens = max_new;
    opt.use_cache = !no_cache;
    sc.audit_top = audit_top;
    opt.sampling = sc;
    SpecialTokens st = resolve_special_tokens(cfg, model_dir);
    opt.pad_id = pad_override >= 0 ? pad_override : st.pad_id;
    opt.eos_ids = st.eos_ids;
    if (!quiet)
      opt.on_step = [&](int step, const std::vector<int32_t>& toks) {
        std::fprintf(stderr, "\rstep %d/%d: %s   ", step + 1, max_new, cli::join_ids(toks).c_str());
      };

    HookSet hook_set(hooks, layers, cfg.num_layers);
    std::unique_ptr<TraceWriter> writer;
    if (!out.empty()) {
      writer = std::make_unique<TraceWriter>(out);   // fails early if unwritable
      writer->set_compression(compress);
    }
    Trace trace((out.empty() && !step_mode) ? HookSet() : hook_set, writer.get());

    // --step: the walkthrough sees every traced tensor (lib/experiments/stepper.h).
    std::unique_ptr<Stepper> stepper;
    if (step_mode) {
      StepperOptions so;
      so.interactive = ::isatty(0) && ::isatty(1);
      so.row = step_row;
      so.sampling = opt.sampling;
      std::optional<tok::Tokenizer> tk = cli::load_tool_tokenizer(model_dir);
      if (tk) {
        auto shared = std::make_shared<tok::Tokenizer>(std::move(*tk));
        so.token_text = [shared](int32_t id) {
          return id >= 0 && id < shared->vocab_size() ? shared->token_display(id) : std::string();
        };
        for (const auto& p : opt.prompts) {   // the merges that make these ids from their text
          EncodeTrace et;
          std::vector<int32_t> again;
          try {
            again = shared->encode(shared->decode(p), false, &et);
          } catch (const std::exception&) {   // ids the tokenizer cannot decode
          }
          so.intro_pages.push_back(again == p ? render_merges_page(et, so.token_text)
                                              : "ids " + cli::join_ids(p) + " (not what the tokenizer makes of their text: no merges to show)\n");
        }
      }
      stepper = std::make_unique<Stepper>(cfg, so);
      trace.set_sink(stepper.get());
      opt.on_step = nullptr;   // no progress line between the pages
    }

    GenerateResult res;
    try {
      res = generate(decoder, opt, &trace);
    } catch (const StepperQuit&) {
      std::printf("\n(quit)\n");
      return 0;
    }
    if (stepper) stepper->finish();
    if (!quiet) std::fprintf(stderr, "\n");

    if (writer) {
      nlohmann::json prompts = opt.prompts;
      std::vector<int32_t> gqa(cfg.num_heads);
      for (int h = 0; h < cfg.num_heads; ++h) gqa[h] = h / cfg.kv_group();
      writer->set_root_attr("format", std::string("lmscope-trace"));
      writer->set_root_attr("format_version", int64_t(1));
      writer->set_root_attr("producer", std::string("lmscope ") + LMSCOPE_VERSION);
      writer->set_root_attr("model_path", model_dir);
      writer->set_root_attr("config_json", cfg.json_text);
      writer->set_root_attr("backend", backend->name());
      writer->set_root_attr("compute_dtype", backend->compute_dtype());
      writer->set_root_attr("command_line", cli::command_line(argc, argv));
      writer->set_root_attr("prompts", prompts.dump());
      writer->set_root_attr("padding_side", std::string(padding_side_name(opt.padding_side)));
      writer->set_root_attr("use_cache", int64_t(opt.use_cache));
      writer->set_root_attr("max_new_tokens", int64_t(max_new));
      writer->set_root_attr("pad_token_id", int64_t(opt.pad_id));
      writer->set_root_attr("gqa_map", gqa);
      writer->set_root_attr("n_steps", int64_t(res.steps));
      std::vector<std::string> missing = trace.never_fired();
      writer->set_root_attr("missing_hooks", nlohmann::json(missing).dump());
      for (const std::string& m : missing)
        std::fprintf(stderr, "lmscope-trace: warning: requested hook '%s' never fired\n", m.c_str());
      const int64_t B = int64_t(res.new_tokens.size()), N = res.steps;
      std::vector<int32_t> gen;
      for (const auto& row : res.new_tokens) gen.insert(gen.end(), row.begin(), row.end());
      writer->write_root_dataset("generated_ids", {B, N}, gen.data());
      writer->commit();
    }
    for (size_t b = 0; b < res.new_tokens.size(); ++b)
      std::printf("row %zu: %s\n", b, cli::join_ids(res.new_tokens[b]).c_str());
    if (!quiet) {
      std::fprintf(stderr, "prefill %lld tokens in %.3f s, decode %lld tokens in %.3f s", (long long)res.prefill_tokens,
                   res.prefill_seconds, (long long)res.decode_tokens, res.decode_seconds);
      if (!out.empty()) std::fprintf(stderr, "; %lld tensors -> %s", (long long)trace.tensors_written(), out.c_str());
      std::fprintf(stderr, "\n");
    }
    return 0;
  });
}
