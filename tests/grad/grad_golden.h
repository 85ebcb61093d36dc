// The backward pass against torch autograd, shared by the CPU test (tests/grad) and the CUDA
// one (tests/cuda): each case of golden/grad/manifest.json (made by golden/make_grad_refs.py
// with HF's model in float64) is run by run_with_grads on a backend, prefill with or without
// a KV cache, and every gradient compared with torch's: max |ours - torch| over the tensor,
// relative to the tensor's max |torch grad|, at most kGradTolerance (docs/tolerances.md,
// "Gradients"). Padding positions must get exactly 0.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "grad/grad_run.h"
#include "io/hdf5.h"
#include "model/load_model.h"
#include "tests/golden_manifest.h"
#include "trace/hooks.h"

namespace lmscope::grad_golden {

// docs/tolerances.md, "Gradients": the largest measured over every case, hook and cache
// setting was 1.21e-5 on the CPU (OpenBLAS's Haswell kernels) and 2.24e-5
// (OPENBLAS_CORETYPE=Sandybridge); the bound leaves a factor of about 9 over the worst.
constexpr double kGradTolerance = 2e-4;

inline nlohmann::json manifest() {
  std::ifstream f(golden::root() + "/golden/grad/manifest.json");
  return f ? nlohmann::json::parse(f) : nlohmann::json();
}

inline std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (const auto& c : manifest()) out.push_back(c["name"]);
  if (out.empty()) out.push_back("no_manifest");
  return out;
}

// A gtest name of (case, cache): tiny_qwen2_logit_diff_cache.
inline std::string param_name(const std::tuple<std::string, bool>& p) {
  std::string n = std::get<0>(p) + (std::get<1>(p) ? "_cache" : "_no_cache");
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

struct Case {
  nlohmann::json entry;
  std::map<std::string, h5::DatasetData> grads;   // by lmscope hook name
  h5::DatasetData mask;                           // [B,T]
  double metric = 0;
};

inline Case load_case(const std::string& name) {
  Case c;
  for (const auto& e : manifest())
    if (e["name"] == name) c.entry = e;
  if (c.entry.is_null()) return c;
  const h5::File f = h5::File::open_read(golden::root() + "/" + c.entry["file"].get<std::string>());
  const h5::Group g = f.root().open_group("grad");
  for (const std::string& hook : g.children()) c.grads[hook] = g.read_dataset(hook);
  c.mask = f.root().read_dataset("attention_mask");
  c.metric = f.root().attr_double("metric");
  return c;
}

// Runs case `name` on `backend` and checks every gradient the golden holds; prints the worst
// hook (the figure docs/gradients.md quotes). Skips when the case's model was not fetched.
inline void check_case(const std::string& name, bool use_cache, const std::function<std::unique_ptr<Backend>()>& make) {
  const Case c = load_case(name);
  ASSERT_FALSE(c.entry.is_null()) << "golden/grad/manifest.json lacks " << name;
  const std::string model_path = golden::root() + "/" + c.entry["model"].get<std::string>();
  if (!std::ifstream(model_path)) GTEST_SKIP() << model_path << " is absent (scripts/fetch-model.sh)";
  LoadedModel m = load_model(model_path);
  std::unique_ptr<Backend> be = make();

  GradRequest req;
  req.prompts = c.entry["prompts"].get<std::vector<std::vector<int32_t>>>();
  req.use_cache = use_cache;
  req.metric = parse_metric(c.entry["metric"].get<std::string>());
  resolve_metric_tokens(req.metric, m.cfg.vocab_size, nullptr);   // the goldens' tokens are ids
  req.hooks = "*";
  const GradResult r = run_with_grads(m.cfg, m.weights, *be, req);
  EXPECT_NEAR(r.metric, c.metric, 1e-3 * std::max(1.0, std::fabs(c.metric)));

  std::map<std::string, const Tensor*> ours;
  for (const auto& [hook, g] : r.grads) ours[hook] = &g;
  const int64_t T = c.mask.shape[1];
  double worst = 0;
  std::string worst_hook;
  for (const auto& [hook, ref] : c.grads) {
    SCOPED_TRACE(hook);
    ASSERT_TRUE(ours.count(hook)) << "no gradient for " << hook;
    const Tensor& g = *ours[hook];
    ASSERT_EQ(g.shape(), ref.shape);
    double max_ref = 0, max_diff = 0;
    for (size_t i = 0; i < ref.values.size(); ++i) {
      max_ref = std::max(max_ref, std::fabs(ref.values[i]));
      max_diff = std::max(max_diff, std::fabs(double(g.f32()[i]) - ref.values[i]));
    }
    const double rel = max_ref > 0 ? max_diff / max_ref : max_diff;
    EXPECT_LE(rel, kGradTolerance) << hook << ": max |diff| " << max_diff << ", max |torch| " << max_ref;
    if (rel > worst) worst = rel, worst_hook = hook;

    // Padding: every position of a padded column (the T axis), and the scores' padded key
    // columns (the S axis), exactly 0.
    const auto parsed = parse_hook_name(hook);
    ASSERT_TRUE(parsed);
    const std::vector<std::string> axes = hook_axes(parsed->id);
    const int t_axis = hook_axis(parsed->id, "T"), s_axis = hook_axis(parsed->id, "S");
    ASSERT_GE(t_axis, 0);
    std::vector<int64_t> stride(axes.size(), 1);
    for (int a = int(axes.size()) - 2; a >= 0; --a) stride[a] = stride[a + 1] * g.dim(a + 1);
    int64_t nonzero_pads = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const int64_t b = i / stride[0], t = (i / stride[t_axis]) % T;
      const bool pad_row = c.mask.values[b * T + t] == 0;
      const bool pad_key = parsed->id == Hook::AttnScores && c.mask.values[b * T + (i / stride[s_axis]) % T] == 0;
      if ((pad_row || pad_key) && g.f32()[i] != 0.0f) ++nonzero_pads;
    }
    EXPECT_EQ(nonzero_pads, 0) << hook << ": padding got a gradient";
  }
  std::printf("[ measured ] %s (%s, %s): %zu gradients, worst %.3g of max|torch grad| at %s\n", name.c_str(),
              be->name().c_str(), use_cache ? "cache" : "no cache", c.grads.size(), worst, worst_hook.c_str());
}

}  // namespace lmscope::grad_golden
