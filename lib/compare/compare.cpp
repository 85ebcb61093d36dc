#include "compare/compare.h"

#include <cmath>
#include <set>

#include "compare/align.h"
#include "io/format_number.h"

namespace lmscope {

namespace {

std::string join_axes(const std::vector<std::string>& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return s;
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

void compare_generated(const TraceReader& a, const TraceReader& ref, int row_a, int row_ref, CompareReport& rep) {
  const bool ha = a.has_generated_ids(), hb = ref.has_generated_ids();
  if (!ha && !hb) return;
  // The first reason they differ, or "" when they agree.
  auto why = [&]() -> std::string {
    if (ha != hb) return ha ? "only A has generated_ids" : "A has no generated_ids";
    const HookData ga = a.generated_ids(), gb = ref.generated_ids();
    if (ga.shape.size() != 2 || gb.shape.size() != 2) return "generated_ids is not [B,N]";
    const bool whole = row_a < 0;
    if (whole && ga.shape != gb.shape) return "shape " + shape_str(ga.shape) + " vs reference " + shape_str(gb.shape);
    if (!whole && (row_a >= ga.shape[0] || row_ref >= gb.shape[0])) return "generated_ids has no such row";
    const int64_t na = ga.shape[1], n = gb.shape[1];
    if (na < n) return "A's row has " + std::to_string(na) + " tokens, the reference's " + std::to_string(n);
    for (int64_t i = 0; i < (whole ? ga.shape[0] : 1); ++i) {
      const int64_t ra = whole ? i : row_a, rb = whole ? i : row_ref;
      for (int64_t k = 0; k < n; ++k) {
        const double x = ga.values[size_t(ra * na + k)], y = gb.values[size_t(rb * n + k)];
        if (x == y) continue;
        const std::string at = whole ? index_str({ra, k})
                                     : "row " + std::to_string(ra) + " (reference row " + std::to_string(rb) +
                                           "), token " + std::to_string(k);
        return "first difference at " + at + ": A " + std::to_string((long long)x) + " vs reference " +
               std::to_string((long long)y);
      }
    }
    return "";
  };
  const std::string note = why();
  if (!note.empty()) rep.generated_differ(note);
}

std::string HookResult::reason() const {
  if (kind == Kind::MissingInA) return "missing in A";
  if (kind == Kind::ShapeMismatch) return note;
  std::string s;
  if (std::isinf(m.max_abs)) {
    s = "masked/non-finite in one trace only";
    if (!argmax_index.empty()) s += " at " + index_str(argmax_index);
  } else {   // errors read best short (3 digits); the two values need enough to see them differ
    s = "max abs " + fmt_num(m.max_abs);
    if (!argmax_index.empty()) s += " at " + index_str(argmax_index);
  }
  if (m.argmax >= 0) s += ": A " + fmt_num(m.value, 8) + " vs reference " + fmt_num(m.ref, 8);
  s += ", tol " + fmt_num(bound());
  if (!note.empty()) s += "; " + note;
  return s;
}

size_t CompareReport::hook_names() const {
  std::set<std::string> names;
  for (const HookResult& r : results) names.insert(r.hook);
  return names.size();
}

// The plain comparison is the aligned one with nothing to align: one loop (compare/compare_step.h).
CompareReport compare_traces(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts) {
  return compare_aligned(a, ref, opts, AlignOptions{});
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
