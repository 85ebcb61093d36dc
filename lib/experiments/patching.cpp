#include "experiments/patching.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "generate/batch.h"
#include "generate/edited_forward.h"
#include "intervene/interventions.h"

namespace lmscope {

namespace {

// A metric token: "#123", or text (quotes kept off) that must be one token.
int32_t metric_token(const std::string& raw, const tok::Tokenizer* tk, const std::string& metric) {
  std::string t = trim_blanks(raw);
  if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) t = t.substr(1, t.size() - 2);
  if (t.size() > 1 && t[0] == '#' && t.find_first_not_of("0123456789", 1) == std::string::npos) {
    if (t.size() > 10)   // more than nine digits: past any vocabulary (and past what stoi takes)
      throw std::runtime_error("--metric '" + metric + "': " + t + " is not a token id of any vocabulary");
    return std::stoi(t.substr(1));
  }
  if (t.empty()) throw std::runtime_error("--metric '" + metric + "': an empty token");
  if (!tk) throw std::runtime_error("--metric '" + metric + "': no tokenizer to encode '" + t + "' (write ids as #123)");
  const std::vector<int32_t> ids = tk->encode(t, false);
  if (ids.size() != 1) {
    std::string shown;
    for (int32_t id : ids) {
      if (!shown.empty()) shown += ' ';
      shown += tk->token_display(id);
    }
    throw std::runtime_error("--metric '" + metric + "': '" + t + "' is " + std::to_string(ids.size()) +
                             " tokens (" + shown + "), the metric needs one");
  }
  return ids[0];
}

// Each row's logits at the last position, after one forward of `prompts` (no padding: all
// rows have one length) with `editor` applied.
std::vector<std::vector<float>> last_logits(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts,
                                            HookEditor* editor) {
  const Batch batch = Batch::from_prompts(prompts, PaddingSide::Left, 0);
  const StepInput in{batch.ids_tensor(0), batch.position_ids(0), batch.mask_tensor()};
  const int64_t B = batch.rows(), T = batch.cols();
  const Tensor logits = forward_edited(dec, in, editor, std::vector<int64_t>(size_t(B), T), LogitsFor::LastPosition);   // [B,1,V]
  const int64_t V = logits.dim(2);
  std::vector<std::vector<float>> out;
  for (int64_t b = 0; b < B; ++b) out.emplace_back(logits.f32() + b * V, logits.f32() + (b + 1) * V);
  return out;
}

}  // namespace

double PatchMetric::eval(const float* logits, int64_t V) const {
  if (kind == Kind::LogitDiff) return double(logits[good]) - double(logits[bad]);
  double mx = logits[0];
  for (int64_t i = 1; i < V; ++i) mx = std::max(mx, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(double(logits[i]) - mx);
  return std::exp(double(logits[good]) - mx) / sum;
}

PatchMetric parse_patch_metric(const std::string& text, const tok::Tokenizer* tokenizer) {
  PatchMetric m;
  m.text = text;
  const size_t colon = text.find(':');
  const std::string kind = colon == std::string::npos ? text : text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "logit-diff") {
    // split at the comma between the two tokens (a quoted token may hold a comma)
    size_t split = std::string::npos;
    char quote = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (quote) quote = args[i] == quote ? 0 : quote;
      else if (args[i] == '"' || args[i] == '\'') quote = args[i];
      else if (args[i] == ',') split = i;
    }
    if (split == std::string::npos) throw std::runtime_error("--metric '" + text + "': logit-diff needs two tokens: logit-diff:\" Paris\",\" Rome\"");
    m.kind = PatchMetric::Kind::LogitDiff;
    m.good = metric_token(args.substr(0, split), tokenizer, text);
    m.bad = metric_token(args.substr(split + 1), tokenizer, text);
  } else if (kind == "prob") {
    m.kind = PatchMetric::Kind::Prob;
    m.good = metric_token(args, tokenizer, text);
  } else {
    throw std::runtime_error("--metric '" + text + "': unknown metric '" + kind + "' (logit-diff:A,B or prob:A)");
  }
  return m;
}

const std::vector<std::string>& patch_site_names() {
  static const std::vector<std::string> names = {"resid_pre", "attn_out", "ffn_out", "resid_mid", "resid_post", "attn.z"};
  return names;
}

PatchSweep run_patch_sweep(const ModelContext& m, const PatchSweepOptions& opt) {
  const ModelConfig& cfg = m.cfg();
  if (opt.clean.size() != opt.corrupt.size())
    throw std::runtime_error("clean prompt has " + std::to_string(opt.clean.size()) + " tokens, corrupted " +
                             std::to_string(opt.corrupt.size()) + ": patching needs prompts of one length");
  for (int32_t id : {opt.metric.good, opt.metric.bad})
    if (id >= cfg.vocab_size) throw std::runtime_error("--metric: token id " + std::to_string(id) + " is outside the vocabulary");
  for (const std::string& s : opt.sites)
    if (std::find(patch_site_names().begin(), patch_site_names().end(), s) == patch_site_names().end())
      throw std::runtime_error("--sites: unknown site '" + s + "' (resid_pre, attn_out, ffn_out, resid_mid, resid_post, attn.z)");
  if (opt.rows_per_forward < 1) throw std::runtime_error("--rows-per-forward must be at least 1");

  // The clean run's activations at every swept site, step 0 only: the patch source.
  std::string hooks;
  for (const std::string& s : opt.sites) {
    hooks += ",layers.*.";
    hooks += s;
  }
  GenerateOptions g;
  g.prompts = {opt.clean};
  g.max_new_tokens = 1;
  run_traced(m, g, HookSet("tokens.*" + hooks, "", cfg.num_layers), opt.clean_trace);

  Decoder& dec = *m.decoder;
  const int64_t V = cfg.vocab_size, T = int64_t(opt.corrupt.size());
  PatchSweep out;
  out.clean = opt.clean;
  out.corrupt = opt.corrupt;
  out.clean_metric = opt.metric.eval(last_logits(dec, {opt.clean}, nullptr)[0].data(), V);
  out.corrupt_metric = opt.metric.eval(last_logits(dec, {opt.corrupt}, nullptr)[0].data(), V);
  const double span = out.clean_metric - out.corrupt_metric;

  struct Cell {
    size_t grid;
    int layer, col;
  };
  std::vector<Cell> cells;
  for (const std::string& s : opt.sites) {
    PatchGrid grid;
    grid.site = s;
    grid.columns = s == "attn.z" ? "head" : "position";
    const int cols = s == "attn.z" ? cfg.num_heads : int(T);
    grid.metric.assign(size_t(cfg.num_layers), std::vector<double>(size_t(cols), 0.0));
    grid.normalized = grid.metric;
    for (int l = 0; l < cfg.num_layers; ++l)
      for (int c = 0; c < cols; ++c) cells.push_back({out.grids.size(), l, c});
    out.grids.push_back(std::move(grid));
  }

  const auto t0 = std::chrono::steady_clock::now();
  const int64_t total_forwards = (int64_t(cells.size()) + opt.rows_per_forward - 1) / opt.rows_per_forward;
  for (size_t first = 0; first < cells.size(); first += size_t(opt.rows_per_forward)) {
    const size_t n = std::min(cells.size() - first, size_t(opt.rows_per_forward));
    std::vector<InterventionSpec> specs;
    for (size_t r = 0; r < n; ++r) {
      const Cell& c = cells[first + r];
      const std::string& site = out.grids[c.grid].site;
      const std::string sel = site == "attn.z" ? "head=" + std::to_string(c.col) : "pos=" + std::to_string(c.col);
      InterventionSpec s = parse_intervention("layers." + std::to_string(c.layer) + "." + site + "[" + sel +
                                              ",row=" + std::to_string(r) + "]=patch(x.h5)");
      s.source = opt.clean_trace;
      specs.push_back(std::move(s));
    }
    Interventions iv(std::move(specs), cfg);
    const auto logits = last_logits(dec, std::vector<std::vector<int32_t>>(n, opt.corrupt), &iv);
    ++out.forwards;
    if (opt.on_forward) opt.on_forward(out.forwards, total_forwards);
    for (size_t r = 0; r < n; ++r) {
      const Cell& c = cells[first + r];
      const double v = opt.metric.eval(logits[r].data(), V);
      out.grids[c.grid].metric[size_t(c.layer)][size_t(c.col)] = v;
      out.grids[c.grid].normalized[size_t(c.layer)][size_t(c.col)] = span != 0 ? (v - out.corrupt_metric) / span : NAN;
    }
  }
  out.cells = int64_t(cells.size());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace lmscope
