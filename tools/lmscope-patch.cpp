// lmscope-patch: activation patching sweeps (docs/interventions.md, "Activation patching").
// The corrupted prompt is run with one cell of the clean run patched in at a time: every layer
// x position of resid_pre / attn_out / ffn_out (and resid_mid / resid_post on request), every
// layer x head of attn.z. Prints per site the table of normalized metrics (0 = the corrupted
// run, 1 = the clean run), and writes JSON and an SVG heatmap per site.
//
//   lmscope-patch --model models/SmolLM2-135M-Instruct.Q4_1.gguf --clean "The Eiffel Tower is in the city of"
//       --corrupt "The Colosseum is in the city of" --metric 'logit-diff:" Paris"," Rome"' --svg patch
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "experiments/patching.h"
#include "io/format_number.h"
#include "io/output_target.h"
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
  for (size_t c = 0; c < g.normalized[0].size(); ++c)
    out.push_back(g.columns == "head" ? "h" + std::to_string(c) : std::to_string(c) + " " + piece(ids[c]));
  return out;
}

// Fixed-width columns (8 characters: a value like "-0.01" or a piece cut to 7) so that the grid
// reads in a terminal and a lesson can quote a row.
std::string table_text(const PatchSweep& s, const PieceFn& piece) {
  auto cell = [](const std::string& v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%8s", v.c_str());
    return std::string(buf);
  };
  std::string o;
  for (const PatchGrid& g : s.grids) {
    o += "\n" + g.site + ": layer x " + g.columns + ", normalized (0 = corrupted, 1 = clean)\n";
    o += "layer";
    for (const std::string& l : column_labels(g, s.corrupt, piece)) o += cell(shorten(l, 7));
    o += '\n';
    for (size_t l = 0; l < g.normalized.size(); ++l) {
      char lb[32];
      std::snprintf(lb, sizeof lb, "%5zu", l);
      o += lb;
      for (double v : g.normalized[l]) o += cell(fmt2(v));
      o += '\n';
    }
  }
  return o;
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
  for (const PatchGrid& g : s.grids) {
    nlohmann::ordered_json gj;
    gj["columns"] = g.columns;
    gj["normalized"] = nlohmann::ordered_json::array();
    for (const auto& row : g.normalized) {
      nlohmann::ordered_json r = nlohmann::ordered_json::array();
      for (double v : row) r.push_back(json_num(v));
      gj["normalized"].push_back(r);
    }
    gj["metric"] = g.metric;
    j["sites"][g.site] = gj;
  }
  return j;
}

std::string sweep_svg(const PatchSweep& s, const PatchGrid& g, const std::string& metric, const PieceFn& piece) {
  GridPicture p;
  p.title = "Activation patching: " + g.site + " (" + metric + ")";
  p.x_label = g.columns == "head" ? "head (attn.z, every position)" : "position (corrupted prompt's token)";
  p.y_label = "layer";
  p.col_labels = column_labels(g, s.corrupt, piece);
  for (size_t l = 0; l < g.normalized.size(); ++l) p.row_labels.push_back(std::to_string(l));
  for (const auto& row : g.normalized) {
    std::vector<double> r;
    for (double v : row) r.push_back(std::isnan(v) ? 0.0 : std::clamp(v, -1.0, 1.0));
    p.values.push_back(r);
  }
  // Signed: a cell that pushes the metric the wrong way (below 0) is red, as visible as one
  // that restores it.
  p.is_signed = true;
  p.legend = "patched metric, normalized (red: moved away from clean)";
  p.legend_stops = {{-1.0, "-1"}, {0.0, "0 = corrupted"}, {1.0, "1 = clean"}};
  p.caption = "clean " + fmt2(s.clean_metric) + ", corrupted " + fmt2(s.corrupt_metric) + "; values outside -1..1 drawn at the ends";
  return grid_svg(p);
}

// --svg PREFIX: one picture per site, PREFIX.<site with dots as underscores>.svg.
std::string svg_path(const std::string& prefix, std::string site) {
  std::replace(site.begin(), site.end(), '.', '_');
  return prefix + "." + site + ".svg";
}

std::string sites_known() {
  std::string all;
  for (const std::string& s : patch_site_names()) all += (all.empty() ? "" : ", ") + s;
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lmscope-patch: activation patching, clean into corrupted, cell by cell"};
  cli::ModelArgs margs;   // --model, --chat, --backend ... (--prompt / --prompt-ids: clean first, then corrupted)
  margs.add_to(app);
  std::string clean, corrupt, clean_ids, corrupt_ids, metric, sites = "resid_pre,attn_out,ffn_out,attn.z", json_out, svg;
  int rows = 32;
  app.add_option("--clean", clean, "the clean prompt (text)");
  app.add_option("--corrupt", corrupt, "the corrupted prompt (text), as many tokens as the clean one");
  app.add_option("--clean-ids", clean_ids, "the clean prompt as ids");
  app.add_option("--corrupt-ids", corrupt_ids, "the corrupted prompt as ids");
  app.add_option("--metric", metric, "logit-diff:\" Paris\",\" Rome\" or prob:\" Paris\" (ids: #123)")->required();
  app.add_option("--sites", sites, "resid_pre, attn_out, ffn_out, resid_mid, resid_post, attn.z")->capture_default_str();
  app.add_option("--rows-per-forward", rows, "patched copies of the corrupted prompt per forward")->capture_default_str();
  app.add_option("--json", json_out, "write the sweep as JSON to this file");
  app.add_option("--svg", svg, "write one heatmap per site: PREFIX.<site>.svg");
  if (auto code = cli::parse(app, argc, argv, "lmscope-patch")) return *code;
  if (clean.empty() == clean_ids.empty() || corrupt.empty() == corrupt_ids.empty())
    return cli::usage_error("lmscope-patch", "give the clean prompt (--clean or --clean-ids) and the corrupted one (--corrupt or --corrupt-ids)");
  if (!margs.prompts.empty() || !margs.prompt_ids.empty())
    return cli::usage_error("lmscope-patch", "give the prompts as --clean/--corrupt, not --prompt");
  if (!clean_ids.empty()) margs.prompt_ids.push_back(clean_ids);
  else margs.prompts.push_back(clean);
  if (!corrupt_ids.empty()) margs.prompt_ids.push_back(corrupt_ids);
  else margs.prompts.push_back(corrupt);

  return cli::run_tool("lmscope-patch", [&] {
    auto tm = cli::load_tool_model(margs, argc, argv);
    // prompts are ids first, then texts: put clean before corrupted again
    const bool clean_first = !clean_ids.empty() || corrupt_ids.empty();
    PatchSweepOptions opt;
    opt.clean = tm->prompts[clean_first ? 0 : 1];
    opt.corrupt = tm->prompts[clean_first ? 1 : 0];
    const tok::Tokenizer* tk = tm->tokenizer ? &*tm->tokenizer : nullptr;
    opt.metric = parse_patch_metric(metric, tk);
    opt.sites = split_list(sites);
    if (opt.sites.empty()) throw std::runtime_error("--sites: no site given (" + sites_known() + ")");
    opt.rows_per_forward = rows;
    // The outputs are checked before the sweep (a FIFO, a symlink, a missing folder fail at
    // once, not after minutes) and written by the one atomic writer.
    if (!json_out.empty()) require_output_target(json_out);
    if (!svg.empty())
      for (const std::string& site : opt.sites) require_output_target(svg_path(svg, site));
    char tmpl[] = "/tmp/lmscope-patch-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary directory in /tmp");
    opt.clean_trace = std::string(tmpl) + "/clean.h5";
    PatchSweep s;
    try {
      s = run_patch_sweep(tm->ctx, opt);
    } catch (...) {
      std::remove(opt.clean_trace.c_str());
      ::rmdir(tmpl);
      throw;
    }
    std::remove(opt.clean_trace.c_str());
    ::rmdir(tmpl);
    const PieceFn piece = cli::piece_fn(tk);
    std::printf("metric %s: clean %.4f, corrupted %.4f\n", metric.c_str(), s.clean_metric, s.corrupt_metric);
    std::printf("%s", table_text(s, piece).c_str());
    std::printf("\n%lld cells in %lld forwards (%d rows each) in %.2f s\n", (long long)s.cells, (long long)s.forwards, rows,
                s.seconds);
    if (!json_out.empty()) write_file_atomic(json_out, sweep_json(s, metric, piece).dump(1) + "\n");
    if (!svg.empty())
      for (const PatchGrid& g : s.grids) {
        const std::string path = svg_path(svg, g.site);
        write_file_atomic(path, sweep_svg(s, g, metric, piece));
        std::printf("wrote %s\n", path.c_str());
      }
    return 0;
  });
}
