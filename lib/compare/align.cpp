#include "compare/align.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "trace/hooks.h"
#include "trace/select.h"

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

bool aligning(const AlignOptions& al) { return al.row_a >= 0 || al.row_ref >= 0 || al.last_position; }

std::vector<int32_t> row_mask_at(const TraceReader& t, int step, int64_t row) {
  if (!t.has_hook(step, "tokens.attention_mask")) return {};
  HookData m = t.read(step, "tokens.attention_mask");
  if (m.shape.size() != 2 || row >= m.shape[0]) return {};
  std::vector<int32_t> out(size_t(m.shape[1]));
  for (int64_t s = 0; s < m.shape[1]; ++s) out[size_t(s)] = int32_t(m.values[size_t(row * m.shape[1] + s)]);
  return out;
}

namespace {

// Number of query rows of a hook (axis T), or -1.
int64_t t_of(const HookData& d) {
  const int ti = d.axis("T");
  return ti < 0 ? -1 : d.shape[ti];
}

// An uncached k_rope / v ([B,Hkv,T=S,hd]) relabelled with the cache's axes, so that it compares
// with kv.L.k / kv.L.v.
HookData as_cache_layout(HookData d, const std::string& cache_hook) {
  d.hook = cache_hook;
  for (auto& a : d.axes)
    if (a == "T") a = "S";
  return d;
}

void compare_generated_rows(const TraceReader& a, const TraceReader& ref, const AlignOptions& al,
                            CompareReport& rep) {
  auto ids = generated_ids_of_both(a, ref, rep);
  if (!ids) return;
  const HookData &ga = ids->first, &gb = ids->second;
  if (ga.shape.size() != 2 || gb.shape.size() != 2) return;
  auto rows = [](const HookData& g, int r) {
    std::vector<int64_t> out;
    if (r >= 0) out.push_back(r);
    else
      for (int64_t i = 0; i < g.shape[0]; ++i) out.push_back(i);
    return out;
  };
  std::vector<int64_t> ra = rows(ga, al.row_a), rb = rows(gb, al.row_ref);
  if (ra.size() != rb.size()) {
    rep.generated_differ("A compares " + std::to_string(ra.size()) + " rows, the reference " + std::to_string(rb.size()));
    return;
  }
  const int64_t n = std::min(ga.shape[1], gb.shape[1]);
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i] >= ga.shape[0] || rb[i] >= gb.shape[0]) {
      rep.generated_differ("generated_ids has no such row");
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      double x = ga.values[size_t(ra[i] * ga.shape[1] + k)], y = gb.values[size_t(rb[i] * gb.shape[1] + k)];
      if (x != y) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "first difference at row %lld (reference row %lld), token %lld: A %lld vs reference %lld",
                      (long long)ra[i], (long long)rb[i], (long long)k, (long long)x, (long long)y);
        rep.generated_differ(buf);
        return;
      }
    }
  }
}

}  // namespace

CompareReport compare_aligned(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts,
                              const AlignOptions& al) {
  if (!aligning(al)) return compare_traces(a, ref, opts);
  if ((al.row_a >= 0) != (al.row_ref >= 0))
    throw std::runtime_error("row alignment needs a row on both sides (A and reference)");
  const bool strip = al.row_a >= 0;
  CompareReport rep;
  rep.path_a = a.path();
  rep.path_ref = ref.path();
  const int n = std::min(a.n_steps(), ref.n_steps());
  for (int step = 0; step < n; ++step) {
    if (!opts.steps.empty() && !std::binary_search(opts.steps.begin(), opts.steps.end(), step)) continue;
    std::vector<std::string> ha = a.hooks(step), hb = ref.hooks(step);
    std::unordered_set<std::string> in_a(ha.begin(), ha.end()), in_ref(hb.begin(), hb.end());
    const std::vector<int32_t> mask_a = strip ? row_mask_at(a, step, al.row_a) : std::vector<int32_t>();
    const std::vector<int32_t> mask_ref = strip ? row_mask_at(ref, step, al.row_ref) : std::vector<int32_t>();
    if (strip && (mask_a.empty() || mask_ref.empty()))
      throw std::runtime_error("row alignment strips pads through tokens.attention_mask, and step " + std::to_string(step) +
                               " of '" + (mask_a.empty() ? a.path() : ref.path()) +
                               "' has none for that row (trace it: --hooks '...,tokens.attention_mask')");
    std::optional<HookData> ref_mask;   // pad rule of the plain comparison
    if (!strip && ref.has_hook(step, "tokens.attention_mask")) ref_mask = ref.read(step, "tokens.attention_mask");

    auto prepare = [&](const TraceReader& t, const std::string& hook, bool is_a) {
      HookData d = t.read(step, hook);
      if (strip) d = strip_pads(d, is_a ? al.row_a : al.row_ref, is_a ? mask_a : mask_ref);
      return d;
    };
    std::vector<HookResult> results;
    auto add = [&](const std::string& name, HookData da, HookData db, const std::string& note) {
      if (al.last_position) {
        const int64_t ta = t_of(da), tb = t_of(db);
        if (ta > 0 && tb > 0 && ta != tb) {
          const int64_t keep = std::min(ta, tb);
          da = last_positions(da, keep);
          db = last_positions(db, keep);
        }
      }
      // Stripped rows hold no pads; otherwise the reference's pad rule (compare/metrics.h).
      const HookData* rule_mask = (!strip && ref_mask) ? &*ref_mask : nullptr;
      HookResult r = compare_hook_data(step, name, da, db, rule_mask, opts.tolerances);
      if (!note.empty()) r.note = r.note.empty() ? note : r.note + "; " + note;
      results.push_back(std::move(r));
    };

    for (const std::string& hook : hb) {
      if (!match_any(opts.hook_globs, hook)) continue;
      if (in_a.count(hook)) {
        add(hook, prepare(a, hook, true), prepare(ref, hook, false), "");
        continue;
      }
      // The reference holds the cache, A ran without one: A's k_rope / v of all positions.
      auto cp = al.last_position ? uncached_counterpart(hook) : std::nullopt;
      if (cp && in_a.count(*cp)) {
        add(hook, as_cache_layout(prepare(a, *cp, true), hook), prepare(ref, hook, false), "A: " + *cp);
        continue;
      }
      rep.missing_in_a.push_back({step, hook});
      HookResult r;
      r.step = step;
      r.hook = hook;
      r.kind = HookResult::Kind::MissingInA;
      results.push_back(std::move(r));
    }
    for (const std::string& hook : ha) {
      if (in_ref.count(hook) || !match_any(opts.hook_globs, hook)) continue;
      // A holds the cache, the reference ran without one.
      auto cp = al.last_position ? uncached_counterpart(hook) : std::nullopt;
      if (cp && in_ref.count(*cp)) {
        add(hook, prepare(a, hook, true), as_cache_layout(prepare(ref, *cp, false), hook), "reference: " + *cp);
        continue;
      }
      rep.only_in_a.push_back({step, hook});
    }
    std::stable_sort(results.begin(), results.end(), [](const HookResult& x, const HookResult& y) {
      return hook_sort_key(x.hook) < hook_sort_key(y.hook);
    });
    for (HookResult& r : results) rep.results.push_back(std::move(r));
  }
  if (rep.results.empty() && rep.only_in_a.empty())
    throw std::runtime_error("nothing to compare: no hook of '" + ref.path() + "' matches the selected steps/hooks");
  compare_generated_rows(a, ref, al, rep);
  conclude(rep);
  return rep;
}

}  // namespace lmscope
