// lmscope-report --summary: where each head looks, as text for a terminal (and for the lessons'
// checked output). For one step, row and query position: per layer, each head's most-attended
// key token and its probability; then how many heads pick each key token.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_reader.h"

namespace lmscope {

// columns: the row's column labels (report data's tokens[row].columns); query -1 = the last.
// Throws one line when the step has no layers.*.attn.probs.
std::string attention_summary(const TraceReader& tr, const nlohmann::json& columns, int step, int row, int query);

}  // namespace lmscope
