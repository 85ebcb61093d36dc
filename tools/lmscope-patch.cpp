// lmscope-patch: activation patching sweeps (docs/interventions.md, "Activation patching").
// The corrupted prompt is run with one cell of the clean run patched in at a time: every layer
// x position of resid_pre / attn_out / ffn_out (and resid_mid / resid_post on request), every
// layer x head of attn.z. Prints per site the table of normalized metrics (0 = the corrupted
// run, 1 = the clean run), and writes JSON and an SVG heatmap per site. With --pairs FILE.jsonl
// every pair of the file is swept and each cell shows the mean over the pairs, with its spread
// (experiments/patching_pairs.h).
//
//   lmscope-patch --model models/SmolLM2-135M-Instruct.Q4_1.gguf --clean "The Eiffel Tower is in the city of"
//       --corrupt "The Colosseum is in the city of" --metric 'logit-diff:" Paris"," Rome"' --svg patch
//   lmscope-patch --model ... --pairs pairs.jsonl --sites resid_pre --json pairs.json --svg pairs
//   lmscope-patch --model ... --clean ... --corrupt ... --metric ... --method both   (attribution estimate beside)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cctype>
#include <cmath>
#include <functional>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "experiments/patching.h"
#include "experiments/patching_pairs.h"
#include "experiments/path_patching.h"
#include "io/format_number.h"
#include "io/output_target.h"
#include "io/regular_file.h"
#include "io/text_file.h"
#include "report/grid_svg.h"
#include "report/svg.h"
#include "tools/cli_common.h"
#include "tools/model_args.h"
#include "trace/select.h"

using namespace lmscope;

namespace {

std::string fmt2(double v) { return fmt("%.2f", v); }   // never "-0.00" (io/format_number.h)

std::vector<std::string> column_labels(const PatchGrid& g, const std::vector<int32_t>& ids, const PieceFn& piece) {
  std::vector<std::string> out;
  for (int64_t c : g.column_index)
    out.push_back(g.columns == "head"     ? "h" + std::to_string(c)
                  : g.columns == "neuron" ? "n" + std::to_string(c)
                                          : std::to_string(c) + " " + piece(ids[size_t(c)]));
  return out;
}

// Fixed-width columns (8 characters: a value like "-0.01" or a piece cut to 7) so that the grid
// reads in a terminal and a lesson can quote a row.
std::string grid_text(const std::string& title, const std::vector<std::string>& labels,
                      const std::vector<std::vector<double>>& values) {
  auto cell = [](const std::string& v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%8s", v.c_str());
    return std::string(buf);
  };
  std::string o = "\n" + title + "\nlayer";
  for (const std::string& l : labels) o += cell(shorten(l, 7));
  o += '\n';
  for (size_t l = 0; l < values.size(); ++l) {
    char lb[32];
    std::snprintf(lb, sizeof lb, "%5zu", l);
    o += lb;
    for (double v : values[l]) o += cell(fmt2(v));
    o += '\n';
  }
  return o;
}

// Per site: the measured grid, the attribution estimate's, and with both their correlation.
std::string table_text(const PatchSweep& s, const PieceFn& piece) {
  std::string o;
  for (const PatchGrid& g : s.grids) {
    if (!g.normalized.empty())
      o += grid_text(g.site + ": layer x " + g.columns + ", normalized (0 = corrupted, 1 = clean)",
                     column_labels(g, s.corrupt, piece), g.normalized);
    if (!g.attribution_normalized.empty())
      o += grid_text(g.site + ": layer x " + g.columns + ", attribution estimate, normalized (0 = corrupted, 1 = clean)",
                     column_labels(g, s.corrupt, piece), g.attribution_normalized);
    if (!g.normalized.empty() && !g.attribution_normalized.empty())
      o += g.site + ": Pearson r " + (std::isnan(g.pearson) ? std::string("undefined (a grid does not vary)") : fmt2(g.pearson)) +
           " (activation vs attribution, " + std::to_string(g.normalized.size() * g.column_index.size()) + " cells)\n";
  }
  return o;
}

// Over pairs a position is a column of every pair, whose tokens differ: labelled by its index.
std::vector<std::string> pairs_column_labels(const PatchPairsGrid& g) {
  std::vector<std::string> out;
  for (int64_t c : g.column_index) {
    std::string label = g.columns == "head" ? "h" : g.columns == "neuron" ? "n" : "";
    out.push_back(label += std::to_string(c));
  }
  return out;
}

std::string pairs_table_text(const std::vector<PatchPairsGrid>& grids, size_t pairs) {
  std::string o;
  const std::string n = std::to_string(pairs);
  for (const PatchPairsGrid& g : grids) {
    o += grid_text(g.site + ": layer x " + g.columns + ", normalized, mean over " + n + " pairs", pairs_column_labels(g), g.mean);
    o += grid_text(g.site + ": standard deviation over the pairs", pairs_column_labels(g), g.sd);
  }
  return o;
}

nlohmann::ordered_json matrix_json(const std::vector<std::vector<double>>& m) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& row : m) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (double v : row) r.push_back(json_num(v));
    out.push_back(r);
  }
  return out;
}

// matrix_json read back: a number, "inf" / "-inf" (json_num's infinity), null for NaN.
std::vector<std::vector<double>> matrix_from_json(const nlohmann::ordered_json& m) {
  std::vector<std::vector<double>> out;
  for (const auto& row : m) {
    std::vector<double> r;
    for (const auto& v : row)
      r.push_back(v.is_null() ? std::nan("") : v == "inf" ? INFINITY : v == "-inf" ? -INFINITY : v.get<double>());
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::ordered_json pairs_json(const PatchPairsSweep& s, const std::vector<PatchPair>& pairs, const std::string& file) {
  nlohmann::ordered_json j;
  j["pairs_file"] = file;
  j["num_pairs"] = s.pairs.size();
  j["pairs"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < s.pairs.size(); ++i) {
    nlohmann::ordered_json p;
    p["line"] = pairs[i].line;
    p["metric"] = pairs[i].metric.text;
    p["clean_ids"] = s.pairs[i].clean;
    p["corrupt_ids"] = s.pairs[i].corrupt;
    p["clean_metric"] = s.pairs[i].clean_metric;
    p["corrupt_metric"] = s.pairs[i].corrupt_metric;
    // The pair's own cells: what a merge of several runs over parts of the file sums
    // (python/lmscope/sweep.py), to the same doubles as one run's statistics.
    for (const PatchGrid& g : s.pairs[i].grids) p["normalized"][g.site] = matrix_json(g.normalized);
    j["pairs"].push_back(p);
  }
  j["cells"] = s.cells;
  j["forwards"] = s.forwards;
  j["seconds"] = s.seconds;
  for (const PatchPairsGrid& g : s.grids) {
    nlohmann::ordered_json gj;
    gj["columns"] = g.columns;
    gj["column_index"] = g.column_index;
    gj["mean"] = matrix_json(g.mean);
    gj["sd"] = matrix_json(g.sd);
    gj["min"] = matrix_json(g.min);
    gj["max"] = matrix_json(g.max);
    j["sites"][g.site] = gj;
  }
  return j;
}

nlohmann::ordered_json sweep_json(const PatchSweep& s, const std::string& metric, const PieceFn& piece) {
  nlohmann::ordered_json j;
  j["metric"] = metric;
  j["clean_ids"] = s.clean;
  j["corrupt_ids"] = s.corrupt;
  std::vector<std::string> pieces;
  for (int32_t id : s.corrupt) pieces.push_back(piece(id));
  j["corrupt_pieces"] = pieces;
  j["clean_metric"] = s.clean_metric;
  j["corrupt_metric"] = s.corrupt_metric;
  j["cells"] = s.cells;
  j["forwards"] = s.forwards;
  j["seconds"] = s.seconds;
  if (s.attribution_seconds > 0) j["attribution_seconds"] = s.attribution_seconds;
  for (const PatchGrid& g : s.grids) {
    nlohmann::ordered_json gj;
    gj["columns"] = g.columns;
    gj["column_index"] = g.column_index;
    if (!g.normalized.empty()) {
      gj["normalized"] = matrix_json(g.normalized);
      gj["metric"] = matrix_json(g.metric);
    }
    if (!g.attribution.empty()) {
      gj["attribution"] = matrix_json(g.attribution);
      gj["attribution_normalized"] = matrix_json(g.attribution_normalized);
    }
    if (!g.normalized.empty() && !g.attribution.empty()) gj["pearson"] = json_num(g.pearson);
    j["sites"][g.site] = gj;
  }
  return j;
}

// A layer x column heatmap of a site. Signed: a cell that pushes the metric the wrong way
// (below 0) is red, as visible as one that restores it.
GridPicture site_picture(const std::string& columns, std::vector<std::string> col_labels,
                         const std::vector<std::vector<double>>& values) {
  GridPicture p;
  p.x_label = columns == "head"     ? "head (every position)"
              : columns == "neuron" ? "FFN neuron (every position)"
                                    : "position (corrupted prompt's token)";
  p.y_label = "layer";
  p.col_labels = std::move(col_labels);
  for (size_t l = 0; l < values.size(); ++l) p.row_labels.push_back(std::to_string(l));
  for (const auto& row : values) {
    std::vector<double> r;
    for (double v : row) r.push_back(std::isnan(v) ? 0.0 : std::clamp(v, -1.0, 1.0));
    p.values.push_back(r);
  }
  p.is_signed = true;
  p.legend = "patched metric, normalized (red: moved away from clean)";
  p.legend_stops = {{-1.0, "-1"}, {0.0, "0 = corrupted"}, {1.0, "1 = clean"}};
  return p;
}

std::string sweep_svg(const PatchSweep& s, const PatchGrid& g, const std::string& metric, const PieceFn& piece,
                      bool attribution) {
  GridPicture p = site_picture(g.columns, column_labels(g, s.corrupt, piece), attribution ? g.attribution_normalized : g.normalized);
  p.title = (attribution ? "Attribution patching (linear estimate): " : "Activation patching: ") + g.site + " (" + metric + ")";
  p.caption = "clean " + fmt2(s.clean_metric) + ", corrupted " + fmt2(s.corrupt_metric) + "; values outside -1..1 drawn at the ends";
  return grid_svg(p);
}

// Over pairs: the mean as one picture, its standard deviation as a second (0 .. 1, white to
// blue: a cell where the pairs disagree is dark).
std::string pairs_mean_svg(size_t pairs, const PatchPairsGrid& g) {
  GridPicture p = site_picture(g.columns, pairs_column_labels(g), g.mean);
  p.title = "Activation patching: " + g.site + ", mean over " + std::to_string(pairs) + " pairs";
  p.caption = "normalized per pair, then averaged; values outside -1..1 drawn at the ends; the spread is in the .sd picture";
  return grid_svg(p);
}

std::string pairs_sd_svg(size_t pairs, const PatchPairsGrid& g) {
  GridPicture p = site_picture(g.columns, pairs_column_labels(g), g.sd);
  p.title = "Activation patching: " + g.site + ", standard deviation over " + std::to_string(pairs) + " pairs";
  p.is_signed = false;
  p.legend = "standard deviation of the normalized metric";
  p.legend_stops = {{0.0, "0 = every pair agrees"}, {1.0, "1 or more"}};
  p.caption = "population standard deviation (divided by the number of pairs); values above 1 drawn at 1";
  return grid_svg(p);
}

// --svg PREFIX: one picture per site, PREFIX.<site with dots as underscores>.svg (with --pairs
// also PREFIX.<site>.sd.svg, the spread).
std::string svg_path(const std::string& prefix, std::string site, const std::string& kind = "") {
  for (char& c : site)   // "ffn.act:neuron=0:8" -> "ffn_act_neuron_0_8"
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return prefix + "." + site + (kind.empty() ? "" : "." + kind) + ".svg";
}

std::string sites_known() {
  std::string all;
  for (const std::string& s : patch_site_names()) all += (all.empty() ? "" : ", ") + s;
  return all;
}

// A progress line on stderr for --pairs: rewritten in place on a terminal, else one line per
// finished pair (a log keeps no carriage returns).
struct PairsProgress {
  size_t pairs = 0;
  bool tty = ::isatty(2) != 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void operator()(size_t pair, int64_t forward, int64_t forwards) {
    const bool pair_done = forward == forwards;
    if (!tty && !pair_done) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double done = double(pair) + double(forward) / double(forwards);   // pairs, fractional
    const double left = elapsed / done * (double(pairs) - done);
    std::fprintf(stderr, "%spatch: pair %zu/%zu, forward %lld/%lld, %.1f s, ETA %.0f s%s", tty ? "\r" : "", pair + 1, pairs,
                 (long long)forward, (long long)forwards, elapsed, left, tty ? "   " : "\n");
    if (tty && pair_done && pair + 1 == pairs) std::fprintf(stderr, "\n");
  }
};

// --only-pairs RANGES: those pairs (0-based, in file order, blank lines not counted) of the whole
// file, which is still read and checked whole: a sweep spread over workers gives each a part.
std::vector<PatchPair> only_pairs(std::vector<PatchPair> all, const std::string& ranges, const std::string& file) {
  if (ranges.empty()) return all;
  std::vector<PatchPair> out;
  for (int i : parse_ranges(ranges)) {
    if (size_t(i) >= all.size())
      throw std::runtime_error(file + ": --only-pairs " + ranges + ": the file has " + std::to_string(all.size()) +
                               " pairs (0.." + std::to_string(all.size() - 1) + ")");
    out.push_back(std::move(all[size_t(i)]));
  }
  return out;
}

// --svg PREFIX over pairs: per site the mean's picture and the spread's.
void write_pairs_svgs(const std::vector<PatchPairsGrid>& grids, size_t pairs, const std::string& svg) {
  if (svg.empty()) return;
  for (const PatchPairsGrid& g : grids)
    for (const std::string& kind : {std::string(), std::string("sd")}) {
      const std::string path = svg_path(svg, g.site, kind);
      write_file_atomic(path, kind.empty() ? pairs_mean_svg(pairs, g) : pairs_sd_svg(pairs, g));
      std::printf("wrote %s\n", path.c_str());
    }
}

// --pairs FILE: every pair swept, then the mean and spread per cell.
int run_pairs(cli::ToolModel& tm, const cli::ModelArgs& margs, const std::string& file, const std::string& ranges,
              const std::string& metric, PatchSweepOptions opt, const std::string& json_out, const std::string& svg,
              bool quiet) {
  const tok::Tokenizer* tk = tm.tokenizer ? &*tm.tokenizer : nullptr;
  EncodeFn encode;
  if (tk)   // as --clean/--corrupt are encoded (tools/model_args.h): BOS, or the chat template
    encode = [&](const std::string& text) {
      if (!margs.chat) return tk->encode(text, true);
      return tk->encode(tok::format_chat(*tk, {tok::ChatMessage{"user", text}}, true, tok::parse_chat_format(margs.chat_format)), false);
    };
  const std::vector<PatchPair> pairs =
      only_pairs(read_patch_pairs(file, encode, tk, metric, tm.loaded.cfg.vocab_size), ranges, file);
  PairsProgress progress;
  progress.pairs = pairs.size();
  PairsProgressFn on_forward;
  if (!quiet) on_forward = std::ref(progress);
  const PatchPairsSweep s = run_patch_pairs(tm.ctx, pairs, file, opt, on_forward);
  std::printf("%zu pairs from %s, %zu tokens each\n", pairs.size(), file.c_str(), pairs[0].clean.size());
  std::printf("%s", pairs_table_text(s.grids, s.pairs.size()).c_str());
  std::printf("\n%lld cells in %lld forwards (%d rows each) in %.2f s\n", (long long)s.cells, (long long)s.forwards,
              opt.rows_per_forward, s.seconds);
  if (!json_out.empty()) write_file_atomic(json_out, pairs_json(s, pairs, file).dump(1) + "\n");
  write_pairs_svgs(s.grids, s.pairs.size(), svg);
  return 0;
}

// --from-json FILE: the tables (and with --svg the pictures) of a --pairs --json result, read
// back without the model. lmscope-sweep patch shows its merge of many runs this way, so the
// text and the pictures have one maker.
int show_pairs_json(const std::string& file, const std::string& svg) {
  const std::string text = read_regular_file(file, "--from-json");
  std::vector<PatchPairsGrid> grids;
  size_t pairs = 0, tokens = 0;
  std::string pairs_file;
  try {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);   // the sites in the file's order
    pairs = j.at("num_pairs").get<size_t>();
    pairs_file = j.at("pairs_file").get<std::string>();
    tokens = j.at("pairs").at(0).at("clean_ids").size();
    for (const auto& [site, gj] : j.at("sites").items()) {
      PatchPairsGrid g;
      g.site = site;
      g.columns = gj.at("columns").get<std::string>();
      g.column_index = gj.at("column_index").get<std::vector<int64_t>>();
      g.mean = matrix_from_json(gj.at("mean"));   // [layer][column]
      g.sd = matrix_from_json(gj.at("sd"));       // [layer][column]
      grids.push_back(std::move(g));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file + ": not the --json of lmscope-patch --pairs or lmscope-sweep patch (" + e.what() + ")");
  }
  if (grids.empty() || pairs == 0) throw std::runtime_error(file + ": no sites or no pairs in this --pairs --json result");
  if (!svg.empty())
    for (const PatchPairsGrid& g : grids) {
      require_output_target(svg_path(svg, g.site));
      require_output_target(svg_path(svg, g.site, "sd"));
    }
  std::printf("%zu pairs from %s, %zu tokens each\n", pairs, pairs_file.c_str(), tokens);
  std::printf("%s", pairs_table_text(grids, pairs).c_str());
  write_pairs_svgs(grids, pairs, svg);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-patch: activation patching, clean into corrupted, cell by cell"};
  cli::ModelArgs margs;   // --model, --chat, --backend ... (--prompt / --prompt-ids: clean first, then corrupted)
  margs.add_to(app);
  app.get_option("--model")->required(false);   // checked below: --from-json runs no model
  std::string clean, corrupt, clean_ids, corrupt_ids, metric, sites = "resid_pre,attn_out,ffn_out,attn.z", json_out, svg,
      pairs_file, method = "activation", path_to, pair_ranges;
  int rows = 32;
  std::string from_json;
  bool quiet = false;
  app.add_option("--clean", clean, "the clean prompt (text)");
  app.add_option("--corrupt", corrupt, "the corrupted prompt (text), as many tokens as the clean one");
  app.add_option("--clean-ids", clean_ids, "the clean prompt as ids");
  app.add_option("--corrupt-ids", corrupt_ids, "the corrupted prompt as ids");
  app.add_option("--pairs", pairs_file,
                 "a JSONL file of pairs, one a line: {\"clean\"|\"clean_ids\", \"corrupt\"|\"corrupt_ids\", \"metric\"}; "
                 "each cell averaged over the pairs, with its spread");
  app.add_option("--only-pairs", pair_ranges,
                 "with --pairs: sweep only these pairs (0-based, e.g. 0-3,7); the whole file is still checked");
  app.add_option("--metric", metric,
                 "logit_diff:pos=P:A,B, logprob:pos=P:A, prob:pos=P:A, loss:FROM:TO (lmscope-trace --grad's), or at the last "
                 "position logit-diff:\" Paris\",\" Rome\" and prob:\" Paris\" (ids: #123); with --pairs, for the pairs "
                 "without their own");
  app.add_option("--sites", sites,
                 "editable hooks without layers.L. (resid_pre, attn.probs, ffn.act, embed ...), each optionally :pos, :head "
                 "or :neuron=A:B, the axis of its cells")
      ->capture_default_str();
  app.add_option("--method", method,
                 "activation (a patched forward per cell), attribution (the linear estimate from one backward) or both")
      ->check(CLI::IsMember({"activation", "attribution", "both"}))
      ->capture_default_str();
  app.add_option("--path-to", path_to,
                 "path patching: each sender head's effect (attn.z of every head before the receiver's layer) through "
                 "only this receiver's input, layers.L.attn.q[head=H] (attn.k, attn.v: a KV head)");
  app.add_option("--rows-per-forward", rows, "patched copies of the corrupted prompt per forward")->capture_default_str();
  app.add_option("--json", json_out, "write the sweep as JSON to this file");
  app.add_option("--svg", svg, "write one heatmap per site: PREFIX.<site>.svg (--pairs: also PREFIX.<site>.sd.svg)");
  app.add_flag("-q,--quiet", quiet, "no progress line (--pairs)");
  app.add_option("--from-json", from_json,
                 "print the tables (and with --svg draw the pictures) of a --pairs --json result, e.g. lmscope-sweep "
                 "patch's; no model is run");
  if (auto code = cli::parse(app, argc, argv, "lmscope-patch")) return *code;
  if (!from_json.empty()) {
    if (!pairs_file.empty() || !clean.empty() || !clean_ids.empty() || !margs.model.empty() || !json_out.empty())
      return cli::usage_error("lmscope-patch", "--from-json shows a result: only --svg beside it");
    return cli::run_tool("lmscope-patch", [&] { return show_pairs_json(from_json, svg); });
  }
  if (margs.model.empty()) return cli::usage_error("lmscope-patch", "--model is required");
  if (!margs.prompts.empty() || !margs.prompt_ids.empty())
    return cli::usage_error("lmscope-patch", "give the prompts as --clean/--corrupt, not --prompt");
  if (!pair_ranges.empty() && pairs_file.empty()) return cli::usage_error("lmscope-patch", "--only-pairs needs --pairs");
  if (!pairs_file.empty()) {
    if (!clean.empty() || !clean_ids.empty() || !corrupt.empty() || !corrupt_ids.empty())
      return cli::usage_error("lmscope-patch", "--pairs gives the prompts: no --clean/--corrupt beside it");
    if (method != "activation") return cli::usage_error("lmscope-patch", "--method " + method + " with --pairs: not yet (one pair at a time)");
    if (!path_to.empty()) return cli::usage_error("lmscope-patch", "--path-to with --pairs: not yet (one pair at a time)");
  } else {
    if (clean.empty() == clean_ids.empty() || corrupt.empty() == corrupt_ids.empty())
      return cli::usage_error("lmscope-patch", "give the clean prompt (--clean or --clean-ids) and the corrupted one (--corrupt or --corrupt-ids), or --pairs FILE");
    if (metric.empty()) return cli::usage_error("lmscope-patch", "--metric is required");
    if (!path_to.empty() && method != "activation")
      return cli::usage_error("lmscope-patch", "--path-to patches paths (activation): no --method " + method + " beside it");
    if (!clean_ids.empty()) margs.prompt_ids.push_back(clean_ids);
    else margs.prompts.push_back(clean);
    if (!corrupt_ids.empty()) margs.prompt_ids.push_back(corrupt_ids);
    else margs.prompts.push_back(corrupt);
  }

  return cli::run_tool("lmscope-patch", [&] {
    cli::ModelArgs load_args = margs;
    if (!pairs_file.empty()) load_args.chat = false;   // --chat wraps the pairs' texts (run_pairs), not --prompt
    auto tm = cli::load_tool_model(load_args, argc, argv, pairs_file.empty());
    const tok::Tokenizer* tk = tm->tokenizer ? &*tm->tokenizer : nullptr;
    PatchSweepOptions opt;
    opt.sites = split_list(sites);
    if (opt.sites.empty()) throw std::runtime_error("--sites: no site given (" + sites_known() + ")");
    opt.rows_per_forward = rows;
    opt.activation = method != "attribution";
    opt.attribution = method != "activation";
    opt.weights = &tm->loaded.weights;
    // The outputs are checked before the sweep (a FIFO, a symlink, a missing folder fail at
    // once, not after minutes) and written by the one atomic writer.
    if (!json_out.empty()) require_output_target(json_out);
    if (!svg.empty())
      for (const std::string& site : path_to.empty() ? opt.sites : std::vector<std::string>{"attn.z->" + path_to}) {
        if (opt.activation) require_output_target(svg_path(svg, site));
        if (!pairs_file.empty()) require_output_target(svg_path(svg, site, "sd"));
        if (opt.attribution) require_output_target(svg_path(svg, site, "attribution"));
      }
    if (!pairs_file.empty()) return run_pairs(*tm, margs, pairs_file, pair_ranges, metric, opt, json_out, svg, quiet);

    // prompts are ids first, then texts: put clean before corrupted again
    const bool clean_first = !clean_ids.empty() || corrupt_ids.empty();
    opt.clean = tm->prompts[clean_first ? 0 : 1];
    opt.corrupt = tm->prompts[clean_first ? 1 : 0];
    opt.metric = parse_patch_metric(metric, tk, tm->loaded.cfg.vocab_size);
    PatchSweep s;
    if (path_to.empty()) {
      s = run_patch_sweep(tm->ctx, opt);
    } else {
      PathPatchOptions path;
      parse_path_receiver(path_to, tm->loaded.cfg, path);
      path.clean = opt.clean;
      path.corrupt = opt.corrupt;
      path.metric = opt.metric;
      path.rows_per_forward = rows;
      s = run_path_patching(tm->ctx, path);
    }
    const PieceFn piece = cli::piece_fn(tk);
    std::printf("metric %s: clean %.4f, corrupted %.4f\n", metric.c_str(), s.clean_metric, s.corrupt_metric);
    std::printf("%s", table_text(s, piece).c_str());
    std::printf("\n");
    if (opt.activation)
      std::printf("%lld cells in %lld forwards (%d rows each) in %.2f s\n", (long long)s.cells, (long long)s.forwards, rows,
                  s.seconds);
    if (opt.attribution)
      std::printf("%lld cells estimated from 1 forward + backward (corrupted) and 1 forward (clean) in %.2f s\n",
                  (long long)s.cells, s.attribution_seconds);
    if (!json_out.empty()) write_file_atomic(json_out, sweep_json(s, metric, piece).dump(1) + "\n");
    if (!svg.empty())
      for (const PatchGrid& g : s.grids)
        for (const bool attribution : {false, true}) {
          if (attribution ? g.attribution.empty() : g.normalized.empty()) continue;
          const std::string path = svg_path(svg, g.site, attribution ? "attribution" : "");
          write_file_atomic(path, sweep_svg(s, g, metric, piece, attribution));
          std::printf("wrote %s\n", path.c_str());
        }
    return 0;
  });
}
