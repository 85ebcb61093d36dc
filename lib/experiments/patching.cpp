#include "experiments/patching.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

#include "generate/batch.h"
#include "experiments/attribution_patching.h"
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

const std::vector<std::string>& default_sites() {
  static const std::vector<std::string> names = {"resid_pre", "attn_out", "ffn_out", "resid_mid", "resid_post", "attn.z"};
  return names;
}

std::string editable_sites() {
  std::string all;
  for (Hook h : editable_hooks()) {
    std::string n = hook_generic_name(h);
    if (n.rfind("layers.L.", 0) == 0) n = n.substr(9);
    all += (all.empty() ? "" : ", ") + n;
  }
  return all;
}

}  // namespace

// Each row's logits after one forward of `prompts` (no padding: all rows have one length) with
// `editor` applied: [T,V] per row, or [1,V] (the last position) when `last_only`.
std::vector<std::vector<float>> patch_row_logits(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts,
                                           HookEditor* editor, bool last_only) {
  const Batch batch = Batch::from_prompts(prompts, PaddingSide::Left, 0);
  const StepInput in{batch.ids_tensor(0), batch.position_ids(0), batch.mask_tensor()};
  const int64_t B = batch.rows(), T = batch.cols();
  const Tensor logits = forward_edited(dec, in, editor, std::vector<int64_t>(size_t(B), T),
                                       last_only ? LogitsFor::LastPosition : LogitsFor::AllPositions);   // [B,T',V]
  const int64_t per_row = logits.dim(1) * logits.dim(2);
  std::vector<std::vector<float>> out;
  for (int64_t b = 0; b < B; ++b) out.emplace_back(logits.f32() + b * per_row, logits.f32() + (b + 1) * per_row);
  return out;
}

// The metric of one row from patch_row_logits: with the last position only, the row is read as a
// one-token prompt (the metric's position is -1 then: last_position_only).
double patch_row_metric(const PatchMetric& metric, const std::vector<float>& logits, const std::vector<int32_t>& ids,
                  int64_t V) {
  const int64_t rows = int64_t(logits.size()) / V;
  return metric.eval(logits.data(), ids.data() + (int64_t(ids.size()) - rows), rows, V);
}

PatchSweep patch_sweep_ends(Decoder& dec, const std::vector<int32_t>& clean, const std::vector<int32_t>& corrupt,
                            const PatchMetric& metric, int64_t V) {
  const bool last_only = metric.last_position_only();
  PatchSweep out;
  out.clean = clean;
  out.corrupt = corrupt;
  out.clean_metric = patch_row_metric(metric, patch_row_logits(dec, {clean}, nullptr, last_only)[0], clean, V);
  out.corrupt_metric = patch_row_metric(metric, patch_row_logits(dec, {corrupt}, nullptr, last_only)[0], corrupt, V);
  return out;
}

TemporaryTrace::~TemporaryTrace() {
  for (const std::string& f : files_) std::remove(f.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

std::string TemporaryTrace::path(const std::string& name) {
  if (dir_.empty()) {
    char tmpl[] = "/tmp/lmscope-patch-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary directory in /tmp");
    dir_ = tmpl;
  }
  files_.push_back(dir_ + "/" + name);
  return files_.back();
}

double PatchMetric::eval(const float* logits, const int32_t* ids, int64_t T, int64_t V) const {
  if (fn) return fn(logits, T, V);
  return metric_value(spec, logits, ids, T, V);
}

bool PatchMetric::last_position_only() const {
  return !fn && spec.kind != MetricSpec::Kind::Loss && spec.pos == -1;
}

PatchMetric parse_patch_metric(const std::string& text, const tok::Tokenizer* tokenizer, int64_t vocab) {
  PatchMetric m;
  m.text = text;
  const size_t colon = text.find(':');
  const std::string kind = colon == std::string::npos ? text : text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "logit_diff" || kind == "logprob" || kind == "loss" || (kind == "prob" && args.rfind("pos=", 0) == 0)) {
    // lib/grad's grammar (grad/metric.h), tokens as lmscope-trace --grad takes them
    m.spec = parse_metric(text, "--metric");
    resolve_metric_tokens(m.spec, vocab, tokenizer ? EncodeFn([tokenizer](const std::string& t) {
      return tokenizer->encode(t, false);
    }) : EncodeFn());
    return m;
  }
  // The short forms, at the last position.
  m.spec.text = text;
  m.spec.option = "--metric";
  m.spec.pos = -1;
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
    m.spec.kind = MetricSpec::Kind::LogitDiff;
    m.spec.ids = {metric_token(args.substr(0, split), tokenizer, text), metric_token(args.substr(split + 1), tokenizer, text)};
  } else if (kind == "prob") {
    m.spec.kind = MetricSpec::Kind::Prob;
    m.spec.ids = {metric_token(args, tokenizer, text)};
  } else {
    throw std::runtime_error("--metric '" + text + "': unknown metric '" + kind +
                             "' (logit_diff:pos=P:A,B, logprob:pos=P:A, prob:pos=P:A, loss:FROM:TO, or at the last "
                             "position logit-diff:A,B and prob:A)");
  }
  for (int32_t id : m.spec.ids)
    if (id >= vocab)
      throw std::runtime_error("metric token #" + std::to_string(id) + " is outside the vocabulary (" +
                               std::to_string(vocab) + ")");
  return m;
}

const std::vector<std::string>& patch_site_names() { return default_sites(); }

int PatchSite::layers(const ModelConfig& cfg) const { return hook_info(hook).per_layer ? cfg.num_layers : 1; }

std::string PatchSite::hook_name(int layer) const {
  if (!hook_info(hook).per_layer) return lmscope::hook_name(hook);
  if (layer >= 0) return lmscope::hook_name(hook, layer);
  return "layers.*." + lmscope::hook_name(hook, 0).substr(9);   // "layers.0." is 9 characters
}

std::string PatchSite::columns_name() const {
  return axis == Axis::Position ? "position" : axis == Axis::Head ? "head" : "neuron";
}

PatchSite parse_patch_site(const std::string& text, const ModelConfig& cfg, int64_t T) {
  PatchSite s;
  s.text = text;
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::string axis = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto bad = [&](const std::string& why) { throw std::runtime_error("--sites: " + why); };
  std::optional<ParsedHook> h = parse_hook_name(name);
  if (!h || h->layer >= 0) h = parse_hook_name("layers.0." + name);
  if (!h || !hook_info(h->id).editable || (hook_info(h->id).per_layer && name.rfind("layers.", 0) == 0))
    bad("unknown site '" + text + "' (the editable hooks, without layers.L.: " + editable_sites() + ")");
  s.hook = h->id;
  const int head_axis = std::max(hook_axis(s.hook, "H"), hook_axis(s.hook, "Hkv"));
  const bool has_neurons = hook_axis(s.hook, "F") >= 0;
  if (axis.empty()) s.axis = head_axis >= 0 ? PatchSite::Axis::Head : PatchSite::Axis::Position;
  else if (axis == "pos") s.axis = PatchSite::Axis::Position;
  else if (axis == "head" && head_axis >= 0) s.axis = PatchSite::Axis::Head;
  else if ((axis == "neuron" || axis.rfind("neuron=", 0) == 0) && has_neurons) s.axis = PatchSite::Axis::Neuron;
  else
    bad("'" + text + "': " + name + " has no axis '" + axis + "' (pos" + (head_axis >= 0 ? ", head" : "") +
        (has_neurons ? ", neuron or neuron=A:B" : "") + ")");
  int64_t n = T;
  if (s.axis == PatchSite::Axis::Head) n = hook_axis(s.hook, "Hkv") >= 0 ? cfg.num_kv_heads : cfg.num_heads;
  if (s.axis == PatchSite::Axis::Neuron) n = cfg.intermediate_size;
  IndexSet chosen;
  if (axis.rfind("neuron=", 0) == 0) {
    try {
      chosen = parse_index_set(axis.substr(7), "'" + text + "': neuron", false);
    } catch (const std::exception& e) {
      bad(e.what());
    }
    for (const auto& [from, to] : chosen.ranges)
      if (from >= n || (to != IndexSet::kOpen && to > n))
        bad("'" + text + "': neurons outside 0.." + std::to_string(n - 1));
  }
  for (int64_t i = 0; i < n; ++i)
    if (chosen.contains(i, n)) s.columns.push_back(i);
  if (s.columns.empty()) bad("'" + text + "': no neuron selected (0.." + std::to_string(n - 1) + ")");
  return s;
}

double pearson(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  std::vector<std::pair<double, double>> xy;
  for (size_t l = 0; l < a.size() && l < b.size(); ++l)
    for (size_t c = 0; c < a[l].size() && c < b[l].size(); ++c)
      if (!std::isnan(a[l][c]) && !std::isnan(b[l][c])) xy.emplace_back(a[l][c], b[l][c]);
  if (xy.size() < 2) return NAN;
  double mx = 0, my = 0;
  for (const auto& [x, y] : xy) {
    mx += x;
    my += y;
  }
  mx /= double(xy.size());
  my /= double(xy.size());
  double sxy = 0, sxx = 0, syy = 0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
    syy += (y - my) * (y - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : NAN;
}

PatchSweep run_patch_sweep(const ModelContext& m, const PatchSweepOptions& opt) {
  const ModelConfig& cfg = m.cfg();
  if (opt.clean.size() != opt.corrupt.size())
    throw std::runtime_error("clean prompt has " + std::to_string(opt.clean.size()) + " tokens, corrupted " +
                             std::to_string(opt.corrupt.size()) + ": patching needs prompts of one length");
  if (!opt.metric.fn)
    for (int32_t id : opt.metric.spec.ids)
      if (id < 0 || id >= cfg.vocab_size) throw std::runtime_error("--metric: token id " + std::to_string(id) + " is outside the vocabulary");
  const int64_t V = cfg.vocab_size, T = int64_t(opt.corrupt.size());
  std::vector<PatchSite> sites;
  for (const std::string& s : opt.sites) sites.push_back(parse_patch_site(s, cfg, T));
  if (opt.rows_per_forward < 1) throw std::runtime_error("--rows-per-forward must be at least 1");
  if (opt.attribution && opt.metric.fn)
    throw std::runtime_error("attribution patching needs a metric it can differentiate (logit_diff, logprob, prob, loss), not a function");
  if (opt.attribution && !opt.weights) throw std::logic_error("run_patch_sweep: attribution needs the weights");

  // The unpatched runs first: a metric position outside the prompt fails here, before the sweep.
  Decoder& dec = *m.decoder;
  const bool last_only = opt.metric.last_position_only();
  PatchSweep out = patch_sweep_ends(dec, opt.clean, opt.corrupt, opt.metric, V);
  const double span = out.clean_metric - out.corrupt_metric;
  auto normalize = [&](double delta) { return span != 0 ? delta / span : NAN; };

  struct Cell {
    size_t grid;
    int layer;
    size_t col;
  };
  std::vector<Cell> cells;
  for (const PatchSite& s : sites) {
    PatchGrid grid;
    grid.site = s.text;
    grid.columns = s.columns_name();
    grid.column_index = s.columns;
    for (int l = 0; l < s.layers(cfg); ++l)
      for (size_t c = 0; c < s.columns.size(); ++c) cells.push_back({out.grids.size(), l, c});
    out.grids.push_back(std::move(grid));
  }
  out.cells = int64_t(cells.size());

  if (opt.attribution) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto estimates = attribution_estimates(m, *opt.weights, sites, opt.clean, opt.corrupt, opt.metric.spec);
    out.attribution_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t g = 0; g < sites.size(); ++g) {
      out.grids[g].attribution = estimates[g].grid;
      out.grids[g].attribution_by_position = estimates[g].by_position;
      out.grids[g].attribution_normalized = estimates[g].grid;
      for (auto& row : out.grids[g].attribution_normalized)
        for (double& v : row) v = normalize(v);
    }
  }
  if (!opt.activation) return out;

  // The clean run's activations at every swept site, step 0 only: the patch source, in
  // opt.clean_trace or a temporary folder of /tmp that goes whatever happens.
  TemporaryTrace temporary;
  std::string clean_trace = opt.clean_trace;
  if (clean_trace.empty()) clean_trace = temporary.path("clean.h5");
  std::string hooks = "tokens.*";
  for (const PatchSite& s : sites) hooks += "," + s.hook_name(-1);
  GenerateOptions g;
  g.prompts = {opt.clean};
  g.max_new_tokens = 1;
  run_traced(m, g, HookSet(hooks, "", cfg.num_layers), clean_trace);

  for (size_t i = 0; i < sites.size(); ++i) {
    const size_t layers = size_t(sites[i].layers(cfg));
    out.grids[i].metric.assign(layers, std::vector<double>(sites[i].columns.size(), 0.0));
    out.grids[i].normalized = out.grids[i].metric;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t total_forwards = (int64_t(cells.size()) + opt.rows_per_forward - 1) / opt.rows_per_forward;
  for (size_t first = 0; first < cells.size(); first += size_t(opt.rows_per_forward)) {
    const size_t n = std::min(cells.size() - first, size_t(opt.rows_per_forward));
    std::vector<InterventionSpec> specs;
    for (size_t r = 0; r < n; ++r) {
      const Cell& c = cells[first + r];
      const PatchSite& site = sites[c.grid];
      const char* selector = site.axis == PatchSite::Axis::Position ? "pos" : site.axis == PatchSite::Axis::Head ? "head" : "neuron";
      InterventionSpec s = parse_intervention(site.hook_name(c.layer) + "[" + selector + "=" +
                                              std::to_string(site.columns[c.col]) + ",row=" + std::to_string(r) + "]=patch(x.h5)");
      s.source = clean_trace;
      specs.push_back(std::move(s));
    }
    Interventions iv(std::move(specs), cfg);
    const auto logits = patch_row_logits(dec, std::vector<std::vector<int32_t>>(n, opt.corrupt), &iv, last_only);
    ++out.forwards;
    if (opt.on_forward) opt.on_forward(out.forwards, total_forwards);
    for (size_t r = 0; r < n; ++r) {
      const Cell& c = cells[first + r];
      const double v = patch_row_metric(opt.metric, logits[r], opt.corrupt, V);
      out.grids[c.grid].metric[size_t(c.layer)][c.col] = v;
      out.grids[c.grid].normalized[size_t(c.layer)][c.col] = normalize(v - out.corrupt_metric);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.attribution)
    for (PatchGrid& grid : out.grids) grid.pearson = pearson(grid.normalized, grid.attribution_normalized);
  return out;
}

}  // namespace lmscope
