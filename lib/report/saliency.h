// The report's token saliency row (docs/report.md, "Token saliency"): for a trace made with
// `lmscope-trace --grad METRIC`, each prompt token's gradient x input summed over D,
//
//   saliency[b, t] = sum over d of embed[b, t, d] * grad.embed[b, t, d]
//
// the first-order change of METRIC if the token's embedding were scaled to zero, with the sign
// of its effect (docs/gradients.md). Padding columns are exactly 0 (the backward gives them no
// gradient).
#pragma once
#include <nlohmann/json.hpp>

#include "trace/trace_reader.h"

namespace lmscope {

// {"metric", "metric_value", "input", "rows": [[one value per prompt column] per batch row]}, or
// {"absent": the sentence saying how to trace it} when step 0 lacks the input or its gradient.
// Throws one line naming the trace when the two disagree in shape or a value is not finite.
nlohmann::json saliency_section(const TraceReader& tr);

}  // namespace lmscope
