#include "experiments/cache_faults.h"

#include <stdexcept>

namespace lmscope {

const char* cache_fault_name(CacheFault f) {
  switch (f) {
    case CacheFault::None: return "none";
    case CacheFault::NoPositionOffset: return "position";
    case CacheFault::CacheNotAppended: return "append";
    case CacheFault::MaskNotExtended: return "mask";
  }
  return "?";
}

CacheFault parse_cache_fault(const std::string& name) {
  for (CacheFault f : {CacheFault::None, CacheFault::NoPositionOffset, CacheFault::CacheNotAppended,
                       CacheFault::MaskNotExtended})
    if (name == cache_fault_name(f)) return f;
  throw std::runtime_error("--fault: '" + name + "' is not one of none, position, append, mask");
}

const char* cache_fault_description(CacheFault f) {
  switch (f) {
    case CacheFault::None: return "no fault: the correct cached path";
    case CacheFault::NoPositionOffset:
      return "no position offset on cached steps: a decode step's tokens get positions 0..T-1 (arange(T)) instead of "
             "past + t";
    case CacheFault::CacheNotAppended:
      return "cache not appended: a decode step attends to its own K/V but does not keep them, so the cache never "
             "grows past the prefill";
    case CacheFault::MaskNotExtended:
      return "mask not extended to the cache: a decode step's mask covers only its own tokens, so every cached "
             "position is masked out";
  }
  return "";
}

FaultSite fault_first_acts(CacheFault f) {
  switch (f) {
    case CacheFault::None: return {-1, -1, "nothing is planted"};
    case CacheFault::NoPositionOffset:
      return {1, 0, "the first decode step's token is rotated to position 0: layer 0's q/k after RoPE"};
    case CacheFault::CacheNotAppended:
      return {2, 0,
              "step 1 still sees itself; from step 2 on the tokens of earlier decode steps are missing: layer 0's "
              "attention over the cache"};
    case CacheFault::MaskNotExtended:
      return {1, 0, "the first decode step attends only to itself: the mask, then layer 0's attention scores"};
  }
  return {};
}

namespace {

// Positions 0..T-1 (arange(T)) instead of past + t.
void no_position_offset(StepInput& in) {
  const int64_t B = in.input_ids.dim(0), T = in.input_ids.dim(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) in.position_ids.i32()[b * T + t] = int32_t(t);
}

// The cache is rewound to the prefill before each decode step, so the step's K/V are written
// after the prompt and dropped by the next step; its keys: the prefill's columns, then its own.
void cache_not_appended(StepInput& in, const StepContext& ctx) {
  const Tensor& full = in.attention_mask;                    // [B,S]
  const int64_t B = full.dim(0), S = full.dim(1), T = in.input_ids.dim(1), P = ctx.prompt_cols, S2 = P + T;
  Tensor m = Tensor::zeros({B, S2}, DType::I32);             // [B,P+T]
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < P; ++s) m.i32()[b * S2 + s] = full.i32()[b * S + s];
    for (int64_t t = 0; t < T; ++t) m.i32()[b * S2 + P + t] = full.i32()[b * S + S - T + t];
  }
  in.attention_mask = m;
  ctx.cache->length = P;
}

// Every cached column masked out: a new token sees only itself.
void mask_not_extended(StepInput& in) {
  const int64_t B = in.attention_mask.dim(0), S = in.attention_mask.dim(1), T = in.input_ids.dim(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S - T; ++s) in.attention_mask.i32()[b * S + s] = 0;
}

}  // namespace

std::function<void(StepInput&, const StepContext&)> cache_fault_policy(CacheFault f) {
  if (f == CacheFault::None) return {};
  return [f](StepInput& in, const StepContext& ctx) {
    if (!ctx.cached_decode()) return;
    switch (f) {
      case CacheFault::NoPositionOffset: return no_position_offset(in);
      case CacheFault::CacheNotAppended: return cache_not_appended(in, ctx);
      case CacheFault::MaskNotExtended: return mask_not_extended(in);
      case CacheFault::None: return;
    }
  };
}

}  // namespace lmscope
