#include "experiments/padding.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "compare/align.h"
#include "tokenizer/ids_text.h"
#include "experiments/divergence_svg.h"
#include "experiments/padding_svg.h"
#include "io/text_file.h"
#include "trace/hooks.h"
#include "trace/select.h"

namespace lmscope {

bool carries_absolute_position(const std::string& hook) {
  static const std::vector<std::string> globs = {"tokens.position_ids", "rope.*", "layers.*.attn.q_rope",
                                                 "layers.*.attn.k_rope", "kv.*.k"};
  return match_any(globs, hook);
}

namespace {

// Where (in the row's own sequence) the largest error of a result sits.
Divergence make_divergence(const HookResult& r, const TraceReader& solo) {
  Divergence d;
  d.step = r.step;
  d.hook = r.hook;
  auto p = parse_hook_name(r.hook);
  d.layer = p ? p->layer : -1;
  d.index = r.argmax_index.empty() ? "" : index_str(r.argmax_index);
  d.max_abs = r.m.max_abs;
  d.bound = r.bound();
  d.reason = r.reason();
  const StepInfo si = solo.step_info(r.step);
  if (p && !r.argmax_index.empty()) {
    const int ti = hook_axis(p->id, "T"), s_i = hook_axis(p->id, "S");
    if (ti >= 0 && size_t(ti) < r.argmax_index.size() && size_t(ti) < r.shape_ref.size())
      d.position = si.S - r.shape_ref[size_t(ti)] + r.argmax_index[size_t(ti)];
    else if (s_i >= 0 && size_t(s_i) < r.argmax_index.size())
      d.position = r.argmax_index[size_t(s_i)];
    else
      d.position = si.S - 1;   // sample.*: decided from the logits of the last token
  }
  return d;
}

std::string quoted(const std::string& s, size_t max = 40) {
  std::string t = s;
  if (t.size() > max) t = t.substr(0, max) + "...";
  for (char& c : t)
    if (c == '\n') c = ' ';
  return "'" + t + "'";
}

std::string range_str(int64_t a, int64_t b) {
  return a == b ? std::to_string(a) : std::to_string(a) + ".." + std::to_string(b);
}

std::string where(const Divergence& d) {
  std::string s = "step " + std::to_string(d.step) + ", " + d.hook;
  if (d.position >= 0) s += ", position " + std::to_string(d.position);
  return s;
}

std::string sentence_for(const PaddingRow& row, const ModeRow& mr, int b, int64_t P, const ModelContext& m) {
  const int64_t len = int64_t(row.prompt.size()), pads = row.pads;
  const std::string rb = "row " + std::to_string(b) + ": ";
  auto departs = [&]() {
    const auto& d = mr.first_divergence_ignoring_positions ? mr.first_divergence_ignoring_positions : mr.first_divergence;
    if (!d) return std::string("its tokens differ from token ") + std::to_string(mr.first_token_difference);
    return "departs at " + where(*d) + " (max abs " + fmt_num(d->max_abs) + " > tol " + fmt_num(d->bound) + ")";
  };
  auto token_note = [&]() {
    if (mr.tokens_equal) return std::string("the text is the same");
    const int k = mr.first_token_difference;
    std::string s = "the text differs from new token " + std::to_string(k);
    if (k >= 0 && size_t(k) < mr.tokens.size() && size_t(k) < row.solo_tokens.size())
      s += " (" + quoted(m.text({mr.tokens[size_t(k)]}), 16) + " instead of " +
           quoted(m.text({row.solo_tokens[size_t(k)]}), 16) + ")";
    return s;
  };
  if (pads == 0) {
    if (mr.matches_solo)
      return rb + "no pads (the longest prompt): the batch gives it the columns and positions it has alone, so it matches";
    return rb + "no pads, yet it " + departs() + "; " + token_note();
  }
  switch (mr.mode) {
    case PaddingMode::Left:
      if (mr.matches_solo)
        return rb + "matches its solo run: its " + std::to_string(pads) +
               " left pads are masked out and its positions come from the mask (" + range_str(0, len - 1) +
               "), as alone";
      return rb + "left padding should match, yet it " + departs() + "; " + token_note();
    case PaddingMode::RightHf: {
      std::string s = rb + "first new token predicted from the PAD at column " + std::to_string(P - 1) +
                      " (its last real token is at column " + std::to_string(len - 1) + ")";
      if (mr.first_token_difference == 0) s += ", so it is " + quoted(m.text({mr.tokens[0]}), 16) + " instead of " +
                                               quoted(m.text({row.solo_tokens[0]}), 16);
      else s += "; that token happened to be the same";
      s += "; new tokens then sit at positions 1, 2, ... (after the pads' 0) instead of " + std::to_string(len) +
           ", " + std::to_string(len + 1) + ", ...";
      s += mr.tokens_equal ? ", yet the text is the same" : ": " + token_note();
      return s;
    }
    case PaddingMode::RightAware:
      if (mr.matches_solo)
        return rb + "next token read at its own last real token (column " + std::to_string(len - 1) +
               ") and new tokens positioned from " + std::to_string(len) + ": matches its solo run (the " +
               std::to_string(pads) + " pads in between stay masked)";
      // A sliding window (Gemma 3) counts columns: a new token written after the pads sees the
      // window's columns, pads among them, and loses real tokens it would see alone.
      if (m.cfg().sliding_window > 0 && P > m.cfg().sliding_window - 1)
        return rb + "right padding " + departs() + ": its new tokens sit after its " + std::to_string(pads) +
               " pads, from column " + std::to_string(P) + ", and a sliding layer reads only the last " +
               std::to_string(m.cfg().sliding_window) + " columns, pads included (alone: the last " +
               std::to_string(m.cfg().sliding_window) + " tokens); " + token_note();
      return rb + "right padding read at the last real token should match, yet it " + departs() + "; " + token_note();
    case PaddingMode::LeftColpos: {
      // Untraced hooks have no error to report: say so rather than print a 0 nobody measured.
      std::string s = rb + "positions are column indices (" + range_str(pads, P - 1) + " instead of " +
                      range_str(0, len - 1) + "): q/k after RoPE " +
                      (mr.q_rope_compared ? "differ by up to " + fmt_num(mr.max_q_rope_err)
                                          : std::string("not traced (--hooks 'layers.*.attn.q_rope')"));
      if (mr.matches_solo)
        s += std::string(", but attention sees only position differences, so ") +
             (mr.scores_compared ? "the scores agree (max " + fmt_num(mr.max_scores_err) + ")"
                                 : "the traced hooks agree") +
             " and " + token_note();
      else
        s += "; RoPE forgives the shift only up to rounding: it " + departs() + "; " + token_note();
      return s;
    }
  }
  return rb;
}

}  // namespace

std::string departure_note(const ModeRow& mr) {
  std::string note = mr.matches_solo ? "matches solo" : "departs";
  if (mr.first_divergence_ignoring_positions) note += ": " + where(*mr.first_divergence_ignoring_positions);
  else if (!mr.tokens_equal) note += ": tokens from " + std::to_string(mr.first_token_difference);
  else if (mr.first_divergence) note += " (positions only: " + where(*mr.first_divergence) + ")";
  return note;
}

PaddingReport run_padding_experiment(const ModelContext& m, const PaddingOptions& opt) {
  if (opt.prompts.size() < 2) throw std::runtime_error("the padding experiment needs at least two prompts");
  if (opt.out_dir.empty()) throw std::runtime_error("no output directory for the traces");
  std::filesystem::create_directories(opt.out_dir);
  const ModelConfig& cfg = m.cfg();
  // The alignment strips pads through tokens.attention_mask: it is always traced.
  HookSet hooks((opt.hooks.empty() ? std::string("*") : opt.hooks) + ",tokens.attention_mask", opt.layers, cfg.num_layers);

  PaddingReport rep;
  rep.num_layers = cfg.num_layers;
  rep.max_new_tokens = opt.max_new_tokens;
  rep.modes = opt.modes;
  for (const auto& p : opt.prompts) rep.width = std::max(rep.width, int64_t(p.size()));

  GenerateOptions base;
  base.max_new_tokens = opt.max_new_tokens;
  base.sampling = opt.sampling;
  base.pad_id = opt.pad_id;
  base.eos_ids = opt.eos_ids;
  base.use_cache = true;

  auto path = [&](const std::string& name) { return (std::filesystem::path(opt.out_dir) / name).string(); };

  // (i) each prompt alone: the reference
  for (size_t i = 0; i < opt.prompts.size(); ++i) {
    PaddingRow row;
    row.prompt = opt.prompts[i];
    row.prompt_text = i < opt.prompt_texts.size() ? opt.prompt_texts[i] : m.text(row.prompt);
    row.pads = rep.width - int64_t(row.prompt.size());
    GenerateOptions o = base;
    o.prompts = {opt.prompts[i]};
    row.solo_trace = path("solo_" + std::to_string(i) + ".h5");
    row.solo_tokens = run_traced(m, o, hooks, row.solo_trace).new_tokens[0];
    rep.rows.push_back(std::move(row));
  }
  // (ii)-(v) batched, one trace per mode
  std::map<PaddingMode, GenerateResult> batch;
  for (PaddingMode mode : opt.modes) {
    GenerateOptions o = with_padding_mode(base, mode);
    o.prompts = opt.prompts;
    batch[mode] = run_traced(m, o, hooks, path(std::string(padding_mode_name(mode)) + ".h5"));
  }

  CompareOptions copts;
  copts.tolerances = opt.tolerances;
  const int L = cfg.num_layers;
  for (size_t b = 0; b < rep.rows.size(); ++b) {
    PaddingRow& row = rep.rows[b];
    TraceReader solo(row.solo_trace);
    for (PaddingMode mode : opt.modes) {
      ModeRow mr;
      mr.mode = mode;
      mr.trace = path(std::string(padding_mode_name(mode)) + ".h5");
      mr.tokens = batch[mode].new_tokens[b];
      const int64_t len = int64_t(row.prompt.size());
      mr.read_column = mode == PaddingMode::RightAware ? len - 1 : rep.width - 1;
      mr.tokens_equal = true;
      for (size_t k = 0; k < std::min(mr.tokens.size(), row.solo_tokens.size()); ++k)
        if (mr.tokens[k] != row.solo_tokens[k]) {
          mr.tokens_equal = false;
          mr.first_token_difference = int(k);
          break;
        }

      TraceReader tr(mr.trace);
      CompareReport cr = compare_aligned(tr, solo, copts, AlignOptions{int(b), 0, false});
      for (auto* v : {&mr.layer_rel_prefill, &mr.layer_rel_decode, &mr.layer_qk_rel_prefill, &mr.layer_qk_rel_decode})
        v->assign(size_t(L + 2), NAN);
      mr.layer_fail.assign(size_t(L + 2), 0);
      mr.layer_qk_fail.assign(size_t(L + 2), 0);
      std::map<std::string, size_t> at;
      bool other_fail = false;
      for (const HookResult& r : cr.results) {
        const double rel = std::isinf(r.m.max_abs) ? INFINITY : r.m.rel;
        auto it = at.find(r.hook);
        if (it == at.end()) {
          at[r.hook] = mr.per_hook.size();
          mr.per_hook.push_back(HookError{r.hook, r.step, r.m.max_abs, rel, r.bound(), r.pass});
        } else {
          HookError& e = mr.per_hook[it->second];
          if (r.m.max_abs > e.max_abs) e = HookError{r.hook, r.step, r.m.max_abs, rel, r.bound(), e.pass && r.pass};
          else e.pass = e.pass && r.pass;
        }
        if (!r.pass) {
          if (!mr.first_divergence) mr.first_divergence = make_divergence(r, solo);
          if (!carries_absolute_position(r.hook)) {
            other_fail = true;
            if (!mr.first_divergence_ignoring_positions)
              mr.first_divergence_ignoring_positions = make_divergence(r, solo);
          }
        }
        int col = -1;
        auto p = parse_hook_name(r.hook);
        if (r.hook == "embed") col = 0;
        else if (r.hook == "logits") col = L + 1;
        else if (p && p->id == Hook::ResidPost) col = 1 + p->layer;
        if (col >= 0) {
          double& v = (r.step == 0 ? mr.layer_rel_prefill : mr.layer_rel_decode)[size_t(col)];
          if (std::isnan(v) || rel > v) v = rel;
          if (!r.pass) mr.layer_fail[size_t(col)] = 1;
        }
        if (p && (p->id == Hook::AttnQRope || p->id == Hook::AttnKRope)) {
          double& v = (r.step == 0 ? mr.layer_qk_rel_prefill : mr.layer_qk_rel_decode)[size_t(1 + p->layer)];
          if (std::isnan(v) || rel > v) v = rel;
          if (!r.pass) mr.layer_qk_fail[size_t(1 + p->layer)] = 1;
        }
        if (p && p->id == Hook::AttnQRope) {
          mr.max_q_rope_err = std::max(mr.max_q_rope_err, r.m.max_abs);
          mr.q_rope_compared = true;
        }
        if (p && p->id == Hook::AttnScores) {
          mr.max_scores_err = std::max(mr.max_scores_err, r.m.max_abs);
          mr.scores_compared = true;
        }
      }
      mr.matches_solo = mr.tokens_equal && !other_fail;
      mr.sentence = sentence_for(row, mr, int(b), rep.width, m);
      row.modes.push_back(std::move(mr));
    }
  }

  // The picture: one panel per row, one line per mode.
  std::vector<std::string> cols = {"embed"};
  for (int l = 0; l < L; ++l) cols.push_back("L" + std::to_string(l));
  cols.push_back("logits");
  std::vector<HeatmapPanel> panels;
  for (size_t b = 0; b < rep.rows.size(); ++b) {
    const PaddingRow& row = rep.rows[b];
    HeatmapPanel p;
    p.title = "row " + std::to_string(b) + ": " + quoted(row.prompt_text) + " (" + std::to_string(row.prompt.size()) +
              " tokens, " + std::to_string(row.pads) + " pads)";
    for (const ModeRow& mr : row.modes) {
      p.row_labels.push_back(padding_mode_name(mr.mode));
      p.values.push_back(mr.layer_rel_prefill);
      p.values_later.push_back(mr.layer_rel_decode);
      p.fail.push_back(mr.layer_fail);
      p.notes.push_back(departure_note(mr));
      if (mr.mode == PaddingMode::LeftColpos && row.pads > 0) {   // what RoPE does not forgive
        p.row_labels.push_back("  its q/k rope");
        p.values.push_back(mr.layer_qk_rel_prefill);
        p.values_later.push_back(mr.layer_qk_rel_decode);
        p.fail.push_back(mr.layer_qk_fail);
        p.notes.push_back("q_rope/k_rope themselves: rotated by " + std::to_string(row.pads) + " more positions");
      }
    }
    panels.push_back(std::move(p));
  }
  rep.svg = heatmap_svg("lmscope-padding: each batch row against its solo run, per layer", cols, panels,
                        {"each cell: the worst relative error of embed, a layer's resid_post or the logits; upper half at the "
                         "prefill (step 0), lower half over the decode steps",
                         "\"its q/k rope\": q_rope/k_rope of each layer; black border: beyond tolerance at some step"});
  write_file_atomic(path("divergence.svg"), rep.svg);
  write_file_atomic(path("padding.svg"), padding_svg(rep, m));
  return rep;
}

namespace {

nlohmann::ordered_json div_json(const std::optional<Divergence>& d) {
  if (!d) return nullptr;
  return {{"step", d->step},         {"hook", d->hook},     {"layer", d->layer},     {"position", d->position},
          {"index", d->index},       {"max_abs", json_num(d->max_abs)},
          {"tolerance", json_num(d->bound)}, {"reason", d->reason}};
}

}  // namespace

std::string padding_report_json(const PaddingReport& r, const ModelContext& m) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t b = 0; b < r.rows.size(); ++b) {
    const PaddingRow& row = r.rows[b];
    nlohmann::ordered_json modes = nlohmann::ordered_json::object();
    for (const ModeRow& mr : row.modes) {
      nlohmann::ordered_json per_hook = nlohmann::ordered_json::object();
      for (const HookError& e : mr.per_hook)
        per_hook[e.hook] = {{"max_abs", json_num(e.max_abs)}, {"rel", json_num(e.rel)}, {"step", e.step},
                            {"tolerance", json_num(e.bound)}, {"pass", e.pass}};
      modes[padding_mode_name(mr.mode)] = {
          {"matches_solo", mr.matches_solo},
          {"tokens_equal", mr.tokens_equal},
          {"first_token_difference", mr.first_token_difference},
          {"first_divergence", div_json(mr.first_divergence)},
          {"first_divergence_ignoring_positions", div_json(mr.first_divergence_ignoring_positions)},
          {"text", m.text(mr.tokens)},
          {"tokens", mr.tokens},
          {"read_column", mr.read_column},
          {"sentence", mr.sentence},
          {"max_error_per_hook", per_hook},
          {"trace", mr.trace}};
    }
    rows.push_back({{"prompt", row.prompt_text},
                    {"prompt_ids", row.prompt},
                    {"pads", row.pads},
                    {"solo", {{"tokens", row.solo_tokens}, {"text", m.text(row.solo_tokens)}, {"trace", row.solo_trace}}},
                    {"modes", modes}});
  }
  nlohmann::ordered_json modes = nlohmann::ordered_json::array();
  for (PaddingMode md : r.modes) modes.push_back(padding_mode_name(md));
  nlohmann::ordered_json j = {{"rows", rows}, {"width", r.width}, {"layers", r.num_layers},
                      {"max_new_tokens", r.max_new_tokens}, {"modes", modes}};
  return j.dump(2);
}

std::string padding_report_text(const PaddingReport& r, const ModelContext& m) {
  std::ostringstream o;
  o << "lmscope-padding: " << r.rows.size() << " prompts batched to " << r.width << " columns, "
    << r.max_new_tokens << " new tokens, " << r.num_layers << " layers\n";
  for (size_t b = 0; b < r.rows.size(); ++b) {
    const PaddingRow& row = r.rows[b];
    o << "\nrow " << b << "  " << quoted(row.prompt_text, 60) << "  (" << row.prompt.size() << " tokens, " << row.pads
      << " pads)\n";
    char buf[512];
    std::snprintf(buf, sizeof buf, "  %-12s %-8s %s  [%s]\n", "solo", "", quoted(m.text(row.solo_tokens), 50).c_str(),
                  join_ids(row.solo_tokens).c_str());
    o << buf;
    for (const ModeRow& mr : row.modes) {
      std::snprintf(buf, sizeof buf, "  %-12s %-8s %s  [%s]\n", padding_mode_name(mr.mode),
                    mr.matches_solo ? "same" : "DIFFERS", quoted(m.text(mr.tokens), 50).c_str(), join_ids(mr.tokens).c_str());
      o << buf;
    }
    o << "  first departure from the solo run (beyond tolerance):\n";
    for (const ModeRow& mr : row.modes) {
      std::string w;
      if (!mr.first_divergence) w = mr.tokens_equal ? "none" : "tokens only, from new token " + std::to_string(mr.first_token_difference);
      else {
        w = where(*mr.first_divergence) + " (max abs " + fmt_num(mr.first_divergence->max_abs) + ", tol " +
            fmt_num(mr.first_divergence->bound) + ")";
        if (mr.first_divergence_ignoring_positions &&
            mr.first_divergence_ignoring_positions->hook != mr.first_divergence->hook)
          w += "; beyond positions: " + where(*mr.first_divergence_ignoring_positions);
        else if (!mr.first_divergence_ignoring_positions)
          w += "; only hooks that carry absolute positions";
      }
      std::snprintf(buf, sizeof buf, "    %-12s %s\n", padding_mode_name(mr.mode), w.c_str());
      o << buf;
    }
    o << "  largest error per hook (hooks beyond tolerance):\n";
    for (const ModeRow& mr : row.modes) {
      std::vector<const HookError*> bad;
      for (const HookError& e : mr.per_hook)
        if (!e.pass) bad.push_back(&e);
      std::string line;
      for (size_t i = 0; i < bad.size() && i < 6; ++i)
        line += (i ? ", " : "") + bad[i]->hook + " " + fmt_num(bad[i]->max_abs) + " (step " + std::to_string(bad[i]->step) + ")";
      if (bad.size() > 6) line += ", ... " + std::to_string(bad.size() - 6) + " more";
      if (bad.empty()) {
        double worst = 0;
        for (const HookError& e : mr.per_hook)
          if (!std::isinf(e.rel)) worst = std::max(worst, e.rel);
        line = "none (worst relative error " + fmt_num(worst) + ")";
      }
      std::snprintf(buf, sizeof buf, "    %-12s ", padding_mode_name(mr.mode));
      o << buf << line << "\n";
    }
    o << "  why:\n";
    for (const ModeRow& mr : row.modes) {   // each mode's sentence, labelled: a row without pads says the same under all
      std::snprintf(buf, sizeof buf, "    %-12s ", padding_mode_name(mr.mode));
      o << buf << mr.sentence << "\n";
    }
  }
  return o.str();
}

}  // namespace lmscope
