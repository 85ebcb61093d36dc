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

// sum over every value of (clean - corrupted) * grad, grouped by the index along the T axis
// and along `axis` (the same axis for a position cell): [T][index along axis]. The three
// tensors have the hook's layout, batch 1.
std::vector<std::vector<double>> cell_sums(const Tensor& clean, const Tensor& corrupted, const Tensor& grad, int t_axis,
                                           int axis) {
  if (clean.shape() != corrupted.shape() || clean.shape() != grad.shape())
    throw std::logic_error("attribution patching: the clean and corrupted runs' shapes differ");
  auto stride_of = [&](int a) {   // in values
    int64_t s = 1;
    for (size_t d = size_t(a) + 1; d < clean.shape().size(); ++d) s *= clean.dim(int(d));
    return s;
  };
  const int64_t t_stride = stride_of(t_axis), T = clean.dim(t_axis), stride = stride_of(axis), n = clean.dim(axis);
  std::vector<std::vector<double>> sums(size_t(T), std::vector<double>(size_t(n), 0.0));
  const float *a = clean.f32(), *b = corrupted.f32(), *g = grad.f32();
  for (int64_t i = 0; i < clean.numel(); ++i)
    sums[size_t((i / t_stride) % T)][size_t((i / stride) % n)] += (double(a[i]) - double(b[i])) * double(g[i]);
  return sums;
}

}  // namespace

std::vector<AttributionCells> attribution_estimates(const ModelContext& m, const Weights& weights,
                                                    const std::vector<PatchSite>& sites,
                                                    const std::vector<int32_t>& clean,
                                                    const std::vector<int32_t>& corrupt, const MetricSpec& metric) {
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

  std::vector<AttributionCells> out;
  for (const PatchSite& s : sites) {
    const int axis = column_axis(s), t_axis = hook_axis(s.hook, "T");
    AttributionCells cells;
    for (int l = 0; l < s.layers(cfg); ++l) {
      const std::string name = s.hook_name(l);
      const auto sums = cell_sums(named_tensor(a, name), named_tensor(b, name), named_tensor(g, name), t_axis, axis);
      std::vector<double> row(s.columns.size(), 0.0);                          // [column]
      std::vector<std::vector<double>> split(sums.size(), std::vector<double>(s.columns.size(), 0.0));   // [T][column]
      for (size_t t = 0; t < sums.size(); ++t)
        for (size_t c = 0; c < s.columns.size(); ++c) {
          // a position cell is its own position's sum; a head or neuron cell sums every position
          const bool here = s.axis != PatchSite::Axis::Position || int64_t(t) == s.columns[c];
          split[t][c] = here ? sums[t][size_t(s.columns[c])] : 0.0;
          row[c] += split[t][c];
        }
      cells.grid.push_back(std::move(row));
      cells.by_position.push_back(std::move(split));
    }
    out.push_back(std::move(cells));
  }
  return out;
}

}  // namespace lmscope
