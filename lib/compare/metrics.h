// Element-wise comparison of one tensor against its reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention_math.cuh"   // is_masked: what counts as a masked entry
#include "tensor/tensor.h"
#include "trace/trace_reader.h"   // HookData

namespace lmscope {

struct Metrics {
  double max_abs = 0;          // +inf when masks (or NaN/inf) disagree somewhere
  int64_t argmax = -1;         // flat index of max_abs; -1 when nothing differs
  double value = 0, ref = 0;   // the two values at argmax
  double scale = 0;            // max |reference| over compared finite unmasked elements
  double rel = 0;              // max_abs / scale (0 when scale is 0)
  double cosine = 1;           // over elements finite and unmasked in both
  int64_t compared = 0;        // elements looked at (not pad, not masked in both)
  int64_t masked_both = 0;
  int64_t mismatched_special = 0;   // masked/NaN/inf on one side only
  int64_t skipped_pad = 0;
};

// include: one byte per element, 0 = skip (a pad position); empty = compare everything.
Metrics compute_metrics(const std::vector<double>& a, const std::vector<double>& ref,
                        const std::vector<uint8_t>& include = {});

// Which elements carry meaning, from the REFERENCE step's tokens.attention_mask [B,S]:
// with axes B and T, element (b,t) only if mask[b, S-T+t] == 1 (pad query rows are
// garbage in HF); for kv.* with axes B and S, key column s only if mask[b,s] == 1.
// Scores/probs/mask.combined pad columns are left to the masked-sentinel rule. Returns
// empty (compare all) when there is no mask or its shape does not fit.
std::vector<uint8_t> pad_include_mask(const std::string& hook, const std::vector<std::string>& axes,
                                      const Shape& shape, const HookData* attention_mask);

// Flat index -> multi-index, for messages: 13 in [2,3,4] -> {1,0,1}.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);
std::string index_str(const std::vector<int64_t>& idx);   // "[0,1,0,5]"

}  // namespace lmscope
