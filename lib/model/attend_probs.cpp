#include "model/attend_probs.h"

#include <algorithm>
#include <cmath>
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

Tensor probs_from_scores(Backend& be, const Tensor& scores, const Tensor& mask_host) {
  const Tensor sc = be.to_host(scores);
  const int64_t B = sc.dim(0), H = sc.dim(1), T = sc.dim(2), S = sc.dim(3);
  if (mask_host.dim(0) != B || mask_host.dim(1) != T || mask_host.dim(2) != S)
    throw std::logic_error("probs_from_scores: scores " + shape_str(sc.shape()) + " and mask " +
                           shape_str(mask_host.shape()) + " do not match");
  Tensor probs = Tensor::zeros({B, H, T, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const float* row = sc.f32() + ((b * H + h) * T + t) * S;     // [S]
        const float* visible = mask_host.f32() + (b * T + t) * S;    // [S] 0: visible
        float* out = probs.f32() + ((b * H + h) * T + t) * S;        // [S]
        float top = -INFINITY;
        for (int64_t s = 0; s < S; ++s)
          if (visible[s] == 0.0f) top = std::max(top, row[s]);
        if (top == -INFINITY) continue;   // no key visible (or every visible score -inf): zeros
        float sum = 0.0f;
        for (int64_t s = 0; s < S; ++s)
          if (visible[s] == 0.0f) sum += out[s] = std::exp(row[s] - top);
        for (int64_t s = 0; s < S; ++s) out[s] /= sum;
      }
  return be.upload(probs);
}

}  // namespace lmscope
