#include "compare/compare_step.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "trace/hooks.h"

namespace lmscope {

bool StepHooks::has(const std::string& hook) const {
  return std::find(names.begin(), names.end(), hook) != names.end();
}

StepHooks step_hooks(const TraceReader& t, int step) {
  StepHooks s;
  s.source = "'" + t.path() + "'";
  if (!t.has_step(step)) return s;
  s.names = t.hooks(step);
  s.read = [&t, step](const std::string& hook) { return t.read(step, hook); };
  return s;
}

HookFilter::HookFilter(const std::string& globs, const std::string& layers, int num_layers)
    : set_(HookSet(globs, layers, num_layers)), num_layers_(num_layers) {}

bool HookFilter::selects(const std::string& hook) const {
  if (!set_) return true;
  auto p = parse_hook_name(hook);   // a name no HookSet knows is never selected by a filter
  return p && p->layer < num_layers_ && set_->enabled(p->id, p->layer);
}

namespace {

// The model's layer count as a trace records it: its config, else the layers its hooks name.
int layer_count(const TraceReader& t) {
  if (t.has_root_attr("config_json")) {
    auto cfg = nlohmann::json::parse(t.root_attr_string("config_json"), nullptr, /*allow_exceptions=*/false);
    if (cfg.is_object() && cfg.contains("num_hidden_layers") && cfg["num_hidden_layers"].is_number_integer())
      return cfg["num_hidden_layers"].get<int>();
  }
  int n = 0;
  if (t.n_steps() > 0)
    for (const std::string& h : t.hooks(0))
      if (auto p = parse_hook_name(h)) n = std::max(n, p->layer + 1);
  return n;
}

// A row's tokens.attention_mask at this step ([S] ints); empty when the step has none.
std::vector<int32_t> row_mask(const StepHooks& side, int64_t row) {
  if (!side.has("tokens.attention_mask")) return {};
  HookData m = side.read("tokens.attention_mask");
  if (m.shape.size() != 2 || row >= m.shape[0]) return {};
  std::vector<int32_t> out(size_t(m.shape[1]));
  for (int64_t s = 0; s < m.shape[1]; ++s) out[size_t(s)] = int32_t(m.values[size_t(row * m.shape[1] + s)]);
  return out;
}

// An uncached k_rope / v ([B,Hkv,T=S,hd]) relabelled with the cache's axes, so that it compares
// with kv.L.k / kv.L.v.
HookData as_cache_layout(HookData d, const std::string& cache_hook) {
  d.hook = cache_hook;
  for (auto& a : d.axes)
    if (a == "T") a = "S";
  return d;
}

// Number of query rows of a hook (axis T), or -1.
int64_t t_of(const HookData& d) {
  const int ti = d.axis("T");
  return ti < 0 ? -1 : d.shape[size_t(ti)];
}

std::vector<std::string> selected_in_forward_order(const StepHooks& side, const HookFilter& filter) {
  std::vector<std::string> out;
  for (const std::string& h : side.names)
    if (filter.selects(h)) out.push_back(h);
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& x, const std::string& y) { return hook_sort_key(x) < hook_sort_key(y); });
  return out;
}

}  // namespace

HookFilter hook_filter(const CompareOptions& opts, const TraceReader& a, const TraceReader& ref) {
  if (opts.hook_globs.empty() && opts.layers.empty()) return HookFilter();
  std::string globs;
  for (const std::string& g : opts.hook_globs) globs += (globs.empty() ? "" : ",") + g;
  return HookFilter(globs, opts.layers, std::max(layer_count(a), layer_count(ref)));
}

void compare_step(int step, const StepHooks& a, const StepHooks& ref, const HookFilter& filter,
                  const AlignOptions& al, const ToleranceTable& tols, CompareReport& rep) {
  const std::vector<std::string> in_a = selected_in_forward_order(a, filter);
  const std::vector<std::string> in_ref = selected_in_forward_order(ref, filter);
  const bool strip = al.row_a >= 0;
  // Row alignment strips pads through each side's own mask; needed only where both sides hold
  // something to compare.
  std::vector<int32_t> mask_a, mask_ref;
  if (strip && !in_a.empty() && !in_ref.empty()) {
    mask_a = row_mask(a, al.row_a);
    mask_ref = row_mask(ref, al.row_ref);
    if (mask_a.empty() || mask_ref.empty())
      throw std::runtime_error("row alignment strips pads through tokens.attention_mask, and step " + std::to_string(step) +
                               " of " + (mask_a.empty() ? a.source : ref.source) +
                               " has none for that row (trace it: --hooks '...,tokens.attention_mask')");
  }
  // Otherwise the reference's pad rule (compare/metrics.h); stripped rows hold no pads.
  std::optional<HookData> ref_mask;
  if (!strip && ref.has("tokens.attention_mask")) ref_mask = ref.read("tokens.attention_mask");

  auto prepare = [&](bool is_a, const std::string& hook) {
    HookData d = (is_a ? a : ref).read(hook);
    if (strip) d = strip_pads(d, is_a ? al.row_a : al.row_ref, is_a ? mask_a : mask_ref);
    return d;
  };
  std::vector<HookResult> results;
  auto add = [&](const std::string& name, HookData da, HookData db, const std::string& note) {
    if (al.last_position) {   // cached (T = 1) against uncached (T = S): the last rows of the longer
      const int64_t ta = t_of(da), tb = t_of(db);
      if (ta > 0 && tb > 0 && ta != tb) {
        const int64_t keep = std::min(ta, tb);
        da = last_positions(da, keep);
        db = last_positions(db, keep);
      }
    }
    HookResult r = compare_hook_data(step, name, da, db, ref_mask ? &*ref_mask : nullptr, tols);
    if (!note.empty()) r.note = r.note.empty() ? note : r.note + "; " + note;
    results.push_back(std::move(r));
  };
  // The cache hook of one side against the uncached k_rope / v of the other, when aligning
  // cached with uncached steps: false when that does not apply.
  auto add_counterpart = [&](const std::string& cache_hook, bool cache_in_a) {
    auto cp = al.last_position ? uncached_counterpart(cache_hook) : std::nullopt;
    if (!cp || !(cache_in_a ? ref : a).has(*cp)) return false;
    HookData uncached = as_cache_layout(prepare(!cache_in_a, *cp), cache_hook);
    if (cache_in_a) add(cache_hook, prepare(true, cache_hook), uncached, "reference: " + *cp);
    else add(cache_hook, uncached, prepare(false, cache_hook), "A: " + *cp);
    return true;
  };

  for (const std::string& hook : in_ref) {
    if (a.has(hook)) {
      add(hook, prepare(true, hook), prepare(false, hook), "");
      continue;
    }
    if (add_counterpart(hook, /*cache_in_a=*/false)) continue;
    rep.missing_in_a.push_back({step, hook});
    HookResult r;
    r.step = step;
    r.hook = hook;
    r.kind = HookResult::Kind::MissingInA;
    results.push_back(std::move(r));
  }
  for (const std::string& hook : in_a) {
    if (ref.has(hook)) continue;   // compared above
    if (add_counterpart(hook, /*cache_in_a=*/true)) continue;
    rep.only_in_a.push_back({step, hook});
  }
  std::stable_sort(results.begin(), results.end(), [](const HookResult& x, const HookResult& y) {
    return hook_sort_key(x.hook) < hook_sort_key(y.hook);
  });
  for (HookResult& r : results) rep.results.push_back(std::move(r));
}

}  // namespace lmscope
