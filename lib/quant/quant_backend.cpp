#include "quant/quant_backend.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "quant/int8_math.h"
#include "quant/model_weights.h"

namespace lmscope::quant {

void QuantBackend::name_linears(const Weights& w) {
  ids_.clear();
  for (size_t L = 0; L < w.layers.size(); ++L)
    for (size_t s = 0; s < linear_slots().size(); ++s)
      ids_[(w.layers[L].*linear_slots()[s].member).raw()] = LinearId{int(L), int(s)};
}

Tensor QuantBackend::prepare_weight(const Tensor& host_weight) {
  Tensor p = inner_.prepare_weight(host_weight);
  auto it = ids_.find(host_weight.raw());
  if (it != ids_.end()) ids_[p.raw()] = it->second;
  return p;
}

Tensor QuantBackend::quantize_input(const Tensor& x, const LinearId& id, Tensor& scales, Tensor& saturated) {
  const int64_t I = x.dim(-1), N = x.numel() / I;
  const float* X = x.f32();
  Tensor q = Tensor::zeros(x.shape());
  float* Q = q.f32();
  float* S = scales.f32();
  float* Z = saturated.f32();
  AffineU8 fixed;
  if (act_ == ActScheme::Static) {
    auto r = ranges_.find({id.layer, id.slot});
    if (r == ranges_.end())
      throw std::runtime_error("a8-static: layer " + std::to_string(id.layer) + " " + linear_slots()[id.slot].name +
                               " was never seen while calibrating");
    fixed = affine_u8(r->second.first, r->second.second);
  }
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = X + n * I;
    float* qr = Q + n * I;
    int64_t sat = 0;
    if (act_ == ActScheme::Token) {
      float amax = 0.0f;
      for (int64_t i = 0; i < I; ++i) amax = std::max(amax, std::fabs(xr[i]));
      const float scale = sym_scale(amax);
      for (int64_t i = 0; i < I; ++i) {
        bool s = false;
        qr[i] = sym_int8_value(sym_int8(xr[i], scale, s), scale);
        sat += s;
      }
      S[n] = scale;
    } else {
      for (int64_t i = 0; i < I; ++i) {
        bool s = false;
        qr[i] = affine_u8_value(affine_u8_code(xr[i], fixed, s), fixed);
        sat += s;
      }
      S[n] = fixed.scale;
    }
    Z[n] = float(sat);
    saturated_ += sat;
  }
  return q;
}

void QuantBackend::linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) {
  auto it = ids_.find(W.raw());
  if (it == ids_.end() || (act_ == ActScheme::Float && !calibrating_)) return inner_.linear(out, x, W, bias);
  const LinearId id = it->second;
  Tensor xh = inner_.to_host(x);
  if (calibrating_) {
    const float* X = xh.f32();
    auto [lo, hi] = std::minmax_element(X, X + xh.numel());
    auto r = ranges_.emplace(std::make_pair(id.layer, id.slot), std::make_pair(*lo, *hi));
    if (!r.second) r.first->second = {std::min(r.first->second.first, *lo), std::max(r.first->second.second, *hi)};
    return inner_.linear(out, x, W, bias);
  }
  // Hooks are [B,T]: the linear's input is [B,T,I] in the forward (z reshaped to [B,T,H*hd]).
  const Shape rows = xh.ndim() == 3 ? Shape{xh.dim(0), xh.dim(1)} : Shape{xh.numel() / xh.dim(-1)};
  Tensor scales = Tensor::zeros(rows), saturated = Tensor::zeros(rows);
  Tensor q = quantize_input(xh, id, scales, saturated);
  const Hook scale_hook = Hook(int(Hook::QuantQProjScale) + 2 * id.slot);
  const Hook sat_hook = Hook(int(scale_hook) + 1);
  if (trace_ && trace_->wants(scale_hook, id.layer)) trace_->offer(scale_hook, id.layer, scales);
  if (trace_ && trace_->wants(sat_hook, id.layer)) trace_->offer(sat_hook, id.layer, saturated);
  inner_.linear(out, inner_.upload(q), W, bias);
}

}  // namespace lmscope::quant
