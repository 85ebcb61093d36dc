// Generation with HF generate's semantics: prefill + decode steps with or without a KV cache,
// padding on either side, position ids from the attention mask, the next token of every row
// read from the LAST column (right padding therefore predicts from a pad, as in HF), finished
// rows keep emitting pad_id; a row finishes on an eos id or a stop string (generate/stop.h),
// the run when every row has finished or after max_new_tokens. Departures
// (the padding and cache experiments) are policies (generate/policies.h).
#pragma once
#include <functional>
#include <vector>

#include "generate/batch.h"
#include "generate/policies.h"
#include "generate/sampler.h"
#include "generate/stop.h"
#include "model/decoder.h"

namespace lmscope {

struct GenerateOptions {
  std::vector<std::vector<int32_t>> prompts;   // token ids, unpadded
  PaddingSide padding_side = PaddingSide::Left;
  int max_new_tokens = 16;
  bool use_cache = true;
  SamplingConfig sampling;
  int32_t pad_id = 0;
  std::vector<int32_t> eos_ids;                // any of them finishes a row (HF: a list)
  std::vector<std::string> stop_strings;       // HF stop_strings; needs token_bytes
  std::function<std::string(int32_t)> token_bytes;   // a token's bytes (the tokenizer's)
  GenerationPolicies policies;                 // all empty: exactly HF generate
  // Edits at the hook points (interventions: intervene/interventions.h); not owned, null: none.
  // generate() sets it on the trace (on a trace of its own when given none).
  HookEditor* editor = nullptr;
  // Called after each step with the tokens just chosen ([B]); for streaming and progress.
  std::function<void(int step, const std::vector<int32_t>& tokens)> on_step;
};

struct GenerateResult {
  std::vector<std::vector<int32_t>> new_tokens;   // [B][steps]
  std::vector<StopReason> stop_reasons;           // [B] why each row stopped
  int steps = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;  // tokens pushed through the model
  double prefill_seconds = 0, decode_seconds = 0;
  int64_t kv_bytes = 0;
};

GenerateResult generate(Decoder& decoder, const GenerateOptions& opt, Trace* trace);

}  // namespace lmscope
