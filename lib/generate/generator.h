// Generation: prefill + decode steps with or without a KV cache, HF generate's semantics:
// padding on either side, position ids from the attention mask, the next token of every row
// read from the LAST column (right padding therefore predicts from a pad, as in HF), finished
// rows keep emitting pad_id, stop on EOS in every row or after max_new_tokens.
#pragma once
#include <functional>
#include <vector>

#include "generate/batch.h"
#include "generate/sampler.h"
#include "model/decoder.h"

namespace lmscope {

// Departures from HF generate's batching, for the padding experiment (lmscope-padding,
// docs/experiments.md). All false (the default) is exactly HF generate.
struct BatchingOptions {
  // Each row's next token is read at its own last REAL column (not the last column), and a
  // new token gets that column's position + 1: right padding done correctly ("right_aware").
  bool read_last_real = false;
  // Position ids are column indices, pads included, as a forward() given no position_ids
  // would use ("left_colpos").
  bool column_positions = false;
};

// Bugs of hand-written KV caches, planted on purpose (lmscope-cache --fault). They act only
// on cached decode steps (step > 0 with a cache); all false (the default) is the correct path.
struct GenerationFaults {
  // A decode step's tokens get positions 0..T-1 (arange(T)) instead of past + t.
  bool no_position_offset = false;
  // A decode step attends to its own K/V but does not keep them: the cache never grows past
  // the prefill, so each step loses the tokens generated before it.
  bool cache_not_appended = false;
  // A decode step's attention mask covers only its own T tokens: every cached position is
  // masked out, so a new token sees only itself.
  bool mask_not_extended = false;
  bool any() const { return no_position_offset || cache_not_appended || mask_not_extended; }
};

struct GenerateOptions {
  std::vector<std::vector<int32_t>> prompts;   // token ids, unpadded
  PaddingSide padding_side = PaddingSide::Left;
  int max_new_tokens = 16;
  bool use_cache = true;
  SamplingConfig sampling;
  int32_t pad_id = 0;
  std::vector<int32_t> eos_ids;
  BatchingOptions batching;
  GenerationFaults faults;
  // Teacher forcing: when not empty, row b's token at step n is forced_tokens[b][n] whatever
  // the sampler chose (sample.chosen records the forced token). Used to replay another run's
  // tokens so that two paths are compared on the same context (lmscope-cache).
  std::vector<std::vector<int32_t>> forced_tokens;
  // Called after each step with the tokens just chosen ([B]); for streaming and progress.
  std::function<void(int step, const std::vector<int32_t>& tokens)> on_step;
};

struct GenerateResult {
  std::vector<std::vector<int32_t>> new_tokens;   // [B][steps]
  int steps = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;  // tokens pushed through the model
  double prefill_seconds = 0, decode_seconds = 0;
  int64_t kv_bytes = 0;
};

GenerateResult generate(Decoder& decoder, const GenerateOptions& opt, Trace* trace);

}  // namespace lmscope
