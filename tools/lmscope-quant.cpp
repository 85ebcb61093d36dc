// lmscope-quant: what quantization does inside the model. Runs the model in float32 (the
// reference; a GGUF's dequantized weights) and under each --scheme (quantize -> dequantize,
// simulated in float32 so every hook stays comparable), and reports per layer and hook the
// relative error against the reference, per position the KL divergence of the next-token
// distributions and top-1 agreement, the perplexity of the text, and the bytes the weights
// would take (docs/quantization.md).
//
//   lmscope-quant --model models/SmolLM2-135M-Instruct.Q4_1.gguf --prompt "What is the capital of France?"
//     --scheme w8a8 --scheme w8-tensor --json
//   lmscope-quant --model M --text-file story.txt --scheme a8-static --calibrate prompts.txt --svg err.svg
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "io/output_target.h"
#include "io/regular_file.h"
#include "io/text_file.h"
#include "quant/error_svg.h"
#include "quant/quant_run.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"

using namespace lmscope;

namespace {

// One prompt per non-blank line.
std::vector<std::string> calibration_lines(const std::string& path) {
  std::istringstream in(read_regular_file(path, "--calibrate"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) out.push_back(line);
  }
  if (out.empty()) throw std::runtime_error("--calibrate: '" + path + "' holds no prompt (one per line)");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-quant: per-layer error, KL, top-1 agreement and perplexity of quantization schemes vs float32"};
  cli::ModelArgs margs;
  margs.add_to(app);
  std::string text_file, calibrate, svg;
  std::vector<std::string> scheme_args;
  bool json = false, keep_norms = true;
  app.add_option("--text-file", text_file, "the text to run, read from a file (instead of --prompt)");
  app.add_option("--scheme", scheme_args,
                 "w8-channel, w8-tensor, w8-std, w4-group, a8-token, a8-static, w8a8, gguf-blocks (repeat)")
      ->required();
  app.add_option("--calibrate", calibrate, "a8-static: calibration prompts, one per line");
  app.add_flag("--keep-norms-float,!--quantize-norms", keep_norms,
               "keep RMSNorm weights float32 (default); --quantize-norms puts them through the weight scheme too");
  app.add_flag("--json", json, "print one JSON object");
  app.add_option("--svg", svg, "write the error-vs-layer figure to this SVG file")->check(cli::output_path());
  std::string trace_prefix;
  app.add_option("--trace-prefix", trace_prefix,
                 "also write P.float32.h5 and P.<scheme>.h5: the text's prefill traced (tokens, logits), "
                 "e.g. for lmscope-diff --kl-temperature");
  if (auto code = cli::parse(app, argc, argv, "lmscope-quant")) return *code;

  return cli::run_tool("lmscope-quant", [&] {
    // Input errors that need no model.
    if (!svg.empty()) require_output_target(svg);
    std::vector<quant::SchemeSpec> schemes;
    for (const std::string& s : scheme_args) schemes.push_back(quant::parse_scheme(s));
    std::vector<std::string> calib_text;
    if (!calibrate.empty()) calib_text = calibration_lines(calibrate);
    if (!text_file.empty()) {
      margs.prompts.push_back(read_regular_file(text_file, "--text-file"));
      if (margs.prompts.back().empty()) throw std::runtime_error("--text-file: '" + text_file + "' is empty");
    }
    if (margs.prompts.size() + margs.prompt_ids.size() != 1)
      throw std::runtime_error("give exactly one text: --prompt, --prompt-ids or --text-file");

    auto tm = cli::load_tool_model(margs, argc, argv);
    quant::QuantOptions opt;
    opt.keep_norms_float = keep_norms;
    for (const std::string& p : calib_text) {
      if (!tm->tokenizer) throw std::runtime_error("--calibrate: the model has no tokenizer to encode the prompts");
      opt.calibration.push_back(tm->tokenizer->encode(p, true));
    }
    if (!trace_prefix.empty())
      opt.also = [&](const std::string& run, Decoder& d) {
        ModelContext ctx = tm->ctx;
        ctx.decoder = &d;
        GenerateOptions g;
        g.prompts = {tm->prompts[0]};
        g.max_new_tokens = 1;   // the prefill: logits at every position of the text
        g.pad_id = tm->special.pad_id;
        run_traced(ctx, g, HookSet("tokens.*,logits", "", tm->loaded.cfg.num_layers), trace_prefix + "." + run + ".h5");
      };
    // The decoder tm made is not used: each scheme gets its own over its own weights.
    const quant::QuantReport r =
        quant::run_quant(tm->loaded.cfg, tm->loaded.weights, *tm->backend, tm->prompts[0], schemes, opt);

    const tok::Tokenizer* t = tm->tokenizer ? &*tm->tokenizer : nullptr;
    const quant::PieceFn piece = cli::piece_fn(t);
    if (!svg.empty()) write_file_atomic(svg, quant::error_by_layer_svg(r, "Quantization error by layer: " + margs.model));
    std::cout << (json ? quant::quant_report_json(r, piece) + "\n" : quant::quant_report_text(r, piece));
    return 0;
  });
}
