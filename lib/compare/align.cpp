#include "compare/align.h"

#include <algorithm>
#include <stdexcept>

#include "compare/compare_step.h"
#include "trace/hooks.h"

namespace lmscope {

HookData take_along(const HookData& d, int axis, const std::vector<int64_t>& keep) {
  if (axis < 0 || axis >= int(d.shape.size())) throw std::logic_error("take_along: no axis " + std::to_string(axis));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= d.shape[i];
  for (size_t i = size_t(axis) + 1; i < d.shape.size(); ++i) inner *= d.shape[i];
  const int64_t n = d.shape[axis];
  HookData out;
  out.hook = d.hook;
  out.axes = d.axes;
  out.is_int = d.is_int;
  out.shape = d.shape;
  out.shape[axis] = int64_t(keep.size());
  out.values.reserve(size_t(outer * int64_t(keep.size()) * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : keep) {
      if (k < 0 || k >= n) throw std::logic_error("take_along: index out of range");
      const double* src = d.values.data() + (o * n + k) * inner;
      out.values.insert(out.values.end(), src, src + inner);
    }
  return out;
}

HookData select_row(const HookData& d, int64_t row) {
  const int b = d.axis("B");
  if (b < 0) return d;
  if (row >= d.shape[b]) throw std::runtime_error(d.hook + ": no row " + std::to_string(row) + " (B = " +
                                                  std::to_string(d.shape[b]) + ")");
  return take_along(d, b, {row});
}

HookData strip_pads(const HookData& d, int64_t row, const std::vector<int32_t>& row_mask) {
  HookData out = select_row(d, row);
  const int64_t S = int64_t(row_mask.size());
  if (S == 0) return out;
  const int si = out.axis("S"), ti = out.axis("T");
  if (si >= 0 && out.shape[si] == S) {
    std::vector<int64_t> keep;
    for (int64_t s = 0; s < S; ++s)
      if (row_mask[size_t(s)]) keep.push_back(s);
    out = take_along(out, si, keep);
  }
  if (ti >= 0 && out.shape[ti] <= S) {
    const int64_t T = out.shape[ti];
    std::vector<int64_t> keep;
    for (int64_t t = 0; t < T; ++t)
      if (row_mask[size_t(S - T + t)]) keep.push_back(t);
    out = take_along(out, ti, keep);
  }
  return out;
}

HookData last_positions(const HookData& d, int64_t n) {
  const int ti = d.axis("T");
  if (ti < 0 || d.shape[ti] <= n) return d;
  std::vector<int64_t> keep;
  for (int64_t t = d.shape[ti] - n; t < d.shape[ti]; ++t) keep.push_back(t);
  return take_along(d, ti, keep);
}

std::optional<std::string> uncached_counterpart(const std::string& cache_hook) {
  auto p = parse_hook_name(cache_hook);
  if (!p) return std::nullopt;
  if (p->id == Hook::KvK) return hook_name(Hook::AttnKRope, p->layer);
  if (p->id == Hook::KvV) return hook_name(Hook::AttnV, p->layer);
  return std::nullopt;
}

CompareReport compare_aligned(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts,
                              const AlignOptions& al) {
  if ((al.row_a >= 0) != (al.row_ref >= 0))
    throw std::runtime_error("row alignment needs a row on both sides (A and reference)");
  const HookFilter filter = hook_filter(opts, a, ref);
  CompareReport rep;
  rep.path_a = a.path();
  rep.path_ref = ref.path();
  // Every step either trace holds (the step rule of compare/compare_step.h).
  const int n = std::max(a.n_steps(), ref.n_steps());
  for (int step = 0; step < n; ++step) {
    if (!opts.steps.empty() && !std::binary_search(opts.steps.begin(), opts.steps.end(), step)) continue;
    compare_step(step, step_hooks(a, step), step_hooks(ref, step), filter, al, opts.tolerances, rep);
  }
  if (rep.results.empty() && rep.only_in_a.empty())
    throw std::runtime_error("nothing to compare: no hook of '" + ref.path() + "' matches the selected steps/hooks");
  compare_generated(a, ref, al.row_a, al.row_ref, rep);
  conclude(rep);
  return rep;
}

}  // namespace lmscope
