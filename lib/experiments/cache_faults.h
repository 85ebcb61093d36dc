// Bugs of hand-written KV caches, planted on purpose (lmscope-cache --fault). Each is a policy
// on generate()'s step input that acts only on cached decode steps (step > 0 with a cache), so
// the uncached reference and the prefill are untouched.
#pragma once
#include <string>

#include "generate/policies.h"

namespace lmscope {

enum class CacheFault {
  None,
  NoPositionOffset,   // a decode step's tokens get positions 0..T-1 (arange(T)) instead of past + t
  CacheNotAppended,   // a decode step attends to its own K/V but does not keep them
  MaskNotExtended,    // a decode step's mask covers only its own T tokens
};
const char* cache_fault_name(CacheFault f);              // "none", "position", "append", "mask"
CacheFault parse_cache_fault(const std::string& name);   // throws one line naming the choices
const char* cache_fault_description(CacheFault f);

// The fault as generate()'s adjust_input policy (empty for None).
std::function<void(StepInput&, const StepContext&)> cache_fault_policy(CacheFault f);

// Where a planted fault first changes a computation (by construction of the fault).
struct FaultSite {
  int step = -1;          // the first step it acts on (-1: none)
  int layer = -1;         // the first layer whose tensors it changes
  std::string what;       // one sentence
};
FaultSite fault_first_acts(CacheFault f);

}  // namespace lmscope
