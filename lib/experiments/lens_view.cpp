#include "experiments/lens_view.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "io/format_number.h"

namespace lmscope {

int LensColumn::settles_at() const {
  int from = -1;
  for (const LensLayer& l : layers) {
    const bool top = !l.ids.empty() && l.ids[0] == chosen_id;
    if (!top) from = -1;
    else if (from < 0) from = l.layer;
  }
  return from;
}

int LensColumn::first_top() const {
  for (const LensLayer& l : layers)
    if (!l.ids.empty() && l.ids[0] == chosen_id) return l.layer;
  return -1;
}

void LensCollector::offer(Hook h, int layer, const Tensor& t) {
  if (h != Hook::LensTopkIds && h != Hook::LensTopkProbs) return;
  // [B,T,K]: row 0, the last column (the one whose prediction generation used)
  const int64_t T = t.dim(1), K = t.dim(2), at = (T - 1) * K;
  LensLayer& l = got_[{step_, layer}];
  l.layer = layer;
  if (h == Hook::LensTopkIds) l.ids.assign(t.i32() + at, t.i32() + at + K);
  else l.probs.assign(t.f32() + at, t.f32() + at + K);
}

std::vector<LensColumn> LensCollector::columns(const std::vector<int32_t>& prompt,
                                               const std::vector<int32_t>& generated) const {
  std::vector<LensColumn> cols(generated.size());
  for (size_t s = 0; s < cols.size(); ++s) {
    LensColumn& c = cols[s];
    c.step = int(s);
    c.position = int64_t(prompt.size()) - 1 + int64_t(s);
    c.input_id = s == 0 ? prompt.back() : generated[s - 1];
    c.chosen_id = generated[s];
  }
  for (const auto& [key, layer] : got_)   // map order: by step, then by layer
    if (key.first < int(cols.size())) cols[size_t(key.first)].layers.push_back(layer);
  return cols;
}

namespace {

// At most `cols` display columns of s (whole UTF-8 characters), "…" marking a cut.
std::string clip(const std::string& s, size_t cols) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (++n == cols) {
      size_t rest = i + 1;
      while (rest < s.size() && (static_cast<unsigned char>(s[rest]) & 0xC0) == 0x80) ++rest;
      return rest < s.size() ? s.substr(0, i) + "…" : s;
    }
  }
  return s;
}

// `"piece" 0.43`, padded to a fixed width: a column of the table.
std::string cell(const PieceFn& piece, int32_t id, float p, bool mark) {
  return quoted_piece(clip(piece(id), 10), 12) + fmt("%5.2f", p) + (mark ? "*" : " ");
}

std::string summary_line(const LensColumn& c, const PieceFn& piece) {
  const std::string tok = quoted_piece(piece(c.chosen_id), 0);
  const int settle = c.settles_at(), first = c.first_top();
  if (first < 0) return "  " + tok + " is no traced layer's top token\n";
  return "  " + tok + ": top token first at layer " + std::to_string(first) + ", and from layer " +
         std::to_string(settle) + " on\n";
}

}  // namespace

std::string lens_table_text(const std::vector<LensColumn>& cols, const PieceFn& piece, int top) {
  std::string out;
  if (cols.empty()) return out;
  if (top <= 1) {
    out += "position    ";
    for (const LensColumn& c : cols) out += fmt("%-19.0f", double(c.position));
    out += "\nafter       ";
    for (const LensColumn& c : cols) out += quoted_piece(clip(piece(c.input_id), 15), 19);
    out += "\nchosen      ";
    for (const LensColumn& c : cols) out += quoted_piece(clip(piece(c.chosen_id), 15), 19);
    out += "\nlayer\n";
    for (size_t i = 0; i < cols[0].layers.size(); ++i) {
      out += fmt("%5.0f       ", double(cols[0].layers[i].layer));
      for (const LensColumn& c : cols) {
        const LensLayer& l = c.layers[i];
        out += cell(piece, l.ids[0], l.probs[0], l.ids[0] == c.chosen_id) + "  ";
      }
      out += "\n";
    }
  } else {
    for (const LensColumn& c : cols) {
      out += "position " + std::to_string(c.position) + ", after \"" + piece(c.input_id) + "\", chosen \"" +
             piece(c.chosen_id) + "\"\nlayer\n";
      for (const LensLayer& l : c.layers) {
        out += fmt("%5.0f  ", double(l.layer));
        for (size_t j = 0; j < l.ids.size() && int(j) < top; ++j)
          out += cell(piece, l.ids[j], l.probs[j], l.ids[j] == c.chosen_id) + "  ";
        out += "\n";
      }
    }
  }
  out += "(* = the token generation chose there)\n";
  for (const LensColumn& c : cols) out += summary_line(c, piece);
  return out;
}

std::string lens_json(const std::vector<LensColumn>& cols, const PieceFn& piece) {
  nlohmann::json j = nlohmann::json::array();
  for (const LensColumn& c : cols) {
    nlohmann::json layers = nlohmann::json::array();
    for (const LensLayer& l : c.layers) {
      nlohmann::json pieces = nlohmann::json::array();
      for (int32_t id : l.ids) pieces.push_back(piece(id));
      layers.push_back({{"layer", l.layer}, {"ids", l.ids}, {"pieces", pieces}, {"probs", l.probs}});
    }
    j.push_back({{"step", c.step}, {"position", c.position}, {"input_id", c.input_id},
                 {"input_piece", piece(c.input_id)}, {"chosen_id", c.chosen_id}, {"chosen_piece", piece(c.chosen_id)},
                 {"first_top_layer", c.first_top()}, {"settles_at_layer", c.settles_at()}, {"layers", layers}});
  }
  return nlohmann::json{{"positions", j}}.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lmscope
