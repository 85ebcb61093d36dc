// Next-token distributions compared as distributions: softmax at a temperature, the KL
// divergence of one from another, entropy, top-k. Computed in double from float32 logits.
// lmscope-quant (reference vs scheme, T = 1) and lmscope-diff --kl-temperature (teacher vs
// student) both use these.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace lmscope {

// log softmax(z / T) of V logits, in double (the max subtracted first).
std::vector<double> log_softmax_at(const float* z, int64_t V, double T = 1.0);
std::vector<double> log_softmax_at(const double* z, int64_t V, double T = 1.0);

// KL(p || q) = sum_i p_i (log p_i - log q_i), from log-probabilities; terms with p_i = 0 add 0.
double kl_divergence(const std::vector<double>& logp, const std::vector<double>& logq);

// -sum_i p_i log p_i (nats).
double entropy(const std::vector<double>& logp);

// The k most probable ids, most probable first (ties: the lower id), with their probabilities.
std::vector<std::pair<int32_t, double>> top_k(const std::vector<double>& logp, int k);

}  // namespace lmscope
