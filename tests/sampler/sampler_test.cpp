// Sampler tests: the processors against HF transformers' own outputs
// (tests/sampler/hf_processors_reference.json, made by make_sampler_reference.py), and the
// sampler's greedy choice, RNG stream, distribution and audit.
#include "generate/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmscope {
namespace {

using nlohmann::json;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kTol = 1e-6;

json load_reference() {
  const std::string path = std::string(LMSCOPE_SOURCE_DIR) + "/tests/sampler/hf_processors_reference.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

std::vector<int32_t> finite_ids(const std::vector<float>& s) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] > -kInf) out.push_back(static_cast<int32_t>(i));
  return out;
}

void expect_close(const std::vector<float>& ours, const std::vector<float>& ref, const std::string& what) {
  ASSERT_EQ(ours.size(), ref.size()) << what;
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], ref[i], kTol) << what << " at " << i;
}

// ---- against HF -------------------------------------------------------------------------------

TEST(SamplerHF, ProcessorsMatchTransformers) {
  const json ref = load_reference();
  ASSERT_GE(ref["cases"].size(), 20u);
  size_t bit_exact = 0, values = 0;
  for (const json& c : ref["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto logits = c["logits"].get<std::vector<float>>();
    const auto context = c["context"].get<std::vector<int32_t>>();
    const float penalty = c["repetition_penalty"].get<float>();
    const float temperature = c["temperature"].get<float>();
    const int top_k = c["top_k"].get<int>();
    const float top_p = c["top_p"].get<float>();
    const float min_p = c["min_p"].get<float>();
    const int V = c["vocab"].get<int>();
    ASSERT_EQ(static_cast<int>(logits.size()), V);

    // one processor at a time, in HF's order
    std::vector<float> pen = logits;
    if (penalty != 1.0f) apply_repetition_penalty(pen, context, penalty);
    const auto ref_pen = c["penalized"].get<std::vector<float>>();
    expect_close(pen, ref_pen, "penalized");

    std::vector<float> scaled = pen;
    if (temperature != 1.0f) apply_temperature(scaled, temperature);
    const auto ref_scaled = c["scaled"].get<std::vector<float>>();
    expect_close(scaled, ref_scaled, "scaled");
    for (int i = 0; i < V; ++i) {
      bit_exact += (pen[i] == ref_pen[i]) + (scaled[i] == ref_scaled[i]);
      values += 2;
    }

    if (!c["top_k_only"].is_null()) {
      std::vector<float> s = scaled;
      top_k_filter(s, top_k);
      EXPECT_EQ(finite_ids(s), c["top_k_only"].get<std::vector<int32_t>>()) << "top-k alone";
      for (int32_t id : finite_ids(s)) EXPECT_EQ(s[id], scaled[id]) << "survivors keep their score";
    }
    if (!c["top_p_only"].is_null()) {
      std::vector<float> s = scaled;
      top_p_filter(s, top_p);
      EXPECT_EQ(finite_ids(s), c["top_p_only"].get<std::vector<int32_t>>()) << "top-p alone";
    }

    if (!c["min_p_only"].is_null()) {
      std::vector<float> s = scaled;
      min_p_filter(s, min_p);
      EXPECT_EQ(finite_ids(s), c["min_p_only"].get<std::vector<int32_t>>()) << "min-p alone";
    }

    std::vector<float> fin = scaled;
    if (top_k != 0) top_k_filter(fin, top_k);
    if (top_p < 1.0f) top_p_filter(fin, top_p);
    if (min_p > 0.0f) min_p_filter(fin, min_p);
    const auto ref_survivors = c["survivors"].get<std::vector<int32_t>>();
    EXPECT_EQ(finite_ids(fin), ref_survivors) << "full chain";
    const auto p = softmax(fin);
    const auto ref_probs = c["probs"].get<std::vector<float>>();
    for (int i = 0; i < V; ++i) EXPECT_NEAR(p[i], ref_probs[i], kTol) << "probs at " << i;

    EXPECT_EQ(argmax(pen), c["greedy"].get<int32_t>()) << "greedy = torch.argmax(penalized)";

    // the whole Sampler, sampling mode: its audit must agree with HF too
    SamplingConfig cfg;
    cfg.do_sample = true;
    cfg.temperature = temperature;
    cfg.top_k = top_k;
    cfg.top_p = top_p;
    cfg.min_p = min_p;
    cfg.repetition_penalty = penalty;
    cfg.seed = 7;
    // process_scores (what lmscope-sample shows) runs the same chain
    const ScoreStages st = process_scores(logits, context, cfg);
    EXPECT_EQ(finite_ids(st.final_scores()), ref_survivors) << "process_scores";
    expect_close(st.scaled, ref_scaled, "process_scores scaled");
    cfg.audit_top = V;
    Sampler sampler(cfg);
    SampleAudit a;
    const int32_t chosen = sampler.sample(logits.data(), V, context, &a);
    EXPECT_EQ(a.survivors, static_cast<int32_t>(ref_survivors.size()));
    EXPECT_TRUE(std::binary_search(ref_survivors.begin(), ref_survivors.end(), chosen));
    ASSERT_EQ(a.candidates.size(), static_cast<size_t>(V));
    for (int j = 0; j < V; ++j) {
      const int32_t id = a.candidates[j];
      EXPECT_NEAR(a.penalized[j], ref_pen[id], kTol);
      EXPECT_NEAR(a.scaled[j], ref_scaled[id], kTol);
      EXPECT_NEAR(a.probs[j], ref_probs[id], kTol);
      EXPECT_EQ(a.kept[j], std::binary_search(ref_survivors.begin(), ref_survivors.end(), id) ? 1 : 0);
    }

    // greedy mode: no warper runs, the choice is HF's greedy token
    cfg.do_sample = false;
    Sampler greedy(cfg);
    SampleAudit g;
    EXPECT_EQ(greedy.sample(logits.data(), V, context, &g), c["greedy"].get<int32_t>());
    EXPECT_EQ(g.u, -1.0f);
    for (int j = 0; j < V; ++j) EXPECT_NEAR(g.scaled[j], ref_pen[g.candidates[j]], kTol);
  }
  // informational: torch's float32 mul/div are reproduced bit for bit
  EXPECT_EQ(bit_exact, values) << "penalized/scaled values not bit-identical to HF (within 1e-6 though)";
}

// ---- the processors one by one -----------------------------------------------------------------

TEST(SamplerProcessors, RepetitionPenaltyDistinctSignsAndRange) {
  std::vector<float> s = {2.0f, -2.0f, 0.0f, 1.0f, -0.5f};
  apply_repetition_penalty(s, std::vector<int32_t>{0, 0, 0, 1, 2, 4, 4, -1, 5, 99}, 2.0f);
  EXPECT_EQ(s, (std::vector<float>{1.0f, -4.0f, 0.0f, 1.0f, -1.0f}));
}

TEST(SamplerProcessors, TemperatureDivides) {
  std::vector<float> s = {1.0f, -2.0f, 0.7f};
  apply_temperature(s, 0.7f);
  EXPECT_EQ(s[0], 1.0f / 0.7f);
  EXPECT_EQ(s[1], -2.0f / 0.7f);
  EXPECT_EQ(s[2], 1.0f);
}

TEST(SamplerProcessors, TopKKeepsTiesAndClamps) {
  std::vector<float> s = {1.0f, 4.0f, 4.0f, 2.0f, 2.0f, 0.0f};
  top_k_filter(s, 3);
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{1, 2, 3, 4}));
  std::vector<float> t = {1.0f, 4.0f, 3.0f};
  top_k_filter(t, 100);
  EXPECT_EQ(finite_ids(t).size(), 3u);
  std::vector<float> u = {1.0f, 4.0f, 3.0f};
  top_k_filter(u, 0);  // off
  EXPECT_EQ(finite_ids(u).size(), 3u);
  std::vector<float> w = {1.0f, 4.0f, 3.0f, 0.5f};
  top_k_filter(w, 1, /*min_tokens_to_keep=*/2);
  EXPECT_EQ(finite_ids(w), (std::vector<int32_t>{1, 2}));
}

TEST(SamplerProcessors, TopPExtremes) {
  const std::vector<float> base = {0.0f, 1.0f, 2.0f, 3.0f};
  std::vector<float> s = base;
  top_p_filter(s, 0.0f);  // everything has cumulative <= 1 except what min_tokens_to_keep saves
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{3}));
  s = base;
  top_p_filter(s, 1.0f);  // off
  EXPECT_EQ(finite_ids(s).size(), 4u);
  s = base;
  top_p_filter(s, 0.999f);
  EXPECT_EQ(finite_ids(s).size(), 4u);
  s = base;
  top_p_filter(s, 0.0f, /*min_tokens_to_keep=*/2);
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{2, 3}));
  // probabilities 0.1/0.2/0.3/0.4 (log-space): top_p 0.65 removes cumulative 0.1, 0.3 (<= 0.35)
  std::vector<float> q = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  top_p_filter(q, 0.65f);
  EXPECT_EQ(finite_ids(q), (std::vector<int32_t>{2, 3}));
}

TEST(SamplerProcessors, TopPTiesRemoveLowerIdsFirst) {
  // stable ascending sort: among equal scores the lower ids come first and are cut first
  std::vector<float> s(10, 0.0f);
  top_p_filter(s, 0.3f);  // cumulative k/10 <= 0.7 for the first 7
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{7, 8, 9}));
}

TEST(SamplerProcessors, MinPKeepsTheBestAndMinTokensToKeep) {
  std::vector<float> s = {0.0f, 5.0f, 0.0f, -kInf};
  min_p_filter(s, 1.0f);  // only the best passes p >= 1 * max p
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{1}));
  s = {0.0f, 5.0f, 0.1f, -kInf};
  min_p_filter(s, 1.0f, 2);  // HF's min_tokens_to_keep: the two most probable stay
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{1, 2}));
  s = {0.0f, 5.0f};
  min_p_filter(s, 0.0f);  // 0 = off
  EXPECT_EQ(finite_ids(s), (std::vector<int32_t>{0, 1}));
}

TEST(SamplerProcessors, SoftmaxAndArgmax) {
  const std::vector<float> s = {1000.0f, 1000.0f, -kInf, 999.0f};
  const auto p = softmax(s);
  EXPECT_NEAR(p[0] + p[1] + p[3], 1.0, 1e-12);
  EXPECT_EQ(p[2], 0.0);
  EXPECT_DOUBLE_EQ(p[0], p[1]);
  EXPECT_EQ(argmax(s), 0);  // first on ties
  EXPECT_EQ(argmax(std::vector<float>{-1.0f, 3.0f, 3.0f}), 1);
  const auto z = softmax(std::vector<float>{-kInf, -kInf});
  EXPECT_EQ(z[0] + z[1], 0.0);
}

TEST(SamplerConfigTest, ValidateRejectsWhatHFRejects) {
  SamplingConfig c;
  c.repetition_penalty = 0.0f;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.top_k = -1;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.top_p = 1.5f;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.do_sample = true;
  c.temperature = 0.0f;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c.do_sample = false;  // greedy ignores the temperature, as HF
  EXPECT_NO_THROW(Sampler{c});
  c = {};
  c.min_p = 2.0f;  // HF MinPLogitsWarper: min_p must be in [0, 1]
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c.min_p = -0.1f;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c.min_p = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.top_p = 0.0f;  // HF accepts it (keeps only the best token)
  EXPECT_NO_THROW(Sampler{c});
  c.top_p = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.do_sample = true;
  c.temperature = -0.5f;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c.temperature = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
  c = {};
  c.audit_top = 0;
  EXPECT_THROW(Sampler{c}, std::invalid_argument);
}

// ---- the sampler ---------------------------------------------------------------------------------

std::vector<float> test_logits(int V, uint32_t salt) {
  std::vector<float> l(V);
  for (int i = 0; i < V; ++i) l[i] = std::sin(0.37f * static_cast<float>(i * 7 + static_cast<int>(salt))) * 3.0f;
  return l;
}

TEST(Sampler, GreedyIsArgmaxAndConsumesNoRandomness) {
  SamplingConfig c;
  c.temperature = 0.3f;  // ignored in greedy
  c.top_k = 1;           // ignored in greedy
  Sampler s(c);
  for (uint32_t salt = 0; salt < 20; ++salt) {
    const auto l = test_logits(97, salt);
    SampleAudit a;
    const int32_t chosen = s.sample(l.data(), 97, {}, &a);
    EXPECT_EQ(chosen, argmax(l));
    EXPECT_EQ(a.chosen, chosen);
    EXPECT_EQ(a.candidates[0], chosen);
    EXPECT_EQ(a.u, -1.0f);
    EXPECT_EQ(a.survivors, 97);  // no filter runs in greedy mode
    for (size_t j = 0; j < a.candidates.size(); ++j) EXPECT_EQ(a.scaled[j], a.penalized[j]);
  }
  // first index on ties
  const std::vector<float> tie = {0.0f, 5.0f, 1.0f, 5.0f};
  EXPECT_EQ(s.sample(tie.data(), 4, {}, nullptr), 1);
  // the penalty applies in greedy mode
  SamplingConfig p;
  p.repetition_penalty = 2.0f;
  Sampler sp(p);
  const std::vector<float> l = {4.0f, 3.0f, 1.0f};
  EXPECT_EQ(sp.sample(l.data(), 3, {0}, nullptr), 1);
}

std::vector<int32_t> draws(uint64_t seed, int n, SampleAudit* last = nullptr) {
  SamplingConfig c;
  c.do_sample = true;
  c.temperature = 1.5f;
  c.seed = seed;
  Sampler s(c);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto l = test_logits(64, static_cast<uint32_t>(i % 5));  // rows in order, one stream
    out.push_back(s.sample(l.data(), 64, {}, last));
  }
  return out;
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedsDiffer) {
  const auto a = draws(42, 300), b = draws(42, 300), c = draws(43, 300);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
  EXPECT_LT(same, a.size() / 2);
  SampleAudit x, y;
  draws(42, 5, &x);
  draws(42, 5, &y);
  EXPECT_EQ(x.u, y.u);
  EXPECT_GE(x.u, 0.0f);
  EXPECT_LT(x.u, 1.0f);
}

TEST(Sampler, EmpiricalFrequenciesMatchSurvivorProbabilities) {
  const int V = 40;
  const auto l = test_logits(V, 3);
  SamplingConfig c;
  c.do_sample = true;
  c.temperature = 0.8f;
  c.top_k = 8;
  c.top_p = 0.9f;
  c.repetition_penalty = 1.3f;
  c.seed = 2024;
  c.audit_top = V;
  const std::vector<int32_t> ctx = {argmax(l), 5, 5, 17};

  std::vector<float> fin = l;
  apply_repetition_penalty(fin, ctx, c.repetition_penalty);
  apply_temperature(fin, c.temperature);
  top_k_filter(fin, c.top_k);
  top_p_filter(fin, c.top_p);
  const auto p = softmax(fin);
  const auto surv = finite_ids(fin);
  ASSERT_GE(surv.size(), 3u);

  Sampler s(c);
  const int n = 20000;
  std::vector<int> count(V, 0);
  for (int i = 0; i < n; ++i) {
    const int32_t t = s.sample(l.data(), V, ctx, nullptr);
    ASSERT_GT(fin[t], -kInf) << "a cut token was drawn";
    ++count[t];
  }
  double chi2 = 0.0;
  for (int32_t id : surv) {
    const double e = n * p[id];
    chi2 += (count[id] - e) * (count[id] - e) / e;
  }
  // df = survivors - 1 <= 7; the 99.9% quantile of chi-square(7) is 24.3
  EXPECT_LT(chi2, 24.3) << "survivors " << surv.size();
}

TEST(Sampler, AuditIsConsistent) {
  for (int top_k : {0, 3, 12}) {
    for (float top_p : {1.0f, 0.5f, 0.95f}) {
      SamplingConfig c;
      c.do_sample = true;
      c.temperature = 0.9f;
      c.top_k = top_k;
      c.top_p = top_p;
      c.repetition_penalty = 1.2f;
      c.seed = 99;
      c.audit_top = 10;
      Sampler s(c);
      for (uint32_t row = 0; row < 30; ++row) {
        const int V = 50;
        const auto l = test_logits(V, row);
        const std::vector<int32_t> ctx = {1, 2, 3, static_cast<int32_t>(row)};
        SampleAudit a;
        const int32_t chosen = s.sample(l.data(), V, ctx, &a);
        SCOPED_TRACE("top_k " + std::to_string(top_k) + " top_p " + std::to_string(top_p));
        ASSERT_EQ(a.candidates.size(), 10u);
        ASSERT_EQ(a.raw.size(), 10u);
        ASSERT_EQ(a.kept.size(), 10u);
        EXPECT_EQ(a.chosen, chosen);
        EXPECT_NE(std::find(a.candidates.begin(), a.candidates.end(), chosen), a.candidates.end());
        EXPECT_EQ(std::set<int32_t>(a.candidates.begin(), a.candidates.end()).size(), 10u) << "distinct";
        EXPECT_GE(a.u, 0.0f);
        EXPECT_LT(a.u, 1.0f);
        if (top_k == 0 && top_p == 1.0f) {
          EXPECT_EQ(a.survivors, V);
        }

        // recompute the pipeline independently
        std::vector<float> pen = l;
        apply_repetition_penalty(pen, ctx, c.repetition_penalty);
        std::vector<float> sc = pen;
        apply_temperature(sc, c.temperature);
        std::vector<float> fin = sc;
        top_k_filter(fin, top_k);
        top_p_filter(fin, top_p);
        EXPECT_EQ(static_cast<size_t>(a.survivors), finite_ids(fin).size());

        int kept = 0;
        double psum = 0.0;
        for (size_t j = 0; j < 10; ++j) {
          const int32_t id = a.candidates[j];
          EXPECT_EQ(a.raw[j], l[id]);
          EXPECT_EQ(a.penalized[j], pen[id]);
          EXPECT_EQ(a.scaled[j], sc[id]);
          EXPECT_EQ(a.kept[j], fin[id] > -kInf ? 1 : 0);
          if (!a.kept[j]) {
            EXPECT_EQ(a.probs[j], 0.0f);
          }
          kept += a.kept[j];
          psum += a.probs[j];
          if (j > 0 && a.kept[j] == a.kept[j - 1] && a.candidates[j] != chosen) {
            EXPECT_GE(a.scaled[j - 1], a.scaled[j]) << "best first";
          }
          if (j > 0 && a.candidates[j] != chosen) {
            EXPECT_GE(a.kept[j - 1], a.kept[j]) << "survivors first";
          }
        }
        if (a.survivors <= 10) {
          EXPECT_EQ(kept, a.survivors);
          EXPECT_NEAR(psum, 1.0, 1e-5);
          // the decision can be replayed from the audit alone: walk survivors by probability
          std::vector<size_t> order;
          for (size_t j = 0; j < 10; ++j)
            if (a.kept[j]) order.push_back(j);
          std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
            return a.probs[x] != a.probs[y] ? a.probs[x] > a.probs[y] : a.candidates[x] < a.candidates[y];
          });
          double cum = 0.0;
          int32_t replay = a.candidates[order.back()];
          for (size_t j : order) {
            cum += a.probs[j];
            if (cum > a.u) {
              replay = a.candidates[j];
              break;
            }
          }
          EXPECT_EQ(replay, chosen);
        } else {
          EXPECT_EQ(kept, 10);  // the top 10 survivors (a swapped-in chosen is a survivor too)
        }
      }
    }
  }
}

// A straightforward transcription of HF's TopPLogitsWarper (full ascending stable sort, torch's
// rounding), to check the lazily sorted implementation on vocabularies bigger than its chunks.
std::vector<float> naive_top_p(std::vector<float> s, float top_p) {
  const auto p = softmax(s);
  std::vector<int32_t> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] < s[b]; });
  const double thr = static_cast<float>(1.0 - static_cast<double>(top_p));
  double cum = 0.0;
  std::vector<char> remove(order.size());
  for (size_t j = 0; j < order.size(); ++j) {
    cum += static_cast<float>(p[order[j]]);
    remove[j] = static_cast<float>(cum) <= thr;
  }
  remove.back() = 0;
  for (size_t j = 0; j < order.size(); ++j)
    if (remove[j]) s[order[j]] = -kInf;
  return s;
}

TEST(Sampler, LargeVocabularyMatchesNaiveReference) {
  const int V = 20000;
  std::vector<float> l(V);
  for (int i = 0; i < V; ++i) l[i] = std::round(std::sin(0.013f * i) * std::cos(0.0071f * i) * 40.0f) / 4.0f;  // ties
  for (float top_p : {0.05f, 0.5f, 0.9f, 0.99f, 0.9999f}) {
    for (float t : {0.5f, 1.0f, 3.0f}) {
      std::vector<float> sc = l;
      apply_temperature(sc, t);
      std::vector<float> fast = sc;
      top_p_filter(fast, top_p);
      EXPECT_EQ(finite_ids(fast), finite_ids(naive_top_p(sc, top_p))) << "top_p " << top_p << " T " << t;
    }
  }
  // inverse CDF walk over many survivors (no filter): replay with a full sort
  SamplingConfig c;
  c.do_sample = true;
  c.temperature = 4.0f;
  c.seed = 11;
  Sampler s(c);
  std::vector<float> sc = l;
  apply_temperature(sc, c.temperature);
  const auto p = softmax(sc);
  std::vector<int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return sc[a] != sc[b] ? sc[a] > sc[b] : a < b; });
  for (int i = 0; i < 200; ++i) {
    SampleAudit a;
    const int32_t chosen = s.sample(l.data(), V, {}, &a);
    EXPECT_EQ(a.survivors, V);
    double cum = 0.0;
    int32_t replay = order.back();
    for (int32_t id : order) {
      cum += p[id];
      if (cum > a.u) {
        replay = id;
        break;
      }
    }
    EXPECT_EQ(chosen, replay);
  }
}

TEST(Sampler, ChosenReplacesLastCandidateWhenAbsent) {
  const int V = 200;
  std::vector<float> flat(V, 0.0f);
  SamplingConfig c;
  c.do_sample = true;
  c.seed = 5;
  c.audit_top = 3;
  Sampler s(c);
  int replaced = 0;
  for (int i = 0; i < 100; ++i) {
    SampleAudit a;
    const int32_t chosen = s.sample(flat.data(), V, {}, &a);
    ASSERT_EQ(a.candidates.size(), 3u);
    EXPECT_EQ(a.candidates[0], 0);  // equal scores: lower id first
    EXPECT_EQ(a.candidates[1], 1);
    if (chosen > 2) {
      EXPECT_EQ(a.candidates[2], chosen);
      ++replaced;
    } else {
      EXPECT_EQ(a.candidates[2], 2);
    }
    EXPECT_NEAR(a.probs[2], 1.0 / V, 1e-7);
  }
  EXPECT_GT(replaced, 80);
}

TEST(Sampler, AuditTopClampedToVocab) {
  SamplingConfig c;
  c.audit_top = 50;
  Sampler s(c);
  const std::vector<float> l = {0.5f, 2.0f, 1.0f};
  SampleAudit a;
  EXPECT_EQ(s.sample(l.data(), 3, {}, &a), 1);
  EXPECT_EQ(a.candidates, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(s.config().audit_top, 50);
}

}  // namespace
}  // namespace lmscope
