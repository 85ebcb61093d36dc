// HookEditor: what may change a tensor at its hook point, before the next op of the forward
// reads it (interventions: intervene/interventions.h, docs/interventions.md; Python functions:
// python/src/python_hooks.h). The forward (model/decoder.cpp, its site()) asks, for each tensor
// the hook table marks editable (HookInfo::editable, trace/hooks.h), Trace::edits
// (trace/trace.h) and, when it says yes, hands the tensor to the editor's apply() before
// offering it to the trace; with no editor set that costs one pointer check.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "trace/hooks.h"

namespace lmscope {

// What an editor needs to know about the forward it edits.
struct EditContext {
  int step = 0;                            // the generation step (0: prefill)
  const Tensor* position_ids = nullptr;    // [B,T] host int32: RoPE positions of this step's tokens
  const Tensor* attention_mask = nullptr;  // [B,S] host int32: 1 real / 0 pad, S = past + T
};

class HookEditor {
 public:
  virtual ~HookEditor() = default;
  virtual bool edits(Hook h, int layer) const = 0;
  // Before a run: each row's prompt length (positions 0..len-1 are the prompt) and how many
  // tokens it may generate.
  virtual void begin_run(const std::vector<int64_t>& prompt_lengths, int max_new_tokens) = 0;
  // Edits t (hook h of `layer`, a tensor of backend `be`) in place or rebinds it to an edited
  // copy on the same backend.
  virtual void apply(Backend& be, Hook h, int layer, Tensor& t, const EditContext& ctx) = 0;
  // What a trace records of the edits (its root attribute `interventions`): JSON text.
  virtual std::string record_json() const = 0;
};

}  // namespace lmscope
