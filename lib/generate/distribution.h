// The next-token distribution as a teacher shows it (lmscope-sample, docs/sampling.md): the
// distribution after each processor of HF's chain, a temperature sweep, and many seeded draws
// checked against the probabilities they come from. The processors and the draws are the
// sampler's own (generate/sampler.h); this file only measures them.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "generate/sampler.h"

namespace lmscope {

struct Entry {
  int32_t id = 0;
  double p = 0;  // probability after the stage
};

// One stage of the chain: the softmax of its scores.
struct StageSummary {
  std::string name;        // "raw", "repetition_penalty", "temperature", "top_k", "top_p", "min_p"
  std::string setting;     // "1.3", "off", ...
  bool active = false;     // false: the processor is off and the stage equals the one before
  double entropy_bits = 0; // -sum p log2 p over the stage's distribution
  int64_t survivors = 0;   // tokens with a finite score
  double kept_mass = 1;    // the survivors' mass under the temperature stage's distribution
                           // (1 up to the temperature; what top-k/top-p/min-p leave)
  std::vector<Entry> top;  // the `top` most probable, best first (ties by lower id)
};

// -sum p log2 p (0 log 0 = 0).
double entropy_bits(std::span<const double> p);

// The `n` most probable ids of p (p > 0 only), best first, ties by lower id.
std::vector<Entry> top_entries(std::span<const double> p, int n);

// The six stages of process_scores(raw, context, cfg) (cfg.do_sample should be true: the
// warpers run only when sampling), each summarized with its `top` best entries.
std::vector<StageSummary> summarize_stages(const ScoreStages& st, const SamplingConfig& cfg, int top);

// Temperature sweep: the final distribution (every processor of cfg) at each temperature.
struct SweepPoint {
  float temperature = 1;
  double entropy_bits = 0;
  int64_t survivors = 0;
  Entry best;
};
std::vector<SweepPoint> temperature_sweep(std::span<const float> raw, std::span<const int32_t> context,
                                          SamplingConfig cfg, const std::vector<float>& temperatures);

// N draws of the sampler from one processed distribution, against that distribution.
// Pearson's chi-square over the survivors, with the tokens whose expected count is below 5
// pooled into one bin (the usual rule for the chi-square approximation); dof = bins - 1.
// p_value = P(chi2_dof >= statistic); NaN when dof = 0 (one bin: nothing to test).
struct DrawCheck {
  int64_t n = 0;
  uint64_t seed = 0;
  std::vector<int64_t> counts;   // [V] draws per id
  double chi2 = 0;
  int dof = 0;
  double p_value = 0;
  double max_deviation = 0;      // max over ids of |count/n - p|
  int64_t pooled_ids = 0;        // survivors pooled into the "rest" bin
};
DrawCheck check_draws(std::span<const float> final_scores, const SamplingConfig& cfg, int64_t n);

// P(X >= x) for X ~ chi-square with k degrees of freedom (the regularized upper incomplete
// gamma Q(k/2, x/2)).
double chi2_upper_tail(double x, int k);

}  // namespace lmscope
