#include "model/masks.h"

#include <cmath>

#include "kernels/attention_math.cuh"
#include "kernels/rope.cuh"

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

void rope_tables(Tensor& cos, Tensor& sin, const Tensor& position_ids, int hd, float theta) {
  const int64_t B = position_ids.dim(0), T = position_ids.dim(1);
  cos = Tensor::zeros({B, T, hd});
  sin = Tensor::zeros({B, T, hd});
  const int half = hd / 2;
  for (int64_t bt = 0; bt < B * T; ++bt) {
    const int pos = position_ids.i32()[bt];
    for (int j = 0; j < half; ++j) {
      const float a = rope_angle(pos, j, hd, theta);
      // emb = cat(freqs, freqs): entries j and j + hd/2 share the angle
      cos.f32()[bt * hd + j] = cos.f32()[bt * hd + j + half] = std::cos(a);
      sin.f32()[bt * hd + j] = sin.f32()[bt * hd + j + half] = std::sin(a);
    }
  }
}

}  // namespace lmscope
