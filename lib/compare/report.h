// Renders a CompareReport for people (a table) and for programs (one JSON object).
#pragma once
#include <string>

#include "compare/compare.h"

namespace lmscope {

// One line per hook name, aggregated over steps (the worst step shown); all_steps prints
// every (step, hook) instead. Ends with the first failing hook or "all N hooks pass".
std::string report_text(const CompareReport& rep, bool all_steps);

// {"pass", "first_failure", "hooks": [...], "missing_in_a", "only_in_a", "generated_equal"}
std::string report_json(const CompareReport& rep);

}  // namespace lmscope
