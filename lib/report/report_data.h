// What lmscope-report shows, read from a trace (docs/report.md): one JSON object that the
// page's script draws. Each section is present when the trace has the hooks it needs; an
// absent section carries the sentence that says what to trace instead.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/attention_store.h"
#include "trace/trace_reader.h"

namespace lmscope {
namespace tok {
class Tokenizer;
}

struct ReportOptions {
  std::vector<int> layers;   // attention heatmaps of these layers; empty: every layer
  std::vector<int> steps;    // ... at these steps; empty: every step
  int top_k = 10;            // candidates shown per generation step
};

// One step and layer of attention probabilities as the page stores them.
struct AttentionPart {
  int step = 0, layer = 0;
  StoredAttention stored;
};

// Significant digits of the probabilities the page's JSON holds (the logit lens's; the
// heatmaps' are 16-bit levels, report/attention_store.h).
constexpr int kReportDigits = 5;
double round_significant(double v, int digits);
// The logit lens's tokens per cell the page holds (the top one drawn, these on hover): the
// trace may keep more (lmscope-trace --lens K), which would only make the page larger.
constexpr int kLensShown = 3;

// tokenizer: gives pieces for generated and candidate ids (null: the trace's own prompt
// pieces, else "#id"). attention: receives the heatmaps' probabilities of opt's steps and
// layers (null: none are stored; the page's data then lists no cells). Throws one line for a
// --layers / --steps outside the trace.
nlohmann::json report_data(const TraceReader& tr, const ReportOptions& opt, const tok::Tokenizer* tokenizer,
                           std::vector<AttentionPart>* attention = nullptr);

// A mask row of the page's data (masks.causal[t], masks.padding[b], masks.combined[b][t], Gemma 3's
// masks.sliding[b][t]) is
// stored as run lengths, alternately of masked and of seen columns, masked first ([0, 3, 2]:
// the first 3 columns seen, the next 2 masked), so that a long prompt's masks stay O(T) in
// the page. This expands one: true = may see.
std::vector<bool> mask_row(const nlohmann::json& runs);

// The number of layers the trace's steps mention (layers.L.*), 0 if none.
int trace_layer_count(const TraceReader& tr);

}  // namespace lmscope
