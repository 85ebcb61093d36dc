#include "generate/edited_forward.h"

#include "trace/trace.h"

namespace lmscope {

Tensor forward_edited(Decoder& decoder, const StepInput& in, HookEditor* editor,
                      const std::vector<int64_t>& prompt_lengths, LogitsFor which) {
  if (!editor) return decoder.forward(in, /*cache=*/nullptr, /*trace=*/nullptr, which);
  const int64_t T = in.input_ids.dim(1);
  Trace trace(HookSet(), nullptr);   // no hook is kept: the trace only carries the editor
  trace.set_editor(editor);
  editor->begin_run(prompt_lengths, /*max_new_tokens=*/0);
  trace.begin_step(StepInfo{0, "prefill", false, 0, T, T});
  return decoder.forward(in, /*cache=*/nullptr, &trace, which);
}

}  // namespace lmscope
