// Standalone pictures of report sections (lmscope-report --svg KIND), drawn from the same data
// the HTML page draws (report/report_data.h), by report/grid_svg.h.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_reader.h"

namespace lmscope {

// Columns first..last of a heatmap's axis (inclusive); {-1, -1}: all of them.
struct ColumnRange {
  int64_t first = -1, last = -1;
};
// "A-B" (columns, inclusive) -> a range; `option` names it in the one-line error.
ColumnRange parse_column_range(const std::string& text, const std::string& option);

// The attention probabilities of one head, read from the trace (data: for the token labels),
// cropped to the query columns `queries` and key columns `keys` when given (--queries, --keys).
// Throws one line when the trace has no probabilities there (saying what to trace), or when a
// range is outside the step's columns.
std::string attention_svg(const nlohmann::json& data, const TraceReader& tr, int step, int layer, int head, int row,
                          ColumnRange queries = {}, ColumnRange keys = {});

// A mask of the prefill step for one row (what may attend to what): "combined" (causal and
// padding), or "sliding" (Gemma 3's sliding layers: the combined mask cut to the window).
std::string mask_svg(const nlohmann::json& data, int row, const std::string& which = "combined");

}  // namespace lmscope
