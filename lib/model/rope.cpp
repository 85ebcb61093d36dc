#include "model/rope.h"

#include <cmath>

#include "kernels/rope.cuh"

namespace lmscope {

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
