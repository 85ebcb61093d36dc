// lmscope-bench: prefill and decode tokens/s of the CPU engine, in three configurations:
//   none   no trace attached (the forward gets a null Trace*)
//   empty  a trace attached with no hook enabled (every offer is asked and declined)
//   all    every hook enabled and written to an HDF5 trace
// The point of "empty" vs "none": a hook nobody asked for must cost nothing measurable.
//
//   lmscope-bench --model synthetic:smollm2 --prompt-len 128 --decode 32 --repeats 3
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "generate/generator.h"
#include "model/random_weights.h"
#include "tools/cli_common.h"
#include "trace/select.h"
#include "trace/trace_writer.h"

using namespace lmscope;

namespace {

struct Figures {
  double prefill_tps = 0, decode_tps = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-bench: tokens/s with no trace, an empty trace, and every hook to HDF5"};
  std::string model = "synthetic:tiny", backend_name = "cpu", configs = "none,empty,all", json_out;
  int prompt_len = 64, decode = 32, repeats = 3, batch = 1;
  app.add_option("--model", model, "synthetic:tiny, synthetic:smollm2 or a model directory")->capture_default_str();
  app.add_option("--prompt-len", prompt_len)->capture_default_str();
  app.add_option("--decode", decode, "decode steps after the prefill")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per configuration (median reported)")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--configs", configs, "which of none,empty,all")->capture_default_str();
  app.add_option("--backend", backend_name)->capture_default_str();
  app.add_option("--json", json_out, "also write the figures as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  return cli::run_tool("lmscope-bench", [&] {
    ModelConfig cfg;
    Weights w;
    if (model == "synthetic:tiny") {
      cfg = tiny_qwen2_shapes(1024);
      w = random_weights(cfg, 1, 0.3f);
    } else if (model == "synthetic:smollm2") {
      cfg = smollm2_135m_shapes();
      w = random_weights(cfg, 1, 0.02f);
    } else {
      cfg = load_model_config(model);
      w = load_weights(cfg, model);
    }
    auto backend = make_backend(backend_name);
    Decoder decoder(cfg, w, *backend);

    GenerateOptions opt;
    for (int b = 0; b < batch; ++b) {
      std::vector<int32_t> p(prompt_len);
      for (int i = 0; i < prompt_len; ++i) p[i] = (i * 7919 + b * 131 + 3) % cfg.vocab_size;
      opt.prompts.push_back(p);
    }
    opt.max_new_tokens = decode + 1;   // the prefill makes the first token, then `decode` steps
    opt.pad_id = 0;                     // no EOS: every run does the same work
    std::printf("model %s: %d layers, D=%d, H=%d/%d, F=%d, V=%d; batch %d, prompt %d, decode %d, %d repeats\n",
                model.c_str(), cfg.num_layers, cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads,
                cfg.intermediate_size, cfg.vocab_size, batch, prompt_len, decode, repeats);

    nlohmann::json report = {{"model", model}, {"batch", batch}, {"prompt_len", prompt_len}, {"decode", decode}};
    std::vector<std::string> names = split_list(configs);
    for (const std::string& which : names)
      if (which != "none" && which != "empty" && which != "all")
        throw std::runtime_error("--configs: unknown '" + which + "' (none, empty, all)");
    // Repeats are interleaved (none, empty, all, none, ...) so that a slow spell of the
    // machine hits every configuration alike; medians are reported.
    std::map<std::string, std::vector<double>> pre, dec;
    std::map<std::string, int64_t> tensors;
    generate(decoder, opt, nullptr);   // warm-up: page in weights, start threads
    for (int r = 0; r < repeats; ++r)
      for (const std::string& which : names) {
        const std::string path = (std::filesystem::temp_directory_path() / "lmscope-bench.h5").string();
        std::unique_ptr<TraceWriter> writer;
        std::unique_ptr<Trace> trace;
        if (which == "empty") {
          trace = std::make_unique<Trace>(HookSet(), nullptr);
        } else if (which == "all") {
          writer = std::make_unique<TraceWriter>(path);
          trace = std::make_unique<Trace>(HookSet::all(cfg.num_layers), writer.get());
        }
        GenerateResult res = generate(decoder, opt, trace.get());
        if (writer) writer->commit(), std::filesystem::remove(path);
        if (trace) tensors[which] = trace->tensors_written();
        pre[which].push_back(res.prefill_tokens / res.prefill_seconds);
        dec[which].push_back(res.decode_tokens / res.decode_seconds);
      }
    Figures base;
    for (const std::string& which : names) {
      Figures f{median(pre[which]), median(dec[which])};
      if (which == "none") base = f;
      std::printf("%-6s prefill %9.1f tok/s   decode %8.1f tok/s", which.c_str(), f.prefill_tps, f.decode_tps);
      if (base.prefill_tps > 0 && which != "none")
        std::printf("   (x%.3f / x%.3f of none)", f.prefill_tps / base.prefill_tps, f.decode_tps / base.decode_tps);
      if (which == "all") std::printf("   %lld tensors written", (long long)tensors[which]);
      std::printf("\n");
      report[which] = {{"prefill_tok_s", f.prefill_tps}, {"decode_tok_s", f.decode_tps},
                       {"prefill_runs", pre[which]}, {"decode_runs", dec[which]}};
    }
    if (!json_out.empty()) {
      std::ofstream(json_out) << report.dump(2) << "\n";
    }
    return 0;
  });
}
