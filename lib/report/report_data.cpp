#include "report/report_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "io/format_number.h"
#include "report/saliency.h"
#include "tokenizer/ids_text.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "trace/hooks.h"

namespace lmscope {

using nlohmann::json;

double round_significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

namespace {

// A layer's hook: its layer and where the layer number starts and ends in the name
// ("lens.layers.12.topk_ids" -> 12, [12, 14)); layer -1 when the hook is not a layer's.
struct LayerPart {
  int layer = -1;
  size_t begin = 0, end = 0;
};
LayerPart layer_part(const std::string& hook) {
  for (const char* prefix : {"layers.", "kv.", "lens.layers."})
    if (hook.rfind(prefix, 0) == 0) {
      const char* p = hook.c_str() + std::string(prefix).size();
      char* end = nullptr;
      long L = std::strtol(p, &end, 10);
      if (end != p && *end == '.') return {int(L), size_t(p - hook.c_str()), size_t(end - hook.c_str())};
    }
  return {};
}
int layer_of(const std::string& hook) { return layer_part(hook).layer; }

// "layers.12.attn.probs" -> "layers.*.attn.probs" (the hook list in the header, one line per kind).
std::string hook_kind(const std::string& hook) {
  const LayerPart lp = layer_part(hook);
  if (lp.layer < 0) return hook;
  return hook.substr(0, lp.begin) + "*" + hook.substr(lp.end);
}

struct Ctx {
  const TraceReader& tr;
  const tok::Tokenizer* tok;
  std::vector<std::set<std::string>> hooks;   // per step
  std::map<int32_t, std::string> prompt_pieces;
  std::set<int32_t> special_ids;
  int n_layers = 0;

  bool has(int step, const std::string& hook) const { return hooks[size_t(step)].count(hook) > 0; }
  bool anywhere(const std::string& hook) const {
    for (const auto& s : hooks)
      if (s.count(hook)) return true;
    return false;
  }
  std::string piece(int32_t id) const {
    if (tok) try {
        return tok->token_display(id);
      } catch (const std::exception&) {   // an id outside the tokenizer: shown as a number
      }
    auto it = prompt_pieces.find(id);
    return it != prompt_pieces.end() ? it->second : id_piece(id);
  }
  bool special(int32_t id) const {
    if (special_ids.count(id)) return true;
    if (tok) try {
        return tok->is_special(id);
      } catch (const std::exception&) {
      }
    return false;
  }
};

int64_t at(const HookData& d, std::initializer_list<int64_t> idx) {
  int64_t flat = 0, k = 0;
  for (int64_t i : idx) flat = flat * d.shape[size_t(k++)] + i;
  return flat;
}

json header(const Ctx& c) {
  const TraceReader& tr = c.tr;
  json h = json::parse(tr.root_attrs_json());
  h.erase("config_json");   // long; the model path and the shapes below say enough
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(tr.path(), ec);
  h["file"] = tr.path();
  h["file_bytes"] = ec ? -1 : int64_t(bytes);
  std::map<std::string, std::set<int>> kinds;   // kind -> layers
  for (const auto& s : c.hooks)
    for (const std::string& name : s) kinds[hook_kind(name)].insert(layer_of(name));
  json list = json::array();
  for (const auto& [kind, layers] : kinds) {
    std::string line = kind;
    if (kind.find('*') != std::string::npos) line += "  (" + std::to_string(layers.size()) + " layers)";
    list.push_back(line);
  }
  h["hooks_present"] = list;
  h["n_layers"] = c.n_layers;
  return h;
}

// Row b's columns: the padded prompt (step 0's input ids), then one column per generated token.
std::vector<int32_t> row_columns(const Ctx& c, int64_t b, const HookData* gen) {
  std::vector<int32_t> cols;
  if (c.has(0, "tokens.input_ids")) {
    HookData ids = c.tr.read(0, "tokens.input_ids");
    const int64_t T = ids.shape[1];
    for (int64_t t = 0; t < T; ++t) cols.push_back(int32_t(ids.values[size_t(b * T + t)]));
  }
  if (gen)
    for (int64_t n = 0; n < gen->shape[1]; ++n) cols.push_back(int32_t(gen->values[size_t(b * gen->shape[1] + n)]));
  return cols;
}

json token_section(Ctx& c, int64_t B) {
  json rows = json::array();
  std::unique_ptr<HookData> gen;
  if (c.tr.has_generated_ids()) gen = std::make_unique<HookData>(c.tr.generated_ids());
  std::vector<int32_t> mask0;   // step 0's attention mask [B,S]: 0 = a pad column
  int64_t S0 = 0;
  if (c.has(0, "tokens.attention_mask")) {
    HookData m = c.tr.read(0, "tokens.attention_mask");
    S0 = m.shape[1];
    for (double v : m.values) mask0.push_back(int32_t(v));
  }
  for (int64_t b = 0; b < B; ++b) {
    json row;
    const std::string g = "tokenizer/row_" + std::to_string(b) + "/";
    if (c.tr.has_dataset(g + "ids")) {
      const std::vector<int32_t> ids = c.tr.read_ints(g + "ids");
      std::vector<std::string> pieces = c.tr.read_strings(g + "pieces");
      std::vector<std::string> words = c.tr.read_strings(g + "words");
      std::vector<std::string> kinds = c.tr.read_strings(g + "word_kind");
      const std::vector<int32_t> woff = c.tr.read_ints(g + "word_ids_offset");
      row["text"] = c.tr.read_strings(g + "text").at(0);
      json jw = json::array();
      for (size_t w = 0; w + 1 < woff.size() && w < words.size(); ++w) {
        json word = {{"text", words[w]}, {"kind", kinds.at(w)}, {"first", woff[w]},
                     {"end", woff[w + 1]}, {"merges", json::array()}};
        for (int64_t i = std::max(0, woff[w]); i < woff[w + 1] && size_t(i) < ids.size(); ++i) {
          const int32_t id = ids[size_t(i)];
          c.prompt_pieces[id] = pieces.at(size_t(i));
          if (kinds[w] != "bpe") c.special_ids.insert(id);
        }
        jw.push_back(word);
      }
      if (c.tr.has_dataset(g + "merges/word")) {
        const std::vector<int32_t> mw = c.tr.read_ints(g + "merges/word");
        std::vector<std::string> lt = c.tr.read_strings(g + "merges/left_text");
        std::vector<std::string> rt = c.tr.read_strings(g + "merges/right_text");
        std::vector<std::string> mt = c.tr.read_strings(g + "merges/merged_text");
        // SentencePiece (encode_trace.h): the score that chose each merge.
        std::vector<double> score;
        if (c.tr.has_dataset(g + "merges/score")) score = c.tr.read_dataset(g + "merges/score").values;
        for (size_t m = 0; m < mw.size() && m < lt.size() && m < rt.size() && m < mt.size(); ++m) {
          const int32_t w = mw[m];
          std::string merge = lt[m] + " + " + rt[m] + " \u2192 " + mt[m];
          if (m < score.size()) merge += "  (score " + fmt("%g", score[m]) + ")";
          if (w >= 0 && size_t(w) < jw.size()) jw[w]["merges"].push_back(merge);
        }
      }
      if (c.tr.has_dataset(g + "byte_fallback/word")) {   // SentencePiece: characters spelled by bytes
        const std::vector<int32_t> fw = c.tr.read_ints(g + "byte_fallback/word");
        const std::vector<std::string> ft = c.tr.read_strings(g + "byte_fallback/text");
        for (size_t i = 0; i < fw.size() && i < ft.size(); ++i) {
          if (fw[i] < 0 || size_t(fw[i]) >= jw.size()) continue;
          jw[size_t(fw[i])]["merges"].push_back("byte fallback: " + utf8::readable(ft[i]) + " is no token \u2192 " +
                                                tok::byte_token_names(ft[i]));
        }
      }
      row["words"] = jw;
    }
    // The columns the model saw: the padded prompt, then the generated tokens.
    std::vector<int32_t> cols = row_columns(c, b, gen.get());
    const int64_t prompt_cols = c.has(0, "tokens.input_ids") ? c.tr.read(0, "tokens.input_ids").shape[1] : 0;
    json jc = json::array();
    for (size_t s = 0; s < cols.size(); ++s) {
      const bool pad = int64_t(s) < S0 && !mask0.empty() && mask0[size_t(b * S0 + int64_t(s))] == 0;
      json col = {{"id", cols[s]}, {"piece", c.piece(cols[s])}, {"generated", int64_t(s) >= prompt_cols}};
      if (pad) col["pad"] = true;
      else if (c.special(cols[s])) col["special"] = true;
      jc.push_back(col);
    }
    row["columns"] = jc;
    rows.push_back(row);
  }
  return rows;
}

json absent(const std::string& hooks, const std::string& what) {
  return {{"absent", "This trace has no " + what + ". Trace with --hooks '" + hooks + "' to see it."}};
}

// A mask's rows as run lengths (report_data.h, mask_row): `sees(i, s)` says whether row i
// may see column s.
template <typename Sees>
json mask_rows(int64_t rows, int64_t cols, Sees sees) {
  json g = json::array();
  for (int64_t i = 0; i < rows; ++i) {
    json runs = json::array();
    int64_t run = 0;
    bool value = false;   // the first run is of masked columns (0 long when column 0 is seen)
    for (int64_t s = 0; s < cols; ++s) {
      if (sees(i, s) != value) runs.push_back(run), run = 0, value = !value;
      ++run;
    }
    runs.push_back(run);
    g.push_back(runs);
  }
  return g;
}

// An additive mask [B,T,S] (0 = may see), each batch row's grid as run lengths.
json batch_mask_rows(const HookData& d) {
  json rows = json::array();
  for (int64_t b = 0; b < d.shape[0]; ++b)
    rows.push_back(mask_rows(d.shape[1], d.shape[2], [&](int64_t t, int64_t s) { return d.values[size_t(at(d, {b, t, s}))] == 0; }));
  return rows;
}

// The window and which layers slide (the trace's config_json: sliding_window, layer_types),
// for the sliding mask's title; absent when the config does not say.
void sliding_layers(const Ctx& c, json& out) {
  if (!c.tr.has_root_attr("config_json")) return;
  const json cfg = json::parse(c.tr.root_attr_string("config_json"), nullptr, /*allow_exceptions=*/false);
  if (!cfg.is_object()) return;
  if (cfg.contains("sliding_window") && cfg["sliding_window"].is_number_integer()) out["window"] = cfg["sliding_window"];
  if (cfg.contains("layer_types") && cfg["layer_types"].is_array()) {
    json sliding = json::array(), global = json::array();
    for (size_t l = 0; l < cfg["layer_types"].size(); ++l)
      (cfg["layer_types"][l] == "sliding_attention" ? sliding : global).push_back(int(l));
    out["sliding_layers"] = sliding;
    out["global_layers"] = global;
  }
}

json mask_section(const Ctx& c) {
  if (!c.has(0, "mask.combined") && !c.has(0, "mask.causal") && !c.has(0, "mask.padding"))
    return absent("mask.*", "mask.* hooks");
  json out;
  StepInfo si = c.tr.step_info(0);
  out["step"] = 0;
  out["past"] = si.past_length;
  if (c.has(0, "mask.causal")) {
    HookData d = c.tr.read(0, "mask.causal");   // [T,S] 1 = may see
    out["causal"] = mask_rows(d.shape[0], d.shape[1], [&](int64_t t, int64_t s) { return d.values[size_t(at(d, {t, s}))] != 0; });
  }
  if (c.has(0, "mask.padding")) {
    HookData d = c.tr.read(0, "mask.padding");   // [B,S] 1 = real
    out["padding"] = mask_rows(d.shape[0], d.shape[1], [&](int64_t b, int64_t s) { return d.values[size_t(at(d, {b, s}))] != 0; });
  }
  if (c.has(0, "mask.combined")) out["combined"] = batch_mask_rows(c.tr.read(0, "mask.combined"));
  if (c.has(0, "mask.sliding")) {   // Gemma 3's sliding layers
    out["sliding"] = batch_mask_rows(c.tr.read(0, "mask.sliding"));
    sliding_layers(c, out);
  }
  return out;
}

std::string probs_hook(int L) { return "layers." + std::to_string(L) + ".attn.probs"; }

// Every step and layer with probabilities: the overview (each head's last query row: its
// entropy in bits and the key column it attends to most), and, for the chosen steps and layers
// when `stored` is given, the probabilities as the page stores them (report/attention_store.h),
// each read from the trace once.
json attention_section(const Ctx& c, const ReportOptions& opt, int64_t B, std::vector<AttentionPart>* stored) {
  std::vector<int> with_probs;
  for (int L = 0; L < c.n_layers; ++L)
    if (c.anywhere(probs_hook(L))) with_probs.push_back(L);
  if (with_probs.empty()) return absent("layers.*.attn.probs", "attention probabilities (layers.*.attn.probs)");
  const int n_steps = c.tr.n_steps();
  std::vector<int> layers = opt.layers.empty() ? with_probs : opt.layers, steps = opt.steps;
  if (steps.empty())
    for (int st = 0; st < n_steps; ++st) steps.push_back(st);
  const std::set<int> layer_set(layers.begin(), layers.end()), step_set(steps.begin(), steps.end());
  // An intervention on attn.probs (the trace's record names its site) may leave [0, 1] legally.
  const bool probs_edited = c.tr.has_root_attr("interventions") &&
                            c.tr.root_attr_string("interventions").find("attn.probs") != std::string::npos;
  json out;
  out["layers"] = layers;
  out["steps"] = steps;
  json shapes = json::object();   // "step" -> {T, S, past}
  json cells = json::object();    // "step/layer" -> [H, 1 if only the causal triangle is stored]
  json overview = json::object();
  for (int st = 0; st < n_steps; ++st) {
    json per_row = json::array();
    bool any = false;
    std::vector<json> ent(size_t(B), json::array()), top(size_t(B), json::array());
    for (int L = 0; L < c.n_layers; ++L) {
      if (!c.has(st, probs_hook(L))) {
        for (int64_t b = 0; b < B; ++b) ent[size_t(b)].push_back(nullptr), top[size_t(b)].push_back(nullptr);
        continue;
      }
      any = true;
      HookData d = c.tr.read(st, probs_hook(L));
      const int64_t H = d.shape[1], T = d.shape[2], S = d.shape[3];
      for (int64_t b = 0; b < B && b < d.shape[0]; ++b) {
        json e = json::array(), m = json::array();
        for (int64_t h = 0; h < H; ++h) {
          double bits = 0, best = -1;
          int64_t arg = 0;
          for (int64_t s = 0; s < S; ++s) {
            const double p = d.values[size_t(at(d, {b, h, T - 1, s}))];
            if (p > 0) bits -= p * std::log2(p);
            if (p > best) best = p, arg = s;
          }
          e.push_back(round_significant(bits, 4));
          m.push_back(arg);
        }
        ent[size_t(b)].push_back(e);
        top[size_t(b)].push_back(m);
      }
      if (stored && step_set.count(st) && layer_set.count(L)) {
        AttentionPart part{st, L, store_attention(d, "'" + c.tr.path() + "' " + step_group_name(st) + " " + probs_hook(L),
                                                  probs_edited)};
        shapes[std::to_string(st)] = {{"T", T}, {"S", S}, {"past", c.tr.step_info(st).past_length}};
        cells[std::to_string(st) + "/" + std::to_string(L)] = {H, int(part.stored.triangle)};
        stored->push_back(std::move(part));
      }
    }
    if (!any) continue;
    for (int64_t b = 0; b < B; ++b) per_row.push_back({{"entropy", ent[size_t(b)]}, {"top", top[size_t(b)]}});
    overview[std::to_string(st)] = per_row;
  }
  out["shapes"] = shapes;
  out["cells"] = cells;
  out["overview"] = overview;
  return out;
}

// The vector norm of each [.,T,D] position of row b.
std::vector<double> position_norms(const HookData& d, int64_t b) {
  const int64_t T = d.shape[1], D = d.shape[2];
  std::vector<double> n(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double v = d.values[size_t(at(d, {b, t, i}))];
      s += v * v;
    }
    n[size_t(t)] = std::sqrt(s);
  }
  return n;
}

json residual_section(const Ctx& c, int64_t B) {
  std::vector<std::string> stream;   // the rows of the plot: embed, then each layer's resid_post
  std::vector<std::string> labels;
  if (c.anywhere("embed")) stream.push_back("embed"), labels.push_back("embed");
  for (int L = 0; L < c.n_layers; ++L)
    if (c.anywhere("layers." + std::to_string(L) + ".resid_post"))
      stream.push_back("layers." + std::to_string(L) + ".resid_post"), labels.push_back("L" + std::to_string(L));
  if (stream.size() < 2) return absent("embed,layers.*.resid_post", "residual stream (embed, layers.*.resid_post)");
  const int n_steps = c.tr.n_steps();
  // Columns: query t of a step is column past_length + t (an uncached step recomputes earlier
  // columns; they are written again, equal up to rounding).
  int64_t n_cols = 0;
  for (int st = 0; st < n_steps; ++st) n_cols = std::max(n_cols, c.tr.step_info(st).S);
  auto grid = [&](const std::vector<std::string>& hooks) {
    std::vector<std::vector<std::vector<double>>> g(size_t(B), std::vector<std::vector<double>>(
                                                                   hooks.size(), std::vector<double>(size_t(n_cols), NAN)));
    for (int st = 0; st < n_steps; ++st) {
      const int64_t past = c.tr.step_info(st).past_length;
      for (size_t k = 0; k < hooks.size(); ++k) {
        if (!c.has(st, hooks[k])) continue;
        HookData d = c.tr.read(st, hooks[k]);
        for (int64_t b = 0; b < B; ++b) {
          std::vector<double> n = position_norms(d, b);
          for (size_t t = 0; t < n.size(); ++t)
            if (past + int64_t(t) < n_cols) g[size_t(b)][k][size_t(past) + t] = n[t];
        }
      }
    }
    return g;
  };
  auto to_json = [](const std::vector<std::vector<std::vector<double>>>& g) {
    json rows = json::array();
    for (const auto& row : g) {
      json r = json::array();
      for (const auto& line : row) {
        json l = json::array();
        for (double v : line) l.push_back(std::isnan(v) ? json(nullptr) : json(round_significant(v, 4)));
        r.push_back(l);
      }
      rows.push_back(r);
    }
    return rows;
  };
  json out;
  out["labels"] = labels;
  out["norms"] = to_json(grid(stream));
  // Each layer's update split into attention and FFN: ||attn_out|| / (||attn_out|| + ||ffn_out||).
  std::vector<std::string> attn, ffn;
  for (int L = 0; L < c.n_layers; ++L)
    if (c.anywhere("layers." + std::to_string(L) + ".attn_out") && c.anywhere("layers." + std::to_string(L) + ".ffn_out"))
      attn.push_back("layers." + std::to_string(L) + ".attn_out"), ffn.push_back("layers." + std::to_string(L) + ".ffn_out");
  if (attn.empty()) {
    out["share_absent"] = absent("layers.*.attn_out,layers.*.ffn_out", "attn_out / ffn_out hooks")["absent"];
  } else {
    auto ga = grid(attn), gf = grid(ffn);
    json rows = json::array();
    for (int64_t b = 0; b < B; ++b) {
      json r = json::array();
      for (size_t k = 0; k < attn.size(); ++k) {
        double sa = 0, sf = 0;
        for (int64_t s = 0; s < n_cols; ++s)
          if (!std::isnan(ga[size_t(b)][k][size_t(s)]) && !std::isnan(gf[size_t(b)][k][size_t(s)]))
            sa += ga[size_t(b)][k][size_t(s)], sf += gf[size_t(b)][k][size_t(s)];
        r.push_back(sa + sf > 0 ? json(round_significant(sa / (sa + sf), 4)) : json(nullptr));
      }
      rows.push_back(r);
    }
    json layer_names = json::array();
    for (const std::string& h : attn) layer_names.push_back(layer_of(h));
    out["share_layers"] = layer_names;
    out["attn_share"] = rows;
  }
  return out;
}

json generation_section(const Ctx& c, const ReportOptions& opt, int64_t B) {
  const int n_steps = c.tr.n_steps();
  bool any = false;
  for (int st = 0; st < n_steps; ++st) any = any || c.has(st, "logits") || c.has(st, "sample.chosen");
  if (!any) return absent("logits,sample.*", "logits or sampling audit (sample.*)");
  json steps = json::array();
  for (int st = 0; st < n_steps; ++st) {
    json js = {{"step", st}, {"phase", c.tr.step_info(st).phase}};
    json rows = json::array();
    for (int64_t b = 0; b < B; ++b) {
      json r;
      if (c.has(st, "logits")) {   // the last position's distribution over the whole vocabulary
        HookData d = c.tr.read(st, "logits");
        const int64_t T = d.shape[1], V = d.shape[2];
        const double* z = d.values.data() + at(d, {b, T - 1, 0});
        const double mx = *std::max_element(z, z + V);
        // A NaN would break the ranking's ordering (undefined behaviour in partial_sort).
        if (!std::isfinite(mx) || std::any_of(z, z + V, [](double x) { return std::isnan(x); }))
          throw std::runtime_error("'" + c.tr.path() + "' " + step_group_name(st) + " logits, row " + std::to_string(b) +
                                   ": NaN or infinite logits; no next-token distribution to rank");
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
        std::vector<int64_t> idx(static_cast<size_t>(V));
        for (int64_t v = 0; v < V; ++v) idx[size_t(v)] = v;
        const int64_t k = std::min<int64_t>(opt.top_k, V);
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t bb) { return z[a] > z[bb]; });
        json top = json::array();
        for (int64_t i = 0; i < k; ++i) {
          const int32_t id = int32_t(idx[size_t(i)]);
          top.push_back({{"id", id}, {"piece", c.piece(id)}, {"logit", round_significant(z[id], 5)},
                         {"p", round_significant(std::exp(z[id] - mx) / sum, 4)}});
        }
        r["topk"] = top;
      }
      if (c.has(st, "sample.chosen")) {
        json audit;
        // Ids as they are (the reader checked they are int32s); values to 5 significant digits.
        // Rounding an id would name another token (151,643 -> 151,640) or leave int32's range.
        const auto is_id = [](const std::string& h) { return h == "sample.candidates" || h == "sample.chosen"; };
        for (const char* h : {"sample.candidates", "sample.raw", "sample.penalized", "sample.scaled", "sample.probs", "sample.kept"})
          if (c.has(st, h)) {
            HookData d = c.tr.read(st, h);
            json v = json::array();
            for (int64_t i = 0; i < d.shape[1]; ++i) {
              const double x = d.values[size_t(at(d, {b, i}))];
              v.push_back(is_id(h) ? json(int64_t(x)) : json(round_significant(x, 5)));
            }
            audit[std::string(h).substr(7)] = v;
          }
        if (audit.contains("candidates")) {
          json pieces = json::array();
          for (const json& id : audit["candidates"]) pieces.push_back(c.piece(int32_t(id.get<double>())));
          audit["pieces"] = pieces;
        }
        for (const char* h : {"sample.survivors", "sample.u", "sample.chosen", "sample.finished"})
          if (c.has(st, h)) {
            const double x = c.tr.read(st, h).values.at(size_t(b));
            audit[std::string(h).substr(7)] = is_id(h) ? json(int64_t(x)) : json(round_significant(x, 6));
          }
        const int32_t chosen = int32_t(audit["chosen"].get<double>());
        audit["chosen_piece"] = c.piece(chosen);
        audit["settings"] = json::parse(c.tr.step_group_attrs_json(st, "sample"));
        const bool finished = audit.contains("finished") && audit["finished"].get<double>() != 0;
        if (finished) audit["stop"] = "stop token " + c.piece(chosen) + " (row finished)";
        else if (st == n_steps - 1) audit["stop"] = "max-new-tokens reached";
        r["audit"] = audit;
      }
      rows.push_back(r);
    }
    js["rows"] = rows;
    steps.push_back(js);
  }
  return {{"steps", steps}};
}

// The logit lens (docs/lens.md): per row, layer and column, the lens's top tokens and their
// probabilities as stored by lmscope-trace --lens (lens.layers.L.topk_ids / topk_probs), and
// the token that actually came next in that row, which the page marks where the lens agrees.
json lens_section(const Ctx& c, int64_t B) {
  std::vector<int> layers;
  for (int L = 0; L < c.n_layers; ++L)
    if (c.anywhere(hook_name(Hook::LensTopkIds, L)) && c.anywhere(hook_name(Hook::LensTopkProbs, L))) layers.push_back(L);
  if (layers.empty())
    return {{"absent", "This trace has no logit lens (lens.layers.*.topk_ids, lens.layers.*.topk_probs). "
                       "Trace with --lens K (lmscope-trace --lens 10) to see it."}};
  const int n_steps = c.tr.n_steps();
  // Columns as in the residual stream: query t of a step is column past_length + t.
  int64_t n_cols = 0;
  for (int st = 0; st < n_steps; ++st) n_cols = std::max(n_cols, c.tr.step_info(st).S);
  // cells[b][layer index][column]: [[id, p], ...] best first, null where not traced.
  std::vector<std::vector<std::vector<json>>> cells(
      size_t(B), std::vector<std::vector<json>>(layers.size(), std::vector<json>(size_t(n_cols), nullptr)));
  std::set<int32_t> ids_seen;
  int64_t K = 0;
  for (int st = 0; st < n_steps; ++st) {
    const int64_t past = c.tr.step_info(st).past_length;
    for (size_t li = 0; li < layers.size(); ++li) {
      const std::string ids_hook = hook_name(Hook::LensTopkIds, layers[li]), probs_hook = hook_name(Hook::LensTopkProbs, layers[li]);
      if (!c.has(st, ids_hook) || !c.has(st, probs_hook)) continue;
      HookData ids = c.tr.read(st, ids_hook), probs = c.tr.read(st, probs_hook);   // [B,T,K]
      if (ids.shape != probs.shape || ids.shape.size() != 3)
        throw std::runtime_error("'" + c.tr.path() + "': step " + std::to_string(st) + ": " + ids_hook + " and " +
                                 probs_hook + " differ in shape or are not [B,T,K]");
      const int64_t T = ids.shape[1];
      K = std::max(K, ids.shape[2]);
      const int64_t shown = std::min<int64_t>(ids.shape[2], kLensShown);
      for (int64_t b = 0; b < B && b < ids.shape[0]; ++b)
        for (int64_t t = 0; t < T && past + t < n_cols; ++t) {
          json top = json::array();
          for (int64_t k = 0; k < shown; ++k) {
            const int32_t id = int32_t(ids.values[size_t(at(ids, {b, t, k}))]);
            ids_seen.insert(id);
            top.push_back({id, round_significant(probs.values[size_t(at(probs, {b, t, k}))], kReportDigits)});
          }
          cells[size_t(b)][li][size_t(past + t)] = top;
        }
    }
  }
  std::unique_ptr<HookData> gen;
  if (c.tr.has_generated_ids()) gen = std::make_unique<HookData>(c.tr.generated_ids());
  json rows = json::array();
  for (int64_t b = 0; b < B; ++b) {
    json grid = json::array();
    for (const auto& line : cells[size_t(b)]) grid.push_back(line);
    json next = json::array();   // the token at column s + 1: what the lens at column s predicts
    const std::vector<int32_t> cols = row_columns(c, b, gen.get());
    for (int64_t s = 0; s < n_cols; ++s) next.push_back(size_t(s) + 1 < cols.size() ? json(cols[size_t(s) + 1]) : json(nullptr));
    rows.push_back({{"cells", grid}, {"next", next}});
  }
  json pieces = json::object();
  for (int32_t id : ids_seen) pieces[std::to_string(id)] = c.piece(id);
  return {{"layers", layers}, {"k", K}, {"shown", std::min<int64_t>(K, kLensShown)}, {"rows", rows}, {"pieces", pieces}};
}

}  // namespace

std::vector<bool> mask_row(const json& runs) {
  std::vector<bool> row;
  bool value = false;
  for (const json& n : runs) {
    row.insert(row.end(), size_t(n.get<int64_t>()), value);
    value = !value;
  }
  return row;
}

int trace_layer_count(const TraceReader& tr) {
  int n = 0;
  for (int st = 0; st < tr.n_steps(); ++st)
    for (const std::string& h : tr.hooks(st)) n = std::max(n, layer_of(h) + 1);
  return n;
}

json report_data(const TraceReader& tr, const ReportOptions& opt, const tok::Tokenizer* tokenizer,
                 std::vector<AttentionPart>* attention) {
  Ctx c{tr, tokenizer, {}, {}, {}, 0};
  for (int st = 0; st < tr.n_steps(); ++st) {
    std::vector<std::string> h = tr.hooks(st);
    c.hooks.emplace_back(h.begin(), h.end());
    for (const std::string& name : h) c.n_layers = std::max(c.n_layers, layer_of(name) + 1);
  }
  if (tr.n_steps() == 0) throw std::runtime_error("'" + tr.path() + "' has no steps: nothing to report");
  if (!opt.layers.empty() && c.n_layers == 0)
    throw std::runtime_error("--layers: the trace has no layers.* hooks; trace with --hooks 'layers.*.attn.probs'");
  for (int L : opt.layers)
    if (L < 0 || L >= c.n_layers)
      throw std::runtime_error("--layers: layer " + std::to_string(L) + " is not in the trace (it has " +
                               std::to_string(c.n_layers) + " layers)");
  for (int s : opt.steps)
    if (s < 0 || s >= tr.n_steps())
      throw std::runtime_error("--steps: step " + std::to_string(s) + " is not in the trace (it has " +
                               std::to_string(tr.n_steps()) + " steps)");
  // The batch size: from the first hook with a B axis.
  int64_t B = 1;
  if (tr.has_generated_ids()) B = tr.generated_ids().shape[0];
  else if (c.has(0, "tokens.input_ids")) B = tr.read(0, "tokens.input_ids").shape[0];

  json j;
  j["rows"] = B;
  j["tokens"] = token_section(c, B);   // fills the prompt pieces the later sections use
  j["header"] = header(c);
  j["masks"] = mask_section(c);
  j["attention"] = attention_section(c, opt, B, attention);
  j["residual"] = residual_section(c, B);
  j["generation"] = generation_section(c, opt, B);
  j["lens"] = lens_section(c, B);
  j["saliency"] = saliency_section(tr);
  if (!c.has(0, "tokens.input_ids"))
    j["tokens_absent"] = absent("tokens.*", "token ids (tokens.input_ids)")["absent"];
  return j;
}

}  // namespace lmscope
