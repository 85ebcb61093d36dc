// lmscope-report: an HTML page from a trace (docs/report.md): the run, the tokens and their
// merges, the masks, attention heatmaps of every layer and step with a layer x head overview,
// the residual stream's norms, the logit lens (when traced with --lens), and each generation
// step's top-k and sampling audit, one batch row at a time. A long trace's heatmaps go to a
// folder beside the page (report.html.d/), one file per step and layer, loaded on demand. Or,
// with --svg, one picture for a slide.
//
//   lmscope-report trace.h5 -o report.html [--attention auto|inline|files] [--layers 0,15,29] [--steps 0-3]
//   lmscope-report trace.h5 --svg attention --layer 3 --head 2 [--step 0] -o attn.svg
//   lmscope-report trace.h5 --summary [--step 0] [--query 7]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "io/output_target.h"
#include "io/page_folder.h"
#include "io/text_file.h"
#include "report/attention_summary.h"
#include "report/report_data.h"
#include "report/report_html.h"
#include "report/report_svg.h"
#include "trace/select.h"
#include "trace/trace_reader.h"
#include "tools/cli_common.h"
#include "tools/contained.h"
#include "tools/model_args.h"

using namespace lmscope;

int main(int argc, char** argv) {
  CLI::App app{"lmscope-report: an HTML page (with a folder of heatmaps for a long trace) or an SVG picture from a trace"};
  std::string trace_path, out, layers, steps, model, svg, storage = "auto";
  int top_k = 10, layer = 0, head = 0, step = 0, row = 0, query = -1;
  bool summary = false;
  app.add_option("trace", trace_path, "trace file written by lmscope-trace or lmscope-hf-trace")->required();
  app.add_option("-o,--out", out, "the HTML page (or, with --svg, the SVG picture) to write")->check(cli::output_path());
  app.add_flag("--summary", summary, "print each head's most-attended key token at --step, --row, --query instead of writing a file");
  app.add_option("--query", query, "--summary: the query position within the step (default: the last)");
  app.add_option("--layers", layers, "layers whose attention heatmaps the page can show, e.g. 0-3,29 (default: every layer)");
  app.add_option("--steps", steps, "steps whose attention heatmaps the page can show, e.g. 0,1 (default: every step)");
  app.add_option("--attention", storage,
                 "where the heatmaps' probabilities go: inline (in the page), files (OUT.d/, one file per step and layer, "
                 "loaded when chosen) or auto (inline up to 1 MiB, else files)")
      ->check(CLI::IsMember({"auto", "inline", "files"}))
      ->capture_default_str();
  app.add_option("--top-k", top_k, "candidates shown per generation step")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--model", model,
                 "where the tokenizer is read from, for the pieces of generated tokens (default: the trace's model_path "
                 "when it exists)");
  app.add_option("--svg", svg, "write one picture instead of the page: attention or mask")
      ->check(CLI::IsMember({"attention", "mask"}));
  std::string mask = "combined";
  app.add_option("--mask", mask, "--svg mask: which mask, combined (causal + padding) or sliding (Gemma 3's sliding layers)")
      ->check(CLI::IsMember({"combined", "sliding"}))
      ->capture_default_str();
  app.add_option("--layer", layer, "--svg attention: the layer")->capture_default_str();
  app.add_option("--head", head, "--svg attention: the head")->capture_default_str();
  app.add_option("--step", step, "--svg attention, --summary: the step")->capture_default_str();
  app.add_option("--row", row, "--svg, --summary: the batch row")->capture_default_str();
  std::string queries, keys;
  app.add_option("--queries", queries, "--svg attention: crop to these query columns, FIRST-LAST (default: all)");
  app.add_option("--keys", keys, "--svg attention: crop to these key columns, FIRST-LAST (default: all)");
  if (auto code = cli::parse(app, argc, argv, "lmscope-report")) return *code;

  if (out.empty() == !summary) return cli::usage_error("lmscope-report", "give -o FILE, or --summary");

  // A crash inside libhdf5 on a damaged trace: one line from the parent (tools/contained.h).
  return cli::run_contained("lmscope-report", trace_path, 1, [&] {
    ReportOptions opt;
    opt.top_k = top_k;
    try {
      if (!layers.empty()) opt.layers = parse_ranges(layers);
      if (!steps.empty()) opt.steps = parse_ranges(steps);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("--layers/--steps: ") + e.what());
    }
    if (svg == "attention") opt.layers = {layer}, opt.steps = {step};
    if (!out.empty()) require_output_target(out);   // before reading the trace
    if (!out.empty() && svg.empty()) require_folder_target(out + ".d");
    TraceReader tr(trace_path);
    // The tokenizer gives the generated tokens' pieces; without one they show as "#id".
    std::optional<tok::Tokenizer> tokenizer;
    const std::string tok_path = !model.empty() ? model : tr.has_root_attr("model_path") ? tr.root_attr_string("model_path") : "";
    std::error_code ec;
    if (!tok_path.empty() && std::filesystem::exists(tok_path, ec)) tokenizer = cli::load_tool_tokenizer(tok_path);
    else if (!model.empty()) throw std::runtime_error("--model '" + model + "': no such file or directory");
    if (summary) opt.layers = {}, opt.steps = {step};
    const bool page = svg.empty() && !summary;
    std::vector<AttentionPart> attention;
    nlohmann::json data = report_data(tr, opt, tokenizer ? &*tokenizer : nullptr, page ? &attention : nullptr);
    if (summary) {
      if (row < 0 || row >= data["rows"].get<int>()) throw std::runtime_error("--row " + std::to_string(row) + ": the trace has " + data["rows"].dump() + " row(s)");
      std::fputs(attention_summary(tr, data["tokens"][size_t(row)]["columns"], step, row, query).c_str(), stdout);
      return 0;
    }
    const char* no_tokenizer = tokenizer ? "" : "; no tokenizer found: generated tokens show as #id (give --model)";
    if (!page) {
      const ColumnRange q = queries.empty() ? ColumnRange{} : parse_column_range(queries, "--queries");
      const ColumnRange k = keys.empty() ? ColumnRange{} : parse_column_range(keys, "--keys");
      const std::string text = svg == "attention" ? attention_svg(data, tr, step, layer, head, row, q, k) : mask_svg(data, row, mask);
      write_file_atomic(out, text);
      std::printf("wrote %s (%zu bytes)%s\n", out.c_str(), text.size(), no_tokenizer);
      return 0;
    }
    // The folder beside the page: the page refers to it by its name alone.
    const std::string folder = out + ".d", folder_name = std::filesystem::path(folder).filename().string();
    const AttentionStorage where = storage == "inline" ? AttentionStorage::Inline
                                   : storage == "files" ? AttentionStorage::Files
                                                        : AttentionStorage::Auto;
    const ReportPage rp = report_page(std::move(data), attention, where, folder_name);
    write_page_with_folder(out, rp.html, folder, "The attention probabilities of " + std::filesystem::path(out).filename().string() +
                           ", one script per step and layer, loaded by the page when chosen (written by lmscope-report; keep "
                           "this folder beside the page).\n", rp.files);
    if (rp.files.empty()) {
      std::printf("wrote %s (%zu bytes)%s\n", out.c_str(), rp.html.size(), no_tokenizer);
    } else {
      int64_t bytes = 0;
      for (const FolderFile& f : rp.files) bytes += int64_t(f.content.size());
      std::printf("wrote %s (%zu bytes) and %s/ (%zu files, %lld bytes: the heatmaps)%s\n", out.c_str(), rp.html.size(),
                  folder.c_str(), rp.files.size(), (long long)bytes, no_tokenizer);
    }
    return 0;
  });
}
