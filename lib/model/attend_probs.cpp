#include "model/attend_probs.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace lmscope {

Tensor attend_probs(Backend& be, const Tensor& probs, const Tensor& values, int64_t S) {
  const Tensor p = be.to_host(probs);
  const Tensor v = be.to_host(be.kv_read(values, S));   // [B,Hkv,S,hd]
  const int64_t B = p.dim(0), H = p.dim(1), T = p.dim(2), Hkv = v.dim(1), hd = v.dim(3);
  if (p.dim(3) != S || v.dim(2) != S || v.dim(0) != B || H % Hkv)
    throw std::logic_error("attend_probs: probs " + shape_str(p.shape()) + " and values " + shape_str(v.shape()) +
                           " do not match");
  Tensor z = Tensor::zeros({B, T, H, hd});
  const float* pp = p.f32();
  const float* vv = v.f32();
  float* zz = z.f32();
  std::vector<float> acc(static_cast<size_t>(hd));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const float* vh = vv + (b * Hkv + h / (H / Hkv)) * S * hd;
      for (int64_t t = 0; t < T; ++t) {
        const float* row = pp + ((b * H + h) * T + t) * S;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t s = 0; s < S; ++s) {
          const float w = row[s];
          if (w == 0.0f) continue;
          for (int64_t d = 0; d < hd; ++d) acc[size_t(d)] += w * vh[s * hd + d];
        }
        std::copy(acc.begin(), acc.end(), zz + ((b * T + t) * H + h) * hd);
      }
    }
  return be.upload(z);
}

}  // namespace lmscope
