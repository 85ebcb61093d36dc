// Standalone pictures of report sections (lmscope-report --svg KIND), drawn from the same data
// the HTML page draws (report/report_data.h), by report/grid_svg.h.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_reader.h"

namespace lmscope {

// The attention probabilities of one head, read from the trace (data: for the token labels).
// Throws one line when the trace has no probabilities there (saying what to trace).
std::string attention_svg(const nlohmann::json& data, const TraceReader& tr, int step, int layer, int head, int row);

// The combined mask of the prefill step for one row (what may attend to what).
std::string mask_svg(const nlohmann::json& data, int row);

}  // namespace lmscope
