// One forward over whole rows (no cache, no generation) with an intervention editor applied at
// its hook points: what lmscope-score and lmscope-patch run. The generator's loop does the same
// per step for generation (generate/generator.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder.h"
#include "trace/hook_editor.h"

namespace lmscope {

// in: the rows' ids, positions and mask (S = T columns, nothing cached). prompt_lengths: each
// row's real tokens (the editor's negative positions count from there). editor null: a plain
// forward. Throws what the editor throws (one line: a selector outside the run, a source of
// another length).
Tensor forward_edited(Decoder& decoder, const StepInput& in, HookEditor* editor,
                      const std::vector<int64_t>& prompt_lengths, LogitsFor which);

}  // namespace lmscope
