#include "experiments/attribution_patching.h"

#include <map>
#include <stdexcept>

#include "grad/grad_run.h"
#include "model/decoder.h"

namespace lmscope {

namespace {

using Named = std::map<std::string, const Tensor*>;

Named by_name(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  Named out;
  for (const auto& [name, t] : tensors) out[name] = &t;
  return out;
}

const Tensor& named_tensor(const Named& tensors, const std::string& name) {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw std::logic_error("attribution patching: the run did not give " + name);
  return *it->second;
}

// The axis of a hook's layout (hook_axes: {"B","H","T","hd"}) that a site's cells run along.
int column_axis(const PatchSite& site) {
  const char* names[] = {"T", "H", "F"};
  int axis = hook_axis(site.hook, names[int(site.axis)]);
  if (axis < 0 && site.axis == PatchSite::Axis::Head) axis = hook_axis(site.hook, "Hkv");
  if (axis < 0) throw std::logic_error("attribution patching: " + site.text + " has no such axis");
  return axis;
}

// sum over every value of (clean - corrupted) * grad, grouped by the index along `axis`: one
// sum per index of that axis. The three tensors have the hook's layout, batch 1.
std::vector<double> cell_sums(const Tensor& clean, const Tensor& corrupted, const Tensor& grad, int axis) {
  if (clean.shape() != corrupted.shape() || clean.shape() != grad.shape())
    throw std::logic_error("attribution patching: the clean and corrupted runs' shapes differ");
  int64_t stride = 1;   // of `axis`, in values
  for (size_t d = size_t(axis) + 1; d < clean.shape().size(); ++d) stride *= clean.dim(int(d));
  const int64_t n = clean.dim(axis);
  std::vector<double> sums(size_t(n), 0.0);
  const float *a = clean.f32(), *b = corrupted.f32(), *g = grad.f32();
  for (int64_t i = 0; i < clean.numel(); ++i)
    sums[size_t((i / stride) % n)] += (double(a[i]) - double(b[i])) * double(g[i]);
  return sums;
}

}  // namespace

std::vector<std::vector<std::vector<double>>> attribution_estimates(const ModelContext& m, const Weights& weights,
                                                                   const std::vector<PatchSite>& sites,
                                                                   const std::vector<int32_t>& clean,
                                                                   const std::vector<int32_t>& corrupt,
                                                                   const MetricSpec& metric) {
  const ModelConfig& cfg = m.cfg();
  std::string hooks;   // every layer of every site
  for (const PatchSite& s : sites) hooks += (hooks.empty() ? "" : ",") + s.hook_name(-1);
  GradRequest req;
  req.metric = metric;
  req.hooks = hooks;
  req.use_cache = false;
  req.prompts = {corrupt};
  const GradResult corrupted = run_with_grads(cfg, weights, m.decoder->backend(), req);   // forward + backward
  req.prompts = {clean};
  req.backward = false;
  const GradResult cleaned = run_with_grads(cfg, weights, m.decoder->backend(), req);     // forward only
  const Named a = by_name(cleaned.activations), b = by_name(corrupted.activations), g = by_name(corrupted.grads);

  std::vector<std::vector<std::vector<double>>> out;
  for (const PatchSite& s : sites) {
    const int axis = column_axis(s);
    std::vector<std::vector<double>> grid;   // [layer][column]
    for (int l = 0; l < s.layers(cfg); ++l) {
      const std::string name = s.hook_name(l);
      const std::vector<double> sums = cell_sums(named_tensor(a, name), named_tensor(b, name), named_tensor(g, name), axis);
      std::vector<double> row;
      for (int64_t c : s.columns) row.push_back(sums[size_t(c)]);
      grid.push_back(std::move(row));
    }
    out.push_back(std::move(grid));
  }
  return out;
}

}  // namespace lmscope
