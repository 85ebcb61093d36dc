#include "report/report_svg.h"

#include <cstdio>
#include <stdexcept>

#include "report/grid_svg.h"
#include "report/report_data.h"

namespace lmscope {

using nlohmann::json;

namespace {

// The label of column s of a row: its token piece, "PAD" for padding.
std::string column_label(const json& data, int row, int64_t s) {
  const json& cols = data["tokens"][size_t(row)]["columns"];
  if (s < 0 || size_t(s) >= cols.size()) return std::to_string(s);
  const json& c = cols[size_t(s)];
  return c.value("pad", false) ? "PAD" : c["piece"].get<std::string>();
}

void check_row(const json& data, int row) {
  if (row < 0 || row >= data["rows"].get<int>())
    throw std::runtime_error("--row " + std::to_string(row) + ": the trace has " + std::to_string(data["rows"].get<int>()) + " row(s)");
}

// The range within [lo, hi] (all of it when not given), or one line naming the option.
std::pair<int64_t, int64_t> within(ColumnRange r, int64_t lo, int64_t hi, const std::string& option) {
  if (r.first < 0) return {lo, hi};
  if (r.first < lo || r.last > hi)
    throw std::runtime_error(option + " " + std::to_string(r.first) + "-" + std::to_string(r.last) + ": this step's columns are " +
                             std::to_string(lo) + "-" + std::to_string(hi));
  return {r.first, r.last};
}

}  // namespace

ColumnRange parse_column_range(const std::string& text, const std::string& option) {
  ColumnRange r;
  char tail = 0;
  long long a = -1, b = -1;
  if (std::sscanf(text.c_str(), "%lld-%lld%c", &a, &b, &tail) != 2 || a < 0 || b < a)
    throw std::runtime_error(option + " '" + text + "': give columns as FIRST-LAST, e.g. 0-120");
  r.first = a;
  r.last = b;
  return r;
}

std::string attention_svg(const json& data, const TraceReader& tr, int step, int layer, int head, int row, ColumnRange queries,
                          ColumnRange keys) {
  check_row(data, row);
  const json& a = data["attention"];
  if (a.contains("absent")) throw std::runtime_error(a["absent"].get<std::string>());
  const std::string hook = "layers." + std::to_string(layer) + ".attn.probs";
  if (step < 0 || step >= tr.n_steps() || !tr.has_hook(step, hook))
    throw std::runtime_error("the trace has no " + hook + " at step " + std::to_string(step) +
                             "; trace with --hooks 'layers.*.attn.probs'");
  const HookData d = tr.read(step, hook);   // [B,H,T,S]
  const int64_t H = d.shape[1], T = d.shape[2], S = d.shape[3], past = tr.step_info(step).past_length;
  if (head < 0 || head >= H)
    throw std::runtime_error("--head " + std::to_string(head) + ": the layer has " + std::to_string(H) + " heads (0.." +
                             std::to_string(H - 1) + ")");
  const std::vector<double>& p = d.values;
  GridPicture g;
  g.title = "Attention probabilities: layer " + std::to_string(layer) + ", head " + std::to_string(head) + ", step " +
            std::to_string(step) + (step == 0 ? " (prefill)" : " (decode)");
  g.x_label = "key token (column it reads from)";
  g.y_label = "query token (position reading)";
  const auto [q0, q1] = within(queries, past, past + T - 1, "--queries");   // columns
  const auto [k0, k1] = within(keys, 0, S - 1, "--keys");
  for (int64_t c = q0; c <= q1; ++c) g.row_labels.push_back(column_label(data, row, c));
  for (int64_t s = k0; s <= k1; ++s) g.col_labels.push_back(column_label(data, row, s));
  for (int64_t q = q0 - past; q <= q1 - past; ++q) {
    std::vector<double> line;
    for (int64_t s = k0; s <= k1; ++s) line.push_back(p[size_t(((row * H + head) * T + q) * S + s)]);
    g.values.push_back(line);
  }
  g.blocks = GridPicture::Blocks::RowsAverageColumnsAdd;
  g.legend = "probability (softmax, each row sums to 1)";
  g.legend_stops = {{0, "0"}, {0.5, "0.5"}, {1, "1"}};
  g.print_values = true;
  // A prefill has a triangle of future keys; a decode step's one query row sees every key.
  g.caption = T > 1 ? "Row = a token looking back; column = a token it may read. White cells above the diagonal: masked (future)."
                    : "One query row: the new token reading the tokens before it and itself (no future to mask).";
  if (q1 - q0 + 1 < T || k1 - k0 + 1 < S)
    g.caption += " Cropped to query columns " + std::to_string(q0) + "\u2013" + std::to_string(q1) + " and key columns " +
                 std::to_string(k0) + "\u2013" + std::to_string(k1) + " (of " + std::to_string(past) + "\u2013" +
                 std::to_string(past + T - 1) + " and 0\u2013" + std::to_string(S - 1) + ").";
  return grid_svg(g);
}

std::string mask_svg(const json& data, int row, const std::string& which) {
  check_row(data, row);
  const json& m = data["masks"];
  if (m.contains("absent")) throw std::runtime_error(m["absent"].get<std::string>());
  const bool sliding = which == "sliding";
  if (!m.contains(which))
    throw std::runtime_error(sliding ? "--mask sliding: the trace has no mask.sliding (only Gemma 3's sliding layers have one; "
                                       "trace with --hooks 'mask.*')"
                                     : "the trace has no mask.combined; trace with --hooks 'mask.*'");
  const json& grid = m[which][size_t(row)];
  const int64_t past = m["past"];
  GridPicture g;
  g.title = sliding ? "Sliding-window mask" + (m.contains("window") ? " (window " + m["window"].dump() + ")" : std::string()) +
                          ", row " + std::to_string(row) + ", prefill"
                    : "Attention mask (combined causal + padding), row " + std::to_string(row) + ", prefill";
  g.x_label = "key token (column)";
  g.y_label = "query token";
  for (const json& runs : grid) {
    std::vector<double> v;
    for (bool sees : mask_row(runs)) v.push_back(sees ? 0.85 : 0.0);
    g.values.push_back(v);
  }
  for (size_t q = 0; q < g.values.size(); ++q) g.row_labels.push_back(column_label(data, row, past + int64_t(q)));
  for (size_t s = 0; s < g.values.at(0).size(); ++s) g.col_labels.push_back(column_label(data, row, int64_t(s)));
  g.legend = "may attend";
  g.legend_stops = {{0, "masked"}, {0.85, "allowed"}};
  g.caption = sliding ? "Blue: a sliding layer's query may read that key. White: masked (a future token, padding, or a key "
                        "the window has left behind)."
                      : "Blue: the query may read that key. White: masked (a future token, or padding).";
  return grid_svg(g);
}

}  // namespace lmscope
