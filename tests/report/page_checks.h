// Checks on a rendered report page that several report tests share: the page rendered without
// script errors, the attention heatmap's cell against the trace (its quantization), and text
// found after an element in the DOM.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "report/attention_store.h"
#include "tests/report/browser.h"
#include "trace/trace_reader.h"

namespace lmscope::testing_util {

// Half a unit in the last of `digits` significant digits: the page's rounding (kReportDigits
// = 5 for probabilities, 4 for norms).
inline double digit_tolerance(double v, int digits = 5) {
  return v == 0 ? 0 : 0.5 * std::pow(10.0, std::floor(std::log10(std::fabs(v))) - (digits - 1)) * (1 + 1e-9);
}

// The text after `marker`, up to the next '<', searching from `from` (npos: not found -> "").
inline std::string text_after(const std::string& dom, size_t from, const std::string& marker) {
  if (from == std::string::npos) return "";
  const size_t at = dom.find(marker, from);
  if (at == std::string::npos) return "";
  const size_t b = at + marker.size();
  return dom.substr(b, dom.find('<', b) - b);
}

// The heatmap's stored number is the nearest multiple of 1/65535 (report/attention_store.h):
// within half a level of the trace's.
inline double level_tolerance() { return 0.5 / kProbLevels * (1 + 1e-9); }
// What the page prints (6 decimals of the stored number): within 0.00001 of the trace's, as
// docs/report.md says.
constexpr double kShownTolerance = 1e-5;

// The DOM of the page at `url` (a file:// URL with its #fragment) after its scripts ran,
// checked: no script errors, rendering finished.
inline std::string rendered_dom(const std::string& chromium, const std::string& profile, const std::string& url) {
  CliRun dom = dump_dom(chromium, profile, url);
  EXPECT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(dom_text(dom.out, "script-errors"), "") << url;
  EXPECT_EQ(dom_text(dom.out, "render-status"), "rendered") << url;
  return dom.out;
}

// Where the element with this id starts in the serialized DOM (npos if absent).
inline size_t element_at(const std::string& dom, const std::string& id) { return dom.find("id=\"" + id + "\""); }

// A cell (query, key) of row 0, `head` of an attention probability hook [B,H,T,S] whose value
// differs from its four neighbours by more than twice the page's quantization, so that a page
// showing a wrong index cannot pass; the last query row first. {-1, -1} if there is none.
inline std::pair<int, int> distinct_cell(const HookData& p, int head) {
  const int64_t T = p.shape[2], S = p.shape[3];
  auto val = [&](int64_t q, int64_t k) { return p.values[size_t((head * T + q) * S + k)]; };
  for (int64_t q = T - 2; q >= 1; --q)
    for (int64_t k = 1; k + 1 < S && k <= q; ++k) {
      const double v = val(q, k);
      if (v <= 0) continue;
      bool distinct = true;
      for (auto [dq, dk] : {std::pair{0, 1}, {0, -1}, {1, 0}, {-1, 0}})
        distinct = distinct && std::fabs(val(q + dq, k + dk) - v) > 2 * level_tolerance();
      if (distinct) return {int(q), int(k)};
    }
  return {-1, -1};
}

// The URL fragment that selects one heatmap cell (the same code path as a hover).
inline std::string cell_fragment(int row, int step, int layer, int head, int q, int k) {
  return "#row=" + std::to_string(row) + "&step=" + std::to_string(step) + "&layer=" + std::to_string(layer) +
         "&head=" + std::to_string(head) + "&q=" + std::to_string(q) + "&k=" + std::to_string(k);
}

// The page (rendered with cell_fragment(0, step, layer, head, q, k)) shows row 0's value of
// the trace's probabilities `p` of that step and layer: the stored number within half a level,
// the printed one within kShownTolerance.
inline void expect_heatmap_cell(const std::string& dom, const HookData& p, int layer, int head, int q, int k, int step = 0) {
  const int64_t T = p.shape[2], S = p.shape[3];
  const double want = p.values[size_t((head * T + q) * S + k)];
  EXPECT_EQ(dom_attr(dom, "attn-value", "data-cell"), "0," + std::to_string(step) + "," + std::to_string(layer) + "," +
                                                          std::to_string(head) + "," + std::to_string(q) + "," + std::to_string(k));
  const std::string stored = dom_attr(dom, "attn-value", "data-value");
  ASSERT_FALSE(stored.empty()) << dom.substr(0, 2000);
  EXPECT_NEAR(std::stod(stored), want, level_tolerance());
  const std::string text = dom_text(dom, "attn-value");
  const size_t eq = text.rfind("= ");
  ASSERT_NE(eq, std::string::npos) << text;
  EXPECT_EQ(text.size() - eq - 2, 8u) << "6 decimals: " << text;
  EXPECT_NEAR(std::stod(text.substr(eq + 2)), want, kShownTolerance) << text;
}

}  // namespace lmscope::testing_util
