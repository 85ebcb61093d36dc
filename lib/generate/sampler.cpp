#include "generate/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "io/format_number.h"

namespace lmscope {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool is_kept(float s) { return s > kNegInf; }  // false for -inf and NaN

// Calls visit(id) for the ids in the order given by `before` (a strict total order), sorting
// lazily in growing chunks, until visit returns true. Cheap when only the head is needed.
template <class Before, class Visit>
void visit_in_order(std::vector<int32_t>& ids, Before before, Visit visit) {
  size_t lo = 0, chunk = 256;
  while (lo < ids.size()) {
    const size_t hi = std::min(ids.size(), lo + chunk);
    std::partial_sort(ids.begin() + static_cast<std::ptrdiff_t>(lo), ids.begin() + static_cast<std::ptrdiff_t>(hi),
                      ids.end(), before);
    for (size_t j = lo; j < hi; ++j)
      if (visit(ids[j])) return;
    lo = hi;
    chunk *= 4;
  }
}

}  // namespace

void validate(const SamplingConfig& cfg) {
  if (!(cfg.repetition_penalty > 0.0f))
    throw std::invalid_argument("repetition_penalty must be > 0, got " + std::to_string(cfg.repetition_penalty));
  if (cfg.top_k < 0) throw std::invalid_argument("top_k must be >= 0 (0 = off), got " + std::to_string(cfg.top_k));
  if (!(cfg.top_p >= 0.0f && cfg.top_p <= 1.0f))
    throw std::invalid_argument("top_p must be in [0, 1], got " + std::to_string(cfg.top_p));
  if (!(cfg.min_p >= 0.0f && cfg.min_p <= 1.0f))
    throw std::invalid_argument("min_p must be in [0, 1] (0 = off), got " + std::to_string(cfg.min_p));
  if (cfg.do_sample && !(cfg.temperature > 0.0f))
    throw std::invalid_argument("temperature must be > 0 when sampling, got " + std::to_string(cfg.temperature) +
                                " (use greedy decoding instead of temperature 0)");
  if (cfg.audit_top < 1) throw std::invalid_argument("audit_top must be >= 1, got " + std::to_string(cfg.audit_top));
}

void apply_repetition_penalty(std::span<float> scores, std::span<const int32_t> context, float penalty) {
  const int64_t V = static_cast<int64_t>(scores.size());
  std::vector<int32_t> ids;
  ids.reserve(context.size());
  for (int32_t id : context)
    if (id >= 0 && id < V) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) {
    float& s = scores[id];
    s = s < 0.0f ? s * penalty : s / penalty;
  }
}

void apply_temperature(std::span<float> scores, float temperature) {
  for (float& s : scores) {
    const float scaled = s / temperature;
    // A temperature so small (1e-45) that a logit divided by it overflows float32: HF's
    // sampler raises on the inf/nan probabilities; sampling on would pick a token at random.
    if (std::isfinite(s) && !std::isfinite(scaled))
      throw std::invalid_argument("temperature " + fmt("%g", temperature) + ": logit " + fmt("%g", s) +
                                  " divided by it overflows float32; use a larger temperature, or greedy decoding");
    s = scaled;
  }
}

void top_k_filter(std::span<float> scores, int top_k, int min_tokens_to_keep) {
  if (top_k <= 0 || scores.empty()) return;
  const size_t k = std::min(static_cast<size_t>(std::max(top_k, min_tokens_to_keep)), scores.size());
  std::vector<float> tmp(scores.begin(), scores.end());
  std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<float>());
  const float kth = tmp[k - 1];  // the k-th largest value (torch.topk(...)[0][..., -1])
  for (float& s : scores)
    if (s < kth) s = kNegInf;  // strictly below: ties at the boundary survive
}

void top_p_filter(std::span<float> scores, float top_p, int min_tokens_to_keep) {
  if (!(top_p < 1.0f) || scores.empty()) return;
  const std::vector<double> p = softmax(scores);
  // HF sorts ascending (torch.sort; we use the stable order: ties by lower id first) and removes
  // the prefix whose cumulative probability is <= 1 - top_p. Rounding follows torch on CPU:
  // float32 probabilities, the cumsum accumulated in double (acc_type<float> on CPU) and stored
  // as float32, then compared with the scalar 1 - top_p cast to float32. Rounding like this
  // matters when the cumulative sum lands on the threshold (ten equal tokens and top_p = 0.3).
  //
  // The removed set is a prefix of the ascending order, so we walk the other way instead: from
  // the best token down (ties by higher id first, the reverse of the stable ascending order),
  // sorting lazily, with the ascending cumulative at a token = total - mass above it. The first
  // token removed ends the walk: everything below it is removed too. This avoids sorting a
  // 150k-token vocabulary when only the few hundred best tokens matter.
  const double threshold = static_cast<double>(static_cast<float>(1.0 - static_cast<double>(top_p)));
  std::vector<int32_t> order;
  order.reserve(scores.size());
  double total = 0.0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!is_kept(scores[i])) continue;  // -inf: probability 0, removed (already) in HF as well
    order.push_back(static_cast<int32_t>(i));
    total += static_cast<double>(static_cast<float>(p[i]));
  }
  const size_t keep_head = static_cast<size_t>(std::max(min_tokens_to_keep, 0));
  std::vector<char> survive(scores.size(), 0);
  double above = 0.0;
  size_t rank = 0;
  visit_in_order(
      order,
      [&](int32_t a, int32_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a > b; },
      [&](int32_t id) {
        const double pf = static_cast<double>(static_cast<float>(p[id]));
        const double cum_asc = static_cast<double>(static_cast<float>(total - above));
        if (rank >= keep_head && cum_asc <= threshold) return true;  // removed, and all below
        survive[id] = 1;
        above += pf;
        ++rank;
        return false;
      });
  for (size_t i = 0; i < scores.size(); ++i)
    if (!survive[i]) scores[i] = kNegInf;
}

void min_p_filter(std::span<float> scores, float min_p, int min_tokens_to_keep) {
  if (!(min_p > 0.0f) || scores.empty()) return;
  const std::vector<double> p = softmax(scores);
  std::vector<float> pf(p.size());
  for (size_t i = 0; i < p.size(); ++i) pf[i] = static_cast<float>(p[i]);  // torch: float32 softmax
  const float threshold = min_p * *std::max_element(pf.begin(), pf.end());  // float32 product, as torch
  // HF keeps the min_tokens_to_keep most probable (torch.topk) whatever the threshold; with
  // min_p <= 1 the best token always passes, so only min_tokens_to_keep > 1 can matter here.
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t keep = std::min(static_cast<size_t>(std::max(min_tokens_to_keep, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](int32_t a, int32_t b) { return pf[a] != pf[b] ? pf[a] > pf[b] : a < b; });
  std::vector<char> protect(scores.size(), 0);
  for (size_t j = 0; j < keep; ++j) protect[order[j]] = 1;
  for (size_t i = 0; i < scores.size(); ++i)
    if (!protect[i] && pf[i] < threshold) scores[i] = kNegInf;
}

ScoreStages process_scores(std::span<const float> raw, std::span<const int32_t> context, const SamplingConfig& cfg) {
  ScoreStages s;
  s.raw.assign(raw.begin(), raw.end());
  s.penalized = s.raw;
  if (cfg.repetition_penalty != 1.0f) apply_repetition_penalty(s.penalized, context, cfg.repetition_penalty);
  s.scaled = s.penalized;
  if (cfg.do_sample && cfg.temperature != 1.0f) apply_temperature(s.scaled, cfg.temperature);
  s.top_k = s.scaled;
  if (cfg.do_sample && cfg.top_k != 0) top_k_filter(s.top_k, cfg.top_k);
  s.top_p = s.top_k;
  if (cfg.do_sample && cfg.top_p < 1.0f) top_p_filter(s.top_p, cfg.top_p);
  s.min_p = s.top_p;
  if (cfg.do_sample && cfg.min_p > 0.0f) min_p_filter(s.min_p, cfg.min_p);
  return s;
}

std::vector<double> softmax(std::span<const float> scores) {
  std::vector<double> p(scores.size(), 0.0);
  double m = -std::numeric_limits<double>::infinity();
  for (float s : scores)
    if (is_kept(s)) m = std::max(m, static_cast<double>(s));
  if (!std::isfinite(m)) return p;  // nothing finite (or +inf: undefined, leave zeros)
  double sum = 0.0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!is_kept(scores[i])) continue;
    p[i] = std::exp(static_cast<double>(scores[i]) - m);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

int32_t argmax(std::span<const float> scores) {
  if (scores.empty()) return -1;
  int32_t best = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) return static_cast<int32_t>(i);  // torch.argmax: NaN is the maximum
    if (scores[i] > scores[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

int32_t Sampler::draw(std::span<const float> final_scores, std::span<const double> probs, float* u_out) {
  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(final_scores.size()); ++i)
    if (is_kept(final_scores[i])) order.push_back(i);
  if (order.empty()) throw std::runtime_error("Sampler::sample: no token has a finite processed score");
  const double ud = static_cast<double>(rng_() >> 11) * 0x1p-53;  // [0, 1), 53 random bits
  float u = static_cast<float>(ud);
  if (u >= 1.0f) u = std::nextafter(1.0f, 0.0f);  // rounding to float32 may reach 1
  if (u_out) *u_out = u;
  // inverse CDF over the survivors in descending probability (= descending score; ties by
  // lower id), deciding with the value the audit records; the last survivor if rounding leaves
  // u above the total
  const double uu = static_cast<double>(u);
  double cum = 0.0;
  int32_t chosen = -1;
  visit_in_order(
      order,
      [&](int32_t a, int32_t b) {
        return final_scores[a] != final_scores[b] ? final_scores[a] > final_scores[b] : a < b;
      },
      [&](int32_t id) {
        chosen = id;
        cum += probs[id];
        return cum > uu;
      });
  return chosen;
}

Sampler::Sampler(SamplingConfig cfg) : cfg_(cfg), rng_(cfg.seed) { validate(cfg_); }

int32_t Sampler::sample(const float* logits, int V, const std::vector<int32_t>& context, SampleAudit* audit) {
  if (V <= 0 || logits == nullptr) throw std::invalid_argument("Sampler::sample: empty logits");
  const std::span<const float> raw(logits, static_cast<size_t>(V));

  const ScoreStages stages = process_scores(raw, context, cfg_);
  const std::vector<float>& penalized = stages.penalized;
  const std::vector<float>& scaled = stages.scaled;
  const std::vector<float>& final_scores = stages.final_scores();  // after every processor; -inf = cut

  const std::vector<double> probs = softmax(final_scores);
  int32_t survivors = 0;
  for (float s : final_scores) survivors += is_kept(s) ? 1 : 0;

  int32_t chosen = -1;
  float u = -1.0f;
  if (!cfg_.do_sample) {
    chosen = argmax(final_scores);
  } else {
    chosen = draw(final_scores, probs, &u);
  }

  if (audit != nullptr) {
    const size_t N = static_cast<size_t>(std::clamp(cfg_.audit_top, 1, V));
    std::vector<int32_t> idx(static_cast<size_t>(V));
    std::iota(idx.begin(), idx.end(), 0);
    // best first by final processed score: survivors first (by score), then the cut tokens by
    // their scaled score; ties by lower id. NaN sorts last.
    auto better = [&](int32_t a, int32_t b) {
      const bool ka = is_kept(final_scores[a]), kb = is_kept(final_scores[b]);
      if (ka != kb) return ka;
      const float sa = scaled[a], sb = scaled[b];
      const bool na = std::isnan(sa), nb = std::isnan(sb);
      if (na != nb) return nb;
      if (!na && sa != sb) return sa > sb;
      return a < b;
    };
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(N), idx.end(), better);
    idx.resize(N);
    if (std::find(idx.begin(), idx.end(), chosen) == idx.end()) idx.back() = chosen;

    audit->candidates = idx;
    audit->raw.resize(N);
    audit->penalized.resize(N);
    audit->scaled.resize(N);
    audit->probs.resize(N);
    audit->kept.resize(N);
    for (size_t j = 0; j < N; ++j) {
      const int32_t id = idx[j];
      audit->raw[j] = raw[id];
      audit->penalized[j] = penalized[id];
      audit->scaled[j] = scaled[id];
      audit->probs[j] = static_cast<float>(probs[id]);
      audit->kept[j] = is_kept(final_scores[id]) ? 1 : 0;
    }
    audit->survivors = survivors;
    audit->u = u;
    audit->chosen = chosen;
  }
  return chosen;
}

}  // namespace lmscope
