// What lmscope-report shows, read from a trace (docs/report.md): one JSON object that the
// page's script draws. Each section is present when the trace has the hooks it needs; an
// absent section carries the sentence that says what to trace instead.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trace/trace_reader.h"

namespace lmscope {
namespace tok {
class Tokenizer;
}

struct ReportOptions {
  std::vector<int> layers;   // attention heatmaps of these layers; empty: up to 5, evenly spread,
                             // fewer when the prefill is long (kAttentionBudget)
  std::vector<int> steps;    // ... at these steps; empty: the prefill, the first decode step, the middle and the last
  int top_k = 10;            // candidates shown per generation step
};

// The layers / steps drawn when none are chosen: all when there are few, otherwise an even
// sample that keeps the first and the last (bounds the page's size, docs/report.md).
std::vector<int> sample_indices(int n, int at_most);

// Significant digits of the attention probabilities in the page (the heatmap shows the
// stored number; tests compare it with the trace within half a unit of the last digit).
constexpr int kReportDigits = 5;
// The attention numbers the default layer choice aims for (about 8 bytes each in the page).
constexpr double kAttentionBudget = 250000;
double round_significant(double v, int digits);
// The logit lens's tokens per cell the page holds (the top one drawn, these on hover): the
// trace may keep more (lmscope-trace --lens K), which would only make the page larger.
constexpr int kLensShown = 3;

// tokenizer: gives pieces for generated and candidate ids (null: the trace's own prompt
// pieces, else "#id"). Throws one line for a --layers / --steps outside the trace.
nlohmann::json report_data(const TraceReader& tr, const ReportOptions& opt, const tok::Tokenizer* tokenizer);

// The number of layers the trace's steps mention (layers.L.*), 0 if none.
int trace_layer_count(const TraceReader& tr);

}  // namespace lmscope
