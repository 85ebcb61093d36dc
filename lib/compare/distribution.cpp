#include "compare/distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lmscope {

namespace {
template <class F>
std::vector<double> log_softmax_of(const F* z, int64_t V, double T) {
  std::vector<double> out(static_cast<size_t>(V));
  double m = -INFINITY;
  for (int64_t i = 0; i < V; ++i) m = std::max(m, double(z[i]) / T);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(double(z[i]) / T - m);
  const double lse = m + std::log(sum);
  for (int64_t i = 0; i < V; ++i) out[size_t(i)] = double(z[i]) / T - lse;
  return out;
}
}  // namespace

std::vector<double> log_softmax_at(const float* z, int64_t V, double T) { return log_softmax_of(z, V, T); }
std::vector<double> log_softmax_at(const double* z, int64_t V, double T) { return log_softmax_of(z, V, T); }

double kl_divergence(const std::vector<double>& logp, const std::vector<double>& logq) {
  double kl = 0;
  for (size_t i = 0; i < logp.size(); ++i) {
    const double p = std::exp(logp[i]);
    if (p > 0) kl += p * (logp[i] - logq[i]);
  }
  return kl;
}

double entropy(const std::vector<double>& logp) {
  double h = 0;
  for (double lp : logp) {
    const double p = std::exp(lp);
    if (p > 0) h -= p * lp;
  }
  return h;
}

std::vector<std::pair<int32_t, double>> top_k(const std::vector<double>& logp, int k) {
  std::vector<int32_t> idx(logp.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, int(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
    return logp[size_t(a)] > logp[size_t(b)] || (logp[size_t(a)] == logp[size_t(b)] && a < b);
  });
  std::vector<std::pair<int32_t, double>> out;
  for (int i = 0; i < k; ++i) out.emplace_back(idx[size_t(i)], std::exp(logp[size_t(idx[size_t(i)])]));
  return out;
}

}  // namespace lmscope
