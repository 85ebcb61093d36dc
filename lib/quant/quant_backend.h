// QuantBackend: activation quantization as a policy on the Backend's linear, so the one
// forward (model/decoder.cpp) runs unchanged. It wraps another backend, passes every op
// through, and in linear() replaces the input of each of a layer's seven linears by its
// quantize -> dequantize copy before the wrapped backend multiplies:
//
//   a8-token   per row (token) n: scale = max|x_n| / 127, symmetric int8 (int8_math.h)
//   a8-static  per layer and linear: scale and zero point from the min/max observed while
//              calibrating (affine uint8, int8_math.h), the same for every token
//
// A linear is known by its weight's data pointer (name_linears). The LM head is not one of
// them and stays float32. With a trace, each quantized linear offers
// quant.layers.L.<linear>.scale and .saturated ([B,T]: the row's scale, and how many of its
// values the clamp changed; docs/hooks.md).
#pragma once
#include <map>
#include <unordered_map>
#include <utility>

#include "backend/forwarding_backend.h"
#include "model/weights.h"
#include "trace/trace.h"

namespace lmscope::quant {

enum class ActScheme { Float, Token, Static };

class QuantBackend final : public ForwardingBackend {
 public:
  explicit QuantBackend(Backend& inner) : ForwardingBackend(inner) {}

  // Forgets earlier names, then names each layer's linears of `w` (host tensors, before the
  // Decoder prepares them; prepare_weight carries the name to the prepared copy).
  void name_linears(const Weights& w);
  void set_activation(ActScheme s) { act_ = s; }
  void set_trace(Trace* t) { trace_ = t; }
  // While calibrating, linear() leaves inputs alone and widens each linear's [min, max].
  void set_calibrating(bool on) { calibrating_ = on; }
  void clear_calibration() { ranges_.clear(); }
  bool calibrated() const { return !ranges_.empty(); }
  // Values of the last forward's inputs that the clamp changed, all linears together.
  int64_t saturated() const { return saturated_; }
  void reset_saturated() { saturated_ = 0; }

  Tensor prepare_weight(const Tensor& host_weight) override;
  void linear(Tensor& out, const Tensor& x, const Tensor& W, const Tensor& bias) override;

 private:
  struct LinearId {
    int layer;
    int slot;   // index in linear_slots()
  };
  // x (host, [..., I]) quantized per the scheme; scales and saturated counts per row.
  Tensor quantize_input(const Tensor& x, const LinearId& id, Tensor& scales, Tensor& saturated);

  ActScheme act_ = ActScheme::Float;
  Trace* trace_ = nullptr;
  bool calibrating_ = false;
  int64_t saturated_ = 0;
  std::unordered_map<const void*, LinearId> ids_;
  std::map<std::pair<int, int>, std::pair<float, float>> ranges_;   // (layer, slot) -> [min, max]
};

}  // namespace lmscope::quant
