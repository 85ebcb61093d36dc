#include "stepper/stepper.h"

#include <termios.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <memory>
#include <sstream>

#include "runs/run.h"
#include "io/format_number.h"
#include "kernels/attention_math.cuh"
#include "tokenizer/encode_trace.h"
#include "tokenizer/ids_text.h"
#include "trace/hooks.h"

namespace lmscope {

namespace {

std::string pad_right(std::string s, size_t n) {
  // Display width ~ code points (good enough for token text).
  size_t cps = 0;
  for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
  if (cps < n) s += std::string(n - cps, ' ');
  return s;
}

double norm(const double* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

std::string vec_str(const double* v, int64_t n, int64_t show = 6) {
  std::string s = "[";
  for (int64_t i = 0; i < std::min(n, show); ++i) {
    if (i) s += ' ';
    s += fmt("%7.3f", v[i]);
  }
  if (n > show) s += " ...";
  return s + "]";
}

// "" when every hook named is in `cur`; otherwise the line a page shows instead of its drawing.
std::string not_traced(const std::map<std::string, HookData>& cur, const std::vector<std::string>& names) {
  std::string miss;
  for (const std::string& n : names)
    if (!cur.count(n)) miss += (miss.empty() ? "" : ", ") + n;
  return miss.empty() ? "" : "(not traced: " + miss + "; lmscope-trace --hooks selects them, --hooks '*' has them all)\n";
}

// One row's grids kept for drawing again: `heads` grids of T query rows x S keys (NaN = masked).
struct GridData {
  int64_t b = 0, heads = 1, T = 0, S = 0, group = 1;
  std::vector<float> values;              // [heads, T, S]
  std::vector<std::string> key_labels;    // per key position (empty: unknown)
  std::vector<std::string> key_names;     // per key position, as tok() writes it ("" unknown)
};

struct Limits {
  int max_cols, max_rows;   // not on a screen (StepperOptions)
};

// The query row drawn last (PageView::query, else the step's last), as an index in 0..T-1.
int64_t query_index(const GridData& g, const PageView& v) {
  return v.query < 0 ? g.T - 1 : std::clamp<int64_t>(v.query - (g.S - g.T), 0, g.T - 1);
}

// The shown keys' tokens whole, on one line under the grid (a page wraps it to the screen):
// the labels above the grid are cut into two-character slices written downwards, which are
// hard to read back. A space is ␣, as above the grid.
std::string key_legend(const std::vector<int64_t>& cols, const std::vector<std::string>& labels) {
  if (labels.empty()) return "";
  std::string o = "keys:";
  for (size_t i = 0; i < cols.size() && i < labels.size(); ++i) {
    if (cols[i] < 0) continue;   // the gap between the sink and the window
    std::string label;
    for (char c : labels[i]) label += c == ' ' ? std::string("\u2423") : std::string(1, c);
    o += "  ";
    o += std::to_string(cols[i]) + " " + label;
  }
  return o + "\n";
}

// Head h's grid: up to max_rows query rows ending at the chosen one, the key window that fits
// (the screen's width, else lim.max_cols), and a line saying what is shown when not all is.
std::string windowed_grid(const GridData& g, int64_t h, const PageView& v, const Limits& lim, int64_t max_rows) {
  const int64_t past = g.S - g.T, t1 = query_index(g, v), t0 = std::max<int64_t>(0, t1 - std::max<int64_t>(1, max_rows) + 1);
  const int64_t label_width = int64_t(std::to_string(g.S - 1).size()) + 1;
  const int64_t cells = v.cols > 0 ? (v.cols - label_width - 3) / 2 : lim.max_cols;
  const int64_t width = cells - kSinkKeys - 1;   // key_window's window after the sink
  const KeyWindow w = key_window(g.S, cells, v.key_back == 0 ? -1 : std::max<int64_t>(kSinkKeys, g.S - width - v.key_back));
  std::vector<double> grid;
  std::vector<std::string> rows, labels;
  for (int64_t t = t0; t <= t1; ++t) {
    rows.push_back(std::string("q").append(std::to_string(past + t)));
    for (int64_t s : w.cols) grid.push_back(s < 0 ? 0.0 : double(g.values[size_t((h * g.T + t) * g.S + s)]));
  }
  if (!g.key_labels.empty())
    for (int64_t s : w.cols) labels.push_back(s < 0 ? "" : g.key_labels[size_t(s)]);
  std::string note = w.note;
  if (v.query >= 0 && (v.query < past || v.query >= g.S))
    note += std::string(note.empty() ? "" : "; ") + "query position " + std::to_string(v.query) + " is not in this step: q" +
            std::to_string(past) + "-q" + std::to_string(g.S - 1);
  if (t0 > 0 || t1 < g.T - 1)
    note += std::string(note.empty() ? "" : "; ") + "query rows q" + std::to_string(past + t0) + "-q" + std::to_string(past + t1) +
            " of q" + std::to_string(past) + "-q" + std::to_string(g.S - 1) + " shown";
  if (!note.empty()) note = "(" + note + (v.rows > 0 ? "; < > move the keys, r N picks a query" : "") + ")\n";
  return note + shade_grid(grid, t1 - t0 + 1, w.cols, rows, labels) + key_legend(w.cols, labels);
}

// draw(max_rows): on a screen, the most query rows for which the page fits its height (the
// title and the footer take 2 lines); else lim.max_rows of them.
std::string fit_rows(const PageView& v, int64_t T, const Limits& lim, const std::function<std::string(int64_t)>& draw) {
  if (v.rows <= 0) return draw(lim.max_rows);
  int64_t rows = T;
  std::string text = draw(rows);
  for (int i = 0; i < 4; ++i) {
    const int64_t excess = int64_t(wrap_lines(text, v.cols).size()) - (v.rows - 2);
    if (excess <= 0 || rows == 1) break;
    rows = std::max<int64_t>(1, std::min(rows, T) - excess);
    text = draw(rows);
  }
  return text;
}

std::string draw_attention(const GridData& g, const PageView& v, const Limits& lim) {
  const bool screen = v.rows > 0;
  const int64_t t = query_index(g, v), h0 = screen ? v.head % g.heads : 0;
  const int64_t h1 = screen ? h0 + 1 : g.heads;
  return fit_rows(v, g.T, lim, [&](int64_t rows) {
    std::ostringstream o;
    o << "softmax(q.k / sqrt(hd) + mask) per head, row " << g.b << ": query rows x key columns (each column's token "
      << "written downwards, then its position; under the grid, each key's token whole); shades: ' ' < 0.02 <= ░ < 0.1 <= ▒ < 0.3 <= ▓ < 0.6 <= █; ·· masked\n";
    for (int64_t h = h0; h < h1; ++h) {
      // The chosen query's strongest keys.
      const float* row = g.values.data() + (h * g.T + t) * g.S;
      std::vector<int64_t> keys(size_t(g.S));
      std::iota(keys.begin(), keys.end(), 0);
      std::stable_sort(keys.begin(), keys.end(), [&](int64_t x, int64_t y) { return row[x] > row[y]; });
      o << "head " << h << (screen ? " of 0-" + std::to_string(g.heads - 1) : std::string()) << " (KV head " << h / g.group << "); "
        << (t == g.T - 1 ? std::string("the last query") : "query q" + std::to_string(g.S - g.T + t)) << " attends most to";
      for (size_t i = 0; i < std::min<size_t>(3, keys.size()); ++i) {
        o << " " << keys[i];
        if (size_t(keys[i]) < g.key_names.size() && !g.key_names[size_t(keys[i])].empty()) o << " " << g.key_names[size_t(keys[i])];
        o << " (" << fmt("%.2f", double(row[keys[i]])) << ")";
      }
      o << "\n" << windowed_grid(g, h, v, lim, rows);
    }
    return o.str();
  });
}

}  // namespace

Stepper::Stepper(const ModelConfig& cfg, StepperOptions opt) : cfg_(cfg), opt_(std::move(opt)) {
  if (!opt_.interactive || opt_.screen_rows < 10 || opt_.screen_cols < 40)   // too small to draw a page in: whole pages
    opt_.screen_rows = opt_.screen_cols = 0;
  if (opt_.interactive) {
    auto* saved = new termios;
    if (tcgetattr(opt_.in_fd, saved) == 0) {
      termios raw = *saved;
      raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
      raw.c_cc[VMIN] = 1;
      raw.c_cc[VTIME] = 0;
      if (tcsetattr(opt_.in_fd, TCSANOW, &raw) == 0) raw_ = true;
    }
    saved_termios_ = saved;
  }
}

Stepper::~Stepper() {
  auto* saved = static_cast<termios*>(saved_termios_);
  if (raw_ && saved) tcsetattr(opt_.in_fd, TCSANOW, saved);
  delete saved;
}

std::string Stepper::tok(int32_t id) const {
  const std::string t = opt_.token_text ? printable_label(opt_.token_text(id)) : "";
  return t.empty() ? std::string("#").append(std::to_string(id)) : std::string("'").append(t).append("'");
}

const HookData* Stepper::get(const std::string& name) const {
  auto it = cur_.find(name);
  return it == cur_.end() ? nullptr : &it->second;
}

void Stepper::page(const std::string& title, const std::function<std::string()>& body, int layer) {
  if (layer < skip_below_layer_ || info_.step < skip_below_step_) return;
  std::string text = body();
  page(title, [text](const PageView&) { return text; }, layer);
}

void Stepper::page(const std::string& title, Render render, int layer) {
  if (layer < skip_below_layer_ || info_.step < skip_below_step_) return;
  std::string head = info_.step >= 0 && !title.empty() ? "step " + std::to_string(info_.step) + " (" + info_.phase + ") · " + title
                                                       : title;
  ++pages_shown_;
  if (!opt_.interactive) {
    std::fprintf(opt_.out, "\n=== %s ===\n%s", head.c_str(), render(view_now_).c_str());
    return;
  }
  shown_.push_back(Shown{std::move(head), std::move(render), info_.step, layer});
  view_ = shown_.size() - 1;
  view_now_.top = 0;
  redraw();
  navigate();
}

void Stepper::begin_step(const StepInfo& info) {
  inputs_page_once();   // the previous step's, when only tokens.* / mask.* were traced
  inputs_page_done_ = false;
  const bool intro = !intro_done_;
  if (intro) {
    intro_done_ = true;
    info_.step = -1;
    for (const std::string& p : opt_.intro_pages) page("tokenizer", [&] { return p; }, -1);
  }
  info_ = info;
  cur_.clear();
  if (!intro) skip_below_layer_ = -1;   // a jump typed on the intro applies to step 0
}

void Stepper::note_input_ids() {
  const HookData* ids = get("tokens.input_ids");
  if (!ids || ids->shape.size() != 2) return;
  const int64_t B = ids->shape[0], T = ids->shape[1];
  seq_.resize(size_t(B));
  for (int64_t b = 0; b < B; ++b) {
    // With a cache the step's ids follow the past_length positions already there; without
    // one past_length is 0 and the ids are the whole sequence.
    seq_[size_t(b)].resize(size_t(std::max<int64_t>(0, info_.past_length)), -1);
    for (int64_t t = 0; t < T; ++t) seq_[size_t(b)].push_back(int32_t(ids->values[size_t(b * T + t)]));
  }
}

std::vector<std::string> Stepper::key_labels(int64_t b, int64_t c0, int64_t S) const {
  if (size_t(b) >= seq_.size() || int64_t(seq_[size_t(b)].size()) < S) return {};
  std::vector<std::string> labels;
  for (int64_t s = c0; s < S; ++s) {
    const int32_t id = seq_[size_t(b)][size_t(s)];
    const std::string t = opt_.token_text && id >= 0 ? printable_label(opt_.token_text(id)) : "";
    if (id < 0) labels.push_back("?");
    else if (t.empty()) labels.push_back(id_piece(id));
    else labels.push_back(t);
  }
  return labels;
}

void Stepper::offer(Hook h, int layer, const Tensor& t) {
  HookData d = to_hook_data(h, layer, t);
  const bool input = d.hook.rfind("tokens.", 0) == 0 || d.hook.rfind("mask.", 0) == 0;
  cur_[d.hook] = std::move(d);
  if (h == Hook::TokensInputIds) note_input_ids();
  if (!input && h != Hook::Embed) inputs_page_once();   // the first hook past the inputs: they are complete
  pages_for(h, layer);
}

// The inputs page comes with the embeddings; when `embed` is not traced, it comes before the
// first later hook, or at the end of the step.
void Stepper::inputs_page_once() {
  if (inputs_page_done_ || !intro_done_ || cur_.empty()) return;
  inputs_page_done_ = true;
  if (!get("tokens.input_ids") && !get("mask.combined")) return;
  if (-1 < skip_below_layer_ || info_.step < skip_below_step_) return;
  page("tokens, positions and masks", mask_render(page_inputs()), -1);
}

void Stepper::pages_for(Hook h, int layer) {
  const std::string ls = "layer " + std::to_string(layer) + " · ";
  switch (h) {
    case Hook::Embed:
      inputs_page_once();
      page("embeddings", [&] { return page_embed(); }, -1);
      break;
    case Hook::AttnKRope: page(ls + "q/k before and after RoPE", [&] { return page_rope(layer); }, layer); break;
    case Hook::AttnZ:
      if (layer >= skip_below_layer_ && info_.step >= skip_below_step_) page(ls + "attention", attention_render(layer), layer);
      break;
    case Hook::ResidPost: page(ls + "FFN", [&] { return page_ffn(layer); }, layer); break;
    case Hook::Logits: page("next-token distribution", [&] { return page_logits(); }, cfg_.num_layers); break;
    case Hook::SampleFinished: page("sampling decision", [&] { return page_sampling(); }, cfg_.num_layers); break;
    default: break;
  }
}

void Stepper::replay_step(const StepInfo& info, std::map<std::string, HookData> hooks) {
  begin_step(info);
  cur_ = std::move(hooks);
  note_input_ids();
  pages_for(Hook::Embed, -1);
  std::vector<int> layers;   // those with a hook in this step
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto it = cur_.lower_bound(p);
    if (it != cur_.end() && it->first.compare(0, p.size(), p) == 0) layers.push_back(l);
  }
  if (layers.empty())
    page("layers", [] { return std::string("(no layers.* hooks in the trace: trace them with --hooks 'layers.*', or the default hooks)\n"); }, 0);
  for (int l : layers)
    for (Hook h : {Hook::AttnKRope, Hook::AttnZ, Hook::ResidPost}) pages_for(h, l);
  pages_for(Hook::Logits, -1);
  pages_for(Hook::SampleFinished, -1);
}

void Stepper::finish() {
  inputs_page_once();
  if (!intro_done_) {
    intro_done_ = true;
    for (const std::string& p : opt_.intro_pages) page("tokenizer", [&] { return p; }, -1);
  }
  std::fprintf(opt_.out, "\n=== end of the walk: %d pages ===\n", pages_shown_);
  std::fflush(opt_.out);
}

// A page that lists a step's T tokens one per line shows the last max_rows of them: when that
// leaves some out, a line says which columns (first_column: the step's first) are above.
std::string Stepper::earlier_columns(int64_t first_column, int64_t T) const {
  const int64_t hidden = T - opt_.max_rows;
  if (hidden <= 0) return "";
  return "        (columns " + std::to_string(first_column) + ".." + std::to_string(first_column + hidden - 1) +
         " are not shown: the last " + std::to_string(opt_.max_rows) + " of this step's " + std::to_string(T) + " tokens follow)\n";
}

std::string Stepper::page_inputs() const {
  std::ostringstream o;
  const HookData *ids = get("tokens.input_ids"), *am = get("tokens.attention_mask"), *pos = get("tokens.position_ids"),
                 *mc = get("mask.combined");
  o << "T = " << info_.T << " new token(s) this step, S = " << info_.S << " key positions (" << info_.past_length
    << " already in the KV cache)\n";
  if (ids && pos) {
    const int64_t B = ids->shape[0], T = ids->shape[1];
    const int64_t S = am ? am->shape[1] : T;
    for (int64_t b = 0; b < B; ++b) {
      o << "row " << b << ":   col  id      token              mask  position\n";
      o << earlier_columns(S - T, T);
      for (int64_t t = std::max<int64_t>(0, T - opt_.max_rows); t < T; ++t) {
        const int32_t id = int32_t(ids->values[size_t(b * T + t)]);
        const int m = am ? int(am->values[size_t(b * S + S - T + t)]) : 1;
        o << "        " << fmt("%4.0f", double(S - T + t)) << "  " << fmt("%-6.0f", double(id)) << "  "
          << pad_right(tok(id), 18) << " " << m << "     " << int(pos->values[size_t(b * T + t)])
          << (m ? "" : "   (pad: masked as a key)") << "\n";
      }
    }
  }
  if (!ids || !pos) o << not_traced(cur_, {"tokens.input_ids", "tokens.position_ids"});
  if (!mc) o << not_traced(cur_, {"mask.combined"});
  return o.str();
}

Stepper::Render Stepper::mask_render(const std::string& table) const {
  const HookData* mc = get("mask.combined");
  if (!mc) return [table](const PageView&) { return table; };
  auto g = std::make_shared<GridData>();
  const int64_t B = mc->shape[0];
  g->b = std::clamp<int64_t>(opt_.row, 0, B - 1);
  g->heads = 1, g->T = mc->shape[1], g->S = mc->shape[2];
  for (int64_t i = 0; i < g->T * g->S; ++i) g->values.push_back(is_masked(mc->values[size_t(g->b * g->T * g->S + i)]) ? NAN : 1.0f);
  g->key_labels = key_labels(g->b, 0, g->S);
  const Limits lim{opt_.max_cols, opt_.max_rows};
  return [g, lim, table](const PageView& v) {
    return fit_rows(v, g->T, lim, [&](int64_t rows) {
      std::ostringstream o;
      o << table << "\nmask.combined, row " << g->b << " (query rows x key columns; ██ may attend, ·· masked: "
        << "the future by causality, pads by the padding mask):\n";
      o << windowed_grid(*g, 0, v, lim, rows);
      return o.str();
    });
  };
}

Stepper::Render Stepper::attention_render(int l) const {
  const std::string p = "layers." + std::to_string(l) + ".attn.";
  const HookData *pr = get(p + "probs"), *sc = get(p + "scores");
  if (!pr) {
    const std::string line = not_traced(cur_, {p + "probs"});
    return [line](const PageView&) { return line; };
  }
  auto g = std::make_shared<GridData>();
  const int64_t B = pr->shape[0], H = pr->shape[1], T = pr->shape[2], S = pr->shape[3];
  g->b = std::clamp<int64_t>(opt_.row, 0, B - 1);
  g->heads = H, g->T = T, g->S = S;
  g->group = H / std::max<int64_t>(1, cfg_.num_kv_heads);
  // Masked cells: from the scores when traced, else from mask.combined (the same -inf-like entries).
  const HookData* mc = get("mask.combined");
  if (mc && (mc->shape.size() != 3 || mc->shape[1] != T || mc->shape[2] != S)) mc = nullptr;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T * S; ++i) {
      const size_t at = size_t((g->b * H + h) * T * S + i);
      const bool masked = sc ? is_masked(sc->values[at]) : mc && is_masked(mc->values[size_t(g->b * T * S + i)]);
      g->values.push_back(masked ? NAN : float(pr->values[at]));
    }
  g->key_labels = key_labels(g->b, 0, S);
  for (int64_t s = 0; s < S; ++s) {
    const bool known = size_t(g->b) < seq_.size() && size_t(s) < seq_[size_t(g->b)].size() && seq_[size_t(g->b)][size_t(s)] >= 0;
    g->key_names.push_back(known ? tok(seq_[size_t(g->b)][size_t(s)]) : "");
  }
  const Limits lim{opt_.max_cols, opt_.max_rows};
  return [g, lim](const PageView& v) { return draw_attention(*g, v, lim); };
}

std::string Stepper::page_embed() const {
  std::ostringstream o;
  const HookData *e = get("embed"), *ids = get("tokens.input_ids");
  if (!e || !ids) return not_traced(cur_, {"embed", "tokens.input_ids"});
  const int64_t B = e->shape[0], T = e->shape[1], D = e->shape[2];
  const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1);
  o << "each token id picks one row of the embedding table (" << cfg_.vocab_size << " x " << D << "); row " << b << ":\n";
  o << earlier_columns(info_.S - T, T);
  for (int64_t t = std::max<int64_t>(0, T - opt_.max_rows); t < T; ++t) {
    const double* v = e->values.data() + (b * T + t) * D;
    const int32_t id = int32_t(ids->values[size_t(b * T + t)]);
    o << "  " << pad_right(tok(id), 16) << " |e| = " << fmt("%7.3f", norm(v, D)) << "  " << vec_str(v, D) << "\n";
  }
  return o.str();
}

std::string Stepper::page_rope(int l) const {
  std::ostringstream o;
  const std::string p = "layers." + std::to_string(l) + ".attn.";
  const HookData *q = get(p + "q"), *qr = get(p + "q_rope"), *k = get(p + "k"), *kr = get(p + "k_rope"),
                 *pos = get("tokens.position_ids"), *cs = get("rope.cos"), *sn = get("rope.sin");
  if (!q || !qr || !k || !kr) return not_traced(cur_, {p + "q", p + "q_rope", p + "k", p + "k_rope"});
  const int64_t B = q->shape[0], H = q->shape[1], T = q->shape[2], hd = q->shape[3], Hkv = k->shape[1];
  const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1), t = T - 1;
  const int position = pos ? int(pos->values[size_t(b * T + t)]) : -1;
  o << "row " << b << ", the last token of this step (position " << position << "). RoPE turns each pair of dims "
    << "(i, i+" << hd / 2 << ") by the angle position x " << fmt("%g", double(cfg_.rope_theta)) << "^(-2i/" << hd
    << "): lengths do not change, and q.k then depends only on the distance between positions.\n";
  if (cs && sn) {
    const double *c = cs->values.data() + (b * T + t) * hd, *s = sn->values.data() + (b * T + t) * hd;
    o << "  cos " << vec_str(c, hd / 2, 4) << "  sin " << vec_str(s, hd / 2, 4) << "  (dims 0..3)\n";
  }
  auto line = [&](const char* what, const HookData* before, const HookData* after, int64_t Hx, int64_t h) {
    const double* a = before->values.data() + ((b * Hx + h) * T + t) * hd;
    const double* r = after->values.data() + ((b * Hx + h) * T + t) * hd;
    o << "  " << what << " head " << h << "  before " << vec_str(a, hd, 5) << " |" << fmt("%.3f", norm(a, hd)) << "|\n";
    o << "          after  " << vec_str(r, hd, 5) << " |" << fmt("%.3f", norm(r, hd)) << "|\n";
  };
  for (int64_t h = 0; h < H; ++h) line("q", q, qr, H, h);
  const int64_t group = H / std::max<int64_t>(1, Hkv);
  for (int64_t h = 0; h < Hkv; ++h) {
    o << "  (k head " << h << " serves q heads " << h * group << ".." << (h + 1) * group - 1 << ")\n";
    line("k", k, kr, Hkv, h);
  }
  return o.str();
}

std::string Stepper::page_ffn(int l) const {
  std::ostringstream o;
  const std::string p = "layers." + std::to_string(l) + ".";
  const HookData *g = get(p + "ffn.gate"), *u = get(p + "ffn.up"), *a = get(p + "ffn.act"), *fo = get(p + "ffn_out"),
                 *rm = get(p + "resid_mid"), *rp = get(p + "resid_post");
  if (!g || !u || !a) return not_traced(cur_, {p + "ffn.gate", p + "ffn.up", p + "ffn.act"});
  const int64_t B = g->shape[0], T = g->shape[1], F = g->shape[2];
  const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1), t = T - 1;
  o << "down(silu(gate) * up), row " << b << ", the last token; F = " << F << " neurons\n";
  auto stats = [&](const char* what, const HookData* d) {
    const double* v = d->values.data() + (b * T + t) * F;
    double mean = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < F; ++i) mean += v[i], sq += v[i] * v[i], mn = std::min(mn, v[i]), mx = std::max(mx, v[i]);
    mean /= double(F);
    const double sd = std::sqrt(std::max(0.0, sq / double(F) - mean * mean));
    o << "  " << pad_right(what, 5) << " mean " << fmt("%8.4f", mean) << "  std " << fmt("%7.4f", sd) << "  min "
      << fmt("%8.4f", mn) << "  max " << fmt("%8.4f", mx) << "\n";
  };
  stats("gate", g);
  stats("up", u);
  stats("act", a);
  const double* av = a->values.data() + (b * T + t) * F;
  const double* gv = g->values.data() + (b * T + t) * F;
  double amax = 0;
  int64_t closed = 0;
  for (int64_t i = 0; i < F; ++i) amax = std::max(amax, std::fabs(av[i]));
  for (int64_t i = 0; i < F; ++i) closed += gv[i] < -2.0;
  int64_t quiet = 0;
  for (int64_t i = 0; i < F; ++i) quiet += std::fabs(av[i]) < 0.01 * amax;
  o << "  " << closed << " of " << F << " gates below -2 (|silu| < 0.24: nearly closed); " << quiet
    << " neurons under 1% of the largest |act|\n";
  std::vector<int64_t> idx(static_cast<size_t>(F));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + std::min<int64_t>(5, F), idx.end(),
                    [&](int64_t x, int64_t y) { return std::fabs(av[x]) > std::fabs(av[y]); });
  o << "  strongest neurons:";
  for (int64_t i = 0; i < std::min<int64_t>(5, F); ++i) o << " " << idx[size_t(i)] << " (" << fmt("%.3f", av[idx[size_t(i)]]) << ")";
  o << "\n";
  if (fo && rm && rp) {
    const int64_t D = fo->shape[2];
    o << "  residual: |resid_mid| " << fmt("%.3f", norm(rm->values.data() + (b * T + t) * D, D)) << " + |ffn_out| "
      << fmt("%.3f", norm(fo->values.data() + (b * T + t) * D, D)) << " -> |resid_post| "
      << fmt("%.3f", norm(rp->values.data() + (b * T + t) * D, D)) << "\n";
  }
  return o.str();
}

std::string Stepper::page_logits() const {
  std::ostringstream o;
  const HookData* lg = get("logits");
  if (!lg) return not_traced(cur_, {"logits"});
  const int64_t B = lg->shape[0], T = lg->shape[1], V = lg->shape[2];
  o << "softmax over the " << V << " logits of the last column (the next token's distribution, before any "
    << "sampling processor)\n";
  for (int64_t b = 0; b < B; ++b) {
    const double* v = lg->values.data() + (b * T + T - 1) * V;
    double mx = *std::max_element(v, v + V), z = 0;
    if (!std::isfinite(mx) || std::any_of(v, v + V, [](double x) { return std::isnan(x); })) {
      o << "row " << b << ": NaN or infinite logits: no distribution to show\n";
      continue;
    }
    for (int64_t i = 0; i < V; ++i) z += std::exp(v[i] - mx);
    std::vector<int64_t> idx(static_cast<size_t>(V));
    std::iota(idx.begin(), idx.end(), 0);
    const int64_t k = std::min<int64_t>(10, V);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t x, int64_t y) { return v[x] > v[y]; });
    o << "row " << b << ":  rank  id      token              logit     prob\n";
    for (int64_t r = 0; r < k; ++r) {
      const int64_t id = idx[size_t(r)];
      const double pr = std::exp(v[id] - mx) / z;
      o << "        " << fmt("%4.0f", double(r + 1)) << "  " << fmt("%-6.0f", double(id)) << "  " << pad_right(tok(int32_t(id)), 18)
        << " " << fmt("%8.3f", v[id]) << "  " << fmt("%6.2f%%", 100 * pr) << "  " << std::string(size_t(std::lround(pr * 30)), '#')
        << "\n";
    }
  }
  return o.str();
}

std::string Stepper::page_sampling() const {
  std::ostringstream o;
  const HookData *cand = get("sample.candidates"), *raw = get("sample.raw"), *pen = get("sample.penalized"),
                 *sc = get("sample.scaled"), *pr = get("sample.probs"), *kept = get("sample.kept"),
                 *surv = get("sample.survivors"), *u = get("sample.u"), *ch = get("sample.chosen"),
                 *fin = get("sample.finished");
  if (!cand || !ch) return not_traced(cur_, {"sample.candidates", "sample.chosen"});
  const SamplingConfig& c = opt_.sampling;
  if (c.do_sample)
    o << "sampling: repetition penalty " << c.repetition_penalty << ", temperature " << c.temperature << ", top-k "
      << c.top_k << (c.top_k == 0 ? " (off)" : "")  << ", top-p " << c.top_p << (c.top_p >= 1 ? " (off)" : "")
      << ", min-p " << c.min_p << (c.min_p <= 0 ? " (off)" : "") << ", seed " << c.seed << "\n";
  else
    o << "greedy: the argmax after the repetition penalty (" << c.repetition_penalty
      << "); no temperature, top-k, top-p or min-p (HF applies them only when sampling)\n";
  // A column whose hook is absent (lmscope-hf-trace records only candidates, raw and the
  // choice) shows "-", and the line above the table names the hooks.
  o << not_traced(cur_, {"sample.raw", "sample.penalized", "sample.scaled", "sample.probs", "sample.kept", "sample.survivors"});
  auto cell = [](const HookData* d, size_t i, const char* f, double scale) {
    return d ? fmt(f, scale * d->values[i]) : std::string(f[1] == '6' ? 6 : 7, ' ') + "-";
  };
  const int64_t B = cand->shape[0], N = cand->shape[1];
  for (int64_t b = 0; b < B; ++b) {
    o << "row " << b << ":  id      token              raw      penalized  scaled    prob     kept\n";
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = size_t(b * N + n);
      const int32_t id = int32_t(cand->values[i]);
      o << "        " << fmt("%-6.0f", double(id)) << "  " << pad_right(tok(id), 18) << " " << cell(raw, i, "%8.3f", 1)
        << "  " << cell(pen, i, "%8.3f", 1) << "  " << cell(sc, i, "%8.3f", 1) << "  " << cell(pr, i, "%6.2f%%", 100)
        << "  " << (!kept ? "-" : kept->values[i] != 0 ? "yes" : "cut") << "\n";
    }
    const int32_t chosen = int32_t(ch->values[size_t(b)]);
    o << "        survivors: " << (surv ? std::to_string(int(surv->values[size_t(b)])) : std::string("-"));
    if (u && u->values[size_t(b)] >= 0)
      o << "; draw u = " << fmt("%.6f", u->values[size_t(b)])
        << ": the first survivor, best first, whose cumulative probability exceeds u";
    else if (!u && c.do_sample)
      o << "; the draw (sample.u) not traced";
    else
      o << "; no draw (greedy)";
    o << "\n        chosen: " << chosen << " " << tok(chosen)
      << (fin && fin->values[size_t(b)] != 0 ? "  (the row is finished: end of sequence)" : "") << "\n";
  }
  return o.str();
}

std::string render_merges_page(const EncodeTrace& tr, const std::function<std::string(int32_t)>& token_text) {
  std::ostringstream o;
  auto t = [&](int32_t id) {
    std::string s = token_text ? printable_label(token_text(id)) : "";
    return s.empty() ? std::string("#").append(std::to_string(id)) : s;
  };
  o << "text: \"" << printable_label(tr.text) << "\" -> " << tr.ids.size() << " tokens\n";
  for (const WordTrace& w : tr.words) {
    const char* kind = w.kind == WordTrace::Kind::Bpe ? "bpe" : w.kind == WordTrace::Kind::Added ? "added token" : "added by the post-processor";
    o << "  word \"" << printable_label(w.text) << "\" (" << kind << ")";
    if (w.kind != WordTrace::Kind::Bpe || w.whole_word) {
      o << " -> ";
      for (int32_t id : w.ids) o << "[" << t(id) << "] ";
      o << (w.whole_word ? "(in the vocabulary as it is)" : "") << "\n";
      continue;
    }
    o << ": symbols";
    for (int32_t id : w.symbols) o << " [" << t(id) << "]";
    o << "\n";
    for (const MergeStep& m : w.merges)   // SentencePiece: chosen by the merged token's score, not a rank
      o << (tr.by_score ? "    merge score " + fmt("%-6g", double(m.score)) : "    merge rank " + fmt("%-6.0f", double(m.rank)))
        << " [" << t(m.left) << "] + [" << t(m.right) << "] -> [" << t(m.merged) << "]\n";
    for (const std::string& c : w.byte_fallback) o << "    byte fallback: \"" << printable_label(c) << "\" is no token\n";
    o << "    ids:";
    for (int32_t id : w.ids) o << " " << id;
    o << "\n";
  }
  return o.str();
}

}  // namespace lmscope
