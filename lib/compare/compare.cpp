#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "trace/hooks.h"
#include "trace/select.h"

namespace lmscope {

namespace {

// Errors read best short (3 digits); the two values need enough digits to see them differ.
std::string num(double v, int digits = 3) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string join_axes(const std::vector<std::string>& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return s;
}

HookResult compare_hook(const TraceReader& a, const TraceReader& ref, int step, const std::string& hook,
                        const HookData* attention_mask, const ToleranceTable& tols) {
  return compare_hook_data(step, hook, a.read(step, hook), ref.read(step, hook), attention_mask, tols);
}

// A reference may keep only the last k query rows of a [.., T, ..] hook (HF generate with
// logits_to_keep=1; goldens of real vocabularies store the last logits row of each step).
// When the shapes differ only in T and the reference has fewer rows, A's trailing k rows
// are what it holds.
bool keep_trailing_rows(HookData& a, const HookData& ref) {
  const int t = ref.axis("T");
  if (t < 0 || a.axes != ref.axes || a.shape.size() != ref.shape.size() || ref.shape[t] >= a.shape[t]) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (int(i) != t && a.shape[i] != ref.shape[i]) return false;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < t; ++i) outer *= a.shape[i];
  for (size_t i = t + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
  const int64_t Ta = a.shape[t], Tr = ref.shape[t];
  std::vector<double> v;
  v.reserve(outer * Tr * inner);
  for (int64_t o = 0; o < outer; ++o) {
    auto first = a.values.begin() + (o * Ta + (Ta - Tr)) * inner;
    v.insert(v.end(), first, first + Tr * inner);
  }
  a.values = std::move(v);
  a.shape = ref.shape;
  return true;
}

}  // namespace

HookResult compare_hook_data(int step, const std::string& hook, const HookData& da_in, const HookData& db,
                             const HookData* attention_mask, const ToleranceTable& tols) {
  HookData da = da_in;
  const bool trailing = keep_trailing_rows(da, db);
  HookResult r;
  r.step = step;
  r.hook = hook;
  r.shape_a = da_in.shape;
  r.shape_ref = db.shape;
  const ToleranceRule& rule = tols.rule_for(hook);
  r.tol = rule.tol;
  r.tol_pattern = rule.pattern;
  // Integers are ids, masks and counts: "close" is meaningless, so they are always exact.
  if (db.is_int || da.is_int) {
    r.tol = {0, 0};
    if (rule.tol.atol != 0 || rule.tol.rtol != 0) r.tol_pattern = "(integer: exact)";
  }
  if (da.shape != db.shape) {
    r.kind = HookResult::Kind::ShapeMismatch;
    r.m.max_abs = INFINITY;
    r.note = "shape " + shape_str(da.shape) + " vs reference " + shape_str(db.shape);
    return r;
  }
  std::vector<uint8_t> inc = pad_include_mask(hook, db.axes, db.shape, attention_mask);
  r.m = compute_metrics(da.values, db.values, inc);
  if (r.m.argmax >= 0) r.argmax_index = unravel(r.m.argmax, db.shape);
  r.pass = r.m.max_abs <= r.bound();
  if (da.is_int != db.is_int) {
    r.note = std::string("dtype ") + (da.is_int ? "int" : "float") + " vs reference " + (db.is_int ? "int" : "float");
    r.pass = false;
  } else if (!da.axes.empty() && !db.axes.empty() && da.axes != db.axes) {
    r.note = "axes " + join_axes(da.axes) + " vs reference " + join_axes(db.axes);
    r.pass = false;
  } else if (trailing) {
    r.note = "A's last " + std::to_string(db.shape[db.axis("T")]) + " T rows (the reference keeps only those)";
  }
  return r;
}

std::optional<std::pair<HookData, HookData>> generated_ids_of_both(const TraceReader& a, const TraceReader& ref,
                                                                   CompareReport& rep) {
  const bool ha = a.has_generated_ids(), hb = ref.has_generated_ids();
  if (!ha && !hb) return std::nullopt;
  if (ha != hb) {
    rep.generated_differ(ha ? "only A has generated_ids" : "A has no generated_ids");
    return std::nullopt;
  }
  return std::make_pair(a.generated_ids(), ref.generated_ids());
}

namespace {

// generated_ids: equal iff both are absent or both hold the same ids.
void compare_generated(const TraceReader& a, const TraceReader& ref, CompareReport& rep) {
  auto ids = generated_ids_of_both(a, ref, rep);
  if (!ids) return;
  const HookData &ga = ids->first, &gb = ids->second;
  if (ga.shape != gb.shape) {
    rep.generated_differ("shape " + shape_str(ga.shape) + " vs reference " + shape_str(gb.shape));
    return;
  }
  for (size_t i = 0; i < ga.values.size(); ++i) {
    if (ga.values[i] != gb.values[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "first difference at %s: A %lld vs reference %lld",
                    index_str(unravel(int64_t(i), ga.shape)).c_str(), (long long)ga.values[i],
                    (long long)gb.values[i]);
      rep.generated_differ(buf);
      return;
    }
  }
}

}  // namespace

std::string HookResult::reason() const {
  if (kind == Kind::MissingInA) return "missing in A";
  if (kind == Kind::ShapeMismatch) return note;
  std::string s;
  if (std::isinf(m.max_abs)) {
    s = "masked/non-finite in one trace only";
    if (!argmax_index.empty()) s += " at " + index_str(argmax_index);
  } else {
    s = "max abs " + num(m.max_abs);
    if (!argmax_index.empty()) s += " at " + index_str(argmax_index);
  }
  if (m.argmax >= 0) s += ": A " + num(m.value, 8) + " vs reference " + num(m.ref, 8);
  s += ", tol " + num(bound());
  if (!note.empty()) s += "; " + note;
  return s;
}

size_t CompareReport::hook_names() const {
  std::set<std::string> names;
  for (const HookResult& r : results) names.insert(r.hook);
  return names.size();
}

CompareReport compare_traces(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts) {
  CompareReport rep;
  rep.path_a = a.path();
  rep.path_ref = ref.path();
  int n = std::max(a.n_steps(), ref.n_steps());
  for (int step = 0; step < n; ++step) {
    if (!opts.steps.empty() && !std::binary_search(opts.steps.begin(), opts.steps.end(), step)) continue;
    std::vector<std::string> ha, hb;
    if (a.has_step(step)) ha = a.hooks(step);
    if (ref.has_step(step)) hb = ref.hooks(step);
    std::unordered_set<std::string> in_a(ha.begin(), ha.end()), in_ref(hb.begin(), hb.end());
    std::optional<HookData> mask;
    if (ref.has_hook(step, "tokens.attention_mask")) mask = ref.read(step, "tokens.attention_mask");
    for (const std::string& hook : hb) {
      if (!match_any(opts.hook_globs, hook)) continue;
      if (!in_a.count(hook)) {
        rep.missing_in_a.push_back({step, hook});
        HookResult r;
        r.step = step;
        r.hook = hook;
        r.kind = HookResult::Kind::MissingInA;
        rep.results.push_back(std::move(r));
        continue;
      }
      rep.results.push_back(compare_hook(a, ref, step, hook, mask ? &*mask : nullptr, opts.tolerances));
    }
    for (const std::string& hook : ha)
      if (!in_ref.count(hook) && match_any(opts.hook_globs, hook)) rep.only_in_a.push_back({step, hook});
  }
  if (rep.results.empty() && rep.only_in_a.empty())
    throw std::runtime_error("nothing to compare: no hook of '" + ref.path() + "' matches the selected steps/hooks");
  compare_generated(a, ref, rep);
  conclude(rep);
  return rep;
}

void conclude(CompareReport& rep) {
  rep.first_failure.reset();
  for (size_t i = 0; i < rep.results.size(); ++i)
    if (!rep.results[i].pass) {
      rep.first_failure = i;
      break;
    }
  rep.pass = !rep.first_failure && rep.generated_equal;
}

}  // namespace lmscope
