#include "report/saliency.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "report/report_data.h"   // round_significant, kReportDigits

namespace lmscope {

using nlohmann::json;

json saliency_section(const TraceReader& tr) {
  // The input of the first layer: `embed`, or the same tensor under its other name.
  std::string input;
  for (const char* hook : {"embed", "layers.0.resid_pre"})
    if (tr.n_steps() > 0 && tr.has_hook(0, hook) && tr.has_hook(0, std::string("grad.") + hook)) {
      input = hook;
      break;
    }
  if (input.empty())
    return {{"absent", "This trace has no gradients of the embedding (grad.embed). Trace with "
                       "--grad METRIC --hooks 'tokens.*,embed' (lmscope-trace, docs/gradients.md) to see it."}};
  const HookData x = tr.read(0, input);                // [B, T, D]
  const HookData g = tr.read(0, "grad." + input);      // [B, T, D]
  if (x.shape != g.shape || x.shape.size() != 3)
    throw std::runtime_error("'" + tr.path() + "': grad." + input + " and " + input + " differ in shape");
  const int64_t B = x.shape[0], T = x.shape[1], D = x.shape[2];
  json rows = json::array();
  for (int64_t b = 0; b < B; ++b) {
    json row = json::array();
    for (int64_t t = 0; t < T; ++t) {
      double s = 0;   // float64: the page shows 5 digits of a sum of D float32 products
      for (int64_t d = 0; d < D; ++d) {
        const size_t i = size_t((b * T + t) * D + d);
        s += x.values[i] * g.values[i];
      }
      if (!std::isfinite(s))
        throw std::runtime_error("'" + tr.path() + "': grad." + input + " x " + input + " is not finite at row " +
                                 std::to_string(b) + ", position " + std::to_string(t));
      row.push_back(round_significant(s, kReportDigits) + 0.0);   // + 0.0: a -0 prints as 0
    }
    rows.push_back(row);
  }
  json out = {{"input", input}, {"rows", rows}};
  out["metric"] = tr.has_root_attr("grad_metric") ? tr.root_attr_string("grad_metric") : "?";
  if (tr.has_root_attr("grad_metric_value")) out["metric_value"] = tr.root_attr_double("grad_metric_value");
  return out;
}

}  // namespace lmscope
