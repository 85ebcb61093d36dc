// The cached-vs-uncached experiment (lmscope-cache, docs/experiments.md).
//
// Two runs of the same prompt(s): with the KV cache (prefill, then one token per step) and
// without (the whole sequence again every step, HF use_cache=False). The uncached run is the
// reference and replays the tokens the cached run chose (teacher forcing), so every step
// compares the two paths on the same context. Per step: the last position's logits (largest
// difference, argmax agreement), every hook at the last position, and the cache contents
// kv.L.k / kv.L.v against the uncached run's k_rope / v of all positions. Plus the work
// (tokens pushed through the model), the time of each path (separate runs, no hooks) and the
// KV cache bytes.
//
// --fault plants a classic cache bug into the cached path (experiments/cache_faults.h); the report says
// where it is first detected, and where it first acts.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/tolerances.h"
#include "experiments/cache_faults.h"
#include "runs/run.h"

namespace lmscope {

// The tolerance cached vs uncached is judged with, for the compute dtype ("f32", "bf16").
struct CacheTolerance {
  std::string dtype;
  ToleranceTable table;
  std::string why;        // why these numbers: what drift is expected in this dtype
};
CacheTolerance cache_tolerance(const std::string& compute_dtype);

struct CacheOptions {
  std::vector<std::vector<int32_t>> prompts;   // usually one
  int max_new_tokens = 16;
  SamplingConfig sampling;                     // greedy by default
  int32_t pad_id = 0;
  std::vector<int32_t> eos_ids;
  CacheFault fault = CacheFault::None;
  std::string hooks = "*";                     // compared hooks (globs) and layers
  std::string layers;
  std::string trace_dir;                       // when set: cached.h5 and uncached.h5 written there
  bool timing = true;                          // separate untraced runs for the seconds
  int timing_repeats = 2;                      // the fastest of this many (interleaved)
};

struct CacheStep {
  int step = 0;
  int64_t T_cached = 0, T_uncached = 0, S = 0;
  double max_logit_diff = 0;         // last position, over the vocabulary
  double logit_bound = 0;            // the tolerance at that scale
  int32_t argmax_cached = -1, argmax_uncached = -1;
  double margin = 0;                 // uncached top-1 minus top-2 logit
  double kv_max_abs = 0;             // cache contents vs the uncached k_rope / v, all layers
  bool kv_compared = false;
  bool pass = true;                  // every compared hook (sample.* aside) within tolerance
  std::optional<HookResult> first_failure;         // first hook beyond tolerance (sample.* aside)
  std::optional<HookResult> first_layer_failure;   // first per-layer hook beyond tolerance
  int hooks_compared = 0;
};

struct CacheReport {
  int steps = 0;
  int64_t batch = 0, prompt_len = 0;           // B, P (padded width)
  CacheFault fault = CacheFault::None;
  FaultSite fault_site;
  CacheTolerance tol;
  std::vector<CacheStep> per_step;
  double max_logit_diff = 0;
  int argmax_agree = 0;
  std::vector<std::vector<int32_t>> tokens_cached;         // the cached run's choices
  std::vector<std::vector<int32_t>> tokens_uncached_free;  // an uncached run left to choose (timing run)
  int64_t tokens_cached_processed = 0, tokens_uncached_processed = 0;
  int64_t expected_cached = 0, expected_uncached = 0;      // B(P + N - 1), B(P + (P+1) + ... + (P+N-1))
  int64_t kv_bytes = 0, kv_bytes_per_position = 0, kv_positions_filled = 0;
  double seconds_cached = 0, seconds_uncached = 0;
  int timing_repeats = 0;
  std::string verdict;      // "agree", "drift" or "bug"
  std::string verdict_why;  // one or two sentences
  struct Detection {
    int step = -1;
    std::string hook;        // first hook beyond tolerance
    std::string layer_hook;  // first per-layer hook beyond tolerance ("" if none)
    int layer = -1;
    std::string reason;
  };
  std::optional<Detection> detected;
  std::vector<std::string> trace_files;
};

// Judges the per-step results: "bug" if a hook is beyond tolerance or the argmax flips with a
// margin larger than the logit tolerance; "drift" if the only disagreements are argmax flips
// at near-ties (margin within the tolerance: expected in reduced precision); else "agree".
void judge_cache(CacheReport& r);

CacheReport run_cache_experiment(const ModelContext& m, const CacheOptions& opt);

std::string cache_report_text(const CacheReport& r, const ModelContext& m);
// {"steps", "max_logit_diff", "argmax_agree", "tokens_processed": {"cached","uncached"},
//  "kv_bytes", "seconds": {"cached","uncached"}, "compute_dtype", "tolerance", "verdict",
//  "fault", "fault_first_acts", "detected", "per_step": [...]}
std::string cache_report_json(const CacheReport& r, const ModelContext& m);

// A deterministic prompt of n ids in [1, vocab) (for "a 128-token prompt" without text).
std::vector<int32_t> synthetic_prompt(int n, int vocab, uint64_t seed);

}  // namespace lmscope
