// Interventions against Hugging Face (golden/interventions/, made by
// golden/make_intervention_refs.py: HF generate with torch hooks editing the same sites). Per
// case, with the cache and without it, on one prompt or a left-padded batch: lmscope's greedy ids
// equal HF's, and at every step and row HF's top 32 logits are matched within the logits
// tolerance of docs/tolerances.md (atol 1e-5 + rtol 2e-4 x the row's max |logit|). Batch cases
// whose interventions select no row also equal each row run alone.
// One check for every backend: tests/intervene runs it on the CPU, tests/cuda on the CUDA backend.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "compare/tolerances.h"
#include "runs/run.h"
#include "intervene/interventions.h"
#include "model/load_model.h"

namespace lmscope::intervention_golden {

using nlohmann::json;

inline const std::string kRoot = LMSCOPE_SOURCE_DIR;

inline json refs(const std::string& name) {
  std::ifstream f(kRoot + "/golden/interventions/" + name + ".json");
  return f ? json::parse(f) : json();
}

// The last column's logits of every step ([B][V] per step): what HF's output_logits holds.
struct LastLogits : TraceSink {
  std::vector<std::vector<std::vector<float>>> steps;
  void offer(Hook h, int, const Tensor& t) override {
    if (h != Hook::Logits) return;
    const int64_t B = t.dim(0), T = t.dim(1), V = t.dim(2);
    std::vector<std::vector<float>> rows;
    for (int64_t b = 0; b < B; ++b) rows.emplace_back(t.f32() + (b * T + T - 1) * V, t.f32() + (b * T + T) * V);
    steps.push_back(std::move(rows));
  }
};

struct Run {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<std::vector<float>>> logits;
};

class Model {
 public:
  Model(const std::string& path, std::unique_ptr<Backend> be)
      : path_(path), m_(load_model(path)), be_(std::move(be)), dec_(m_.cfg, m_.weights, *be_) {}

  Run run(const json& ref, const json& c, const std::vector<std::vector<int32_t>>& prompts) {
    std::vector<InterventionSpec> specs;
    for (const json& s : c["interventions"]) specs.push_back(intervention_from_json(s, kRoot, "golden"));
    Interventions iv(specs, m_.cfg);
    GenerateOptions opt;
    opt.prompts = prompts;
    opt.padding_side = parse_padding_side(c["padding_side"]);
    opt.max_new_tokens = ref["max_new_tokens"];
    opt.use_cache = c["use_cache"];
    opt.pad_id = ref["pad_token_id"];
    opt.eos_ids = ref["eos_token_ids"].get<std::vector<int32_t>>();
    opt.editor = &iv;
    ModelContext ctx;
    ctx.decoder = &dec_;
    ctx.model_path = path_;
    LastLogits sink;
    Run r;
    r.ids = run_traced(ctx, opt, HookSet("logits", "", m_.cfg.num_layers), "", &sink).new_tokens;
    r.logits = std::move(sink.steps);
    return r;
  }

 private:
  std::string path_;
  LoadedModel m_;
  std::unique_ptr<Backend> be_;
  Decoder dec_;
};

// ours vs HF's top logits of every step and row; returns the largest error / its bound.
inline double check_logits(const json& c, const Run& ours, const std::string& what) {
  const Tolerance tol = ToleranceTable::defaults().lookup("logits");
  double worst = 0;
  EXPECT_EQ(ours.logits.size(), c["steps"].size()) << what;
  for (size_t s = 0; s < std::min(ours.logits.size(), c["steps"].size()); ++s)
    for (size_t b = 0; b < c["steps"][s].size(); ++b) {
      const json& row = c["steps"][s][b];
      const double bound = tol.bound(row["scale"].get<double>());
      for (size_t k = 0; k < row["top_ids"].size(); ++k) {
        const int id = row["top_ids"][k];
        const double err = std::fabs(double(ours.logits[s][b][size_t(id)]) - row["top_logits"][k].get<double>());
        worst = std::max(worst, err / bound);
        EXPECT_LE(err, bound) << what << " step " << s << " row " << b << " token " << id;
      }
    }
  return worst;
}

// Which golden cases a test runs (all, by default) and whether each batch row is also run alone.
struct CaseFilter {
  std::vector<std::string> names;   // empty: every case
  bool cached_only = false;
  bool alone = true;
  bool selects(const json& c) const {
    if (cached_only && !c["use_cache"].get<bool>()) return false;
    return names.empty() || std::find(names.begin(), names.end(), c["name"].get<std::string>()) != names.end();
  }
};

inline void check_model(const std::string& name, const std::string& model_path, std::unique_ptr<Backend> be,
                        const CaseFilter& filter = {}) {
  const json ref = refs(name);
  ASSERT_FALSE(ref.is_null()) << "golden/interventions/" << name << ".json is missing: it is committed, so the checkout is broken";
  Model model(model_path, std::move(be));
  int run_cases = 0;
  double worst = 0;
  int alone_checked = 0;
  for (const json& c : ref["cases"]) {
    if (!filter.selects(c)) continue;
    ++run_cases;
    const std::string what = name + " " + c["name"].get<std::string>() + (c["use_cache"] ? " (cache)" : " (no cache)");
    const auto prompts = c["prompt_ids"].get<std::vector<std::vector<int32_t>>>();
    const Run ours = model.run(ref, c, prompts);
    EXPECT_EQ(ours.ids, c["generated_ids"].get<std::vector<std::vector<int32_t>>>()) << what;
    worst = std::max(worst, check_logits(c, ours, what));
    // A batch equals its rows run alone (each row's edits at its own positions).
    bool selects_row = false;
    for (const json& s : c["interventions"]) selects_row |= s.get<std::string>().find("row=") != std::string::npos;
    if (!filter.alone || prompts.size() < 2 || selects_row) continue;
    for (size_t b = 0; b < prompts.size(); ++b) {
      const Run alone = model.run(ref, c, {prompts[b]});
      EXPECT_EQ(alone.ids[0], ours.ids[b]) << what << " row " << b << " alone";
      json one = c;
      for (json& step : one["steps"]) step = json::array({step[b]});
      worst = std::max(worst, check_logits(one, alone, what + " row " + std::to_string(b) + " alone"));
      ++alone_checked;
    }
  }
  EXPECT_GT(run_cases, 0) << name << ": no case selected";
  std::printf("[ measure ] %s: %d intervened runs, %d batch rows alone; worst logit error %.3g of the tolerance\n",
              name.c_str(), run_cases, alone_checked, worst);
}

}  // namespace lmscope::intervention_golden
