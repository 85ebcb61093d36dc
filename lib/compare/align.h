// Aligning two traces whose tensors do not line up element for element, so that
// compare_hook_data can compare them:
//
//  * a padded batch row against a solo run of the same prompt: the row is selected and its pad
//    key columns (axis S) and pad query rows (axis T) are dropped through that step's
//    tokens.attention_mask (strip_pads). What is left is what the solo run computed.
//  * an uncached step (T = S query rows: the whole sequence again) against a cached one (T = 1):
//    the last T rows of the longer one (last_positions). The cache contents kv.L.k / kv.L.v of
//    the cached run (axes B,Hkv,S,hd) are compared with layers.L.attn.k_rope / attn.v of the
//    uncached run, which hold all S positions (uncached_counterpart).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "trace/trace_reader.h"

namespace lmscope {

// Keeps the indices `keep` of axis `axis` (in that order).
HookData take_along(const HookData& d, int axis, const std::vector<int64_t>& keep);

// Row `row` of axis B (the B axis stays, with size 1). Tensors without a B axis are returned as
// they are.
HookData select_row(const HookData& d, int64_t row);

// Row `row`, its pad key columns and pad query rows dropped. row_mask: that row's
// tokens.attention_mask of the same step ([S], 1 real / 0 pad). Axis S (when its size is S)
// keeps the real columns; axis T keeps query t when row_mask[S - T + t] == 1 (query t of a step
// is key column S - T + t). tokens.attention_mask and mask.padding become all ones.
HookData strip_pads(const HookData& d, int64_t row, const std::vector<int32_t>& row_mask);

// The last n entries of axis T (all of them when T <= n or there is no T axis).
HookData last_positions(const HookData& d, int64_t n);

// The uncached hook that holds what the cache hook holds: "kv.3.k" -> "layers.3.attn.k_rope",
// "kv.3.v" -> "layers.3.attn.v"; nullopt for any other name.
std::optional<std::string> uncached_counterpart(const std::string& cache_hook);

struct AlignOptions {
  // >= 0: compare that row of A (resp. of the reference), its pads stripped through its own
  // masks. -1: every row, no stripping (the plain comparison).
  int row_a = -1;
  int row_ref = -1;
  // Where a step's T differs between the traces (cached against uncached), compare the last T
  // query rows of the longer one, and the cache (kv.*) against the uncached k_rope / v.
  bool last_position = false;
};

// compare_traces with alignment: the same loop (compare/compare_step.h), each pair of tensors
// aligned before it is compared. generated_ids are compared for the selected rows
// (compare_generated). Hooks that cannot be aligned (an unknown layout) are compared as they are
// and fail on shape if they differ.
CompareReport compare_aligned(const TraceReader& a, const TraceReader& ref, const CompareOptions& opts,
                              const AlignOptions& al);

}  // namespace lmscope
