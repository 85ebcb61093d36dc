// A hook tensor seen as [B, T, rest]: a row, a token, and the R values the token holds at
// this hook (a residual's D; q's H*hd across its head axis; attn.probs' H*S), each with its
// head and its index on the innermost axis. How interventions find "head 2 of position 5".
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "tensor/tensor.h"
#include "trace/hooks.h"

namespace lmscope {

struct HookLayout {
  int64_t B = 0, T = 0, R = 0;
  int64_t heads = 1;                 // length of the H / Hkv axis (1 when there is none)
  int64_t inner = 0;                 // length of the innermost axis (D, hd, F, S)
  int64_t stride_b = 0, stride_t = 0;
  std::vector<int64_t> rest_off;     // [R] offset of each value from its token's (b, t)
  std::vector<int64_t> rest_head;    // [R] its head (0 when no head axis)
  std::vector<int64_t> rest_last;    // [R] its index on the innermost axis

  HookLayout() = default;
  // shape: the hook's tensor, axes as in trace/hooks.h (B first, then T somewhere).
  HookLayout(Hook h, const Shape& shape);
  // The layout hook h has in this model for B rows, T tokens and S key positions.
  static HookLayout of_model(Hook h, const ModelConfig& cfg, int64_t B, int64_t T, int64_t S);

  int64_t offset(int64_t b, int64_t t) const { return b * stride_b + t * stride_t; }
};

}  // namespace lmscope
