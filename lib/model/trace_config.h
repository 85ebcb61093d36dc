// The config a trace records (root attribute config_json, docs/trace-format.md), read back by
// what replays or compares traces (lmscope-step, an intervention's source trace).
#pragma once
#include <string>

#include "model/config.h"

namespace lmscope {

// The shapes of the model that made the trace. How its producer stored the weights is not a
// reader's concern: HF's traces of a GGUF carry the quantization_config transformers records
// for it, which parse_model_config refuses for a checkpoint to load; here it is ignored.
ModelConfig parse_trace_model_config(const std::string& json_text, const std::string& source);

}  // namespace lmscope
