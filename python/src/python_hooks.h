// PythonHooks: the HookEditor (trace/hook_editor.h) that lets Python functions read and edit a
// tensor at its hook point, in the same call that offers it to the trace: m.run_with_hooks and
// generate(hooks=...). Spec interventions (lmscope.Zero, Patch, Add, ... or "SITE=OP" strings)
// run first, through intervene/interventions.h, then each Python function in the order given.
//
// A function gets fn(array, ctx): `array` is a float32 numpy array of the tensor in lmscope's
// layout (docs/hooks.md), the function's own copy; what it leaves in the array, or the array it
// returns (same shape), is written back before the next op reads the tensor. A copy, not a view
// of the engine's buffer, because the buffer is reused after the call and an array kept past it
// would then read freed memory. ctx: {"hook", "layer", "step", "positions" [B,T],
// "attention_mask" [B,S]}. An exception in the function stops the run and reaches the caller.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "intervene/interventions.h"
#include "trace/hook_editor.h"

namespace lmscope::py {

struct PythonHook {
  Hook hook;
  int layer;             // -1 for embed
  pybind11::function fn;
  std::string label;     // the site as the caller named it, for the trace's record
};

class PythonHooks : public HookEditor {
 public:
  PythonHooks(std::vector<PythonHook> hooks, std::unique_ptr<Interventions> specs);
  ~PythonHooks() override;

  bool edits(Hook h, int layer) const override;
  void begin_run(const std::vector<int64_t>& prompt_lengths, int max_new_tokens) override;
  void apply(Backend& be, Hook h, int layer, Tensor& t, const EditContext& ctx) override;
  std::string record_json() const override;

 private:
  std::vector<PythonHook> hooks_;
  std::unique_ptr<Interventions> specs_;
};

}  // namespace lmscope::py
