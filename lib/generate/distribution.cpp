#include "generate/distribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace lmscope {

double entropy_bits(std::span<const double> p) {
  double h = 0;
  for (double x : p)
    if (x > 0) h -= x * std::log2(x);
  return h;
}

std::vector<Entry> top_entries(std::span<const double> p, int n) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) ids.push_back(int32_t(i));
  const size_t k = std::min(ids.size(), size_t(std::max(n, 0)));
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(),
                    [&](int32_t a, int32_t b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
  std::vector<Entry> out;
  for (size_t j = 0; j < k; ++j) out.push_back({ids[j], p[ids[j]]});
  return out;
}

namespace {

std::string num(float v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

StageSummary summarize(const std::string& name, const std::string& setting, bool active, const std::vector<float>& s,
                       const std::vector<double>& scaled_p, int top) {
  StageSummary r;
  r.name = name;
  r.setting = setting;
  r.active = active;
  const std::vector<double> p = softmax(s);
  r.entropy_bits = entropy_bits(p);
  r.kept_mass = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] > -std::numeric_limits<float>::infinity()) {
      ++r.survivors;
      r.kept_mass += scaled_p[i];
    }
  r.top = top_entries(p, top);
  return r;
}

}  // namespace

std::vector<StageSummary> summarize_stages(const ScoreStages& st, const SamplingConfig& cfg, int top) {
  const std::vector<double> scaled_p = softmax(st.scaled);
  const bool s = cfg.do_sample;
  return {
      summarize("raw", "", true, st.raw, scaled_p, top),
      summarize("repetition_penalty", cfg.repetition_penalty == 1.0f ? "off" : num(cfg.repetition_penalty),
                cfg.repetition_penalty != 1.0f, st.penalized, scaled_p, top),
      summarize("temperature", s && cfg.temperature != 1.0f ? num(cfg.temperature) : "off",
                s && cfg.temperature != 1.0f, st.scaled, scaled_p, top),
      summarize("top_k", s && cfg.top_k != 0 ? num(float(cfg.top_k)) : "off", s && cfg.top_k != 0, st.top_k, scaled_p,
                top),
      summarize("top_p", s && cfg.top_p < 1.0f ? num(cfg.top_p) : "off", s && cfg.top_p < 1.0f, st.top_p, scaled_p,
                top),
      summarize("min_p", s && cfg.min_p > 0.0f ? num(cfg.min_p) : "off", s && cfg.min_p > 0.0f, st.min_p, scaled_p,
                top),
  };
}

std::vector<SweepPoint> temperature_sweep(std::span<const float> raw, std::span<const int32_t> context,
                                          SamplingConfig cfg, const std::vector<float>& temperatures) {
  std::vector<SweepPoint> out;
  for (float t : temperatures) {
    cfg.temperature = t;
    validate(cfg);
    const std::vector<double> p = softmax(process_scores(raw, context, cfg).final_scores());
    SweepPoint pt;
    pt.temperature = t;
    pt.entropy_bits = entropy_bits(p);
    for (double x : p) pt.survivors += x > 0 ? 1 : 0;
    pt.best = top_entries(p, 1).at(0);
    out.push_back(pt);
  }
  return out;
}

DrawCheck check_draws(std::span<const float> final_scores, const SamplingConfig& cfg, int64_t n) {
  if (n < 1) throw std::invalid_argument("the number of draws must be at least 1, got " + std::to_string(n));
  DrawCheck r;
  r.n = n;
  r.seed = cfg.seed;
  Sampler sampler(cfg);
  const std::vector<double> p = softmax(final_scores);
  r.counts.assign(final_scores.size(), 0);
  for (int64_t i = 0; i < n; ++i) ++r.counts[size_t(sampler.draw(final_scores, p, nullptr))];

  double pooled_o = 0, pooled_e = 0;
  int bins = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    r.max_deviation = std::max(r.max_deviation, std::fabs(double(r.counts[i]) / double(n) - p[i]));
    if (!(p[i] > 0)) continue;
    const double e = double(n) * p[i], o = double(r.counts[i]);
    if (e < 5) {
      pooled_o += o;
      pooled_e += e;
      ++r.pooled_ids;
      continue;
    }
    r.chi2 += (o - e) * (o - e) / e;
    ++bins;
  }
  if (pooled_e > 0) {
    r.chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++bins;
  }
  r.dof = std::max(bins - 1, 0);
  r.p_value = r.dof > 0 ? chi2_upper_tail(r.chi2, r.dof) : std::numeric_limits<double>::quiet_NaN();
  return r;
}

double chi2_upper_tail(double x, int k) {
  // Q(a, z) = Gamma(a, z) / Gamma(a): the power series of P for z < a + 1, otherwise the
  // Lentz continued fraction of Q (both converge fast in their range).
  if (k <= 0) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0) return 1.0;
  const double a = 0.5 * k, z = 0.5 * x;
  const double log_prefix = a * std::log(z) - z - std::lgamma(a);
  if (z < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= z / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-15) break;
    }
    return std::max(0.0, 1.0 - sum * std::exp(log_prefix));
  }
  const double tiny = 1e-300;
  double b = z + 1 - a, c = 1 / tiny, d = 1 / b, f = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return std::exp(log_prefix) * f;
}

}  // namespace lmscope
