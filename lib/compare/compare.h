// Compares trace A against a reference trace B, hook by hook and step by step.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/metrics.h"
#include "compare/tolerances.h"
#include "trace/trace_reader.h"

namespace lmscope {

struct CompareOptions {
  ToleranceTable tolerances = ToleranceTable::defaults();
  // Hooks compared: lmscope-trace's --hooks globs and --layers ranges, with the same meaning
  // (trace/hook_set.h), applied to both traces. Both empty: every hook.
  std::vector<std::string> hook_globs;   // "layers.*.attn.q_rope", "logits"
  std::string layers;                    // "0-1,5"
  std::vector<int> steps;                // empty: every step
};

struct HookResult {
  int step = 0;
  std::string hook;
  enum class Kind { Compared, ShapeMismatch, MissingInA } kind = Kind::Compared;
  Metrics m;
  std::vector<int64_t> argmax_index;   // multi-index of m.argmax (empty when none)
  Shape shape_a, shape_ref;
  Tolerance tol;
  std::string tol_pattern;   // the rule that gave tol
  bool pass = false;
  std::string note;          // why it failed beyond the numbers, or "" ("dtype differs")

  double bound() const { return tol.bound(m.scale); }
  std::string reason() const;   // "max abs 3.0e-03 at [0,1,0,5] (A 0.5 vs ref 0.497, tol 1.1e-04)"
};

struct StepHook {
  int step;
  std::string hook;
};

struct CompareReport {
  std::string path_a, path_ref;
  std::vector<HookResult> results;     // step-major, forward order; includes MissingInA
  std::vector<StepHook> missing_in_a;  // in the reference, not in A: a failure
  std::vector<StepHook> only_in_a;     // in A, not in the reference: noted only
  bool generated_equal = true;
  std::string generated_note;          // where they differ, or why they cannot be compared
  std::optional<size_t> first_failure; // index into results
  bool pass = true;

  size_t hook_names() const;           // distinct hook names among results
  void generated_differ(std::string note) {   // generated_equal = false, and why
    generated_equal = false;
    generated_note = std::move(note);
  }
};

// One hook of one step from values in memory: what every comparison does for each (step, hook)
// it compares (compare/compare_step.h), after aligning them if asked (compare/align.h).
HookResult compare_hook_data(int step, const std::string& hook, const HookData& a, const HookData& ref,
                             const HookData* attention_mask, const ToleranceTable& tols);

// Trace A against the reference trace, step by step and hook by hook (compare/compare_step.h:
// the one loop, and its rule for a step or hook on one side only). Throws std::runtime_error
// (one line) for a bad hook glob or layer range, or when the options select nothing to compare.
CompareReport compare_traces(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts);

// generated_ids into rep (generated_equal, generated_note). Every row (row_a = row_ref = -1):
// equal, shape too. One row of each (a padded batch's row against a solo run): the reference
// row's tokens, each equal; A's row may run longer (the batch generates on after the solo run
// of this row stopped at EOS), not shorter.
void compare_generated(const TraceReader& a, const TraceReader& ref, int row_a, int row_ref, CompareReport& rep);

// Sets first_failure (the first failing result, in report order) and pass (no failure and
// equal generated ids) once the results are in.
void conclude(CompareReport& rep);

}  // namespace lmscope
