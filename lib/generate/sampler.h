// Token selection with a full audit of every decision (docs/trace-format.md, "Sampling audit").
//
// The processed-score pipeline reproduces Hugging Face transformers' logits processors, in the
// order `GenerationMixin._get_logits_processor` builds them:
//
//   RepetitionPenaltyLogitsProcessor   always (it is a processor, not a warper), if penalty != 1
//   -- only when do_sample (HF applies "warpers" only in sampling mode) --
//   TemperatureLogitsWarper            if temperature != 1
//   TopKLogitsWarper                   if top_k != 0
//   TopPLogitsWarper                   if top_p < 1
//   MinPLogitsWarper                   if min_p is set (here: min_p > 0; min_p = 0 removes nothing)
//
// Greedy decoding is torch.argmax of the processed scores (the first index on ties). Sampling
// uses our own RNG: we cannot reproduce torch.multinomial's random stream, but the uniform draw,
// the survivor set and the probabilities of every decision are recorded in the audit, so each
// choice can be re-derived from the trace.
//
// Note: HF's GenerationConfig fills an unset top_k with 50 when sampling; here top_k = 0 means
// off, so callers comparing against HF must pass the top_k HF actually used.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace lmscope {

struct SamplingConfig {
  bool do_sample = false;           // false = greedy (argmax after processors), as HF
  float temperature = 1.0f;         // applied only when do_sample (HF: warpers only in sampling mode)
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off (HF: None; min_p = 0 removes nothing either)
  float repetition_penalty = 1.0f;  // 1 = off; applies in greedy too (a processor, not a warper)
  uint64_t seed = 0;
  int audit_top = 10;               // N candidates kept in the audit (clamped to [1, V])
};

// Throws std::invalid_argument on settings HF rejects: repetition_penalty <= 0, top_k < 0,
// top_p or min_p outside [0, 1] (or NaN), and (only when do_sample) temperature <= 0 or NaN.
// audit_top < 1 is rejected. top_p = 0 is accepted, as HF does: it keeps only the best token.
void validate(const SamplingConfig& cfg);

struct SampleAudit {                   // docs/trace-format.md sample.*
  std::vector<int32_t> candidates;     // [N] best first by final processed score (cut tokens,
                                       // whose final score is -inf, after the survivors, ordered by
                                       // their scaled score; ties by lower id); the chosen id
                                       // replaces the last one if it is absent
  std::vector<float> raw, penalized, scaled, probs;  // [N]
  std::vector<int32_t> kept;           // [N] 1 if survived top-k/top-p/min-p
  int32_t survivors = 0;               // size of the survivor set
  float u = -1.0f;                     // uniform draw in [0,1), -1 when greedy
  int32_t chosen = -1;
};

// ---- the processed-score pipeline, one HF processor per function (in place) ----------------

// RepetitionPenaltyLogitsProcessor: for each DISTINCT id in `context` with 0 <= id < V:
// score < 0 ? score * penalty : score / penalty (float32 arithmetic, as torch). Ids outside the
// vocabulary are ignored (HF clamps them to V and drops that column).
void apply_repetition_penalty(std::span<float> scores, std::span<const int32_t> context, float penalty);

// TemperatureLogitsWarper: score / temperature (float32 division, as torch).
void apply_temperature(std::span<float> scores, float temperature);

// TopKLogitsWarper: k = min(max(top_k, min_tokens_to_keep), V); every score strictly below the
// k-th largest value becomes -inf, so ties at the boundary are kept (survivors may exceed k).
// top_k <= 0 is a no-op.
void top_k_filter(std::span<float> scores, int top_k, int min_tokens_to_keep = 1);

// TopPLogitsWarper: sort ascending (stable: ties by lower id first), cumulative softmax; tokens
// whose cumulative probability is <= 1 - top_p become -inf, except the last min_tokens_to_keep
// (the highest). Rounding follows torch on CPU: probabilities rounded to float32 (we compute the
// softmax in double, torch in float32: they differ by an ulp or so), the cumulative sum
// accumulated in double and rounded to float32, compared with 1 - top_p rounded to float32.
// Ties: torch.sort is only stable for short rows (<= 16 on CPU), so for a real vocabulary HF's
// choice within a tie group straddling the cut is arbitrary; ours is the stable order.
// top_p >= 1 is a no-op (HF does not add the warper then).
void top_p_filter(std::span<float> scores, float top_p, int min_tokens_to_keep = 1);

// MinPLogitsWarper: p = softmax(scores) (cut tokens: 0); tokens with p < min_p * max(p) become
// -inf, except the min_tokens_to_keep most probable. Rounding follows torch: p rounded to
// float32, the threshold float32(min_p) * float32(max p) in float32. min_p <= 0 is a no-op.
void min_p_filter(std::span<float> scores, float min_p, int min_tokens_to_keep = 1);

// The scores after each processor of the chain, in HF's order (each a full [V] copy). The
// warpers (temperature, top-k, top-p, min-p) run only when do_sample, as in HF; in greedy mode
// every later stage equals `penalized`. -inf marks a cut token.
struct ScoreStages {
  std::vector<float> raw, penalized, scaled, top_k, top_p, min_p;
  const std::vector<float>& final_scores() const { return min_p; }
};

// Runs the processor chain of `cfg` over one row of logits; `context` feeds the penalty.
ScoreStages process_scores(std::span<const float> raw, std::span<const int32_t> context, const SamplingConfig& cfg);

// Softmax over `scores` in double with max subtraction; -inf scores get probability 0.
// All -inf (or empty) input gives all zeros.
std::vector<double> softmax(std::span<const float> scores);

// First index of the maximum (torch.argmax); -1 for an empty span.
int32_t argmax(std::span<const float> scores);

// ---- the sampler ---------------------------------------------------------------------------

class Sampler {  // one per generation; rows are sampled in order from ONE seeded RNG stream
 public:
  explicit Sampler(SamplingConfig cfg);  // validates cfg

  // logits: [V] of one row; context: the row's token ids so far (prompt without pads +
  // generated), for the penalty. Greedy consumes nothing from the RNG; each sampled row consumes
  // exactly one 64-bit draw.
  //
  // Greedy: chosen = argmax(penalized); scaled = penalized (no warper runs); there is no
  // filtering, so every finite token survives and probs = softmax(penalized); u = -1.
  // Sampling: u = (rng() >> 11) * 2^-53, rounded to float32 (kept below 1) -- the value recorded
  // in the audit is the one used. Survivors are walked in descending probability (ties by lower
  // id); the first whose cumulative probability exceeds u is chosen (the last survivor if
  // rounding leaves u above the total).
  int32_t sample(const float* logits, int V, const std::vector<int32_t>& context, SampleAudit* audit /*nullable*/);

  // One sampling-mode draw from already processed scores (process_scores(...).final_scores())
  // and their softmax, as sample() does it; consumes one 64-bit draw; *u (nullable) receives
  // the uniform value used. lmscope-sample draws many times from one distribution with it.
  int32_t draw(std::span<const float> final_scores, std::span<const double> probs, float* u);

  const SamplingConfig& config() const { return cfg_; }

 private:
  SamplingConfig cfg_;
  std::mt19937_64 rng_;
};

}  // namespace lmscope
