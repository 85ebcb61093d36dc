// The one comparison loop. lmscope-diff (compare_traces, compare_aligned) and lmscope-cache's
// comparer of two runs held in memory all compare a step through compare_step, so a hook, or a
// whole step, present on one side only is treated the same way everywhere. The rule:
//
//  * what the reference holds and A does not is "missing in A": a failure (A stopped early,
//    or never wrote it);
//  * what A holds and the reference does not is "only in A": reported, not a failure (the
//    reference is what A is checked against; a padded batch runs on after the solo run of
//    one of its rows stopped at EOS).
//
// Every step either side holds is visited; a side that lacks the step holds no hooks there, so
// the step's hooks fall under the rule above. Nothing is dropped silently.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compare/align.h"
#include "compare/compare.h"
#include "trace/hook_set.h"

namespace lmscope {

// What one side holds at one step: its hook names and how to read one, from a trace file or
// from tensors in memory. No names: the side does not have the step.
struct StepHooks {
  std::string source;                                  // for messages: "'a.h5'"
  std::vector<std::string> names;                      // any order
  std::function<HookData(const std::string&)> read;    // one of names
  bool has(const std::string& hook) const;
};

// A trace's step; no names when the trace does not have it.
StepHooks step_hooks(const TraceReader& t, int step);

// Which hooks are compared: lmscope-trace's --hooks globs and --layers ranges with the same
// meaning (a HookSet; docs/hooks.md), applied to the names of both sides.
class HookFilter {
 public:
  HookFilter() = default;   // every hook
  // Throws lmscope-trace's one-line errors: a glob that names no hook, a bad or out-of-range
  // layer range.
  HookFilter(const std::string& globs, const std::string& layers, int num_layers);
  bool selects(const std::string& hook) const;

 private:
  std::optional<HookSet> set_;
  int num_layers_ = 0;
};

// The filter opts asks for (hook_globs, layers), over the layers of the two traces' model.
HookFilter hook_filter(const CompareOptions& opts, const TraceReader& a, const TraceReader& ref);

// Compares the hooks `filter` selects of one step, A against the reference, aligned as `al`
// says (compare/align.h), each through compare_hook_data. Appends the step's results in forward
// order (MissingInA among them) and its missing_in_a / only_in_a to rep.
void compare_step(int step, const StepHooks& a, const StepHooks& ref, const HookFilter& filter,
                  const AlignOptions& al, const ToleranceTable& tols, CompareReport& rep);

}  // namespace lmscope
