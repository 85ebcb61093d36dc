// lmscope-step: the pages of lmscope-trace --step (stepper/stepper.h) from a stored trace,
// without the model: each step's hooks are read with TraceReader (kv.* rebuilt from appended
// rows) and handed to Stepper::replay_step, so live and stored walks share one renderer.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "stepper/stepper.h"
#include "generate/sampler.h"
#include "model/config.h"
#include "trace/trace_reader.h"

namespace lmscope {

// The model's numbers from the root attribute config_json. Throws one line naming the trace
// when it is absent or not a config.
ModelConfig trace_model_config(const TraceReader& tr);
// The sampler settings of the /step_0000/sample group's attributes; greedy (the defaults)
// when the trace has none (lmscope-hf-trace writes none: its goldens are greedy).
SamplingConfig trace_sampling(const TraceReader& tr);
// The batch rows: the length of the root attribute prompts (a JSON list of id lists).
int trace_rows(const TraceReader& tr);
// One tokenizer page per row: the merges of /tokenizer/row_B when the trace holds them, else
// the prompt's ids.
std::vector<std::string> trace_intro_pages(const TraceReader& tr, const std::function<std::string(int32_t)>& token_text);
// Every step in order through the stepper (then stepper.finish()). StepperQuit passes through.
void replay_trace(const TraceReader& tr, Stepper& stepper);

}  // namespace lmscope
