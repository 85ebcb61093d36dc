// The places where a run may depart from HF generate, each a small policy handed to generate()
// (the habit of gemma.cpp's RuntimeConfig, which passes sample_func / accept_token). An empty
// policy means HF's behaviour; the experiments (lmscope-padding, lmscope-cache) fill them.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "generate/batch.h"
#include "model/decoder.h"
#include "model/kv_cache.h"

namespace lmscope {

// Where row b's next token comes from.
struct NextTokenSite {
  int64_t column = 0;             // column of the step's logits [B, Tl, V] to read
  int32_t position = 0;           // RoPE position of that column; the new token gets position + 1
  std::vector<int32_t> context;   // the ids the repetition penalty looks at
};

// What a step is, for the policies that change its input.
struct StepContext {
  int step = 0;                   // 0 = prefill
  int64_t prompt_cols = 0;        // width of the padded prompt batch
  KVCache* cache = nullptr;       // null without a cache
  bool cached_decode() const { return cache && step > 0; }
};

struct GenerationPolicies {
  // Sets the prompt batch's position ids after padding (HF: cumsum(mask) - 1, 0 at pads).
  std::function<void(Batch& batch)> place_prompt;
  // Changes a step's input before the forward (HF: none). May also rewind the cache.
  std::function<void(StepInput& in, const StepContext& ctx)> adjust_input;
  // Where row b's next token is read. HF: hf_next_token_site. A policy set here may read any
  // column, so the forward then returns the logits of every column.
  std::function<NextTokenSite(const Batch& batch, int64_t row, int64_t logits_cols)> read_next;
  // The token row b keeps at `step`, given the one chosen (HF: the chosen one).
  std::function<int32_t(int64_t row, int step, int32_t chosen)> accept_token;
};

// HF: the LAST column of the logits, whatever the padding (logits[:, -1, :]); the repetition
// penalty sees the row's ids after its left padding (generate passes the leading pad count as
// prompt_ignore_length).
NextTokenSite hf_next_token_site(const Batch& batch, int64_t row, int64_t logits_cols);

// Teacher forcing: row b keeps tokens[b][step] whatever was chosen, so that a second run
// replays a first run's tokens and the two are compared on the same context (lmscope-cache).
std::function<int32_t(int64_t, int, int32_t)> force_tokens(std::vector<std::vector<int32_t>> tokens);

}  // namespace lmscope
