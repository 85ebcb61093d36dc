#include "experiments/stepper.h"

#include <termios.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "experiments/run.h"
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

const char* shade(double p) {
  if (std::isnan(p)) return "··";
  if (p < 0.02) return "  ";
  if (p < 0.1) return "░░";
  if (p < 0.3) return "▒▒";
  if (p < 0.6) return "▓▓";
  return "██";
}

// A label cut into cells of two display columns (utf8proc's width: a CJK character fills a
// cell), at most max_cells; a space shows as ␣ so that " world" keeps its leading space.
std::vector<std::string> label_cells(const std::string& label, size_t max_cells) {
  std::vector<std::string> cells(1);
  std::vector<int> widths(1, 0);
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(label.data());
  for (size_t i = 0; i < label.size();) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p + i, utf8proc_ssize_t(label.size() - i), &cp);
    std::string ch = n <= 0 ? "?" : cp == ' ' ? "␣" : label.substr(i, size_t(n));
    i += n <= 0 ? 1 : size_t(n);
    const int w = n <= 0 ? 1 : std::clamp(utf8proc_charwidth(cp), 1, 2);
    if (widths.back() + w > 2) {
      if (cells.size() == max_cells) break;
      cells.emplace_back();
      widths.push_back(0);
    }
    cells.back() += ch;
    widths.back() += w;
  }
  for (size_t c = 0; c < cells.size(); ++c) cells[c] += std::string(size_t(2 - widths[c]), ' ');
  return cells;
}

// "" when every hook named is in `cur`; otherwise the line a page shows instead of its drawing.
std::string not_traced(const std::map<std::string, HookData>& cur, const std::vector<std::string>& names) {
  std::string miss;
  for (const std::string& n : names)
    if (!cur.count(n)) miss += (miss.empty() ? "" : ", ") + n;
  return miss.empty() ? "" : "(not traced: " + miss + "; lmscope-trace --hooks selects them, the default '*' has them all)\n";
}

}  // namespace

std::string shade_grid(const std::vector<double>& values, int64_t rows, int64_t cols,
                       const std::vector<std::string>& row_labels, int64_t col_offset,
                       const std::vector<std::string>& col_labels) {
  std::ostringstream o;
  size_t lw = 0;
  for (const auto& l : row_labels) lw = std::max(lw, l.size());
  if (!col_labels.empty()) {
    std::vector<std::vector<std::string>> cells;
    size_t lines = 0;
    for (int64_t c = 0; c < cols; ++c) {
      cells.push_back(label_cells(size_t(c) < col_labels.size() ? col_labels[size_t(c)] : "", 3));
      lines = std::max(lines, cells.back().size());
    }
    for (size_t l = 0; l < lines; ++l) {
      o << std::string(lw + 2, ' ');
      for (int64_t c = 0; c < cols; ++c) o << (l < cells[size_t(c)].size() ? cells[size_t(c)][l] : "  ");
      o << "\n";
    }
  }
  o << std::string(lw + 2, ' ');
  for (int64_t c = 0; c < cols; ++c) o << (((c + col_offset) % 10 == 0) ? fmt("%-2.0f", double((c + col_offset) / 10 % 10)) : "  ");
  o << "\n" << std::string(lw + 2, ' ');
  for (int64_t c = 0; c < cols; ++c) o << fmt("%-2.0f", double((c + col_offset) % 10));
  o << "\n";
  for (int64_t r = 0; r < rows; ++r) {
    std::string label = size_t(r) < row_labels.size() ? row_labels[size_t(r)] : "";
    o << std::string(lw - label.size(), ' ') << label << " |";
    for (int64_t c = 0; c < cols; ++c) o << shade(values[size_t(r * cols + c)]);
    o << "|\n";
  }
  return o.str();
}

Stepper::Stepper(const ModelConfig& cfg, StepperOptions opt) : cfg_(cfg), opt_(std::move(opt)) {
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
  std::string t = opt_.token_text ? opt_.token_text(id) : "";
  return t.empty() ? std::string("#").append(std::to_string(id)) : std::string("'").append(t).append("'");
}

const HookData* Stepper::get(const std::string& name) const {
  auto it = cur_.find(name);
  return it == cur_.end() ? nullptr : &it->second;
}

void Stepper::page(const std::string& title, const std::function<std::string()>& body, int layer) {
  if (layer < skip_below_layer_) return;
  std::string head = info_.step >= 0 && !title.empty() ? "step " + std::to_string(info_.step) + " (" + info_.phase + ") · " + title
                                                       : title;
  std::string text = body();
  std::fprintf(opt_.out, "\n=== %s ===\n%s", head.c_str(), text.c_str());
  ++pages_shown_;
  if (!opt_.interactive) return;
  shown_.push_back(Shown{std::move(head), std::move(text), info_.step, layer});
  view_ = shown_.size() - 1;
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
    const std::string t = opt_.token_text && id >= 0 ? opt_.token_text(id) : "";
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
  if (get("tokens.input_ids") || get("mask.combined"))
    page("tokens, positions and masks", [&] { return page_inputs(); }, -1);
}

void Stepper::pages_for(Hook h, int layer) {
  const std::string ls = "layer " + std::to_string(layer) + " · ";
  switch (h) {
    case Hook::Embed:
      inputs_page_once();
      page("embeddings", [&] { return page_embed(); }, -1);
      break;
    case Hook::AttnKRope: page(ls + "q/k before and after RoPE", [&] { return page_rope(layer); }, layer); break;
    case Hook::AttnZ: page(ls + "attention", [&] { return page_attention(layer); }, layer); break;
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
    page("layers", [] { return std::string("(no layers.* hooks in the trace: trace them with --hooks 'layers.*', or the default '*')\n"); }, 0);
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
  if (mc) {
    const int64_t B = mc->shape[0], T = mc->shape[1], S = mc->shape[2];
    const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1);
    const int64_t r0 = std::max<int64_t>(0, T - opt_.max_rows), c0 = std::max<int64_t>(0, S - opt_.max_cols);
    std::vector<double> grid;
    std::vector<std::string> labels;
    for (int64_t t = r0; t < T; ++t) {
      labels.push_back(std::string("q").append(std::to_string(S - T + t)));
      for (int64_t s = c0; s < S; ++s) grid.push_back(is_masked(mc->values[size_t((b * T + t) * S + s)]) ? NAN : 1.0);
    }
    o << "\nmask.combined, row " << b << " (query rows x key columns; ██ may attend, ·· masked: "
      << "the future by causality, pads by the padding mask):\n";
    o << shade_grid(grid, T - r0, S - c0, labels, c0, key_labels(b, c0, S));
  }
  return o.str();
}

std::string Stepper::page_embed() const {
  std::ostringstream o;
  const HookData *e = get("embed"), *ids = get("tokens.input_ids");
  if (!e || !ids) return not_traced(cur_, {"embed", "tokens.input_ids"});
  const int64_t B = e->shape[0], T = e->shape[1], D = e->shape[2];
  const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1);
  o << "each token id picks one row of the embedding table (" << cfg_.vocab_size << " x " << D << "); row " << b << ":\n";
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

std::string Stepper::page_attention(int l) const {
  std::ostringstream o;
  const std::string p = "layers." + std::to_string(l) + ".attn.";
  const HookData *pr = get(p + "probs"), *sc = get(p + "scores");
  if (!pr) return not_traced(cur_, {p + "probs"});
  const int64_t B = pr->shape[0], H = pr->shape[1], T = pr->shape[2], S = pr->shape[3];
  const int64_t b = std::clamp<int64_t>(opt_.row, 0, B - 1);
  const int64_t r0 = std::max<int64_t>(0, T - opt_.max_rows), c0 = std::max<int64_t>(0, S - opt_.max_cols);
  o << "softmax(q.k / sqrt(hd) + mask) per head, row " << b << ": query rows x key columns (each column's token "
    << "written downwards, then its position); shades: ' ' < 0.02 <= ░ < 0.1 <= ▒ < 0.3 <= ▓ < 0.6 <= █; ·· masked\n";
  for (int64_t h = 0; h < H; ++h) {
    std::vector<double> grid;
    std::vector<std::string> labels;
    for (int64_t t = r0; t < T; ++t) {
      labels.push_back(std::string("q").append(std::to_string(S - T + t)));
      for (int64_t s = c0; s < S; ++s) {
        const size_t i = size_t(((b * H + h) * T + t) * S + s);
        const bool masked = sc && is_masked(sc->values[i]);
        grid.push_back(masked ? NAN : pr->values[i]);
      }
    }
    // The last query's strongest keys.
    std::vector<int64_t> keys(static_cast<size_t>(S));
    std::iota(keys.begin(), keys.end(), 0);
    const double* last = pr->values.data() + ((b * H + h) * T + T - 1) * S;
    std::stable_sort(keys.begin(), keys.end(), [&](int64_t x, int64_t y) { return last[x] > last[y]; });
    o << "head " << h << " (KV head " << h / std::max<int64_t>(1, H / std::max(1, cfg_.num_kv_heads)) << "); the last query attends most to";
    for (size_t i = 0; i < std::min<size_t>(3, keys.size()); ++i) {
      o << " " << keys[i];
      if (size_t(b) < seq_.size() && size_t(keys[i]) < seq_[size_t(b)].size() && seq_[size_t(b)][size_t(keys[i])] >= 0)
        o << " " << tok(seq_[size_t(b)][size_t(keys[i])]);
      o << " (" << fmt("%.2f", last[keys[i]]) << ")";
    }
    o << "\n" << shade_grid(grid, T - r0, S - c0, labels, c0, key_labels(b, c0, S));
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
    std::string s = token_text ? token_text(id) : "";
    return s.empty() ? std::string("#").append(std::to_string(id)) : s;
  };
  o << "text: \"" << tr.text << "\" -> " << tr.ids.size() << " tokens\n";
  for (const WordTrace& w : tr.words) {
    const char* kind = w.kind == WordTrace::Kind::Bpe ? "bpe" : w.kind == WordTrace::Kind::Added ? "added token" : "added by the post-processor";
    o << "  word \"" << w.text << "\" (" << kind << ")";
    if (w.kind != WordTrace::Kind::Bpe || w.whole_word) {
      o << " -> ";
      for (int32_t id : w.ids) o << "[" << t(id) << "] ";
      o << (w.whole_word ? "(in the vocabulary as it is)" : "") << "\n";
      continue;
    }
    o << ": symbols";
    for (int32_t id : w.symbols) o << " [" << t(id) << "]";
    o << "\n";
    for (const MergeStep& m : w.merges)
      o << "    merge rank " << fmt("%-6.0f", double(m.rank)) << " [" << t(m.left) << "] + [" << t(m.right) << "] -> ["
        << t(m.merged) << "]\n";
    o << "    ids:";
    for (int32_t id : w.ids) o << " " << id;
    o << "\n";
  }
  return o.str();
}

}  // namespace lmscope
