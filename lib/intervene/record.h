// How the tools show that a trace is a counterfactual: its `interventions` root attribute
// (docs/interventions.md, "In the trace") as one line.
#pragma once
#include <string>

#include "trace/trace_reader.h"

namespace lmscope {

// "intervened: layers.1.attn.z[head=2]=zero; embed[pos=4]=zero", or "" for a clean run.
std::string interventions_line(const TraceReader& tr);
// The same from the attribute's JSON text ("" when empty or not an array).
std::string interventions_line(const std::string& record_json);

}  // namespace lmscope
