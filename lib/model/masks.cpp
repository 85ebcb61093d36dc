#include "model/masks.h"

#include "kernels/attention_math.cuh"

namespace lmscope {

Tensor causal_mask(int64_t T, int64_t S) {
  Tensor m = Tensor::zeros({T, S}, DType::I32);
  const int64_t past = S - T;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) m.i32()[t * S + s] = s <= past + t;
  return m;
}

Tensor combined_mask(const Tensor& attention_mask, int64_t T) {
  const int64_t B = attention_mask.dim(0), S = attention_mask.dim(1), past = S - T;
  Tensor m = Tensor::zeros({B, T, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s)
        m.f32()[(b * T + t) * S + s] =
            combined_mask(int(s), int(past + t), attention_mask.i32()[b * S + s] != 0);
  return m;
}

Tensor sliding_combined_mask(const Tensor& attention_mask, int64_t T, int64_t window) {
  Tensor m = combined_mask(attention_mask, T);   // [B,T,S]
  const int64_t B = attention_mask.dim(0), S = attention_mask.dim(1), past = S - T;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s <= past + t - window; ++s) m.f32()[(b * T + t) * S + s] = kMaskedScore;
  return m;
}

}  // namespace lmscope
