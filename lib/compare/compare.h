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
  std::vector<std::string> hook_globs;   // empty: every hook
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

// One hook of one step from values already in memory: what compare_traces does for each
// (step, hook) after reading both files. The experiment tools call it on tensors they hold
// or have aligned first (compare/align.h).
HookResult compare_hook_data(int step, const std::string& hook, const HookData& a, const HookData& ref,
                             const HookData* attention_mask, const ToleranceTable& tols);

// Throws std::runtime_error (one line) when the options select nothing to compare.
CompareReport compare_traces(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts);

// Both traces' generated_ids, for compare_traces and compare_aligned to compare each their way;
// nullopt when there is nothing to compare: neither trace has them (equal), or only one has them
// (rep.generated_differ, saying which).
std::optional<std::pair<HookData, HookData>> generated_ids_of_both(const TraceReader& a, const TraceReader& ref,
                                                                   CompareReport& rep);

// Sets first_failure (the first failing result, in report order) and pass (no failure and
// equal generated ids) once the results are in.
void conclude(CompareReport& rep);

}  // namespace lmscope
