// Checks on a rendered report page that several report tests share: the page's rounding, the
// attention heatmap's cell against the trace, and text found after an element in the DOM.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

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

// Where the element with this id starts in the serialized DOM (npos if absent).
inline size_t element_at(const std::string& dom, const std::string& id) { return dom.find("id=\"" + id + "\""); }

// A cell (query, key) of row 0, `head` of an attention probability hook [B,H,T,S] whose value
// differs from its four neighbours by more than twice the page's rounding, so that a page
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
        distinct = distinct && std::fabs(val(q + dq, k + dk) - v) > 2 * digit_tolerance(v);
      if (distinct) return {int(q), int(k)};
    }
  return {-1, -1};
}

// The URL fragment that selects one heatmap cell (the same code path as a hover).
inline std::string cell_fragment(int row, int step, int layer, int head, int q, int k) {
  return "#row=" + std::to_string(row) + "&step=" + std::to_string(step) + "&layer=" + std::to_string(layer) +
         "&head=" + std::to_string(head) + "&q=" + std::to_string(q) + "&k=" + std::to_string(k);
}

// The page (rendered with cell_fragment(0, 0, layer, head, q, k)) shows the trace's value.
inline void expect_heatmap_cell(const std::string& dom, const HookData& p, int layer, int head, int q, int k) {
  const int64_t T = p.shape[2], S = p.shape[3];
  const double want = p.values[size_t((head * T + q) * S + k)];
  EXPECT_EQ(dom_attr(dom, "attn-value", "data-cell"),
            "0,0," + std::to_string(layer) + "," + std::to_string(head) + "," + std::to_string(q) + "," + std::to_string(k));
  const std::string shown = dom_attr(dom, "attn-value", "data-value");
  ASSERT_FALSE(shown.empty()) << dom.substr(0, 2000);
  EXPECT_NEAR(std::stod(shown), want, digit_tolerance(want));
}

}  // namespace lmscope::testing_util
